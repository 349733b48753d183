pipeline bench =
    synthetic(224, count = 10000)
    | decode(rgb)
    | flip(horizontal)
    | batch(64)
