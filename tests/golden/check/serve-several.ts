# A file may serve several pipelines (tsrun run then needs --pipeline).
pipeline train = synthetic(32, count = 64) | batch(8)
pipeline val = synthetic(32, count = 16) | batch(8)

serve train { socket = "/tmp/tsrun-golden-train.sock" }
serve val { socket = "/tmp/tsrun-golden-val.sock" }
