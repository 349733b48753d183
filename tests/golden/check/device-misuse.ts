# device(cuda) misuse: after a float conversion, normalize on both sides,
# a CPU stage after it, and mean without std.
pipeline train =
    synthetic(32, count = 64)
    | normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])
    | to(float32, nchw)
    | device(cuda, mean = [0.5, 0.5, 0.5])
    | flip(horizontal)
    | batch(8)
