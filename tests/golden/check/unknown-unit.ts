pipeline train = synthetic(32) | batch(8)

serve train {
    ring = 8 bananas
}
