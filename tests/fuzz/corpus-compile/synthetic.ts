pipeline s = synthetic(count = 100, height = 32, width = 32, channels = 3, classes = 10)
    | random_crop(28, padding = 2) | flip | grayscale(p = 0.1) | color_jitter(brightness = 0.4, contrast = 0.4, saturation = 0.4)
    | to(float16, nhwc) | batch(32)
