# augmix: severity 1 to 10 (torchvision raises outside), at least one
# chain, chain_depth -1 (drawn) to 16, alpha above 0, the tensor path's
# interpolations only, a fill per channel, uint8 L or RGB before normalize.
pipeline train =
    folder("data/train")
    | decode(rgb)
    | augmix(severity = 11)
    | augmix(0)
    | augmix(mixture_width = 0)
    | augmix(3, 3, -2)
    | augmix(alpha = 0)
    | augmix(alpha = -1)
    | augmix(interpolation = bicubic)
    | augmix(fill = [1, 2])
    | augmix(all_ops = 1)
    | center_crop(224)
    | augmix
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | augmix
    | batch(8)

pipeline deep =
    folder("data/train")
    | decode(rgb, depth = 16)
    | center_crop(224)
    | augmix
    | batch(8)

pipeline rgba =
    synthetic([32, 32], channels = 4)
    | augmix(severity = 3)
    | batch(8)

pipeline fine =
    folder("data/train")
    | decode(gray)
    | center_crop(224)
    | augmix(10, 1, 16, 0.01, all_ops = false, interpolation = nearest, fill = 255)
    | batch(8)
