pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_resized_crop(224)
    | flip(horizontal, p = 1.5)
    | batch(32)
