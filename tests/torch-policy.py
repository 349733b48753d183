#!/usr/bin/python3
"""The policy family (dsl/ops_policy.c, runtime/policy.c) against
torchvision 0.14's sampling.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14). Exit
77 (skip) when torch or torchvision cannot be imported or the policy tool
was not built.

tsrun's draws come from tests/tools/policy-tool (the pipeline text
compiled as tsrun compiles it, the draws of samples 0..N-1 from their
counter-based streams); torchvision's from its own classes, 10,000 each:
  - random_erasing: RandomErasing.get_params (after torch.rand(1) < p) on
    a 3 x H x W tensor, for the defaults on 224 x 224 and for another
    scale and ratio on 48 x 64: the rate of erasing, and the histograms of
    the box's height, width, centre row and centre column, compared by a
    two-sample chi-square (bound: dof + 3.3 sqrt(2 dof) + 3, about
    p = 0.001);
  - random_erasing's output: the slot a trainer gets (the whole
    pipeline, policy-tool slot) equal to ToTensor + Normalize + F.erase
    with the box tsrun drew, in float32 and float16, nchw and nhwc, for
    value 0, per channel and a number (0 difference); value random: the
    rest equal, the box's values of mean ~0 and variance ~1;
  - random_apply: RandomApply(p) applied or not; random_choice:
    RandomChoice(weights) chosen alternative; same test.
The augmentation policies (rand_augment, trivial_augment_wide,
auto_augment):
  - their magnitude tables (policy-tool table) equal, value for value in
    float32, torchvision's _augmentation_space for many bin counts and
    image sizes;
  - their draws over 10,000 samples against torchvision's forward()
    with _apply_op recorded: the same support (every (op, magnitude)
    pair either draws is one the other draws too) and the same
    distribution (two-sample chi-square per step of the op, of the
    signed magnitude bin, of the number of ops AutoAugment applies);
  - for fixed choices, each op with its magnitudes (policy-tool step):
    equal to torchvision's _apply_op on the PIL image (0 levels: the
    colour ops, Sharpness and Posterize/Solarize exactly as ImageOps and
    ImageEnhance; ShearX/Y, TranslateX/Y and Rotate through the geometry
    family, exact with nearest, bilinear and bicubic), on real photos, RGB and L,
    with fill;
  - whole policies (tests/tools/color-tool, the pipeline's op at stream
    position (seed, 0, index)): tsrun's output equals torchvision's
    _apply_op applied to the PIL image with the ops and magnitudes tsrun
    drew for that position (policy-tool), for 60 positions each.
Then the output of pipelines with all of them does not depend on the
thread count (`tsrun bench` digests with 1 and 2 threads).
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
    import torchvision.transforms.autoaugment as AA
    from torchvision.transforms import InterpolationMode as IM
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

TOOL = os.environ.get("TS_TOOL_POLICY_TOOL")
COLOR_TOOL = os.environ.get("TS_TOOL_COLOR_TOOL")
TSRUN = os.environ.get("TSRUN")
if not TOOL or not os.access(TOOL, os.X_OK) or not TSRUN or not COLOR_TOOL:
    print("skip: TS_TOOL_POLICY_TOOL, TS_TOOL_COLOR_TOOL or TSRUN not set or not built")
    sys.exit(77)

N = 10000
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (" " + detail if detail else ""))
    if not ok:
        failures.append(name)


def two_sample(name, a, b, bins):
    """Two-sample chi-square of samples a and b (equal sizes) over bins
    (a function of a value to a bin), merging bins with few counts."""
    ca, cb = {}, {}
    for v in a:
        ca[bins(v)] = ca.get(bins(v), 0) + 1
    for v in b:
        cb[bins(v)] = cb.get(bins(v), 0) + 1
    keys = sorted(set(ca) | set(cb), key=str)
    x2, dof, ra, rb = 0.0, -1, 0, 0
    for k in keys:
        ra += ca.get(k, 0)
        rb += cb.get(k, 0)
        if ra + rb < 20:
            continue  # merged into the next bin
        x2 += (ra - rb) ** 2 / (ra + rb)
        dof += 1
        ra = rb = 0
    if ra + rb:
        x2 += (ra - rb) ** 2 / (ra + rb)
        dof += 1
    bound = dof + 3.3 * math.sqrt(2 * max(dof, 1)) + 3
    check(name, x2 < bound, "chi-square %.1f over %d dof (bound %.1f)" % (x2, dof, bound))


def tsrun_draws(ops, h, w, c=3, n=N, seed=1):
    out = subprocess.run([TOOL, ops, str(h), str(w), str(c), str(n), str(seed)],
                         check=True, capture_output=True, text=True).stdout
    return out.split("\n")[:n]


def erasing(h, w, p, scale, ratio, ops):
    torch.manual_seed(0)
    img = torch.zeros(3, h, w)
    tv = []
    for _ in range(N):
        if torch.rand(1) < p:
            i, j, eh, ew, _v = T.RandomErasing.get_params(img, scale=scale, ratio=ratio,
                                                          value=[0])
            tv.append(None if (eh, ew) == (h, w) else (i, j, eh, ew))
        else:
            tv.append(None)
    ts = [None if line == "-" else tuple(int(x) for x in line.split())
          for line in tsrun_draws(ops, h, w)]
    rate_tv = sum(b is not None for b in tv)
    rate_ts = sum(b is not None for b in ts)
    two_sample("%s: erased or not" % ops, [b is not None for b in tv],
               [b is not None for b in ts], lambda v: v)
    print("info %s: erased %d (tsrun) and %d (torchvision) of %d" % (ops, rate_ts, rate_tv, N))
    bt = [b for b in tv if b]
    bs = [b for b in ts if b]
    m = min(len(bt), len(bs))
    bt, bs = bt[:m], bs[:m]
    for what, f in (("height", lambda b: b[2] * 10 // h),
                    ("width", lambda b: b[3] * 10 // w),
                    ("centre row", lambda b: (2 * b[0] + b[2]) * 10 // (2 * h)),
                    ("centre column", lambda b: (2 * b[1] + b[3]) * 10 // (2 * w))):
        two_sample("%s: box %s" % (ops, what), bt, bs, f)
    # every box as get_params makes them
    ok = all(0 <= i and 0 <= j and i + eh <= h and j + ew <= w and eh < h and ew < w
             for i, j, eh, ew in bs)
    check("%s: boxes inside, smaller than the image" % ops, ok)


def apply_choice():
    torch.manual_seed(0)
    hits = []
    rec = T.Lambda(lambda x: hits.append(1) or x)
    ra = T.RandomApply([rec], p=0.3)
    tv = []
    for _ in range(N):
        n0 = len(hits)
        ra(0)
        tv.append(len(hits) - n0)
    ts = [int(x) for x in tsrun_draws("random_apply(invert, p = 0.3)", 8, 8)]
    two_sample("random_apply p = 0.3: applied or not", tv, ts, lambda v: v)
    chosen = []
    alts = [T.Lambda(lambda x, k=k: chosen.append(k) or x) for k in range(3)]
    import random
    random.seed(0)
    rc = T.RandomChoice(alts, p=[1, 2, 1])
    for _ in range(N):
        rc(0)
    ts = [int(x) for x in tsrun_draws(
        "random_choice([invert, equalize, autocontrast], p = [1, 2, 1])", 8, 8)]
    two_sample("random_choice p = [1, 2, 1]: the alternative", chosen, ts, lambda v: v)


# ---- the augmentation policies ---------------------------------------------

KINDS = {"rand_augment": AA.RandAugment, "trivial_augment_wide": AA.TrivialAugmentWide,
         "auto_augment": AA.AutoAugment}


def torch_space(kind, bins, w, h):
    if kind == "trivial_augment_wide":
        return AA.TrivialAugmentWide()._augmentation_space(bins)
    if kind == "auto_augment":
        return AA.AutoAugment()._augmentation_space(bins, (h, w))
    return AA.RandAugment()._augmentation_space(bins, (h, w))


def tables():
    bad = []
    n = 0
    for kind in KINDS:
        for bins in (2, 3, 4, 5, 7, 10, 11, 16, 17, 31, 32, 33, 47, 64, 100, 101, 255):
            for w, h in ((224, 224), (500, 333), (17, 13), (331, 331), (1, 1024)):
                out = subprocess.run([TOOL, "table", kind, str(bins), str(w), str(h)],
                                     check=True, capture_output=True, text=True).stdout
                ours = {}
                for line in out.splitlines():
                    f = line.split()
                    ours[f[0]] = (f[1], np.array([float(x) for x in f[2:]], np.float32))
                for name, (mags, signed) in torch_space(kind, bins, w, h).items():
                    n += 1
                    sg, vals = ours[name]
                    t = mags.numpy().astype(np.float32).reshape(-1)
                    if mags.ndim == 0:
                        ok = sg == "-"
                    else:
                        ok = sg == ("1" if signed else "0") and np.array_equal(vals, t)
                    if not ok:
                        bad.append("%s %d %dx%d %s" % (kind, bins, w, h, name))
    check("magnitude tables equal torchvision's (%d tables)" % n, not bad, ", ".join(bad[:5]))


def torch_draws(ctor, w, h, n=N):
    """torchvision's forward(), its _apply_op recorded: one list of
    (name, magnitude) per sample."""
    rec = []
    real = AA._apply_op

    def fake(img, op_name, magnitude, interpolation, fill):
        rec[-1].append((op_name, float(magnitude)))
        return img
    AA._apply_op = fake
    try:
        t = ctor()
        img = torch.zeros(3, h, w, dtype=torch.uint8)
        torch.manual_seed(0)
        for _ in range(n):
            rec.append([])
            t(img)
    finally:
        AA._apply_op = real
    return rec


def ours_draws(ops, w, h, n=N):
    out = []
    for line in tsrun_draws(ops, h, w, n=n):
        if line == "none":
            out.append([])
            continue
        out.append([(x.split(":")[0], float(x.split(":")[1])) for x in line.split()])
    return out


def compare_draws(what, tv, ts):
    sup_tv = {s for d in tv for s in d}
    sup_ts = {s for d in ts for s in d}
    check("%s: the same (op, magnitude) pairs drawn" % what, sup_tv == sup_ts,
          "tsrun only %s, torchvision only %s" % (sorted(sup_ts - sup_tv)[:4],
                                                  sorted(sup_tv - sup_ts)[:4]))
    steps = max(max(len(d) for d in tv), max(len(d) for d in ts))
    for k in range(steps):
        a = [d[k] if len(d) > k else None for d in tv]
        b = [d[k] if len(d) > k else None for d in ts]
        two_sample("%s: step %d op" % (what, k + 1), a, b, lambda v: v and v[0])
        two_sample("%s: step %d signed magnitude" % (what, k + 1), a, b, lambda v: v)
    two_sample("%s: ops applied" % what, [len(d) for d in tv], [len(d) for d in ts],
               lambda v: v)


def draws():
    w, h = 224, 200
    compare_draws("rand_augment(2, 9)", torch_draws(lambda: AA.RandAugment(2, 9), w, h),
                  ours_draws("rand_augment(2, 9)", w, h))
    compare_draws("rand_augment(3, 17, num_magnitude_bins = 20)",
                  torch_draws(lambda: AA.RandAugment(3, 17, 20), w, h),
                  ours_draws("rand_augment(3, 17, num_magnitude_bins = 20)", w, h))
    compare_draws("trivial_augment_wide", torch_draws(AA.TrivialAugmentWide, w, h),
                  ours_draws("trivial_augment_wide", w, h))
    compare_draws("trivial_augment_wide(num_magnitude_bins = 8)",
                  torch_draws(lambda: AA.TrivialAugmentWide(8), w, h),
                  ours_draws("trivial_augment_wide(num_magnitude_bins = 8)", w, h))
    for pol in ("imagenet", "cifar10", "svhn"):
        compare_draws("auto_augment(%s)" % pol,
                      torch_draws(lambda: AA.AutoAugment(AA.AutoAugmentPolicy(pol)), w, h),
                      ours_draws("auto_augment(%s)" % pol, w, h))


def photos(tmp):
    src_dir = "/usr/share/backgrounds/mate/nature"
    imgs = []
    if os.path.isdir(src_dir):
        paths = sorted(os.path.join(src_dir, f) for f in os.listdir(src_dir)
                       if f.lower().endswith((".jpg", ".jpeg", ".png")))[:2]
        for k, (p, (w, h)) in enumerate(zip(paths, ((224, 200), (97, 131)))):
            im = Image.open(p).convert("RGB")
            imgs.append(("%s-%dx%d" % (os.path.basename(p), w, h),
                         im.crop((im.width // 5, im.height // 7, im.width // 5 + w * 3,
                                  im.height // 7 + h * 3)).resize((w, h), Image.BILINEAR)))
    if not imgs:
        for k, (w, h) in enumerate(((224, 200), (97, 131))):
            path = os.path.join(tmp, "pat%d.png" % k)
            subprocess.run(["convert", "-size", "%dx%d" % (w, h), "plasma:fractal",
                            "-seed", str(k + 1), path], check=True)
            imgs.append(("plasma%d" % k, Image.open(path).convert("RGB")))
    imgs.append((imgs[0][0] + "-L", imgs[0][1].convert("L")))
    return imgs


def raw(tmp, im):
    a = np.ascontiguousarray(np.asarray(im))
    path = os.path.join(tmp, "in.raw")
    a.tofile(path)
    return path, (1 if a.ndim == 2 else a.shape[2])


def maxdiff(a, b):
    a = np.asarray(a).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    return int(np.abs(a - b).max()) if a.shape == b.shape else 10 ** 9


def steps_exact(tmp, imgs):
    mags = {"ShearX": (0.3, -0.17, 0.99), "ShearY": (-0.3, 0.05, 0.99),
            "TranslateX": (101.5, -14.9, 32.0, 0.7), "TranslateY": (-90.6, 3.0, 32.0),
            "Rotate": (30.0, -13.5, 135.0, 90.0), "Brightness": (0.9, -0.63, 0.99),
            "Color": (0.27, -0.9), "Contrast": (0.54, -0.99), "Sharpness": (0.9, -0.45),
            "Posterize": (8, 7, 4, 2), "Solarize": (255.0, 178.5, 0.0, 127.5),
            "AutoContrast": (0.0,), "Equalize": (0.0,), "Invert": (0.0,), "Identity": (0.0,)}
    worst = {}
    for name, im in imgs:
        inp, c = raw(tmp, im)
        out = os.path.join(tmp, "out.raw")
        for op, ms in mags.items():
            for m in ms:
                for interp, mode in (("nearest", IM.NEAREST), ("bilinear", IM.BILINEAR),
                                     ("bicubic", IM.BICUBIC)):
                    if interp != "nearest" and op not in ("ShearX", "ShearY", "TranslateX",
                                                           "TranslateY", "Rotate"):
                        continue
                    for fill in (0, 200):
                        if fill and op not in ("ShearX", "Rotate", "TranslateY"):
                            continue
                        subprocess.run([TOOL, "step", inp, str(im.width), str(im.height),
                                        str(c), out, op, repr(float(m)), interp, str(fill)],
                                       check=True)
                        got = np.fromfile(out, np.uint8).reshape(np.asarray(im).shape)
                        ref = AA._apply_op(im, op, float(m), interpolation=mode,
                                           fill=[float(fill)] * c if fill else None)
                        d = maxdiff(ref, got)
                        worst[op] = max(worst.get(op, 0), d)
                        if d:
                            check("%s %s(%g) %s fill %d" % (name, op, m, interp, fill), False,
                                  "max %d levels" % d)
    check("each op with fixed magnitudes equals torchvision's _apply_op (%s)"
          % ", ".join("%s %d" % kv for kv in sorted(worst.items())),
          all(v == 0 for v in worst.values()))


def policies_exact(tmp, imgs):
    cases = [("rand_augment(2, 9)", IM.NEAREST, None),
             ("rand_augment(4, 30, interpolation = bilinear, fill = 128)", IM.BILINEAR, 128),
             ("trivial_augment_wide", IM.NEAREST, None),
             ("trivial_augment_wide(num_magnitude_bins = 11, fill = 7)", IM.NEAREST, 7),
             ("auto_augment(imagenet)", IM.NEAREST, None),
             ("auto_augment(cifar10, interpolation = bilinear)", IM.BILINEAR, None),
             ("auto_augment(svhn)", IM.NEAREST, None),
             ("trivial_augment_wide(interpolation = bicubic)", IM.BICUBIC, None)]
    for name, im in imgs:
        inp, c = raw(tmp, im)
        out = os.path.join(tmp, "out.raw")
        for ops, mode, fill in cases:
            draws_ = ours_draws(ops, im.width, im.height, n=60)
            worst, seen = 0, set()
            for k, steps in enumerate(draws_):
                subprocess.run([COLOR_TOOL, inp, str(im.width), str(im.height), str(c), out,
                                ops, "1", "0", str(k)], check=True)
                got = np.fromfile(out, np.uint8).reshape(np.asarray(im).shape)
                ref = im
                for op, m in steps:
                    seen.add(op)
                    ref = AA._apply_op(ref, op, m, interpolation=mode,
                                       fill=[float(fill)] * c if fill is not None else None)
                worst = max(worst, maxdiff(ref, got))
            check("%s %s: 60 positions equal torchvision's ops with tsrun's draws" % (name, ops),
                  worst == 0, "max %d levels; ops seen: %d" % (worst, len(seen)))


def erasing_values(tmp, imgs):
    """The output stage's erasing (policy-tool slot: the whole pipeline, the
    slot as a trainer gets it) against torchvision: ToTensor, Normalize,
    then F.erase with the box tsrun drew, in float32 and float16, nchw and
    nhwc; value random: the box holds normal values (mean, variance), the
    rest equal."""
    import torchvision.transforms.functional as F
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    norm = "normalize(%s, %s)" % (mean, std)
    worst = {}
    for name, im in imgs:
        if im.mode != "RGB":
            continue
        inp, c = raw(tmp, im)
        out = os.path.join(tmp, "slot.raw")
        base = F.normalize(F.to_tensor(im), mean, std)
        for ops, value, dt, layout in (
                ("%s | random_erasing(0.7) | to(float32, nchw)", 0.0, np.float32, "nchw"),
                ("%s | random_erasing(0.7, value = [1, -2, 0.5]) | to(float32, nhwc)",
                 [1.0, -2.0, 0.5], np.float32, "nhwc"),
                ("%s | random_erasing(0.9, 0.1..0.4, 0.5..2.0, value = 3) | to(float16, nchw)",
                 3.0, np.float16, "nchw"),
                ("%s | to(float32, nchw) | random_erasing(0.7, value = random)", None,
                 np.float32, "nchw")):
            ops = ops % norm
            erased = 0
            for k in range(12):
                res = subprocess.run([TOOL, "slot", inp, str(im.width), str(im.height), str(c),
                                      out, ops, str(k), "3"], check=True, capture_output=True,
                                     text=True).stdout.split()
                got = np.fromfile(out, dt)
                got = got.reshape((3, im.height, im.width) if layout == "nchw"
                                  else (im.height, im.width, 3))
                if layout == "nhwc":
                    got = got.transpose(2, 0, 1)
                ref = base.clone()
                box = None
                if res[0] != "-":
                    box = [int(x) for x in res]
                    erased += 1
                    if value is not None:
                        v = torch.tensor(value if isinstance(value, list) else [value],
                                         dtype=torch.float32)[:, None, None]
                        ref = F.erase(ref, box[0], box[1], box[2], box[3], v)
                ref = ref.numpy().astype(dt)
                if value is None and box:
                    i, j, h, w = box
                    inside = got[:, i:i + h, j:j + w].astype(np.float64)
                    n = inside.size
                    ok = n < 50 or (abs(inside.mean()) < 5 / math.sqrt(n) and
                                    abs(inside.var() - 1) < 0.3)
                    check("%s: random values in the box look standard normal" % name, ok,
                          "mean %.3f var %.3f over %d" % (inside.mean(), inside.var(), n))
                    mask = np.ones(got.shape, bool)
                    mask[:, i:i + h, j:j + w] = False
                    d = float(np.abs(got[mask].astype(np.float64) - ref[mask]).max())
                else:
                    d = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
                worst[ops] = max(worst.get(ops, 0.0), d)
            check("%s %s: the slot equals torchvision's Normalize + F.erase of the box "
                  "(%d of 12 erased)" % (name, ops, erased), worst[ops] == 0,
                  "max %g" % worst[ops])


def threads():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.ts")
        with open(path, "w") as f:
            f.write("""pipeline p =
    synthetic([96, 128], count = 300)
    | random_apply(color_jitter(0.4, 0.4, 0.4, 0.1) | grayscale(3), p = 0.8)
    | random_choice([equalize, posterize(4) | autocontrast, invert], p = [2, 1, 1])
    | rand_augment(2, 9)
    | random_apply(trivial_augment_wide, p = 0.5)
    | random_choice([auto_augment(imagenet), auto_augment(svhn, fill = [1, 2, 3])])
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | random_erasing(0.5, value = random)
    | random_erasing(0.5, scale = 0.1..0.2, value = [1, 2, 3])
    | to(float16, nchw)
    | batch(16)
""")
        digests = []
        for t in (1, 2):
            out = subprocess.run([TSRUN, "bench", path, "--threads", str(t)], check=True,
                                 capture_output=True, text=True).stdout
            digests.append([l for l in out.splitlines() if l.startswith("digest:")])
        check("same digest with 1 and 2 threads", digests[0] == digests[1] and digests[0],
              str(digests))


def main():
    erasing(224, 224, 0.5, (0.02, 0.33), (0.3, 3.3), "to(float32) | random_erasing(0.5)")
    erasing(48, 64, 0.8, (0.1, 0.4), (0.5, 2.0),
            "to(float32) | random_erasing(0.8, scale = 0.1..0.4, ratio = 0.5..2.0)")
    apply_choice()
    tables()
    draws()
    with tempfile.TemporaryDirectory() as tmp:
        imgs = photos(tmp)
        steps_exact(tmp, imgs)
        policies_exact(tmp, imgs)
        erasing_values(tmp, imgs)
    threads()
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
