pipeline train =
    folder("data/train")
    | shuffle(sed = 42)
    | decode(rgb)
    | center_crop(224)
    | batch(32)
