# Syntax slips in views(...) and a call's named arguments: a missing value
# after '=', and a number or string where the name (or view count) goes.
pipeline p = folder("d") | decode(rgb) | views(2 = ) | batch(2)
pipeline q = folder("d") | decode(rgb) | views(-1 = center_crop(8)) | batch(2)
pipeline r = folder("d") | decode(rgb) | views("2" = center_crop(8)) | batch(2)
pipeline s = folder("d") | decode(rgb) | views(g = 2 = center_crop(8)) | batch(2)
pipeline t = folder("d") | decode(rgb) | flip(p = ) | batch(2)
