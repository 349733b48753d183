# Found by the recipe audit: perspective without endpoints got
# normalize's example (mean, std) as its hint; ten corner numbers were
# said to expect "1 to 8" numbers, and an empty list too.
pipeline d =
    folder("data/train")
    | decode(rgb)
    | center_crop(64)
    | perspective([0, 0, 63, 0, 63, 63, 0, 63])
    | perspective([0, 0, 63, 0, 63, 63, 0, 63], [0, 0, 63, 0, 63, 63, 0, 63, 1, 1])
    | perspective([], [0, 0, 63, 0, 63, 63, 0, 63])
    | batch(8)
