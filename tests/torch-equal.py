#!/usr/bin/python3
"""Numerical equality of tsrun's augment kernels with torchvision.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14 /
Pillow 9.4). Exit 77 (skip) when torch or torchvision cannot be imported or
the kernel tool was not built.

For a few real photos (crops of /usr/share/backgrounds, else ImageMagick
patterns), decoded once with PIL, the same uint8 pixels go to torchvision
(on PIL images, as a DataLoader does) and to tests/tools/kernel-tool.
Measured and asserted tolerances:
  CenterCrop(224)+ToTensor+Normalize  max abs diff <= 1e-6 (measured 0)
  Resize(256) bilinear (antialiased)  max abs diff 0 uint8 levels (exact)
  Resize box / nearest / bicubic / lanczos  exact (PIL's filters and
                                      supports, the same fixed point)
  resized_crop (RandomResizedCrop with a fixed box)  exact, bilinear,
                                      bicubic and lanczos
  hflip / vflip, Grayscale(1 and 3)   exact
  adjust_brightness/contrast/saturation with fixed factors  exact
  output stage float16                within float16 rounding of float32
The resize and output checks run once per vector path of the kernels
(TSRUN_SIMD: the CPU's best, sse4.1, generic), each with the same bounds.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

TOOL = os.environ.get("TS_TOOL_KERNEL_TOOL")
if not TOOL or not os.access(TOOL, os.X_OK):
    print("skip: TS_TOOL_KERNEL_TOOL not set or not built")
    sys.exit(77)

# The kernels' vector paths (runtime/simd.h); a path this CPU lacks falls
# back to its best one, so the list is safe everywhere.
SIMD_PATHS = ["best", "sse4.1", "generic"]
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (" " + detail if detail else ""))
    if not ok:
        failures.append(name)


def make_images(tmp):
    """A few RGB photos of ImageNet-like size, as PIL images."""
    imgs = []
    src_dir = "/usr/share/backgrounds/mate/nature"
    photos = []
    if os.path.isdir(src_dir):
        photos = sorted(os.path.join(src_dir, f) for f in os.listdir(src_dir)
                        if f.lower().endswith((".jpg", ".jpeg", ".png")))[:3]
    sizes = [(400, 350), (333, 500), (511, 289)]
    for k, p in enumerate(photos):
        im = Image.open(p).convert("RGB")
        w, h = sizes[k % len(sizes)]
        # A crop (not the whole frame) so the pixels have real detail.
        box = (im.width // 7, im.height // 9,
               im.width // 7 + min(im.width - im.width // 7, w * 3),
               im.height // 9 + min(im.height - im.height // 9, h * 3))
        imgs.append(("photo%d" % k, im.crop(box).resize((w, h), Image.BILINEAR)))
    if len(imgs) < 2:
        for k, (w, h) in enumerate(sizes[:2]):
            path = os.path.join(tmp, "pat%d.png" % k)
            subprocess.run(["convert", "-size", "%dx%d" % (w, h), "plasma:fractal",
                            "-seed", str(k + 1), path], check=True)
            imgs.append(("plasma%d" % k, Image.open(path).convert("RGB")))
    return imgs


def tool(tmp, op, im, *args):
    """Run kernel-tool on im's pixels; returns the raw output bytes."""
    arr = np.asarray(im)
    c = 1 if arr.ndim == 2 else arr.shape[2]
    inp = os.path.join(tmp, "in.raw")
    out = os.path.join(tmp, "out.raw")
    arr.tofile(inp)
    subprocess.run([TOOL, op, inp, str(im.width), str(im.height), str(c), out]
                   + [str(a) for a in args], check=True, stdout=subprocess.DEVNULL)
    with open(out, "rb") as f:
        return f.read()


def as_u8(raw, h, w, c):
    a = np.frombuffer(raw, dtype=np.uint8)
    return a.reshape(h, w, c) if c > 1 else a.reshape(h, w)


def maxdiff(a, b):
    a = np.asarray(a).astype(np.float64)
    b = np.asarray(b).astype(np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.abs(a - b).max()) if a.size else 0.0


def main():
    with tempfile.TemporaryDirectory() as tmp:
        imgs = make_images(tmp)
        norm = "normalize:%s:%s" % (",".join(map(str, MEAN)), ",".join(map(str, STD)))
        for simd in SIMD_PATHS:
            if simd == "best":
                os.environ.pop("TSRUN_SIMD", None)
            else:
                os.environ["TSRUN_SIMD"] = simd
            for name, im in imgs:
                per_path(tmp, simd + " " + name, im, norm, simd == SIMD_PATHS[0])
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


def per_path(tmp, name, im, norm, all_kernels):
    """The checks of one image; the ones that do not depend on the vector
    path (crop, flip, grayscale, colour) only when all_kernels."""
    # CenterCrop(224) + ToTensor + Normalize, NCHW float32.
    ref = T.Compose([T.CenterCrop(224), T.ToTensor(),
                     T.Normalize(MEAN, STD)])(im).numpy()
    got = np.frombuffer(tool(tmp, "output", im, "center:224x224", norm,
                             "to:float32:nchw"), dtype=np.float32)
    d = maxdiff(ref, got.reshape(3, 224, 224))
    check(name + " centercrop+totensor+normalize", d <= 1e-6, "max %.3g" % d)

    # The same with NHWC layout and a horizontal flip.
    ref_f = T.Compose([T.CenterCrop(224), T.RandomHorizontalFlip(1.0),
                       T.ToTensor(), T.Normalize(MEAN, STD)])(im)
    got = np.frombuffer(tool(tmp, "output", im, "center:224x224", "flip:h",
                             norm, "to:float32:nhwc"), dtype=np.float32)
    d = maxdiff(ref_f.permute(1, 2, 0).numpy(), got.reshape(224, 224, 3))
    check(name + " centercrop+flip+normalize nhwc", d <= 1e-6, "max %.3g" % d)

    # float16 output: torchvision's float32 result cast to half.
    got = np.frombuffer(tool(tmp, "output", im, "center:224x224", norm,
                             "to:float16:nchw"), dtype=np.float16)
    d = maxdiff(torch.from_numpy(ref).half().numpy(), got.reshape(3, 224, 224))
    check(name + " normalize float16 (RNE)", d == 0, "max %.3g" % d)

    # Resize(256) + CenterCrop(224) + ToTensor (the eval recipe).
    ref = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])(im).numpy()
    got = np.frombuffer(tool(tmp, "output", im, "resize:256", "center:224x224",
                             "to:float32:nchw"), dtype=np.float32)
    d = maxdiff(ref, got.reshape(3, 224, 224))
    check(name + " resize256+centercrop+totensor", d <= 1e-6, "max %.3g" % d)

    # Resize kernels on uint8, in uint8 levels.
    r = T.Resize(256)(im)
    got = as_u8(tool(tmp, "resize", im, r.width, r.height, "bilinear"),
                r.height, r.width, 3)
    d = maxdiff(np.asarray(r), got)
    check(name + " resize(256) bilinear %dx%d" % (r.width, r.height), d <= 0,
          "max %g levels" % d)
    for (ow, oh) in [(224, 224), (97, 61), (600, 500)]:
        for mode, interp in [("bilinear", T.InterpolationMode.BILINEAR),
                             ("area", T.InterpolationMode.BOX),
                             ("nearest", T.InterpolationMode.NEAREST),
                             ("bicubic", T.InterpolationMode.BICUBIC),
                             ("lanczos", T.InterpolationMode.LANCZOS)]:
            r = F.resize(im, [oh, ow], interpolation=interp)
            got = as_u8(tool(tmp, "resize", im, ow, oh, mode), oh, ow, 3)
            d = maxdiff(np.asarray(r), got)
            check("%s resize %s %dx%d" % (name, mode, ow, oh), d <= 0,
                  "max %g levels" % d)

    # RandomResizedCrop with a fixed box: resized_crop.
    for (i, j, h, w) in [(10, 20, 200, 150), (0, 0, im.height, im.width),
                         (37, 5, 101, 263)]:
        r = F.resized_crop(im, i, j, h, w, [224, 224])
        got = as_u8(tool(tmp, "resized-crop", im, j, i, w, h, 224, 224),
                    224, 224, 3)
        d = maxdiff(np.asarray(r), got)
        check("%s resized_crop box %d,%d %dx%d" % (name, j, i, w, h), d <= 0,
              "max %g levels" % d)
        for mode, interp in [("bicubic", T.InterpolationMode.BICUBIC),
                             ("lanczos", T.InterpolationMode.LANCZOS)]:
            r = F.resized_crop(im, i, j, h, w, [224, 224], interpolation=interp)
            got = as_u8(tool(tmp, "resized-crop", im, j, i, w, h, 224, 224, mode),
                        224, 224, 3)
            d = maxdiff(np.asarray(r), got)
            check("%s resized_crop %s box %d,%d %dx%d" % (name, mode, j, i, w, h),
                  d <= 0, "max %g levels" % d)

    if not all_kernels:
        return
    # CenterCrop larger than the image: torchvision pads with 0.
    big_w, big_h = im.width + 31, im.height + 20
    r = T.CenterCrop((big_h, big_w))(im)
    x = -((big_w - im.width) // 2)
    y = -((big_h - im.height) // 2)
    got = as_u8(tool(tmp, "crop", im, x, y, big_w, big_h), big_h, big_w, 3)
    check(name + " centercrop padded", maxdiff(np.asarray(r), got) == 0)

    # Flips.
    for how, fn in [("h", F.hflip), ("v", F.vflip)]:
        got = as_u8(tool(tmp, "flip", im, how), im.height, im.width, 3)
        check(name + " flip " + how, maxdiff(np.asarray(fn(im)), got) == 0)

    # Grayscale, PIL's L formula.
    for ch in (1, 3):
        r = T.Grayscale(ch)(im)
        got = as_u8(tool(tmp, "gray", im, ch), im.height, im.width, ch)
        check("%s grayscale(%d)" % (name, ch), maxdiff(np.asarray(r), got) == 0)

    # ColorJitter adjustments with fixed factors (PIL ImageEnhance).
    for kind, fn in [("brightness", F.adjust_brightness),
                     ("contrast", F.adjust_contrast),
                     ("saturation", F.adjust_saturation)]:
        for fac in (0.6, 0.95, 1.0, 1.3, 1.77):
            r = fn(im, fac)
            got = as_u8(tool(tmp, kind, im, fac), im.height, im.width, 3)
            d = maxdiff(np.asarray(r), got)
            check("%s %s %.2f" % (name, kind, fac), d == 0, "max %g" % d)


if __name__ == "__main__":
    sys.exit(main())
