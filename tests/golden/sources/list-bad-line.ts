# tsrun check --sources: a list with a line that has no label
pipeline p =
    list("bad-list.csv")
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
