# plugin misuse: no path, a timeout out of range, a list where text is
# passed, a parameter twice, two paths, and a plugin after normalize.
let bands = [1, 2]
pipeline p =
    synthetic(32, count = 4)
    | plugin(timeout_ms = 0, gain = bands, gain = 2)
    | plugin("a.so", "b.so")
    | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
    | plugin("cloudmask.so", threshold = 0.8)
    | batch(1)
