# cache = auto takes what the memory budget leaves: without one, an error
pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_resized_crop(224)
    | batch(32)

serve train {
    cache = auto
}
