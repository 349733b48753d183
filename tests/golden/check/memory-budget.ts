pipeline train =
    folder("data/train")
    | decode(rgb)
    | random_resized_crop(224)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(256)

serve train {
    ring    = 8 batches
    threads = 4
    memory  = 1 GiB
}
