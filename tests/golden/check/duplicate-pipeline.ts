pipeline train = synthetic(32) | batch(8)

pipeline train = synthetic(64) | batch(8)
