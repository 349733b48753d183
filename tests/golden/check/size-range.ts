# Image sizes are 1 to 65535 pixels: a negative or zero size is refused
# at check time, with the caret on the value, and nothing cascades.
pipeline a = synthetic(32, count = 20) | center_crop(-1) | batch(4)
pipeline b = synthetic(32, count = 20) | random_crop(-2) | batch(4)
pipeline c = synthetic(32, count = 20) | resize([-3, 5]) | batch(4)
pipeline d = synthetic(32, count = 20) | resize(-5) | batch(4)
pipeline e = synthetic(32, count = 20) | resize(0) | center_crop(4) | batch(4)
pipeline f = synthetic(32, count = 20) | center_crop(0) | batch(4)
pipeline g = folder("x") | decode(rgb) | random_resized_crop(0) | batch(4)
pipeline h = synthetic(32, count = 20) | tile(0) | batch(4)
pipeline i = synthetic(32, count = 20) | tile(8, stride = 0) | batch(4)
pipeline j = synthetic(32, count = 20) | center_crop(99999999999999999999) | batch(4)
pipeline k = synthetic([65535, 2]) | resize(40000) | batch(1)
