pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | flip(horizontal, 0.5)
    | batch(32)
