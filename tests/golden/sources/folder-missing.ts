# tsrun check --sources: a folder that is not there
pipeline p =
    folder("no-such-folder")
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
