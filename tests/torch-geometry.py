#!/usr/bin/python3
"""The geometry operators (dsl/ops_geometry.c, runtime/geometry.c) against
torchvision 0.14.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14 /
Pillow 9.4). Exit 77 (skip) when torch or torchvision cannot be imported or
the geometry tool was not built.

The operators are compiled from their pipeline text (tests/tools/
geometry-tool.c: the DSL, the registry row, ts_kernel_apply and the kernel)
and run on the same uint8 pixels as torchvision on PIL images, the path a
DataLoader takes. Images: resized crops of real photos (/usr/share/
backgrounds, else ImageMagick plasma) of odd and even sizes, each also as
1-channel L, and edge cases (1x1, 1xN, 2x2, 17x13).

Asserted:
  - rotate (angles of every kind: multiples of 90, tiny, negative, past
    360; expand, center, fill), affine (angle, translate, scale (the
    scale-only path too), shear as a number, [s] and [x, y], center
    [0, 0] as RandAugment shears), with nearest, bilinear and bicubic:
    equal to torchvision's (0 levels), pixel for pixel;
  - perspective with given corners (nearest, bilinear, bicubic): within
    the bound below; the identity warp is the image itself (torchvision's
    is within 1 level of it);
  - pad (every mode, 1, 2 and 4 values, negative sides, padding wider
    than the image): equal;
  - erase on uint8 pixels and on float32 data after normalize: equal to
    F.erase on the tensor;
  - 16-bit pixels: pad equal to F.pad on the PIL I;16 image, erase to
    F.erase; rotate refused (uint8 only);
  - the random ops with the parameters tsrun drew for a stream position
    (geometry-tool draws): random_rotation and random_affine equal to
    F.rotate / F.affine with them; random_perspective within the
    perspective bound of F.perspective (tsrun solves the coefficients in
    double, torchvision in float32): at most 0.5% of the pixels differ,
    and the mean difference is under 0.5 levels;
  - the draws' distributions against torchvision's own get_params over
    10,000 draws each: a two-sample Kolmogorov-Smirnov test per parameter
    (alpha 0.001), and the same support (minimum and maximum).
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode as IM
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

TOOL = os.environ.get("TS_TOOL_GEOMETRY_TOOL")
if not TOOL or not os.access(TOOL, os.X_OK):
    print("skip: TS_TOOL_GEOMETRY_TOOL not set or not built")
    sys.exit(77)

failures = []
measured = {}


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (" " + detail if detail else ""))
    if not ok:
        failures.append(name)


def photos(tmp):
    """RGB crops of real photos, odd and even sizes."""
    imgs = []
    src_dir = "/usr/share/backgrounds/mate/nature"
    paths = []
    if os.path.isdir(src_dir):
        paths = sorted(os.path.join(src_dir, f) for f in os.listdir(src_dir)
                       if f.lower().endswith((".jpg", ".jpeg", ".png")))[:3]
    sizes = [(224, 224), (333, 251), (97, 160)]
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
    a = np.asarray(base)
    return [("17x13", Image.fromarray(a[:13, :17].copy())),
            ("1x1", Image.fromarray(a[:1, :1].copy())),
            ("1x9", Image.fromarray(a[:9, :1].copy())),
            ("2x2", Image.fromarray(a[:2, :2].copy()))]


def tool(tmp, im, ops, pos=None):
    arr = np.asarray(im)
    c = 1 if arr.ndim == 2 else arr.shape[2]
    inp = os.path.join(tmp, "in.raw")
    out = os.path.join(tmp, "out.raw")
    np.ascontiguousarray(arr).tofile(inp)
    cmd = [TOOL, "run", inp, str(im.width), str(im.height), str(c), out, ops]
    if pos:
        cmd += [str(x) for x in pos]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    w, h, c = (int(x) for x in r.stdout.split())
    got = np.fromfile(out, dtype=np.uint8)
    return got.reshape((h, w) if c == 1 else (h, w, c))


def draws(op, w, h, n, seed):
    r = subprocess.run([TOOL, "draws", op, str(w), str(h), str(n), str(seed)],
                       check=True, capture_output=True, text=True)
    return [[float(x) for x in line.split()] for line in r.stdout.splitlines()]


def diff(got, ref):
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return None
    d = np.abs(got.astype(np.int64) - ref.astype(np.int64))
    if d.ndim == 3:
        d = d.max(axis=2)
    return d


def exact(name, got, ref):
    d = diff(got, ref)
    if d is None:
        check(name, False, "shape %s, torchvision %s" % (got.shape, np.asarray(ref).shape))
        return
    check(name, d.max(initial=0) == 0,
          "max %d levels, %d pixels differ" % (d.max(initial=0), int((d > 0).sum())))


def fill_for(im, rgb):
    return rgb if im.mode == "RGB" else rgb[0]


def fill_text(f):
    return "[%s]" % ", ".join(str(v) for v in f) if isinstance(f, list) else str(f)


def rotate_cases():
    for a in (0, 90, 180, 270, -90, 450, 30, -45, 12.5, 1e-7, 359.99, 91):
        for interp in ("nearest", "bilinear", "bicubic"):
            for expand in (False, True):
                yield a, interp, expand, None
    for c in ([0, 0], [10, 7], [50.5, 20]):
        yield 33, "bilinear", False, c
        yield 90, "nearest", True, c


def affine_cases():
    yield 0, [5, -3], 1.0, 0, None
    yield 0, [0, 0], 2.0, 0, None        # the scale-only path
    yield 0, [3, 1], 0.5, 0, None
    yield 15, [0, 0], 1.2, 10, None      # shear as one number: [10, 0]
    yield -30, [7, 2], 0.8, [5, -8], None
    yield 0, [0, 0], 1.0, [12.5], None   # [s] is [s, s]
    yield 200, [-4, 9], 1.7, [-20, 3], None
    yield 0, [0, 0], 1.0, [math.degrees(math.atan(0.3)), 0.0], [0, 0]  # RandAugment ShearX
    yield 0, [0, 0], 1.0, [0.0, math.degrees(math.atan(-0.25))], [0, 0]
    yield 0, [int(0.45 * 224 * 0.5), 0], 1.0, [0.0, 0.0], None        # TranslateX
    yield 10, [0, 0], 1.0, 0, [0, 0]
    yield 0, [0, 0], 40.0, 0, None       # past the fixed-point range


def deterministic(tmp, imgs):
    for name, im in imgs:
        fill = fill_for(im, [10, 200, 30])
        for a, interp, expand, center in rotate_cases():
            ops = "rotate(%r, interpolation = %s, expand = %s, fill = %s%s)" % (
                a, interp, "true" if expand else "false", fill_text(fill),
                ", center = [%r, %r]" % tuple(center) if center else "")
            ref = F.rotate(im, a, IM(interp), expand, center, fill=fill)
            exact("%s %s" % (name, ops), tool(tmp, im, ops), ref)
        for a, t, s, sh, center in affine_cases():
            for interp in ("nearest", "bilinear", "bicubic"):
                shear = fill_text(sh) if isinstance(sh, list) else repr(sh)
                ops = "affine(%r, [%r, %r], %r, %s, interpolation = %s, fill = %s%s)" % (
                    a, t[0], t[1], s, shear, interp, fill_text(fill),
                    ", center = [%r, %r]" % tuple(center) if center else "")
                ref = F.affine(im, a, t, s, sh, IM(interp), fill=fill, center=center)
                exact("%s %s" % (name, ops), tool(tmp, im, ops), ref)
        for pad in (3, [2, 5], [1, 2, 3, 4], [-3, 4, 5, -6], [400, 2], [0, 0, 0, 0]):
            for mode in ("constant", "edge", "reflect", "symmetric"):
                if isinstance(pad, list) and min(pad) < 0 and min(im.size) < 12:
                    continue
                ops = "pad(%s, fill = %s, padding_mode = %s)" % (
                    fill_text(pad), fill_text(fill_for(im, [7, 8, 9])), mode)
                ref = F.pad(im, pad, fill_for(im, [7, 8, 9]), mode)
                exact("%s %s" % (name, ops), tool(tmp, im, ops), ref)
        # erase, as F.erase on the uint8 tensor
        t = torch.from_numpy(np.asarray(im).copy())
        t = t[None] if t.ndim == 2 else t.permute(2, 0, 1)
        for i, j, h, w in ((0, 0, 5, 7), (3, 2, 1000, 1000)):
            if i >= im.height or j >= im.width:
                continue
            v = fill_for(im, [250, 0, 128])
            ops = "erase(%d, %d, %d, %d, %s)" % (i, j, h, w, fill_text(v))
            vt = torch.tensor(v if isinstance(v, list) else [v], dtype=torch.uint8)[:, None, None]
            ref = F.erase(t, i, j, h, w, vt).permute(1, 2, 0).numpy()
            ref = ref[:, :, 0] if im.mode == "L" else ref
            exact("%s %s" % (name, ops), tool(tmp, im, ops), ref)


def perspective_bound(name, got, ref):
    """The stated bound of a perspective warp against torchvision's: at
    most 0.5% of the pixels differ, by a mean under 0.5 levels."""
    dd = diff(got, ref)
    if dd is None:
        check(name, False, "shape %s, torchvision %s" % (got.shape, np.asarray(ref).shape))
        return
    frac = float((dd > 0).mean())
    mean = float(np.abs(got.astype(int) - np.asarray(ref).astype(int)).mean())
    key = "perspective " + name.split("interpolation = ")[1].split(",")[0]
    m = measured.setdefault(key, [0.0, 0.0, 0])
    m[0] = max(m[0], frac)
    m[1] = max(m[1], mean)
    m[2] = max(m[2], int(dd.max(initial=0)))
    check(name, frac <= 0.005 and mean < 0.5,
          "%.4f%% of pixels differ, mean %.3f levels, max %d" % (
              100 * frac, mean, dd.max(initial=0)))


def perspectives(tmp, imgs):
    """F.perspective with given corners: within the bound; the identity
    warp exactly the image (torchvision's float32 coefficients land a
    hair off the pixel centres: its bilinear truncates one level off)."""
    for name, im in imgs:
        w, h = im.size
        if w < 40 or h < 40:
            continue
        fill = fill_for(im, [1, 2, 3])
        corners = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        for s, e in ((corners, [[10, 5], [w - 20, 0], [w - 1, h - 8], [3, h - 30]]),
                     ([[5, 5], [w - 5, 2], [w - 9, h - 1], [0, h - 4]], corners),
                     ([[2, 9], [w - 7, 4], [w - 1, h - 1], [11, h - 3]],
                      [[0, 3], [w - 2, 0], [w - 15, h - 6], [6, h - 1]])):
            for interp in ("nearest", "bilinear", "bicubic"):
                ops = "perspective(%s, %s, interpolation = %s, fill = %s)" % (
                    sum(s, []), sum(e, []), interp, fill_text(fill))
                ref = F.perspective(im, s, e, IM(interp), fill=fill)
                perspective_bound("%s %s" % (name, ops), tool(tmp, im, ops), ref)
        for interp in ("nearest", "bilinear", "bicubic"):
            ops = "perspective(%s, %s, interpolation = %s)" % (
                sum(corners, []), sum(corners, []), interp)
            got = tool(tmp, im, ops)
            exact("%s %s is the image" % (name, ops), got, im)
            d = diff(got, F.perspective(im, corners, corners, IM(interp)))
            check("%s %s: torchvision's within 1 level" % (name, ops),
                  d is not None and d.max(initial=0) <= 1,
                  "%.2f%% of pixels 1 level off" % (100 * float((d > 0).mean())))


def deep(tmp, im):
    """16-bit pixels (decode(depth = 16)), where the family takes them: pad
    against F.pad on the PIL I;16 image, erase against F.erase on the
    tensor; and rotate refuses them."""
    a = (np.asarray(im.convert("L")).astype(np.uint16) * 257 + 3)[:61, :87]
    pim = Image.fromarray(a)  # mode I;16
    inp = os.path.join(tmp, "in16.raw")
    out = os.path.join(tmp, "out16.raw")
    np.ascontiguousarray(a).tofile(inp)

    def run16(ops):
        r = subprocess.run([TOOL, "run", inp, str(a.shape[1]), str(a.shape[0]), "1:16", out,
                            ops], capture_output=True, text=True)
        if r.returncode:
            return None, r.stderr
        w, h, _ = (int(x) for x in r.stdout.split())
        return np.fromfile(out, dtype=np.uint16).reshape(h, w), ""

    for pad in (5, [3, 70], [-4, 2, 6, -9]):
        for mode in ("constant", "edge", "reflect", "symmetric"):
            ops = "pad(%s, fill = 60000, padding_mode = %s)" % (fill_text(pad), mode)
            got, err = run16(ops)
            ref = np.asarray(F.pad(pim, pad, 60000, mode)).astype(np.uint16)
            check("16-bit %s" % ops, got is not None and got.shape == ref.shape and
                  np.array_equal(got, ref), err.strip())
    got, err = run16("erase(7, 9, 20, 100, 65535)")
    ref = F.erase(torch.from_numpy(a.astype(np.int32))[None], 7, 9, 20, 100,
                  torch.tensor([65535], dtype=torch.int32)[:, None, None])[0].numpy()
    check("16-bit erase(7, 9, 20, 100, 65535)", got is not None and
          np.array_equal(got.astype(np.int32), ref), err.strip())
    got, err = run16("rotate(10)")
    check("16-bit rotate refused at check time", got is None and
          "works on uint8 pixels, but the data is uint16" in err, err.strip()[:80])


def erase_float(tmp, im):
    """erase after normalize: the float32 data compared with F.erase on
    F.normalize(F.to_tensor(im)); the tool writes float32 bytes."""
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    ops = ("normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | "
           "erase(10, 20, 30, 40, [-1.5, 0, 2.25])")
    arr = np.asarray(im)
    inp = os.path.join(tmp, "in.raw")
    out = os.path.join(tmp, "out.raw")
    np.ascontiguousarray(arr).tofile(inp)
    r = subprocess.run([TOOL, "run", inp, str(im.width), str(im.height), "3", out, ops],
                       check=True, capture_output=True, text=True)
    w, h, c = (int(x) for x in r.stdout.split())
    got = np.fromfile(out, dtype=np.float32).reshape(h, w, c)
    ref = F.erase(F.normalize(F.to_tensor(im), mean, std), 10, 20, 30, 40,
                  torch.tensor([-1.5, 0, 2.25])[:, None, None]).permute(1, 2, 0).numpy()
    box = np.zeros((h, w), bool)
    box[10:40, 20:60] = True
    check("erase after normalize: the box equal", np.array_equal(got[box], ref[box]))
    d = float(np.abs(got[~box] - ref[~box]).max())
    # normalize itself is not this family's: its own float bound
    check("erase after normalize: outside the box as normalize makes it",
          d < 1e-5, "max %.2g" % d)


def random_applied(tmp, imgs):
    """Each random op at a stream position equals torchvision's functional
    op with the parameters tsrun drew there."""
    for name, im in imgs[:3] + imgs[-2:]:
        fill = fill_for(im, [5, 6, 7])
        w, h = im.size
        for k in range(6):
            # the draws are at (seed 11, epoch 0, index k): the tool runs
            # the op at the same stream position
            op = "random_rotation([-40, 40], interpolation = bilinear, fill = %s)" % fill_text(fill)
            a = draws(op, w, h, k + 1, 11)[k][0]
            got = tool(tmp, im, op, (11, 0, k))
            exact("%s %s at %d" % (name, op, k), got,
                  F.rotate(im, a, IM.BILINEAR, fill=fill))
            op = ("random_affine(20, translate = [0.2, 0.1], scale = 0.7..1.3, "
                  "shear = [-10, 10, -5, 5], fill = %s)" % fill_text(fill))
            a, tx, ty, s, sx, sy = draws(op, w, h, k + 1, 11)[k]
            got = tool(tmp, im, op, (11, 0, k))
            exact("%s %s at %d" % (name, op, k), got,
                  F.affine(im, a, [int(tx), int(ty)], s, [sx, sy], IM.NEAREST, fill=fill))
            for interp in ("bilinear", "nearest"):
                op = "random_perspective(0.6, p = 1, interpolation = %s, fill = %s)" % (
                    interp, fill_text(fill))
                d = draws(op, w, h, k + 1, 11)[k]
                e = [int(x) for x in d[1:]]
                end = [[e[0], e[1]], [e[2], e[3]], [e[4], e[5]], [e[6], e[7]]]
                start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
                got = tool(tmp, im, op, (11, 0, k))
                ref = F.perspective(im, start, end, IM(interp), fill=fill)
                perspective_bound("%s %s at %d" % (name, op, k), got, ref)


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic and its 0.001 critical value."""
    a = np.sort(np.asarray(a, float))
    b = np.sort(np.asarray(b, float))
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    n, m = len(a), len(b)
    return float(np.abs(fa - fb).max()), 1.95 * math.sqrt((n + m) / (n * m))


def same_law(name, ours, theirs, integer=False):
    d, crit = ks(ours, theirs)
    lo_ok = min(ours) >= min(theirs) - (0 if integer else 1e-3 * (max(theirs) - min(theirs)))
    hi_ok = max(ours) <= max(theirs) + (0 if integer else 1e-3 * (max(theirs) - min(theirs)))
    if integer:
        lo_ok = lo_ok and min(ours) == min(theirs)
        hi_ok = hi_ok and max(ours) == max(theirs)
    check("distribution of %s" % name, d < crit and lo_ok and hi_ok,
          "KS %.4f (critical %.4f), range [%g, %g] vs torchvision [%g, %g]" % (
              d, crit, min(ours), max(ours), min(theirs), max(theirs)))


def distributions():
    n = 10000
    torch.manual_seed(0)
    w, h = 97, 160
    ours = [d[0] for d in draws("random_rotation([-10, 30])", w, h, n, 5)]
    theirs = [T.RandomRotation.get_params([-10.0, 30.0]) for _ in range(n)]
    same_law("random_rotation angle", ours, theirs)

    op = "random_affine(25, translate = [0.3, 0.1], scale = 0.6..1.4, shear = [-8, 8, 2, 6])"
    ours = np.array(draws(op, w, h, n, 6))
    theirs = [T.RandomAffine.get_params([-25.0, 25.0], [0.3, 0.1], [0.6, 1.4],
                                        [-8.0, 8.0, 2.0, 6.0], [w, h]) for _ in range(n)]
    th = np.array([[a, t[0], t[1], s, sh[0], sh[1]] for a, t, s, sh in theirs])
    for k, what in enumerate(("angle", "tx", "ty", "scale", "shear x", "shear y")):
        same_law("random_affine " + what, ours[:, k], th[:, k], integer=what in ("tx", "ty"))

    op = "random_perspective(0.7, p = 0.4)"
    ours = draws(op, w, h, n, 7)
    applied = [d for d in ours if d[0] == 1]
    frac = len(applied) / n
    check("random_perspective applies with p = 0.4", abs(frac - 0.4) < 0.02,
          "%.4f of %d" % (frac, n))
    ours = np.array([d[1:] for d in applied])
    theirs = np.array([sum(T.RandomPerspective.get_params(w, h, 0.7)[1], [])
                       for _ in range(len(applied))])
    for k in range(8):
        same_law("random_perspective endpoint coordinate %d" % k, ours[:, k], theirs[:, k],
                 integer=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        imgs = photos(tmp)
        imgs += edge_cases(imgs[0][1])
        imgs += [(n + "-L", im.convert("L")) for n, im in list(imgs[:2])]
        deterministic(tmp, imgs)
        perspectives(tmp, imgs)
        erase_float(tmp, imgs[0][1])
        deep(tmp, imgs[0][1])
        random_applied(tmp, imgs)
    distributions()
    for k in sorted(measured):
        print("measured %s vs torchvision: at most %.4f%% of pixels differ, mean %.3f levels, "
              "max %d levels" % (k, 100 * measured[k][0], measured[k][1], measured[k][2]))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
