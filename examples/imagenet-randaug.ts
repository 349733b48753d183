# The RandAugment training recipe (timm / torchvision's classification
# references, ResNet strikes back, DeiT): RandomResizedCrop(224) +
# RandomHorizontalFlip + RandAugment(2, 9) + Normalize + RandomErasing(0.25),
# float32 NCHW. The policy's ops and magnitudes are torchvision 0.14's
# (tests/torch-policy.py); perf/randaug.sh measures it against the same
# torchvision recipe in a DataLoader.
# Reads data/train of the repository root, which ./scripts/quickstart
# makes (relative paths resolve against this file's folder). From the
# repository root (tsrun is build/src/tsrun in a source tree):
#
#   tsrun check examples/imagenet-randaug.ts
#   tsrun graph examples/imagenet-randaug.ts
#   tsrun run   examples/imagenet-randaug.ts

let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("../data/train", ext = [".jpg", ".jpeg", ".png"])   # label = class sub-folder
    | shuffle(seed = 42)
    | decode(rgb)
    | random_resized_crop(224, scale = 0.08..1.0, ratio = 3/4..4/3)
    | flip(horizontal, p = 0.5)
    | rand_augment(num_ops = 2, magnitude = 9)
    | normalize(mean, std)
    | random_erasing(p = 0.25)
    | to(float32, nchw)
    | batch(256)

serve train {
    socket  = "/tmp/tsrun-train-randaug.sock"
    epochs  = 90
    ring    = 2 batches
    memory  = 4 GiB
    threads = auto
}
