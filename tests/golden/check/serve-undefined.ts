pipeline train = synthetic(32) | batch(8)

serve trian {
    epochs = 2
}
