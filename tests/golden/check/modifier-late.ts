pipeline train =
    folder("data/train")
    | decode(rgb)
    | shuffle(seed = 1)
    | center_crop(224)
    | batch(32)
