#!/usr/bin/python3
"""The colour operators (dsl/ops_color.c, runtime/color.c) against
torchvision 0.14's functional API.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14 /
Pillow 9.4). Exit 77 (skip) when torch or torchvision cannot be imported or
the colour tool was not built.

The operators are compiled from their pipeline text (tests/tools/
color-tool.c: the DSL, the registry row, ts_kernel_apply and the kernel) and
run on the same uint8 pixels as torchvision on PIL images, the path a
DataLoader takes and tsrun's contract. Images: crops of the real photos
torch-equal.py uses (/usr/share/backgrounds, else ImageMagick plasma), each
also as 1-channel L, plus edge cases (odd sizes, a single level, two
levels, a narrow range, a 1x1 image). Asserted: every result equal to
torchvision's (max abs diff 0 levels) for invert, posterize (bits 1..8),
solarize, autocontrast, equalize, adjust_brightness, adjust_contrast,
adjust_saturation, adjust_hue (factors -0.5..0.5), and chains of them.

torchvision's tensor path (F.* on uint8 tensors) is computed too: there the
table ops are asserted equal as well, and the difference of the float ones
(autocontrast and the adjust_* in float32, truncating; hue through
float HSV) is printed as
"info", since tsrun follows the PIL path.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision.transforms.functional as F
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

TOOL = os.environ.get("TS_TOOL_COLOR_TOOL")
if not TOOL or not os.access(TOOL, os.X_OK):
    print("skip: TS_TOOL_COLOR_TOOL not set or not built")
    sys.exit(77)

failures = []
info_max = {}


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (" " + detail if detail else ""))
    if not ok:
        failures.append(name)


def photos(tmp):
    """RGB crops of real photos (as torch-equal.py takes them)."""
    imgs = []
    src_dir = "/usr/share/backgrounds/mate/nature"
    paths = []
    if os.path.isdir(src_dir):
        paths = sorted(os.path.join(src_dir, f) for f in os.listdir(src_dir)
                       if f.lower().endswith((".jpg", ".jpeg", ".png")))[:4]
    sizes = [(400, 350), (333, 500), (511, 289), (224, 224)]
    for k, p in enumerate(paths):
        im = Image.open(p).convert("RGB")
        w, h = sizes[k % len(sizes)]
        box = (im.width // 7, im.height // 9,
               im.width // 7 + min(im.width - im.width // 7, w * 3),
               im.height // 9 + min(im.height - im.height // 9, h * 3))
        imgs.append(("%s-%dx%d" % (os.path.basename(p), w, h),
                     im.crop(box).resize((w, h), Image.BILINEAR)))
    if len(imgs) < 2:
        for k, (w, h) in enumerate(sizes[:2]):
            path = os.path.join(tmp, "pat%d.png" % k)
            subprocess.run(["convert", "-size", "%dx%d" % (w, h), "plasma:fractal",
                            "-seed", str(k + 1), path], check=True)
            imgs.append(("plasma%d" % k, Image.open(path).convert("RGB")))
    return imgs


def edge_cases(base):
    """Odd sizes and degenerate histograms, from a real photo's pixels."""
    a = np.asarray(base)
    out = [("odd-17x13", Image.fromarray(a[:13, :17].copy())),
           ("1x1", Image.fromarray(a[:1, :1].copy())),
           ("flat", Image.fromarray(np.full((9, 11, 3), 77, np.uint8))),
           ("two-levels", Image.fromarray(
               np.where(a[:40, :50] > 128, 200, 3).astype(np.uint8))),
           # a narrow range: autocontrast stretches, equalize spreads it
           ("narrow", Image.fromarray((a[:64, :96] // 8 + 100).astype(np.uint8)))]
    return out


def run(tmp, im, ops):
    arr = np.asarray(im)
    c = 1 if arr.ndim == 2 else arr.shape[2]
    inp = os.path.join(tmp, "in.raw")
    out = os.path.join(tmp, "out.raw")
    np.ascontiguousarray(arr).tofile(inp)
    subprocess.run([TOOL, inp, str(im.width), str(im.height), str(c), out, ops],
                   check=True)
    got = np.fromfile(out, dtype=np.uint8)
    return got.reshape(arr.shape)


def maxdiff(a, b):
    a = np.asarray(a).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    if a.shape != b.shape:
        return float("inf")
    return int(np.abs(a - b).max()) if a.size else 0


def tensor_of(im):
    a = np.asarray(im)
    if a.ndim == 2:
        a = a[:, :, None]
    return torch.from_numpy(a.copy()).permute(2, 0, 1).contiguous()


def hwc(t, im):
    a = t.permute(1, 2, 0).numpy()
    return a[:, :, 0] if np.asarray(im).ndim == 2 else a


# (pipeline text, torchvision function, tensor path exact?, rgb only?)
def cases():
    c = [("invert", F.invert, True, False),
         ("autocontrast", F.autocontrast, False, False),
         ("equalize", F.equalize, True, False)]
    for bits in range(1, 9):
        c.append(("posterize(%d)" % bits, lambda x, b=bits: F.posterize(x, b), True, False))
    for th in (0, 1, 64, 127.5, 128, 200, 254.9, 255):
        c.append(("solarize(%g)" % th, lambda x, t=th: F.solarize(x, t), True, False))
    for f in (0, 0.3, 0.6, 0.95, 1, 1.3, 1.77, 2.5, 10):
        c.append(("adjust_brightness(%g)" % f,
                  lambda x, f=f: F.adjust_brightness(x, f), False, False))
        c.append(("adjust_contrast(%g)" % f,
                  lambda x, f=f: F.adjust_contrast(x, f), False, False))
        c.append(("adjust_saturation(%g)" % f,
                  lambda x, f=f: F.adjust_saturation(x, f), False, True))
    for f in (-0.5, -0.37, -0.1, -0.01, 0, 0.004, 0.01, 0.1, 0.25, 0.5):
        c.append(("adjust_hue(%g)" % f, lambda x, f=f: F.adjust_hue(x, f), False, True))
    # chains, in order, as a recipe writes them
    c.append(("adjust_brightness(1.3) | equalize | posterize(4)",
              lambda x: F.posterize(F.equalize(F.adjust_brightness(x, 1.3)), 4),
              False, False))
    c.append(("solarize(100) | autocontrast | adjust_contrast(0.5) | invert",
              lambda x: F.invert(F.adjust_contrast(F.autocontrast(F.solarize(x, 100)), 0.5)),
              False, False))
    c.append(("adjust_hue(0.3) | adjust_saturation(1.5) | equalize",
              lambda x: F.equalize(F.adjust_saturation(F.adjust_hue(x, 0.3), 1.5)),
              False, True))
    c.append(("adjust_saturation(0.2) | adjust_contrast(1.8) | invert(p = 1)",
              lambda x: F.invert(F.adjust_contrast(F.adjust_saturation(x, 0.2), 1.8)),
              False, True))
    return c


def one(tmp, name, im, ops, fn, tensor_exact):
    got = run(tmp, im, ops)
    ref = np.asarray(fn(im))
    d = maxdiff(ref, got)
    check("%s %s" % (name, ops), d == 0, "max %s levels" % d)
    # the tensor path
    tref = hwc(fn(tensor_of(im)), im)
    td = maxdiff(tref, got)
    if tensor_exact:
        check("%s %s (tensor path)" % (name, ops), td == 0, "max %s levels" % td)
    else:
        key = ops.split("(")[0] if "|" not in ops else "chain"
        info_max[key] = max(info_max.get(key, 0), td)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        imgs = photos(tmp)
        imgs += edge_cases(imgs[0][1])
        imgs += [(n + "-L", im.convert("L")) for n, im in list(imgs[:2])]
        for name, im in imgs:
            gray = im.mode == "L"
            for ops, fn, tensor_exact, rgb_only in cases():
                if rgb_only and gray:
                    continue
                one(tmp, name, im, ops, fn, tensor_exact)
        # p = 0 never applies; p = 1 always does
        im = imgs[0][1]
        check("invert(p = 0) keeps the image",
              maxdiff(run(tmp, im, "invert(p = 0)"), np.asarray(im)) == 0)
        check("equalize(p = 1) equalizes",
              maxdiff(run(tmp, im, "equalize(p = 1)"), np.asarray(F.equalize(im))) == 0)
    for k in sorted(info_max):
        print("info tensor path (uint8 tensors, float32) vs PIL path: %s max %d levels"
              % (k, info_max[k]))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
