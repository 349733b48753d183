pipeline train = synthetic(32) | flipp | batch(8)
