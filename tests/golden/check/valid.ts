let mean = [0.5]
let std  = [0.25]

pipeline gray =
    synthetic([48, 64], count = 100, channels = 1)
    | shuffle
    | shard(0, 2)
    | random_crop(32, padding = 4)
    | color_jitter(brightness = 0.2, contrast = 0.2)
    | normalize(mean, std)
    | to(float16, nchw)
    | batch(10)

serve gray {
    ring = 40 samples
    threads = 1
    memory = 64 MiB
}
