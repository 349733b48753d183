pipeline p = folder("日本	�") | decode | resize(0) | center_crop([-1, 65536]) | normalize([1,2],[1,2,3]) | tile(0, stride = 0) | batch(8)
serve p { ring = 8 bananas memory = -5 GiB socket = "" }
serve p { memory = -1 KiB ring = -2 batches }
pipeline q = list() | decode(rgb | batch(2

serve q { }
