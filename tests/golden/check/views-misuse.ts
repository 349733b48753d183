# views(...): where it may stand (last, after decode, not inside a
# policy or itself, no device/tile before or after), an empty views(),
# a number as another operator's parameter name, and a batch of views
# that does not fit the memory budget.
pipeline a =
    folder("d")
    | decode(rgb)
    | random_apply(views(2 = center_crop(8)))
    | views(2 = center_crop(8) | views(1 = flip))
    | device(cuda)
    | batch(16)
pipeline b =
    folder("d")
    | decode(rgb)
    | tile(64)
    | views(2 = center_crop(8))
    | batch(8)
pipeline c = folder("d") | views(2 = center_crop(8)) | batch(8)
pipeline d = synthetic(8) | views() | batch(8)
pipeline e = synthetic(8) | flip(2 = invert) | batch(8)
pipeline f = synthetic(8, height=300, width=300) | views(2 = random_resized_crop(224) | to(float32, nchw)) | batch(256)
serve f { memory = 64 MiB }
