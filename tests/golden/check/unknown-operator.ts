pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | flipp(horizontal)
    | batch(32)
