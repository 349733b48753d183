# ImageNet training with torchvision's colour operators, each applied with
# a probability as RandomAutocontrast, RandomEqualize, RandomPosterize and
# RandomSolarize do (on uint8 pixels: before normalize), then a fixed
# brightness and saturation boost.
# Reads data/train of the repository root, which ./scripts/quickstart
# makes (relative paths resolve against this file's folder). From the
# repository root (tsrun is build/src/tsrun in a source tree):
#
#   tsrun check examples/imagenet-color.ts
#   tsrun graph examples/imagenet-color.ts
#   tsrun bench examples/imagenet-color.ts

let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]

pipeline train =
    folder("../data/train", ext = [".jpg", ".jpeg", ".png"])
    | shuffle(seed = 42)
    | decode(rgb)
    | random_resized_crop(224)
    | autocontrast(p = 0.2)
    | equalize(p = 0.2)
    | posterize(4, p = 0.2)
    | solarize(128, p = 0.2)
    | adjust_brightness(1.1)
    | adjust_saturation(1.2)
    | flip(horizontal, p = 0.5)
    | normalize(mean, std)
    | to(float32, nchw)
    | batch(256)
