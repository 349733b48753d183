let size = 224
let size = 256

pipeline train = synthetic(size) | batch(8)
