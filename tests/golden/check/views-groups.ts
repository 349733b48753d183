# views(...): the view counts of its groups, what each group must be, and
# groups that end at a variable size; a group whose policy reports an error
# gets that error alone (no "variable size" for the shape it left as is).
pipeline a =
    synthetic(64, height = 300, width = 400)
    | views(0 = center_crop(32), x = flip, 2.5 = center_crop(8), center_crop(8), 3 = flip, 2 = [1, 2], 40 = center_crop(9))
    | flip
    | batch(16)
pipeline b =
    folder("d")
    | decode(rgb)
    | views(2 = flip(horizontal) | to(float32, nchw), 1 = center_crop(8), 1 = invert)
    | batch(4)
pipeline c =
    folder("d")
    | decode(rgb)
    | views(2 = random_apply(random_resized_crop(96), p = 0.5), 1 = random_choice(center_crop(8), flip))
    | batch(4)
