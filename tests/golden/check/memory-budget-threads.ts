# Scratch dominates: the hint names threads, with a value that fits; and
# when threads is already 1, it says so.
pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(64)
    | batch(8)

serve train {
    ring        = 2 batches
    threads     = 16
    queue_depth = 4
    memory      = 100 MiB
}

pipeline small = folder("data/small") | decode(rgb) | center_crop(64) | batch(8)

serve small {
    ring        = 2 batches
    threads     = 1
    queue_depth = 4
    memory      = 8 MiB
}
