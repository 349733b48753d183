# On-board image pipeline: 16-bit grayscale PNG frames from the camera are
# cut into 512x512 tiles, tiles that are mostly cloud are dropped, and the
# rest go out as 8-bit for the on-board classifier. Small ring, few
# threads and a hard memory budget: the flight computer has 512 MiB.
#
# Reads examples/frames/<camera>/*.png (relative paths resolve against
# this file's folder): 16-bit grayscale PNG frames of 512 px or more a
# side (tests/examples.sh and tests/embed-memory.sh make some with PIL).
# On the ground, from the repository root:
#
#   tsrun check --sources examples/cubesat.ts
#   tsrun bench examples/cubesat.ts --epochs 1
#   build/examples/embed examples/cubesat.ts --epochs 1 --memory 64

pipeline frames =
    folder("frames", ext = [".png"])
    | decode(gray, depth = 16)
    | tile(512, stride = 512)
    | filter(threshold = 0.8, max_fraction = 0.5)    # drop cloudy tiles
    | to(uint8)
    | batch(8)

serve frames {
    socket   = "/run/tsrun/frames.sock"
    epochs   = 0                # forever: the frames listed at start, epoch after epoch
    ring     = 64 samples
    memory   = 128 MiB
    threads  = 2
    on_error = skip             # a corrupt downlink frame must not stop the loader
    queue_depth = 8
}
