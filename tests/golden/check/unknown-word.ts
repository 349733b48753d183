pipeline train =
    folder("data/train")
    | decode(rgbb)
    | resize([224, 224], interp = cubic)
    | batch(32)
