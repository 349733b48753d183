# On-board image pipeline with a user module: like cubesat.ts, but the
# cloud test is a plugin operator, a C function the mission team can
# change and upload without rebuilding tsrun (src/tsrun_plugin.h).
# tsrun runs it in an isolated process: a crash or a hang past timeout_ms
# costs that tile (on_error = skip lists it), never the loader. Reads
# the frames of examples/cubesat.ts (examples/frames/<camera>/*.png).
# Build the plugin next to this file (meson builds the same one as
# build/examples/plugins/cloudmask.so), then, from the repository root:
#
#   cc -shared -fPIC -O2 -Iinclude/tsrun -o examples/cloudmask.so examples/plugins/cloudmask.c
#   tsrun check --sources examples/cubesat-plugin.ts
#   tsrun bench examples/cubesat-plugin.ts --epochs 1

pipeline frames =
    folder("frames", ext = [".png"])
    | decode(gray, depth = 16)
    | tile(512, stride = 512)
    | plugin("cloudmask.so", threshold = 0.8, max_fraction = 0.5, timeout_ms = 50)
    | to(uint8)
    | batch(8)

serve frames {
    socket   = "/run/tsrun/frames.sock"
    epochs   = 0                # forever: the frames listed at start, epoch after epoch
    ring     = 64 samples
    memory   = 128 MiB
    threads  = 2
    on_error = skip             # a bad frame or a plugin failure costs one sample
    queue_depth = 8
}
