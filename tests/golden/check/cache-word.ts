# cache takes a size, auto or off
pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_resized_crop(224)
    | batch(32)

serve train {
    cache = lots
}
