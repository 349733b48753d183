# A number where a parameter name goes: only views(...) takes a count
# before '=' (views(2 = ops)); every other operator, a policy's own
# operators and a plugin's parameters say so, with no "did you mean".
pipeline p =
    synthetic(size = 8, count = 10)
    | flip(2 = 0.5)
    | equalize(1 = true)
    | random_apply(invert, 2.5 = 0.5)
    | random_choice([posterize(3 = 4), solarize(128)])
    | plugin("./blur.so", 3 = 1)
    | to(uint8, nhwc)
    | batch(2)
