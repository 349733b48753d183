# examples/imagenet.ts
let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("data/train", ext = [".jpg", ".jpeg", ".png"])   # label = class sub-folder
    | shuffle(seed = 42)
    | decode(rgb)
    | random_resized_crop(224, scale = 0.08..1.0, ratio = 3/4..4/3)
    | flip(horizontal, p = 0.5)
    | normalize(mean, std)
    | to(float32, nchw)
    | batch(256)

serve train {
    socket = "/tmp/tsrun-train.sock"
    epochs = 90
    ring   = 8 batches
    memory = 4 GiB
}
