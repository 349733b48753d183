# views(...): the view counts of its groups and what each group must be.
pipeline a =
    synthetic(64, height = 300, width = 400)
    | views(0 = center_crop(32), x = flip, 2.5 = center_crop(8), center_crop(8), 3 = flip, 2 = [1, 2], 40 = center_crop(9))
    | flip
    | batch(16)
