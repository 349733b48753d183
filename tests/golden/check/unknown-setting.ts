pipeline train = synthetic(32) | batch(8)

serve train {
    epocs = 2
    ring = 8
}
