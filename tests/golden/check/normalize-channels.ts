let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline scans =
    folder("data/scans")
    | decode(gray)
    | center_crop(256)
    | normalize(mean, std)
    | to(float32, nchw)
    | batch(16)
