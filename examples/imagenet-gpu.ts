# ImageNet training recipe with on-GPU finishing (GPU hosts):
# the CPU decodes, crops and flips into uint8 NHWC (4x fewer bytes than
# float32), and device(cuda) converts to float16 NCHW and normalizes on
# the GPU, in one kernel, into a device ring that every trainer on the
# GPU reads: tsrun.Loader(..., device="cuda") copies each batch out of it
# on the GPU (the trainer's own tensors), raw_views=True reads it in
# place without a copy.
# Without a GPU, tsrun says so and serves the uint8 NHWC batches.
# Reads data/train of the repository root, which ./scripts/quickstart
# makes (relative paths resolve against this file's folder). From the
# repository root (tsrun is build/src/tsrun in a source tree):
#
#   tsrun graph examples/imagenet-gpu.ts
#   tsrun run   examples/imagenet-gpu.ts [--device N]

let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("../data/train", ext = [".jpg", ".jpeg", ".png"])
    | shuffle(seed = 42)
    | decode(rgb)
    | random_resized_crop(224, scale = 0.08..1.0, ratio = 3/4..4/3)
    | flip(horizontal, p = 0.5)
    | to(uint8, nhwc)
    | device(cuda, dtype = float16, mean = mean, std = std)
    | batch(256)

serve train {
    socket  = "/tmp/tsrun-train-gpu.sock"
    epochs  = 90
    ring    = 8 batches
    memory  = 2 GiB
    threads = auto
}
