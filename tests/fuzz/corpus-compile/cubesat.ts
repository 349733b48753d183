pipeline frames = list("frames.csv") | decode(gray, depth = 16) | tile(512, stride = 512)
    | filter(threshold = 0.9, max_fraction = 0.5) | to(uint8) | batch(16)
serve frames { socket = "/tmp/cubesat.sock" memory = 64 MiB threads = 2 on_error = skip }
