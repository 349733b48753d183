#!/usr/bin/python3
"""Edge cases of the recipe operators through the whole engine (libtsrun,
in-process: a folder of PNGs, decode, the op, the stream) against
torchvision 0.14 on PIL images, with parameters the per-family tests do
not use (found by the recipe audit; all hold on main).

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14).
Exit 77 (skip) when torch cannot be imported or no photo is found.

Asserted, on a 203x151 crop of a real photo (RGB and 1-channel L), 3x2
and 1x37 images:
  - rotate at 137.5, -720.3, 90, 270, 45, 0.001 and 359.99 degrees with
    expand and a fill tuple, in each interpolation; a centre far outside;
    expand with a centre: equal (0 levels);
  - affine with shears near the limits ([89.5, 0], [-89.9, 45],
    [179, -179], [45, 89]), scale 0.37, 7.5 and 0.001, a translation far
    outside: equal;
  - pad [3, 300, 0, -5] (wider than the image, a negative side) and 41
    around a 3x2 image in every mode, and on 16-bit PNG against np.pad:
    equal;
  - perspective with a corner dragged near the centre: at most 0.5% of
    the values differ and the mean difference is below 0.5 levels;
  - gaussian_blur with sigma 50, a kernel of 99 on a 151-row image, [31, 5]:
    within 1 level, under 0.1% of the values; 999 on a 3x2 image runs;
    16-bit against a float convolution: within 1 level;
  - adjust_sharpness 0, 0.3, 2, 255 and adjust_gamma (0.01, 2.2 with gain
    1.3, 1000, 0.5 with gain 255) on RGB, L and 3x2: equal; adjust_gamma on
    16-bit PNG against the documented formula: equal;
  - resize to 37, 401, 100 with max_size 101 and 3 with max_size 5, in
    bicubic and lanczos, RGB and L; [1, 500] from 1x37: equal;
  - erase after normalize with a box past the edge: within 1e-6;
  - a random recipe (random_rotation with expand, random_choice of
    random_affine | gaussian_blur, random_perspective, random_apply,
    color_jitter, random_erasing) gives the same bytes on 1 and 3 threads;
  - random_perspective(1.0, p = 1) at 32x32 serves every sample (three
    corners on one line keep the sample).
"""
import ctypes
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode as IM
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

LIB = os.environ.get("TS_LIBTSRUN")
if not LIB:
    print("FAIL: TS_LIBTSRUN must be set")
    sys.exit(1)
PHOTO = "/usr/share/backgrounds/mate/nature/Dune.jpg"
if not os.path.exists(PHOTO):
    print("skip: no photo at", PHOTO)
    sys.exit(77)


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsrun_embed import DTYPES, TS_E_EOS, Batch, Error, StreamOpts, open_lib  # noqa: E402,F401

lib = open_lib(LIB)

def run_tsrun(text, base_dir, threads=2):
    err = Error(); p = ctypes.c_void_p(); src = text.encode()
    rc = lib.ts_pipeline_compile(src, len(src), b"pipe.ts", None, base_dir.encode(),
                                 ctypes.byref(p), None, ctypes.byref(err))
    if rc:
        raise RuntimeError("compile: " + err.msg.decode())
    s = ctypes.c_void_p()
    opts = StreamOpts(threads=threads, epochs=1, batch=1)
    rc = lib.ts_pipeline_open(p, ctypes.byref(opts), ctypes.byref(s), ctypes.byref(err))
    if rc:
        lib.ts_pipeline_destroy(p); raise RuntimeError("open: " + err.msg.decode())
    out = []; b = Batch()
    try:
        while True:
            rc = lib.ts_stream_next(s, ctypes.byref(b), ctypes.byref(err))
            if rc == TS_E_EOS: break
            if rc: raise RuntimeError("next: " + err.msg.decode())
            dt = DTYPES[b.dtype]
            shape = ((b.channels, b.height, b.width) if b.layout == 1 else (b.height, b.width, b.channels))
            buf = (ctypes.c_char * b.sample_bytes).from_address(b.data)  # batch=1
            out.append(np.frombuffer(buf, dtype=dt).reshape((b.n,) + shape).copy())
    finally:
        lib.ts_stream_close(s); lib.ts_pipeline_destroy(p)
    return np.concatenate(out)

fails = []
def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)
    if not ok: fails.append(name)

tmp = tempfile.mkdtemp(prefix="iaudit.")
photo = Image.open(PHOTO).convert("RGB")

def make(name, img):
    d = os.path.join(tmp, name, "c0"); os.makedirs(d)
    img.save(os.path.join(d, "a.png"))
    return os.path.join(tmp, name)

def one(folder, decode, ops, tail="", threads=2, hw=None):
    if hw is not None:
        tail = "    | center_crop([%d, %d])\n" % hw + tail
    text = 'pipeline p =\n    folder("%s")\n    | decode(%s)\n%s%s' % (
        folder, decode, "".join("    | %s\n" % o for o in ops), tail)
    return run_tsrun(text, tmp, threads)[0]

def cmp_u8(name, folder, decode, ops, pil_img, tv, tol=0):
    want = np.asarray(tv(pil_img))
    if want.ndim == 2: want = want[:, :, None]
    try:
        got = one(folder, decode, ops, hw=want.shape[:2])
    except RuntimeError as e:
        check(name, False, str(e)); return
    if got.shape != want.shape:
        check(name, False, "shape %s vs torchvision %s" % (got.shape, want.shape)); return
    d = np.abs(got.astype(np.int64) - want.astype(np.int64))
    check(name, d.max() <= tol, "max %d, differing %.4f%%" % (d.max(), 100 * (d > 0).mean()))

rgb = photo.resize((203, 151), Image.BILINEAR)
gray = rgb.convert("L")
f_rgb = make("rgb", rgb); f_gray = make("gray", gray)
tiny = photo.resize((3, 2), Image.BILINEAR); f_tiny = make("tiny", tiny)
tall = photo.resize((1, 37), Image.BILINEAR); f_tall = make("tall", tall)

# rotate
for ang in (137.5, -720.3, 90, 270, 45, 1e-3, 359.99):
    for interp, im in (("nearest", IM.NEAREST), ("bilinear", IM.BILINEAR), ("bicubic", IM.BICUBIC)):
        cmp_u8("rotate(%g, %s, expand, fill tuple) rgb" % (ang, interp), f_rgb, "rgb",
               ["rotate(%r, interpolation = %s, expand = true, fill = [10, 200, 30])" % (ang, interp)],
               rgb, lambda x: F.rotate(x, ang, interpolation=im, expand=True, fill=[10, 200, 30]))
    cmp_u8("rotate(%g, bilinear, expand) gray" % ang, f_gray, "gray",
           ["rotate(%r, interpolation = bilinear, expand = true, fill = 77)" % ang],
           gray, lambda x: F.rotate(x, ang, interpolation=IM.BILINEAR, expand=True, fill=77))
cmp_u8("rotate(33, center=[-50, 400]) rgb", f_rgb, "rgb", ["rotate(33, center = [-50, 400], interpolation = bilinear)"],
       rgb, lambda x: F.rotate(x, 33, interpolation=IM.BILINEAR, center=[-50, 400]))
cmp_u8("rotate(33, expand, center) rgb", f_rgb, "rgb", ["rotate(33, expand = true, center = [0, 0])"],
       rgb, lambda x: F.rotate(x, 33, expand=True, center=[0, 0]))
for (nm, f, im) in (("tiny3x2", f_tiny, tiny), ("tall1x37", f_tall, tall)):
    cmp_u8("rotate(61, expand, bicubic) " + nm, f, "rgb", ["rotate(61, interpolation = bicubic, expand = true)"],
           im, lambda x: F.rotate(x, 61, interpolation=IM.BICUBIC, expand=True))
# affine with shears near the limits
for shear in ([89.5, 0], [-89.9, 45], [179, -179], [45, 89]):
    for interp, im in (("nearest", IM.NEAREST), ("bilinear", IM.BILINEAR), ("bicubic", IM.BICUBIC)):
        cmp_u8("affine(-45, [-13, 7], 0.37, %s, %s)" % (shear, interp), f_rgb, "rgb",
               ["affine(-45, [-13, 7], 0.37, %s, interpolation = %s, fill = [1, 2, 3])" % (shear, interp)],
               rgb, lambda x: F.affine(x, -45, [-13, 7], 0.37, shear, interpolation=im, fill=[1, 2, 3]))
cmp_u8("affine(0, [0,0], 7.5, 0) gray upscale", f_gray, "gray", ["affine(0, [0, 0], 7.5, 0)"],
       gray, lambda x: F.affine(x, 0, [0, 0], 7.5, 0))
cmp_u8("affine(12, [500, -500], 1, 0) gray", f_gray, "gray", ["affine(12, [500, -500], 1, 0, fill = 9)"],
       gray, lambda x: F.affine(x, 12, [500, -500], 1, 0, fill=9))
cmp_u8("affine(0, [0,0], 0.001, 0)", f_rgb, "rgb", ["affine(0, [0, 0], 0.001, 0)"],
       rgb, lambda x: F.affine(x, 0, [0, 0], 0.001, 0))
# pad
for mode in ("constant", "edge", "reflect", "symmetric"):
    cmp_u8("pad([3, 300, 0, -5], %s) rgb" % mode, f_rgb, "rgb", ["pad([3, 300, 0, -5], [1, 2, 3], %s)" % mode],
           rgb, lambda x: F.pad(x, [3, 300, 0, -5], fill=(1, 2, 3), padding_mode=mode))
    cmp_u8("pad(41, %s) tiny" % mode, f_tiny, "rgb", ["pad(41, padding_mode = %s)" % mode],
           tiny, lambda x: F.pad(x, 41, padding_mode=mode))
    cmp_u8("pad([7, 0], %s) gray" % mode, f_gray, "gray", ["pad([7, 0], padding_mode = %s)" % mode],
           gray, lambda x: F.pad(x, [7, 0], padding_mode=mode))
# perspective
sp = [0, 0, 202, 0, 202, 150, 0, 150]
ep = [60, 40, 150, 2, 202, 150, 1, 120]
for interp, im in (("nearest", IM.NEAREST), ("bilinear", IM.BILINEAR), ("bicubic", IM.BICUBIC)):
    try:
        got = one(f_rgb, "rgb", hw=(151, 203), ops=["perspective(%s, %s, interpolation = %s, fill = [5, 6, 7])" % (sp, ep, interp)])
        want = np.asarray(F.perspective(rgb, [sp[i:i+2] for i in range(0, 8, 2)], [ep[i:i+2] for i in range(0, 8, 2)], interpolation=im, fill=[5, 6, 7]))
        d = np.abs(got.astype(int) - want.astype(int))
        check("perspective extreme %s" % interp, (d > 0).mean() <= 0.005 and d.mean() < 0.5,
              "differ %.3f%% mean %.3f max %d" % (100 * (d > 0).mean(), d.mean(), d.max()))
    except RuntimeError as e:
        check("perspective extreme %s" % interp, False, str(e))
# gaussian blur: large sigma, kernel near the image size
for k, s in ((21, 50.0), (99, 3.0), ([31, 5], 10.0), (1, 0.5)):
    kk = k if isinstance(k, list) else [k, k]
    try:
        want_t = F.gaussian_blur(F.pil_to_tensor(rgb), kk, [s, s])
        want = want_t.permute(1, 2, 0).numpy()
        got = one(f_rgb, "rgb", ["gaussian_blur(%s, %r)" % (k, s)], hw=(151, 203))
        d = np.abs(got.astype(int) - want.astype(int))
        check("gaussian_blur(%s, %g) rgb" % (k, s), d.max() <= 1 and (d > 0).mean() < 0.001,
              "max %d differ %.4f%%" % (d.max(), 100 * (d > 0).mean()))
    except RuntimeError as e:
        check("gaussian_blur(%s, %g) rgb" % (k, s), False, str(e))
    except Exception as e:
        print("note: torchvision refuses gaussian_blur(%s, %g): %s" % (k, s, e))
        try:
            got = one(f_rgb, "rgb", ["gaussian_blur(%s, %r)" % (k, s)], hw=(151, 203))
            check("gaussian_blur(%s, %g) runs" % (k, s), got.shape == (151, 203, 3))
        except RuntimeError as e2:
            check("gaussian_blur(%s, %g) runs" % (k, s), False, str(e2))
try:
    got = one(f_tiny, "rgb", ["gaussian_blur(999, 100)"], hw=(2, 3))
    check("gaussian_blur(999) on 3x2 runs", got.shape == (2, 3, 3), str(got.shape))
except RuntimeError as e:
    check("gaussian_blur(999) on 3x2", False, str(e))
# sharpness, gamma
for fct in (0, 0.3, 2, 255):
    cmp_u8("adjust_sharpness(%g) rgb" % fct, f_rgb, "rgb", ["adjust_sharpness(%r)" % fct], rgb, lambda x: F.adjust_sharpness(x, fct))
    cmp_u8("adjust_sharpness(%g) gray" % fct, f_gray, "gray", ["adjust_sharpness(%r)" % fct], gray, lambda x: F.adjust_sharpness(x, fct))
    cmp_u8("adjust_sharpness(%g) tiny" % fct, f_tiny, "rgb", ["adjust_sharpness(%r)" % fct], tiny, lambda x: F.adjust_sharpness(x, fct))
for g, gain in ((0.01, 1), (2.2, 1.3), (1000, 1), (0.5, 255)):
    cmp_u8("adjust_gamma(%g, %g) rgb" % (g, gain), f_rgb, "rgb", ["adjust_gamma(%r, gain = %r)" % (g, gain)], rgb, lambda x: F.adjust_gamma(x, g, gain))
    cmp_u8("adjust_gamma(%g, %g) gray" % (g, gain), f_gray, "gray", ["adjust_gamma(%r, gain = %r)" % (g, gain)], gray, lambda x: F.adjust_gamma(x, g, gain))
# 16-bit PNG: gamma by the documented formula, pad vs numpy
arr16 = (np.asarray(gray).astype(np.uint32) * 257 + np.arange(203)[None, :] % 200).astype(np.uint16)
d16 = os.path.join(tmp, "g16", "c0"); os.makedirs(d16)
Image.fromarray(arr16, mode="I;16").save(os.path.join(d16, "a.png"))
chk = np.asarray(Image.open(os.path.join(d16, "a.png")))
print("16-bit png mode", Image.open(os.path.join(d16, "a.png")).mode, chk.dtype, (chk == arr16).all())
got = one(os.path.join(tmp, "g16"), "gray, depth = 16", [], hw=(151, 203))
check("16-bit decode", (got[:, :, 0] == arr16).all())
for g, gain in ((2.2, 1.0), (0.45, 1.2)):
    got = one(os.path.join(tmp, "g16"), "gray, depth = 16", ["adjust_gamma(%r, gain = %r)" % (g, gain)], hw=(151, 203))
    want = np.clip(np.floor(65535.999 * gain * (arr16.astype(np.float64) / 65535) ** g), 0, 65535)
    d = np.abs(got[:, :, 0].astype(np.int64) - want.astype(np.int64))
    check("adjust_gamma 16-bit (%g,%g) vs formula" % (g, gain), d.max() <= 1, "max %d diff %.3f%%" % (d.max(), 100 * (d > 0).mean()))
try:
    got = one(os.path.join(tmp, "g16"), "gray, depth = 16", ["gaussian_blur(7, 2.0)"], hw=(151, 203))
    want = F.gaussian_blur(torch.from_numpy(arr16.astype(np.float32))[None], [7, 7], [2.0, 2.0])[0].numpy()
    d = np.abs(got[:, :, 0].astype(np.float64) - want)
    check("gaussian_blur 16-bit vs float conv", d.max() <= 1.0, "max %.3f" % d.max())
except RuntimeError as e:
    check("gaussian_blur 16-bit", False, str(e))
for mode, npm in (("reflect", "reflect"), ("symmetric", "symmetric"), ("edge", "edge")):
    want = np.pad(arr16, ((3, 160), (250, 1)), mode=npm)
    got = one(os.path.join(tmp, "g16"), "gray, depth = 16", ["pad([250, 3, 1, 160], padding_mode = %s)" % mode], hw=want.shape)
    check("pad 16-bit wide %s vs np.pad" % mode, got[:, :, 0].shape == want.shape and (got[:, :, 0] == want).all())
# resize bicubic/lanczos/max_size, odd sizes, gray, upscale
for interp, im in (("bicubic", IM.BICUBIC), ("lanczos", IM.LANCZOS)):
    for n, ms in ((37, None), (401, None), (100, 101), (3, 5)):
        ops = ["resize(%d, interp = %s%s)" % (n, interp, "" if ms is None else ", max_size = %d" % ms)]
        cmp_u8("resize %s %s rgb" % (ops[0], interp), f_rgb, "rgb", ops, rgb, lambda x: F.resize(x, n, interpolation=im, max_size=ms))
        cmp_u8("resize %s %s gray" % (ops[0], interp), f_gray, "gray", ops, gray, lambda x: F.resize(x, n, interpolation=im, max_size=ms))
    cmp_u8("resize([1, 500], %s) tall" % interp, f_tall, "rgb", ["resize([1, 500], interp = %s)" % interp], tall,
           lambda x: F.resize(x, [1, 500], interpolation=im))
# erase after normalize with value list
mean = [0.485, 0.456, 0.406]; std = [0.229, 0.224, 0.225]
got = one(f_rgb, "rgb", ["center_crop([151, 203])", "normalize(%s, %s)" % (mean, std), "erase(140, 190, 100, 100, value = [1.5, -2, 0.25])"])
want = F.erase(F.normalize(F.to_tensor(rgb), mean, std), 140, 190, 100, 100, torch.tensor([1.5, -2, 0.25])[:, None, None]).permute(1, 2, 0).numpy()
d = np.abs(got - want)
check("erase after normalize, box past the edge", d.max() <= 1e-6, "max %g" % d.max())

# random ops: the same bytes for any thread count, on 12 photos
rdir = os.path.join(tmp, "rnd", "c0")
os.makedirs(rdir)
for k in range(12):
    photo.resize((160 + 7 * k, 120 + 5 * k), Image.BILINEAR).rotate(k * 30).save(
        os.path.join(rdir, "%02d.png" % k))
recipe = ('pipeline r =\n    folder("%s")\n    | shuffle(seed = 3)\n    | decode(rgb)\n'
          '    | random_rotation(180, interpolation = bicubic, expand = true, fill = [1, 2, 3])\n'
          '    | resize(72, interp = lanczos, max_size = 80)\n    | center_crop(64)\n'
          '    | random_choice([random_affine(30, translate = [0.2, 0.3], scale = 0.5..1.5, '
          'shear = [-20, 20, -10, 10], interpolation = bilinear) | gaussian_blur(5, sigma = 0.1..5), '
          'random_perspective(0.9, p = 0.7, interpolation = bicubic), '
          'random_apply(equalize() | invert, p = 0.3)], p = [1, 2, 0.5])\n'
          '    | random_apply(color_jitter(0.4, 0.4, 0.4, 0.5) | grayscale(3, p = 0.5), p = 0.9)\n'
          '    | normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])\n'
          '    | random_erasing(1.0, scale = 0.01..0.99, ratio = 0.1..10, value = random)\n'
          '    | to(float16, nchw)\n') % os.path.join(tmp, "rnd")
a1 = run_tsrun(recipe, tmp, threads=1)
a3 = run_tsrun(recipe, tmp, threads=3)
check("random recipe: 1 and 3 threads give the same bytes",
      a1.shape == a3.shape and a1.tobytes() == a3.tobytes(), str(a1.shape))
n = 0
for seed in range(30):
    persp = ('pipeline p =\n    folder("%s")\n    | shuffle(seed = %d)\n    | decode(rgb)\n'
             '    | random_resized_crop(32)\n    | random_perspective(1.0, p = 1)\n'
             % (os.path.join(tmp, "rnd"), seed))
    try:
        n += run_tsrun(persp, tmp).shape[0]
    except RuntimeError as e:
        n = -1
        check("random_perspective(1.0) at 32 px serves every sample", False, str(e))
        break
if n >= 0:
    check("random_perspective(1.0) at 32 px serves every sample", n == 360, "%d samples" % n)

shutil.rmtree(tmp)
if fails:
    print("FAILED: %d" % len(fails))
    for f in fails:
        print("  ", f)
    sys.exit(1)
print("all passed")
