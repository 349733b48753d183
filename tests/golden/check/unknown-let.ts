let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | normalize(meen, std)
    | batch(32)
