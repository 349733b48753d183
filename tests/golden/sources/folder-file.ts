# tsrun check --sources: a folder that is a file
pipeline p =
    folder("folder-file.ts")
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
