pipeline val = folder("data/val") | decode(rgb) | resize(256) | center_crop(224)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | to(float32, nchw) | batch(64)
serve val { socket = "/tmp/val.sock", epochs = 1; ring = 4 batches }
