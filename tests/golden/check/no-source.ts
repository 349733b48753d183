pipeline train =
    decode(rgb)
    | center_crop(224)
    | batch(32)
