# The io term dominates: the hint names queue_depth, with a value that fits.
pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | batch(32)

serve train {
    ring    = 80 samples
    threads = 1
    memory  = 64 MiB
}
