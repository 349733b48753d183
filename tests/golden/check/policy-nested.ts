# An op inside random_apply, random_choice or views whose arguments or
# build fail reports once, and its branch is dropped: nothing judges the
# shape it leaves (no disagreement of alternatives, no "must keep the
# shape", no "variable size" for a group, no "batch needs a fixed size").
pipeline choice =
    synthetic(8, height = 64, width = 64)
    | random_choice([random_choice([center_crop(8), center_crop(9)]), center_crop(8)])
    | random_choice([random_apply(center_crop(8)), center_crop(8)])
    | random_choice([center_crop(size = -3), center_crop(4)])
    | random_choice([resize(32, max_size = 16) | center_crop(2), center_crop(2)])
    | batch(4)
pipeline apply =
    synthetic(8, height = 64, width = 64)
    | random_apply(center_crop(size = 0) | center_crop(8) | resize(64))
    | random_apply(random_choice([center_crop(8), center_crop(9)]) | resize(64))
    | random_apply(pad(2, padding_mode = edge, fill = [1, 2, 3, 4]) | center_crop(64))
    | batch(4)
pipeline group =
    synthetic(8, height = 64, width = 64)
    | views(2 = random_choice([center_crop(8), center_crop(9)]),
            1 = random_apply(center_crop(8)) | flip,
            1 = random_apply(random_choice([center_crop(8), flip])),
            3 = resize(32, max_size = 16) | center_crop(16),
            1 = center_crop(size = 999) | flip)
    | batch(4)
pipeline top =
    folder("d")
    | decode(rgb)
    | random_choice([center_crop(8), center_crop(9)])
    | batch(4)
serve top {}
