# gaussian_blur needs odd kernel sides and sigma above 0; adjust_sharpness
# takes uint8 only, adjust_gamma uint8 or uint16; neither after normalize.
# gaussian_blur runs after normalize too (float32 nhwc, as F.gaussian_blur
# on a float tensor), but not on float16 or nchw data.
pipeline blur =
    folder("data/train")
    | decode(rgb)
    | gaussian_blur([5, 4], sigma = 0..2)
    | gaussian_blur(3, 0)
    | center_crop(224)
    | batch(8)

pipeline deep =
    folder("data/train")
    | decode(rgb, depth = 16)
    | adjust_gamma(0.8)
    | gaussian_blur(3, 1.5)
    | adjust_sharpness(2)
    | center_crop(224)
    | batch(8)

pipeline late =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
    | adjust_gamma(-1)
    | gaussian_blur(3)
    | batch(8)

pipeline half =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | to(float16)
    | gaussian_blur(3)
    | batch(8)

pipeline planar =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | to(float32, nchw)
    | gaussian_blur(3)
    | batch(8)
