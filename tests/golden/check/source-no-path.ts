# A source without a usable path is reported once, and nothing else:
# no "out of memory" after it.
pipeline a = folder() | decode(rgb) | center_crop(4) | batch(4)
pipeline b = folder(42) | decode(rgb) | center_crop(4) | batch(4)
pipeline c = folder(nope) | decode(rgb) | center_crop(4) | batch(4)
pipeline d = list() | decode(rgb) | center_crop(4) | batch(4)
pipeline e = list(3) | decode(rgb) | center_crop(4) | batch(4)
pipeline f = tar() | decode(rgb) | center_crop(4) | batch(4)
pipeline g = tar(1) | decode(rgb) | center_crop(4) | batch(4)
