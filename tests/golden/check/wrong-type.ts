pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_resized_crop(224, scale = "0.08..1.0")
    | batch(32)
