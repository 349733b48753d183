pipeline t = tar("shards/train-{000..146}.tar") | shard(0, 4) | shuffle | decode(rgb) | resize(224, 224) | batch(8)
serve t { socket = "/tmp/t.sock" epochs = 2 ring = 16 samples memory = 512 MB }
