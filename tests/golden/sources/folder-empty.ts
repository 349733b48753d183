# tsrun check --sources: a folder without class sub-folders (this one)
pipeline p =
    folder(".", ext = [".jpg"])
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
