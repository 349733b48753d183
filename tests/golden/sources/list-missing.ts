# tsrun check --sources: a list file that is not there
pipeline p =
    list("no-such-list.csv")
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
