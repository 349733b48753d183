#!/usr/bin/python3
"""The random operators beyond the crop, flip and jitter, replayed from
the trace with torchvision, on the same photo.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14 /
Pillow 9.4). Exit 77 (skip) when they cannot be imported or Debian's
mate-backgrounds photos are missing.

Photos from /usr/share/backgrounds/mate/nature are resized with PIL to
several sizes, all larger than the 64 x 64 centre crop the pipelines take
(the crop is exact: no resample), and saved as PNG and JPEG quality 90.
Each pipeline runs twice: `tsrun bench --trace FILE` writes every
sample's draws (tsrun(1)) and libtsrun's embedding API (ctypes) hands out
the samples (the draws are a pure function of (seed, epoch, index)).
Each sample is rebuilt with torchvision.transforms.functional on the PIL
decode of its file with the traced parameters, and compared:

  exact (0 levels): random_rotation (F.rotate with the angle),
      random_affine (F.affine with angle, translate, scale, shear),
      invert / posterize / solarize / autocontrast / equalize with p < 1
      and grayscale(3, p) (applied or not, as traced), augmix
      (torchvision's own AugMix.forward with the traced Beta and
      Dirichlet weights, depths, ops, bins and signs fed into it),
      random_erasing (F.erase on F.to_tensor with the traced box and
      value; in the output stage, in nchw, and inside random_apply, the
      kernel's path);
  random_perspective: F.perspective with the traced start and end points,
      within tsrun-pipeline(5)'s bound (at most 0.5 % of the values off,
      mean under 0.5 levels);
  gaussian_blur's drawn sigma: F.gaussian_blur, within 1 level, at most
      0.01 % of the values off;
  random_erasing(value = random): outside the traced box exact, inside
      standard normal (mean within 0.05, std within 0.05 of 1);
and for each: every draw replayed, some samples applied and some not
where there is a p, and the replay with one traced parameter perturbed
(an angle, a translation, a corner, sigma, applied, an augmix bin or
weight, the erase box) fails the same comparison on most samples, so the
test can fail. Every comparison is tsrun against torchvision.
"""
import copy
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

TSRUN = os.environ.get("TSRUN")
LIB = os.environ.get("TS_LIBTSRUN")
if not TSRUN or not LIB:
    print("FAIL: TSRUN and TS_LIBTSRUN must be set")
    sys.exit(1)

PHOTOS = "/usr/share/backgrounds/mate/nature"
SIZES = [(96, 80), (130, 200), (300, 240)]   # all above 64 on both axes
CROP = 64
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        failures.append(name)


# ---- libtsrun over ctypes (include/tsrun/tsrun.h) ------------------------

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from augmix_replay import Replay  # noqa: E402
from tsrun_embed import bench_trace, epoch_samples, open_lib  # noqa: E402

lib = open_lib(LIB)



def samples(text, base_dir):
    """{(epoch, index): raw bytes of the sample} of one epoch."""
    return epoch_samples(lib, text, base_dir, batch=4)


def trace(path, base_dir):
    """{(epoch, index): trace line} from tsrun bench --trace."""
    return bench_trace(TSRUN, path, base_dir)


# ---- the replays: (img, draw, params) -> img ------------------------------

INTERP = {"nearest": IM.NEAREST, "bilinear": IM.BILINEAR, "bicubic": IM.BICUBIC}


def r_rotation(img, d, prm):
    return F.rotate(img, d["angle"], INTERP[prm.get("interpolation", "nearest")])


def r_affine(img, d, prm):
    return F.affine(img, d["angle"], d["translate"], d["scale"], d["shear"],
                    INTERP[prm.get("interpolation", "nearest")])


def r_perspective(img, d, prm):
    if not d["applied"]:
        return img
    return F.perspective(img, d["startpoints"], d["endpoints"],
                         INTERP[prm.get("interpolation", "bilinear")])


def r_blur(img, d, prm):
    k = prm["kernel_size"]
    return F.gaussian_blur(img, k, [d["sigma"], d["sigma"]])


COLOR = {"invert": lambda img, prm: F.invert(img),
         "posterize": lambda img, prm: F.posterize(img, prm["bits"]),
         "solarize": lambda img, prm: F.solarize(img, prm["threshold"]),
         "autocontrast": lambda img, prm: F.autocontrast(img),
         "equalize": lambda img, prm: F.equalize(img),
         "grayscale": lambda img, prm: F.rgb_to_grayscale(img, num_output_channels=3)}


def r_color(name):
    def run(img, d, prm):
        return COLOR[name](img, prm) if d["applied"] else img
    return run


def augmix_draw(d):
    """A traced augmix record as augmix_replay.Replay's (m, w, chains)."""
    return (d["m"], d["weights"],
            [[(o["index"], -1 if o["bin"] is None else o["bin"],
               -1 if o["sign"] is None else o["sign"]) for o in chain]
             for chain in d["chains"]])


def r_augmix(img, d, prm):
    return Replay(augmix_draw(d), **prm)(img)


def erase(t, d):
    """F.erase on the CHW float tensor t with the traced box and value."""
    if not d["erased"] or d["value"] == "random":
        return t  # a random fill is compared outside the box only
    v = torch.tensor(d["value"], dtype=torch.float32).view(-1, 1, 1)
    return F.erase(t, d["top"], d["left"], d["height"], d["width"], v)


REPLAY = {"random_rotation": r_rotation, "random_affine": r_affine,
          "random_perspective": r_perspective, "gaussian_blur": r_blur,
          "augmix": r_augmix}
REPLAY.update({k: r_color(k) for k in COLOR})


# ---- perturbations: one traced parameter off ------------------------------

def p_rotation(d):
    d["angle"] += 7.0


def p_affine(d):
    d["translate"][0] += 3


def p_perspective(d):
    if d["applied"]:
        d["endpoints"][0][0] += 4
    else:
        d["applied"] = True
        d["startpoints"] = [[0, 0], [CROP - 1, 0], [CROP - 1, CROP - 1], [0, CROP - 1]]
        d["endpoints"] = [[6, 3], [CROP - 1, 5], [CROP - 8, CROP - 1], [2, CROP - 4]]


def p_blur(d):
    d["sigma"] = d["sigma"] * 1.6 + 0.3


def p_applied(d):
    d["applied"] = not d["applied"]


def p_augmix(d):
    d["m"] = [d["m"][1], d["m"][0]]


def p_erase(d):
    if d["erased"]:
        d["top"] = (d["top"] + 5) % max(1, CROP - d["height"] + 1)
        d["left"] = (d["left"] + 7) % max(1, CROP - d["width"] + 1)
    else:
        d.update(erased=True, top=3, left=5, height=20, width=17,
                 value=d.get("value", [0.5]))


PERTURB = {"random_rotation": p_rotation, "random_affine": p_affine,
           "random_perspective": p_perspective, "gaussian_blur": p_blur,
           "augmix": p_augmix, "random_erasing": p_erase}
PERTURB.update({k: p_applied for k in COLOR})


# ---- one pipeline ----------------------------------------------------------

def run(name, folder, body, ops, bound=None, erasing=None, perturb=None, views=None):
    """Run `folder | shuffle | decode(rgb) | center_crop(64) | body`, replay
    every sample with ops ((op name, params) in the order they draw;
    "random_apply" takes a params list of its own), compare within bound
    (None: exact; else (max levels, fraction of values off, mean)),
    erasing ("nchw"/"nhwc": the float tensor's layout; random: the fill
    is random). perturb names the op whose traced parameter is moved to
    check the comparison fails; views: each view's ops, the sample their
    outputs in order."""
    text = ('pipeline p =\n    folder("%s")\n    | shuffle(seed = 11)\n    | decode(rgb)\n'
            '    | center_crop(%d)\n%s    | batch(4)\n'
            % (folder, CROP, "".join("    | %s\n" % b for b in body)))
    base = os.path.dirname(folder)
    path = os.path.join(base, "p.ts")
    with open(path, "w") as f:
        f.write(text)
    got = samples(text, base)
    tr = trace(path, base)
    check(name + ": a trace line per sample", bool(got) and set(got) <= set(tr),
          "%d samples, %d lines" % (len(got), len(tr)))
    seen = {}

    def replay(item, draws):
        img = F.center_crop(Image.open(item).convert("RGB"), CROP)
        it = iter(draws)
        t = None

        def apply(img, t, ops):
            for op, prm in ops:
                d = next(it, None)
                if d is None or d["op"] != op:
                    raise LookupError("%s's draw missing, trace has %s" % (op, d))
                seen.setdefault(op, set()).add(
                    d.get("applied", d.get("erased", True)))
                if op == "random_apply":
                    if d["applied"]:
                        img, t = apply(img, t, prm)
                elif op == "random_choice":
                    img, t = apply(img, t, prm[d["choice"]])
                elif op == "random_erasing":
                    if t is None:
                        t = F.to_tensor(img)
                    t = erase(t, d)
                else:
                    img = REPLAY[op](img, d, prm)
            return img, t
        if views:
            parts = [np.asarray(apply(img, None, v)[0]).reshape(-1) for v in views]
            return np.concatenate(parts), next(it, None) is not None
        img, t = apply(img, t, ops)
        left = next(it, None) is not None
        if erasing:
            t = F.to_tensor(img) if t is None else t
            a = t.numpy() if erasing == "nchw" else t.permute(1, 2, 0).numpy()
            return np.ascontiguousarray(a, dtype=np.float32), left
        return np.asarray(img), left

    def compare(have, want, d_erase):
        """(ok, max, fraction off, mean) of have against want."""
        if erasing == "random":
            box = np.zeros(have.shape[:2], bool)  # nhwc
            if d_erase and d_erase["erased"]:
                box[d_erase["top"]:d_erase["top"] + d_erase["height"],
                    d_erase["left"]:d_erase["left"] + d_erase["width"]] = True
            outside = have[~box] != want[~box]
            return (not outside.any(), int(outside.sum()), float(outside.mean()), 0.0)
        if erasing:
            off = have != want
            return (not off.any(), float(np.abs(have - want).max()), float(off.mean()), 0.0)
        dd = np.abs(have.astype(np.int32) - want.astype(np.int32))
        frac, mean = float((dd != 0).mean()), float(dd.mean())
        if bound is None:
            return (dd.max() == 0, int(dd.max()), frac, mean)
        return (dd.max() <= bound[0] and frac <= bound[1] and mean <= bound[2],
                int(dd.max()), frac, mean)

    worst, worst_frac, worst_mean, left_n, n, bad = 0, 0.0, 0.0, 0, 0, 0
    moved_bad, moved_n = 0, 0
    inside = []
    for key, raw in sorted(got.items()):
        line = tr.get(key)
        if not line:
            continue
        n += 1
        dtype = np.float32 if erasing else np.uint8
        have = np.frombuffer(raw, dtype=dtype)
        try:
            want, left = replay(line["item"], line["draws"])
        except (LookupError, KeyError, TypeError) as e:
            check(name + ": the trace holds every draw", False, str(e))
            return
        left_n += left
        if have.size != want.size:
            check(name + ": sample shape", False, "%s vs %s" % (have.shape, want.shape))
            return
        have = have.reshape(want.shape)
        d_erase = next((d for d in line["draws"] if d["op"] == "random_erasing"), None)
        ok, mx, frac, mean = compare(have, want, d_erase)
        bad += not ok
        worst, worst_frac, worst_mean = max(worst, mx), max(worst_frac, frac), max(worst_mean,
                                                                                   mean)
        if erasing == "random" and d_erase and d_erase["erased"]:
            sl = have[d_erase["top"]:d_erase["top"] + d_erase["height"],
                      d_erase["left"]:d_erase["left"] + d_erase["width"], :]
            inside.append(sl.reshape(-1))
        if perturb:
            draws = copy.deepcopy(line["draws"])
            target = next((d for d in draws if d["op"] == perturb), None)
            if target is None:
                continue  # inside a random_apply that did not apply
            PERTURB[perturb](target)
            want2, _ = replay(line["item"], draws)
            ok2 = compare(have, want2.reshape(have.shape), target if perturb ==
                          "random_erasing" else d_erase)[0]
            moved_n += 1
            moved_bad += not ok2
    check(name + ": every draw replayed", left_n == 0, "%d samples with draws left" % left_n)
    what = "exact" if bound is None and erasing != "random" else \
        ("outside the box exact" if erasing == "random" else
         "within %d levels, %g of the values, mean %g" % bound)
    check("%s: %s (%d of %d samples)" % (name, what, n - bad, n), bad == 0 and n > 0,
          "worst max %g, off %.4g%%, mean %.4g" % (worst, 100 * worst_frac, worst_mean))
    for op, vals in sorted(seen.items()):
        if op in COLOR or op in ("random_perspective", "random_erasing", "random_apply"):
            check(name + ": %s both applied and not" % op, vals == {True, False}, str(vals))
    if inside:
        a = np.concatenate(inside)
        check(name + ": the random fill is standard normal",
              abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05,
              "%d values, mean %.4f, std %.4f" % (a.size, a.mean(), a.std()))
    if perturb:
        check(name + ": with %s's traced parameter moved the replay fails (%d of %d)"
              % (perturb, moved_bad, moved_n), moved_bad * 4 >= moved_n * 3)


def main():
    if not os.path.isdir(PHOTOS):
        print("skip: no photos in", PHOTOS, "(install mate-backgrounds)")
        return 77
    photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))[:6]
    if len(photos) < 3:
        print("skip: too few photos in", PHOTOS)
        return 77
    tmp = tempfile.mkdtemp(prefix="ts-torch-trace-ops.")
    try:
        for kind in ("jpg", "png"):
            for k, f in enumerate(photos):
                im = Image.open(os.path.join(PHOTOS, f)).convert("RGB")
                for s, (w, h) in enumerate(SIZES):
                    d = os.path.join(tmp, kind, "c%d" % (k % 2))
                    os.makedirs(d, exist_ok=True)
                    out = im.resize((w, h), Image.BILINEAR)
                    p = os.path.join(d, "%d_%d.%s" % (k, s, kind))
                    if kind == "jpg":
                        out.save(p, quality=90)
                    else:
                        out.save(p)
        jpg, png = os.path.join(tmp, "jpg"), os.path.join(tmp, "png")
        to8 = "to(uint8)"
        for kind, folder in (("png", png), ("jpeg", jpg)):
            run("random_rotation, " + kind, folder,
                ["random_rotation(25, interpolation = bilinear)", to8],
                [("random_rotation", {"interpolation": "bilinear"})],
                perturb="random_rotation")
        run("random_rotation, nearest, jpeg", jpg, ["random_rotation([-40, 10])", to8],
            [("random_rotation", {})], perturb="random_rotation")
        run("random_affine, jpeg", jpg,
            ["random_affine(15, translate = [0.2, 0.1], scale = 0.7..1.2, "
             "shear = [-8, 8, -4, 4], interpolation = bilinear)", to8],
            [("random_affine", {"interpolation": "bilinear"})], perturb="random_affine")
        run("random_affine, shear x only, nearest, png", png,
            ["random_affine(0, translate = [0.1, 0.3], shear = 10)", to8],
            [("random_affine", {})], perturb="random_affine")
        run("random_perspective, jpeg", jpg,
            ["random_perspective(0.5, p = 0.6)", to8],
            [("random_perspective", {})], bound=(255, 0.005, 0.5),
            perturb="random_perspective")
        run("random_perspective, nearest, png", png,
            ["random_perspective(0.3, p = 0.5, interpolation = nearest)", to8],
            [("random_perspective", {"interpolation": "nearest"})], bound=(255, 0.005, 0.5),
            perturb="random_perspective")
        run("gaussian_blur sigma 0.1..2.0, jpeg", jpg,
            ["gaussian_blur(7, sigma = 0.1..2.0)", to8],
            [("gaussian_blur", {"kernel_size": [7, 7]})], bound=(1, 1e-4, 0.01),
            perturb="gaussian_blur")
        run("gaussian_blur [5, 3] sigma 0.5..3, png", png,
            ["gaussian_blur([5, 3], sigma = 0.5..3)", to8],
            [("gaussian_blur", {"kernel_size": [5, 3]})], bound=(1, 1e-4, 0.01),
            perturb="gaussian_blur")
        colors = [("invert", {}, "invert(p = 0.5)"),
                  ("posterize", {"bits": 3}, "posterize(3, p = 0.5)"),
                  ("solarize", {"threshold": 100}, "solarize(100, p = 0.5)"),
                  ("autocontrast", {}, "autocontrast(p = 0.5)"),
                  ("equalize", {}, "equalize(p = 0.5)")]
        for op, prm, call in colors:
            run("%s, jpeg" % call, jpg, [call, to8], [(op, prm)], perturb=op)
        # grayscale(p): unfused (before another op) and in the output stage
        run("grayscale(3, p = 0.4) | solarize(p = 0.3), jpeg", jpg,
            ["grayscale(3, p = 0.4)", "solarize(160, p = 0.3)", to8],
            [("grayscale", {}), ("solarize", {"threshold": 160})], perturb="grayscale")
        run("grayscale(3, p = 0.5) in the output stage, png", png,
            ["grayscale(3, p = 0.5)", to8], [("grayscale", {})], perturb="grayscale")
        # augmix: drawn depths, a fixed depth with a fill, nearest
        run("augmix, jpeg", jpg, ["augmix", to8], [("augmix", {})], perturb="augmix")
        run("augmix(severity = 8, mixture_width = 4, alpha = 0.4, fill = 128), png", png,
            ["augmix(severity = 8, mixture_width = 4, alpha = 0.4, fill = 128)", to8],
            [("augmix", {"severity": 8, "mixture_width": 4, "alpha": 0.4, "fill": 128})],
            perturb="augmix")
        run("augmix(5, 2, 2, all_ops = false, interpolation = nearest), jpeg", jpg,
            ["augmix(5, 2, 2, all_ops = false, interpolation = nearest)", to8],
            [("augmix", {"severity": 5, "mixture_width": 2, "chain_depth": 2,
                         "all_ops": False, "interpolation": IM.NEAREST})],
            perturb="augmix")
        # random_erasing: in the output stage (into the slot, nchw), in the
        # kernel's path inside random_apply, and the random fill
        run("random_erasing in the output stage, nchw, jpeg", jpg,
            ["to(float32)", "random_erasing(0.7, value = [0.1, 0.2, 0.3])",
             "to(float32, nchw)"],
            [("random_erasing", {})], erasing="nchw", perturb="random_erasing")
        run("random_erasing inside random_apply, png", png,
            ["to(float32)", "random_apply(random_erasing(0.8, scale = 0.1..0.5, "
             "ratio = 0.5..2, value = 0.25), p = 0.7)"],
            [("random_apply", [("random_erasing", {})])], erasing="nhwc",
            perturb="random_erasing")
        run("random_erasing(value = random), jpeg", jpg,
            ["to(float32)", "random_erasing(0.9, scale = 0.1..0.4, value = random)"],
            [("random_erasing", {})], erasing="random", perturb="random_erasing")
        # several in a row, as a recipe would
        run("rotation | affine | equalize(p) | blur, jpeg", jpg,
            ["random_rotation(10, interpolation = bilinear)",
             "random_affine(0, translate = [0.1, 0.1])", "equalize(p = 0.5)",
             "gaussian_blur(3, sigma = 0.1..1.5)", to8],
            [("random_rotation", {"interpolation": "bilinear"}), ("random_affine", {}),
             ("equalize", {}), ("gaussian_blur", {"kernel_size": [3, 3]})],
            bound=(1, 1e-4, 0.01), perturb="random_affine")
        # inside views() (each view its own draws) and random_choice
        run("views(2 = random_rotation, 1 = augmix), jpeg", jpg,
            ["views(2 = random_rotation(30, interpolation = bilinear) | invert(p = 0.5) "
             "| to(uint8), 1 = augmix(mixture_width = 2) | to(uint8))"], [],
            views=[[("random_rotation", {"interpolation": "bilinear"}), ("invert", {})]] * 2 +
            [[("augmix", {"mixture_width": 2})]], perturb="random_rotation")
        run("random_choice([grayscale(3, p = 0.5), random_perspective(0.4, p = 0.8)]), png",
            png, ["random_choice([grayscale(3, p = 0.5), random_perspective(0.4, p = 0.8)])",
                  to8],
            [("random_choice", [[("grayscale", {})], [("random_perspective", {})]])],
            bound=(255, 0.005, 0.5), perturb="grayscale")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("ok: torch-trace-ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
