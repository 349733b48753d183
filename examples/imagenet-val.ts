# ImageNet validation recipe: Resize(256) + CenterCrop(224) + Normalize.
# No shuffle, no random augmentation: every epoch is the same stream.
# Reads data/val of the repository root; ./scripts/quickstart makes only
# data/train, the first command adds data/val (the same data/train, and
# 500 validation images). From the repository root (tsrun is
# build/src/tsrun in a source tree):
#
#   tsrun make-dataset data --images 2000 --val 500
#   tsrun check --sources examples/imagenet-val.ts
#   tsrun run examples/imagenet-val.ts

let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline val =
    folder("../data/val")
    | decode(rgb)
    | resize(256)                  # shorter side to 256, aspect kept
    | center_crop(224)
    | normalize(mean, std)
    | to(float32, nchw)
    | batch(250)

serve val {
    socket = "/tmp/tsrun-val.sock"
    epochs = 1
    ring   = 2 batches     # 500 float32 samples (287 MiB); 4 batches cost twice the
                            # memory and, over a 500-image val set, 0.5 ms/image of page
                            # zeroing (perf/README.md)
    memory = 1 GiB
}
