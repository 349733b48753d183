# DINO's multi-crop recipe: each image decoded once, two global views
# (224) and six local ones (96), every view with its own crop, flip and
# colour jitter; a trainer gets a list of eight tensors per batch
# (examples/train_dino.py; tsrun-pipeline(5), VIEWS).
#
#   tsrun make-dataset data --images 2000
#   tsrun run examples/dino.ts &
#   /usr/bin/python3 examples/train_dino.py --socket /tmp/tsrun-dino.sock

let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]
let look = flip(horizontal) | random_apply(color_jitter(0.4, 0.4, 0.2, 0.1), p = 0.8)
           | grayscale(3, p = 0.2)

pipeline dino =
    folder("../data/train", ext = [".jpg", ".jpeg", ".png"])
    | shuffle(seed = 7)
    | decode(rgb)
    | views(2 = random_resized_crop(224, scale = 0.4..1, interpolation = bicubic) | look
              | normalize(mean, std) | to(float32, nchw),
            6 = random_resized_crop(96, scale = 0.05..0.4, interpolation = bicubic) | look
              | normalize(mean, std) | to(float32, nchw))
    | batch(64)

serve dino {
    socket = "/tmp/tsrun-dino.sock"
    epochs = 100
    ring   = 4 batches
}
