# The colour operators take uint8 pixels, bits 1..8, thresholds 0..255,
# factors >= 0, and saturation needs colour.
pipeline photos =
    folder("data/train")
    | decode(rgb, depth = 16)
    | posterize(bits = 9)
    | solarize(300)
    | adjust_brightness(-0.5)
    | center_crop(224)
    | batch(8)

pipeline late =
    folder("data/train")
    | decode(gray)
    | adjust_saturation(1.5)
    | normalize([0.5], [0.5])
    | equalize
    | center_crop(224)
    | batch(8)

pipeline hue =
    folder("data/train")
    | decode(gray)
    | center_crop(224)
    | adjust_hue(0.75)
    | color_jitter(0.4, hue = 0.2)
    | batch(8)
