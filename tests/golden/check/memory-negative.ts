pipeline train = synthetic(32) | batch(8)

serve train {
    memory = -5 GiB
    ring = -2 batches
}
