# ImageNet validation recipe: Resize(256) + CenterCrop(224) + Normalize.
# No shuffle, no random augmentation: every epoch is the same stream.

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
