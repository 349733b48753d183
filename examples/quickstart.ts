# Quickstart: make a small data set, then serve it to any number of trainers.
#
#   tsrun make-dataset data --images 2000 --val 200
#   tsrun check examples/quickstart.ts
#   tsrun run examples/quickstart.ts &
#   python3 examples/train.py --socket /tmp/tsrun-quickstart.sock
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
    epochs = 2
    ring   = 16 batches
}
