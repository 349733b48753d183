pipeline val =
    folder("data/val")
    | decode(rgb)
    | flip(horizontal)

serve val {
    epochs = 1
}
