pipeline val =
    folder("data/val")
    | decode(rgb)
    | resize(256)
    | batch(64)
