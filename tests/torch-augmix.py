#!/usr/bin/python3
"""augmix (dsl/ops_policy.c, runtime/augmix.c) against torchvision 0.14's
transforms.AugMix.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14).
Exit 77 (skip) when torch or torchvision cannot be imported or the tools
were not built.

AugMix turns a PIL image into a uint8 tensor and runs its ops on the
tensor (functional_tensor: grid_sample for affine and rotate, float32
blends truncated), then mixes in float32 and truncates. Asserted:
  - every op of its space (tests/tools/augmix-tool step) equal to
    torchvision's _apply_op on the uint8 tensor, value for value, at
    several magnitudes each, bilinear and nearest, fill None and a fill,
    on photos (RGB and L) and odd sizes (37x51, 3x3, 2x5, 1x1);
  - Contrast on images whose gray sum passes 2^24 (500x375, 640x480),
    where torch's float32 sum rounds, with torch on one thread (as in a
    DataLoader worker): equal, tsrun replays that sum's order (checked on
    its own against torch.sum on 40 arrays up to 2,073,600 values);
  - the whole operator (the pipeline text through tests/tools/color-tool
    at stream positions 0..59, on photos, RGB and L, several parameter
    sets) equal to torchvision's AugMix.forward on the PIL image with
    tsrun's draws replayed into it (its _sample_dirichlet returns tsrun's
    Beta and Dirichlet weights, torch.randint tsrun's depth, op, bin and
    sign draws, and every replayed draw must be consumed in order): the
    same ops and the same float32 mixing, so exact (max abs diff 0);
  - the draws' distributions, 10,000 of tsrun's (augmix-tool draws)
    against 10,000 of torchvision's own sampling (its forward with
    _apply_op recording): the op chosen, the depth, the magnitude bin and
    the sign (two-sample chi-square), the Beta weight of the original and
    the first Dirichlet weight (two-sample Kolmogorov-Smirnov, alpha
    0.001), for the defaults and for severity 10, width 2, alpha 0.3,
    all_ops false, chain_depth 2;
  - identical output for 1, 2 and 3 threads (tsrun bench digests).
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
    from torchvision.transforms import autoaugment as AA
    from torchvision.transforms import InterpolationMode
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from augmix_replay import Replay  # noqa: E402

TOOL = os.environ.get("TS_TOOL_AUGMIX_TOOL")
COLOR_TOOL = os.environ.get("TS_TOOL_COLOR_TOOL")
TSRUN = os.environ.get("TSRUN")
if not TOOL or not os.access(TOOL, os.X_OK) or not TSRUN or not COLOR_TOOL:
    print("skip: TS_TOOL_AUGMIX_TOOL, TS_TOOL_COLOR_TOOL or TSRUN not set or not built")
    sys.exit(77)

N = 10000
SPACE = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Posterize",
         "Solarize", "AutoContrast", "Equalize", "Brightness", "Color", "Contrast",
         "Sharpness"]
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (" " + detail if detail else ""))
    if not ok:
        failures.append(name)


def two_sample(name, a, b, bins=lambda v: v):
    """Two-sample chi-square of samples a and b (equal sizes), merging
    bins with few counts (as tests/torch-policy.py)."""
    ca, cb = {}, {}
    for v in a:
        ca[bins(v)] = ca.get(bins(v), 0) + 1
    for v in b:
        cb[bins(v)] = cb.get(bins(v), 0) + 1
    keys = sorted(set(ca) | set(cb), key=str)
    x2, dof, ra, rb = 0.0, -1, 0, 0
    scale = math.sqrt(len(b) / max(1, len(a)))
    for k in keys:
        ra += ca.get(k, 0)
        rb += cb.get(k, 0)
        if ra + rb < 20:
            continue
        x2 += (ra * scale - rb / scale) ** 2 / (ra + rb)
        dof += 1
        ra = rb = 0
    if ra + rb:
        x2 += (ra * scale - rb / scale) ** 2 / (ra + rb)
        dof += 1
    bound = dof + 3.3 * math.sqrt(2 * max(dof, 1)) + 3
    check(name, x2 < bound, "chi-square %.1f over %d dof (bound %.1f)" % (x2, dof, bound))


def ks(name, a, b):
    x, y = np.sort(np.asarray(a)), np.sort(np.asarray(b))
    allv = np.concatenate([x, y])
    d = np.max(np.abs(np.searchsorted(x, allv, side="right") / len(x) -
                      np.searchsorted(y, allv, side="right") / len(y)))
    crit = 1.95 * math.sqrt((len(x) + len(y)) / (len(x) * len(y)))  # alpha 0.001
    check(name, d < crit, "KS D %.4f < %.4f; means %.4f, %.4f" % (d, crit, x.mean(), y.mean()))


def parse(line):
    """One augmix-tool draws line: (m, w, chains: [[(index, bin, sign)]])."""
    parts = line.split(" | ")
    head = [float(v) for v in parts[0].split()]
    chains = []
    for p in parts[1:]:
        v = [int(t) for t in p.split()]
        chains.append([tuple(v[1 + 3 * i:4 + 3 * i]) for i in range(v[0])])
    return head[:2], head[2:], chains


def tsrun_draws(ops, h, w, c, n, seed=1):
    out = subprocess.run([TOOL, "draws", ops, str(h), str(w), str(c), str(n), str(seed)],
                         check=True, capture_output=True, text=True).stdout
    return [parse(l) for l in out.splitlines()[:n]]




def photos(tmp):
    src_dir = "/usr/share/backgrounds/mate/nature"
    paths = []
    if os.path.isdir(src_dir):
        paths = sorted(os.path.join(src_dir, f) for f in os.listdir(src_dir)
                       if f.lower().endswith((".jpg", ".jpeg", ".png")))[:2]
    imgs = []
    for k, p in enumerate(paths):
        im = Image.open(p).convert("RGB")
        w, h = [(224, 168), (97, 131)][k]
        imgs.append(("%s-%dx%d" % (os.path.basename(p), w, h), im.resize((w, h), Image.BILINEAR)))
    if len(imgs) < 2:
        for k, (w, h) in enumerate([(224, 168), (97, 131)]):
            path = os.path.join(tmp, "pat%d.png" % k)
            subprocess.run(["convert", "-size", "%dx%d" % (w, h), "plasma:fractal",
                            "-seed", str(k + 1), path], check=True)
            imgs.append(("plasma%d" % k, Image.open(path).convert("RGB")))
    return imgs


def raw(tmp, im):
    a = np.asarray(im)
    path = os.path.join(tmp, "in.raw")
    np.ascontiguousarray(a).tofile(path)
    return path, a


def steps_exact(tmp, imgs):
    out = os.path.join(tmp, "out.raw")
    mags = {"ShearX": [0.1, -0.2666666567325592, 0.3], "ShearY": [0.0333, -0.3],
            "TranslateX": [24.0, -7.9, 0.0], "TranslateY": [-30.0, 5.0],
            "Rotate": [13.333333015441895, -30.0, 3.33, 90.0],
            "Posterize": [4.0, 3.0, 1.0, 0.0], "Solarize": [255.0, 226.6666717529297, 170.0, 0.0],
            "AutoContrast": [0.0], "Equalize": [0.0],
            "Brightness": [0.5, -0.9, 0.1], "Color": [0.9, -0.3], "Contrast": [0.4, -0.9],
            "Sharpness": [0.7, -0.5, 0.9]}
    geo = ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")
    cases = ops = 0
    for name, im in imgs:
        path, a = raw(tmp, im)
        c = 1 if a.ndim == 2 else 3
        t = torch.from_numpy(a.copy())
        t = (t[None] if a.ndim == 2 else t.permute(2, 0, 1))[None]
        worst = 0
        for op, ms in mags.items():
            for m in ms:
                for interp in (("bilinear", "nearest") if op in geo else ("bilinear",)):
                    for fill in (("none", "37") if op in geo else ("none",)):
                        subprocess.run([TOOL, "step", path, str(a.shape[1]), str(a.shape[0]),
                                        str(c), out, op, repr(m), interp, fill], check=True)
                        got = np.fromfile(out, np.uint8).reshape(a.shape).astype(np.int64)
                        mode = InterpolationMode.BILINEAR if interp == "bilinear" else InterpolationMode.NEAREST
                        want = AA._apply_op(t, op, m, interpolation=mode,
                                            fill=None if fill == "none" else [float(fill)] * c)[0]
                        want = (want[0] if a.ndim == 2 else want.permute(1, 2, 0)).numpy().astype(np.int64)
                        d = int(np.abs(got - want).max()) if got.size else 0
                        if d:
                            check("%s %s(%r) %s fill %s" % (name, op, m, interp, fill), False,
                                  "max %d, %d of %d differ" % (d, int((got != want).sum()), got.size))
                        worst = max(worst, d)
                        cases += 1
            ops += 1
        check("%s: every op of AugMix's space equal to _apply_op on the tensor" % name,
              worst == 0, "max %d levels" % worst)
    print("info %d op cases" % cases)


def contrast_large(tmp, imgs):
    """Contrast on images whose gray sum passes 2^24 (500x375 photo, RGB and
    L; 640x480 noise whose float32 sum is not its exact sum's float), with
    torch on one thread as in a DataLoader worker: equal (0 levels)."""
    out = os.path.join(tmp, "out.raw")
    im = imgs[0][1].resize((500, 375), Image.BILINEAR)
    noise = Image.fromarray(np.random.default_rng(4).integers(0, 256, (480, 640), np.uint8))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, x in (("RGB 500x375", im), ("L 500x375", im.convert("L")), ("L noise 640x480", noise)):
            path, a = raw(tmp, x)
            c = 1 if a.ndim == 2 else 3
            t = torch.from_numpy(a.copy())
            t = (t[None] if a.ndim == 2 else t.permute(2, 0, 1))[None]
            worst, off = 0, 0
            for m in (0.9, 0.5, 0.3, -0.2, -0.7):
                subprocess.run([TOOL, "step", path, str(a.shape[1]), str(a.shape[0]), str(c), out,
                                "Contrast", repr(m), "bilinear", "none"], check=True)
                got = np.fromfile(out, np.uint8).reshape(a.shape).astype(np.int64)
                want = AA._apply_op(t, "Contrast", m, interpolation=InterpolationMode.BILINEAR, fill=None)[0]
                want = (want[0] if a.ndim == 2 else want.permute(1, 2, 0)).numpy().astype(np.int64)
                worst = max(worst, int(np.abs(got - want).max()))
                off += int((got != want).sum())
            check("Contrast on %s (gray sum past 2^24), torch on 1 thread" % name, worst == 0,
                  "max %d, %d values differ" % (worst, off))
    finally:
        torch.set_num_threads(threads)


def sums(tmp):
    """Contrast's mean is torch.sum / n: tsrun's float32 sum against
    torch.sum on one thread, value for value, on 40 arrays of gray levels
    (n from 7 to 2,073,600, sums past 2^24); the count where the exact
    sum's float32 differs from torch's shows what an exact sum would miss."""
    path = os.path.join(tmp, "sum.raw")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    bad, differ = 0, 0
    try:
        rng = np.random.default_rng(11)
        sizes = [7, 8, 31, 32, 33, 1000, 50176, 65793, 65794, 187500, 307200, 480000,
                 1 << 19, (1 << 19) + 77, 2073600]
        sizes += [int(v) for v in rng.integers(100, 1200000, 25)]
        for n in sizes:
            x = rng.integers(0, 256, n).astype(np.float32)
            x.tofile(path)
            got = float(subprocess.run([TOOL, "sum", path, str(n)], check=True,
                                       capture_output=True, text=True).stdout)
            want = torch.from_numpy(x).view(1, 1, 1, n).sum(dim=(-3, -2, -1)).item()
            bad += got != want
            differ += float(np.float32(x.astype(np.float64).sum())) != want
    finally:
        torch.set_num_threads(threads)
    check("torch.sum's float32 order replayed on %d arrays" % len(sizes), bad == 0 and differ > 0,
          "%d differ; the exact sum's float32 differs from torch's in %d" % (bad, differ))


def augmix_exact(tmp, imgs):
    out = os.path.join(tmp, "out.raw")
    sets = [("augmix", {}),
            ("augmix(severity = 10, mixture_width = 4, alpha = 0.4, fill = [200, 10, 90])",
             {"severity": 10, "mixture_width": 4, "alpha": 0.4, "fill": [200, 10, 90]}),
            ("augmix(7, 2, 3, 2.5, all_ops = false, interpolation = nearest)",
             {"severity": 7, "mixture_width": 2, "chain_depth": 3, "alpha": 2.5,
              "all_ops": False, "interpolation": InterpolationMode.NEAREST}),
            ("augmix(severity = 1, mixture_width = 1, chain_depth = 1, fill = 128)",
             {"severity": 1, "mixture_width": 1, "chain_depth": 1, "fill": 128})]
    for name, im in imgs:
        path, a = raw(tmp, im)
        c = 1 if a.ndim == 2 else 3
        for ops, kw in sets:
            if c == 1 and isinstance(kw.get("fill"), list):
                ops = ops.replace("[200, 10, 90]", "200")
                kw = dict(kw, fill=200)
            n = 60 if im.width * im.height < 20000 else 20
            draws = tsrun_draws(ops, a.shape[0], a.shape[1], c, n, seed=7)
            worst, off = 0, 0
            for i, dr in enumerate(draws):
                subprocess.run([COLOR_TOOL, path, str(a.shape[1]), str(a.shape[0]), str(c), out,
                                ops, "7", "0", str(i)], check=True)
                got = np.fromfile(out, np.uint8).reshape(a.shape).astype(np.int64)
                want = np.asarray(Replay(dr, **kw)(im)).astype(np.int64)
                d = np.abs(got - want)
                worst = max(worst, int(d.max()))
                off += int((d != 0).sum())
            check("%s %s: %d positions equal to AugMix with tsrun's draws" % (name, ops, n),
                  worst == 0, "max %d levels, %d values differ" % (worst, off))


def torch_draws(kw, n, size=(8, 6)):
    """n draws of torchvision's own AugMix sampling: forward on a small
    image with _apply_op recording and torch.randint logged."""
    aug = T.AugMix(**kw)
    log = []
    real_dir = aug._sample_dirichlet
    dirs = []

    def rec_dir(params):
        v = real_dir(params)
        dirs.append(v[0].tolist())
        return v
    aug._sample_dirichlet = rec_dir
    real = torch.randint

    def logged(*args, **k):
        v = real(*args, **k)
        high = k["high"] if "high" in k else args[0]
        kind = "depth" if "low" in k else "bin" if "dtype" in k else "op" if high != 2 else "sign"
        log.append((kind, int(v.item())))
        return v
    real_apply = AA._apply_op
    AA._apply_op = lambda img, op_name, magnitude, interpolation, fill: img
    torch.randint = logged
    img = Image.new("RGB", size, (90, 120, 30))
    out = []
    try:
        torch.manual_seed(0)
        for _ in range(n):
            log.clear()
            dirs.clear()
            aug(img)
            out.append((dirs[0], dirs[1], list(log)))
    finally:
        torch.randint = real
        AA._apply_op = real_apply
    return out


def distributions():
    for ops, kw in [("augmix", {}),
                    ("augmix(severity = 10, mixture_width = 2, chain_depth = 2, alpha = 0.3, all_ops = false)",
                     {"severity": 10, "mixture_width": 2, "chain_depth": 2, "alpha": 0.3,
                      "all_ops": False})]:
        ours = tsrun_draws(ops, 6, 8, 3, N)
        theirs = torch_draws(kw, N)
        ks("%s: Beta weight of the original" % ops, [d[0][0] for d in ours], [t[0][0] for t in theirs])
        ks("%s: first Dirichlet weight" % ops, [d[1][0] for d in ours], [t[1][0] for t in theirs])
        check("%s: weights sum to 1" % ops,
              all(abs(sum(d[0]) - 1) < 1e-6 and abs(sum(d[1]) - 1) < 1e-5 for d in ours))
        o_op, o_depth, o_bin, o_sign = [], [], [], []
        for m, w, chains in ours:
            for ch in chains:
                o_depth.append(len(ch))
                for index, b, s in ch:
                    o_op.append(index)
                    if b >= 0:
                        o_bin.append(b)
                    if s >= 0:
                        o_sign.append(s)
        t_op, t_depth, t_bin, t_sign = [], [], [], []
        for m, w, log in theirs:
            for kind, v in log:
                {"op": t_op, "depth": t_depth, "bin": t_bin, "sign": t_sign}[kind].append(v)
        if kw.get("chain_depth", -1) > 0:
            t_depth = [kw["chain_depth"]] * (N * kw.get("mixture_width", 3))
        two_sample("%s: op chosen" % ops, o_op, t_op)
        two_sample("%s: chain depth" % ops, o_depth, t_depth)
        two_sample("%s: magnitude bin" % ops, o_bin, t_bin)
        two_sample("%s: sign" % ops, o_sign, t_sign)
        nops = 13 if kw.get("all_ops", True) else 9
        check("%s: ops within the space of %d" % (ops, nops), max(o_op) == nops - 1 and min(o_op) == 0)
        check("%s: bins within severity %d" % (ops, kw.get("severity", 3)),
              max(o_bin) == kw.get("severity", 3) - 1 and min(o_bin) == 0)


def threads():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.ts")
        with open(path, "w") as f:
            f.write("""pipeline p =
    synthetic([61, 77], count = 200)
    | augmix(severity = 6, alpha = 0.7, fill = [5, 100, 250])
    | random_apply(augmix(chain_depth = 2, interpolation = nearest), p = 0.5)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(8)
""")
        digests = []
        for t in (1, 2, 3):
            out = subprocess.run([TSRUN, "bench", path, "--threads", str(t)], check=True,
                                 capture_output=True, text=True).stdout
            digests.append([l for l in out.splitlines() if l.startswith("digest:")])
        check("augmix: same digest with 1, 2 and 3 threads",
              digests[0] and digests[0] == digests[1] == digests[2], str(digests))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        imgs = photos(tmp)
        a = np.asarray(imgs[0][1])
        edges = [("odd-37x51", Image.fromarray(a[:51, :37].copy())),
                 ("3x3", Image.fromarray(a[:3, :3].copy())),
                 ("2x5", Image.fromarray(a[:5, :2].copy())),
                 ("1x1", Image.fromarray(a[:1, :1].copy())),
                 ("flat", Image.fromarray(np.full((9, 11, 3), 77, np.uint8)))]
        gray = [(n + "-L", im.convert("L")) for n, im in imgs + edges[:1]]
        steps_exact(tmp, imgs + edges + gray)
        contrast_large(tmp, imgs)
        sums(tmp)
        augmix_exact(tmp, imgs + edges[:3] + gray)
    distributions()
    threads()
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
