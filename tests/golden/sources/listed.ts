# tsrun check --sources: a list that lists (its images are read at run time)
pipeline p =
    list("good-list.csv")
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
