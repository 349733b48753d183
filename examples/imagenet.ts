# ImageNet training recipe (torchvision's reference):
# RandomResizedCrop(224) + RandomHorizontalFlip + Normalize, float32 NCHW.
# Reads data/train of the repository root, which ./scripts/quickstart
# makes (relative paths resolve against this file's folder). From the
# repository root (tsrun is build/src/tsrun in a source tree):
#
#   tsrun check examples/imagenet.ts
#   tsrun graph examples/imagenet.ts
#   tsrun run   examples/imagenet.ts

let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("../data/train", ext = [".jpg", ".jpeg", ".png"])   # label = class sub-folder
    | shuffle(seed = 42)
    | decode(rgb)
    | random_resized_crop(224, scale = 0.08..1.0, ratio = 3/4..4/3)
    | flip(horizontal, p = 0.5)
    | normalize(mean, std)
    | to(float32, nchw)
    | batch(256)

serve train {
    socket  = "/tmp/tsrun-train.sock"
    epochs  = 90
    ring    = 2 batches     # how far the fastest trainer may run ahead of the slowest:
                            # 2 x 256 float32 samples (300 MiB); 8 batches cost 1.2 GiB
                            # and 0.13 ms/image of page zeroing over 3 epochs (perf/README.md)
    memory  = 4 GiB         # refuse to start if the plan needs more
    threads = auto
}
