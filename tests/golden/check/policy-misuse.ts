# random_apply, random_choice and random_erasing: shapes through the
# branches, what may run inside, and erasing on the float tensor only.
pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_erasing(0.25)
    | center_crop(224)
    | random_apply(resize(112) | center_crop(100), p = 0.5)
    | random_choice([])
    | random_choice([center_crop(200), invert], p = [1, 2, 3])
    | random_apply(tile(32))
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | random_apply(equalize)
    | batch(8)
