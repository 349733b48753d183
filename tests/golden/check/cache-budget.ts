# a cache larger than what the budget leaves: the hint says what fits
pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_resized_crop(224)
    | to(float32, nchw)
    | batch(32)

serve train {
    threads = 2
    memory  = 2 GiB
    cache   = 4 GiB
}
