# Quickstart: make a small data set, then serve it to any number of trainers
# (scripts/quickstart does all of this with two trainers).
#
#   tsrun make-dataset data --images 2000
#   tsrun check examples/quickstart.ts
#   tsrun run examples/quickstart.ts --wait 2 &
#   /usr/bin/python3 examples/train.py --socket /tmp/tsrun-quickstart.sock &
#   build/examples/consumer /tmp/tsrun-quickstart.sock
#
# Each trainer reads every epoch (4 x 2000 images: 63 steps of 32 per
# epoch, the last of 16, so 252 for train.py), then tsrun ends by itself.
#
# Relative paths resolve against this file's folder.

pipeline quickstart =
    folder("../data/train")
    | shuffle(seed = 1)
    | decode(rgb)
    | random_resized_crop(128)
    | flip(horizontal)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(64)

serve quickstart {
    socket = "/tmp/tsrun-quickstart.sock"   # the default would be $XDG_RUNTIME_DIR/tsrun/quickstart.sock
    epochs = 4
    ring   = 16 batches
}
