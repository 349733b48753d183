let mean = [0.485, 0.456, 0.406]

pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | normalize(mean)
    | batch(32)
