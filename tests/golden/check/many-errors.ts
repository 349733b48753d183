# A newcomer's first try: every mistake is reported in one run.
let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("data/train", extt = [".jpg"])
    | shufle(seed = 42)
    | decode(rgb)
    | random_resized_crop(224, scale = 0.08..1.0, ratio = 3/4..4/3)
    | flip(horizontal, p = 2)
    | normalize(mean, std)
    | to(float64, nchw)
    | batch(256)

serve train {
    socket = "/tmp/tsrun-train.sock"
    memory = 4
}
