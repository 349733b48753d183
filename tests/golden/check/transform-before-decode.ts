pipeline train =
    folder("data/train")
    | random_resized_crop(224)
    | decode(rgb)
    | batch(32)
