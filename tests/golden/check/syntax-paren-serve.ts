pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | batch(32

serve train {
    epochs = 2
}
