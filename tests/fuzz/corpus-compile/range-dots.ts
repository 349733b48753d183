# A range written with three dots.
pipeline t = folder("x") | decode(rgb) | random_resized_crop(8, ratio = 3/4...4/3) | batch(4)
