# Numbers too large for any integer are refused before conversion.
pipeline p = synthetic(count = 10, height = 8, width = 8, channels = 3, classes = 2) | batch(256)

serve p {
    ring   = 11111111111111111111111 batches
    memory = 1e30 GiB
}
