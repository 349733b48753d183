# Found by the recipe audit: misuses a user porting torchvision recipes
# writes. A chain of operators as a value starts with a call in
# parentheses: a bare first name is a word, and the missing ')' says how
# to write it when that word names an operator (not for decode(rgb | ...)).
pipeline a =
    folder("data/train")
    | decode(rgb)
    | center_crop(64)
    | random_apply(invert | equalize, p = 0.3)
    | batch(8)

pipeline b =
    folder("data/train")
    | decode(rgb)
    | center_crop(64)
    | random_choice([posterize(4), invert | equalize])
    | batch(8)

pipeline c =
    folder("data/train")
    | decode(rgb | resize(32))
    | batch(8)
