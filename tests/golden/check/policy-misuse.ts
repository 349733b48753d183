# random_apply, random_choice and random_erasing: shapes through the
# branches, what may run inside, and erasing on the float tensor only;
# the policies: magnitude in range, fill per channel, uint8 before
# normalize; alternatives that differ only in being normalized.
pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_erasing(0.25)
    | center_crop(224)
    | random_apply(resize(112) | center_crop(100), p = 0.5)
    | random_choice([])
    | random_choice([center_crop(200), invert], p = [1, 2, 3])
    | random_apply(tile(32))
    | rand_augment(2, 31)
    | trivial_augment_wide(num_magnitude_bins = 31, fill = [1, 2])
    | auto_augment(policy = imagnet)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | random_apply(equalize)
    | rand_augment
    | batch(8)
# alternatives that differ only in being normalized say so
pipeline mixed =
    folder("data/train")
    | decode(rgb)
    | center_crop(64)
    | random_choice([normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2]), to(float32)])
    | batch(8)
