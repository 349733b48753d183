pipeline train =
    synthetic(32)
    | normalize([0.5, 0.5], [0.25, 0.25, 0.25])
    | batch(8)
