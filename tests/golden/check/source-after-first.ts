pipeline train =
    folder("data/train")
    | decode(rgb)
    | list("more.csv")
    | center_crop(224)
    | batch(32)
