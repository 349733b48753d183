pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | flip(horizontal, 0.5)
    | batch(32)
# several extra arguments: one error, at the first
pipeline more = synthetic(8) | augmix(3, 3, -1, 1.0, true, bilinear, 0) | batch(4)
