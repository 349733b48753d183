# The geometric operators: rotate, affine and the random ones take uint8
# pixels; a fill is one level or one per channel; pad may not crop the
# whole image; erase takes levels on integer data, any value after
# normalize, but not nchw; a random expand needs a resize before batch.
pipeline deep =
    folder("data/train")
    | decode(rgb, depth = 16)
    | rotate(30, fill = [0, 0])
    | center_crop(224)
    | pad([-120, 0], padding_mode = mirror)
    | batch(8)

pipeline late =
    folder("data/train")
    | decode(rgb)
    | center_crop(224)
    | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
    | erase(10, 10, 50, 50, [-1, 0, 1])
    | random_affine(10, shear = [1, 2, 3])
    | to(float32, nchw)
    | erase(0, 0, 8, 8)
    | batch(8)

pipeline warp =
    folder("data/train")
    | decode(gray)
    | center_crop(224)
    | perspective([0, 0, 223, 0, 223, 223, 0, 223], [0, 0, 100, 0, 200, 0, 0, 223])
    | erase(0, 0, 8, 8, 0.5)
    | random_rotation(10, expand = true)
    | batch(8)
