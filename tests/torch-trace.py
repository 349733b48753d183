#!/usr/bin/python3
"""Every traced sample replayed with torchvision, on the same photo.

Runs under /usr/bin/python3 (Debian's torch 1.13 / torchvision 0.14 /
Pillow 9.4). Exit 77 (skip) when they cannot be imported or Debian's
mate-backgrounds photos are missing.

Photos from /usr/share/backgrounds/mate/nature are resized with PIL to
several sizes, every one larger than the output on both axes (so that every
crop below shrinks: PIL antialiases each), and saved as JPEG quality 90 and
as PNG. Each pipeline runs twice: `tsrun bench --trace FILE` writes what
every sample drew (tsrun(1)), and libtsrun's embedding API (ctypes) hands
out the samples; the draws are a pure function of (seed, epoch, index), so
the trace of one run is the other's. Each sample is then rebuilt with
torchvision.transforms.functional on the PIL decode of its file with the
traced parameters (resized_crop with the box, hflip, ColorJitter's
adjustments in the traced order with the traced factors, RandomCrop's pad
and crop, random_apply's and random_choice's choices, the policies' ops
through torchvision's own _apply_op) and compared. Asserted:

  exact (0 levels) wherever the crop's decode was not DCT-scaled ("scale"
      8 in the trace): PNG always; JPEG unfused, inside views() and
      inside random_choice / random_apply, and fused when the box is less
      than twice the output a side;
  fused into a DCT-scaled JPEG decode (scale 4 or 2, tsrun-pipeline(5)):
      max <= SCALED_MAX levels, mean <= SCALED_MEAN levels over the pixels
      of the scaled samples;
  the boxes differ from sample to sample, some are flipped and some are
      not, and every sample's trace line is there;
  shuffle(seed = 3) | shard(i, 2) over copies of one photo: both nodes
      exact as above, their draws differ at every node-local position
      (at most 1 of 16 alike), their keys are the positions in the whole
      epoch (node 0 the even ones), and a rerun's trace is the same.
Every comparison is tsrun against torchvision, none tsrun against tsrun.
"""
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode as IM
    from torchvision.transforms.autoaugment import _apply_op
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
# (width, height): all larger than every output below (64) on both axes;
# the two large ones make boxes at least twice the output, which the
# fused decode reads DCT-scaled.
SIZES = [(300, 240), (260, 390), (720, 540), (1000, 1400)]
SCALED_MAX = 128     # uint8 levels (measured 93)
SCALED_MEAN = 3.0    # uint8 levels (measured 2.2, color_jitter's contrast
                     # and saturation widening the decodes' differences)
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        failures.append(name)


# ---- libtsrun over ctypes (include/tsrun/tsrun.h) ------------------------

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsrun_embed import bench_trace, epoch_samples, open_lib  # noqa: E402

lib = open_lib(LIB)



def samples(text, base_dir):
    """{(epoch, index): raw uint8 bytes of the sample} of one epoch."""
    return epoch_samples(lib, text, base_dir, batch=5)


def trace(path, base_dir):
    """{(epoch, index): trace line} from tsrun bench --trace."""
    return bench_trace(TSRUN, path, base_dir)


# ---- replay with torchvision ----------------------------------------------

INTERP = {"bilinear": IM.BILINEAR, "bicubic": IM.BICUBIC}


def jitter(img, d):
    """ColorJitter.forward with the traced order and factors."""
    for name in d["order"]:
        if name == "brightness" and d["brightness"] != 1.0:
            img = F.adjust_brightness(img, d["brightness"])
        elif name == "contrast" and d["contrast"] != 1.0:
            img = F.adjust_contrast(img, d["contrast"])
        elif name == "saturation" and d["saturation"] != 1.0:
            img = F.adjust_saturation(img, d["saturation"])
        elif name == "hue" and d["hue"] != 0.0:
            img = F.adjust_hue(img, d["hue"])
    return img


NAMES = {"rrc": "random_resized_crop", "flip": "flip", "jitter": "color_jitter",
         "random_crop": "random_crop", "random_apply": "random_apply",
         "random_choice": "random_choice", "policy": "trivial_augment_wide"}


def replay(img, draws, ops, scales):
    """Apply ops (the pipeline's random ones, (name, params) in order) to
    img with the draws (an iterator over the trace's, which come in the
    order the ops ran); the decode scales of the crops go to scales."""
    for name, prm in ops:
        d = next(draws)
        assert d["op"] == NAMES[name], (name, d)
        if name == "rrc":
            scales.append(d["scale"])
            img = F.resized_crop(img, d["top"], d["left"], d["height"], d["width"],
                                 d["size"], INTERP[prm.get("interp", "bilinear")])
        elif name == "flip":
            if d["flipped"]:
                img = F.hflip(img)
        elif name == "jitter":
            img = jitter(img, d)
        elif name == "random_crop":
            pad = prm["padding"]
            img = F.crop(F.pad(img, pad), d["top"] + pad, d["left"] + pad,
                         d["height"], d["width"])
        elif name == "random_apply":
            if d["applied"]:
                img = replay(img, draws, prm["ops"], scales)
        elif name == "random_choice":
            img = replay(img, draws, prm["branches"][d["choice"]], scales)
        elif name == "policy":
            for o in d["ops"]:
                img = _apply_op(img, o["name"], o["magnitude"], IM.NEAREST, None)
    return img


def compare(name, folder, body, ops, views=None, modifier="shuffle(seed = 5)"):
    """Run pipeline body over folder, replay every sample, assert; returns
    the trace."""
    text = ('pipeline p =\n    folder("%s")\n    | %s\n    | decode(rgb)\n'
            '%s    | batch(5)\n' % (folder, modifier,
                                     "".join("    | %s\n" % b for b in body)))
    base = os.path.dirname(folder)
    path = os.path.join(base, "p.ts")
    with open(path, "w") as f:
        f.write(text)
    got = samples(text, base)
    tr = trace(path, base)
    check(name + ": a trace line per sample", set(got) <= set(tr) and got,
          "%d samples, %d lines" % (len(got), len(tr)))
    exact_d, scaled_d, n_scaled, n, left = 0, [], 0, 0, 0
    boxes, flips = set(), set()
    for key, raw in sorted(got.items()):
        line = tr.get(key)
        if not line:
            continue
        img = Image.open(line["item"]).convert("RGB")
        for d in line["draws"]:
            if d["op"] == "random_resized_crop":
                boxes.add((d["top"], d["left"], d["height"], d["width"]))
            if d["op"] == "flip":
                flips.add(d["flipped"])
        draws, scales = iter(line["draws"]), []
        parts = [np.asarray(replay(img, draws, g, scales)) for g in (views or [ops])]
        left += next(draws, None) is not None
        want = np.concatenate([p.reshape(-1) for p in parts])
        have = np.frombuffer(raw, dtype=np.uint8)
        if have.shape != want.shape:
            check(name + ": sample shape", False, "%s vs %s" % (have.shape, want.shape))
            return
        d = np.abs(have.astype(np.int32) - want.astype(np.int32))
        n += 1
        if all(s == 8 for s in scales):
            exact_d = max(exact_d, int(d.max()))
        else:
            n_scaled += 1
            scaled_d.append(d)
    check(name + ": every draw replayed", left == 0, "%d samples with draws left" % left)
    check(name + ": exact where the decode was not scaled (%d of %d samples)"
          % (n - n_scaled, n), exact_d == 0, "max %d levels" % exact_d)
    if scaled_d:
        a = np.concatenate([x.reshape(-1) for x in scaled_d])
        detail = "max %d levels, mean %.3f, p99.9 %g" % (a.max(), a.mean(),
                                                         np.percentile(a, 99.9))
        check(name + ": DCT-scaled decodes (%d samples) within max %d, mean %g"
              % (n_scaled, SCALED_MAX, SCALED_MEAN),
              a.max() <= SCALED_MAX and a.mean() <= SCALED_MEAN, detail)
    if any(o[0] == "rrc" for o in ops) or views:
        check(name + ": the boxes are random", len(boxes) > n // 2,
              "%d boxes in %d samples" % (len(boxes), n))
    if any(o[0] == "flip" for o in ops) or views:
        check(name + ": flips both ways", flips == {True, False})
    return tr


def shards(tmp):
    """shuffle(seed = 3) | shard(i, 2) over copies of one photo: each node's
    samples replayed with torchvision (exact), the two nodes' draws at the
    same node-local positions independent (keyed by the position in the
    whole epoch), and a rerun's trace the same."""
    one = os.path.join(tmp, "one")
    os.makedirs(os.path.join(one, "c"))
    im = Image.open(os.path.join(PHOTOS, sorted(os.listdir(PHOTOS))[0])).convert("RGB")
    im = im.resize((200, 160), Image.BILINEAR)
    for k in range(32):
        im.save(os.path.join(one, "c", "%02d.jpg" % k), quality=90)
    body = ["random_resized_crop(96)", "flip(horizontal)", "to(uint8)"]
    ops = [("rrc", {}), ("flip", {})]
    tr = [compare("shard(%d, 2)" % n, one, body, ops,
                  modifier="shuffle(seed = 3)\n    | shard(%d, 2)" % n) for n in (0, 1)]
    pos = sorted(set(tr[0]) & set(tr[1]))
    same = sum(tr[0][p]["draws"] == tr[1][p]["draws"] for p in pos)
    check("shard: the two nodes draw apart at the same positions", len(pos) == 16 and
          same <= 1, "%d of %d positions drew the same" % (same, len(pos)))
    keys = [sorted(t[p]["key"] for p in t) for t in tr]
    check("shard: keys are the positions in the whole epoch",
          keys == [list(range(0, 32, 2)), list(range(1, 32, 2))], str(keys))
    again = compare("shard(1, 2) rerun", one, body, ops,
                    modifier="shuffle(seed = 3)\n    | shard(1, 2)")
    check("shard: a rerun draws the same", again == tr[1])


def main():
    if not os.path.isdir(PHOTOS):
        print("skip: no photos in", PHOTOS, "(install mate-backgrounds)")
        return 77
    photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))[:6]
    if len(photos) < 3:
        print("skip: too few photos in", PHOTOS)
        return 77
    tmp = tempfile.mkdtemp(prefix="ts-torch-trace.")
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
        rrc = "random_resized_crop(64, scale = 0.25..1)"
        jit = "color_jitter(0.4, 0.4, 0.4, 0.1)"
        train = [("rrc", {}), ("flip", {}), ("jitter", {})]
        body = [rrc, "flip(horizontal)", jit, "to(uint8)"]
        for kind, folder in (("png", png), ("jpeg", jpg)):
            compare("fused crop, %s" % kind, folder, body, train)
        # boxes under twice the output a side on the small photos: the
        # fused JPEG decode at full scale, exact
        compare("fused crop, jpeg, large output", jpg,
                ["random_resized_crop(128, scale = 0.6..1)", "flip(horizontal)", "to(uint8)"],
                [("rrc", {}), ("flip", {})])
        # unfused: a no-op between decode and the crop keeps it off the decode
        compare("unfused crop, jpeg, bicubic", jpg,
                ["color_jitter(brightness = 0)",
                 "random_resized_crop(64, scale = 0.08..1, interpolation = bicubic)",
                 "flip(horizontal)", "to(uint8)"],
                [("jitter", {}), ("rrc", {"interp": "bicubic"}), ("flip", {})])
        # inside views(): each view its own draws
        compare("views, jpeg", jpg,
                ["views(2 = %s | flip(horizontal) | to(uint8), "
                 "1 = random_resized_crop(48, interpolation = bicubic) | to(uint8))" % rrc],
                [], views=[[("rrc", {}), ("flip", {})]] * 2 + [[("rrc", {"interp": "bicubic"})]])
        # inside random_choice and random_apply (forked streams), then a
        # policy on the crop
        compare("random_choice / random_apply / trivial_augment_wide, jpeg", jpg,
                ["random_choice([%s, random_resized_crop(64, scale = 0.5..1, "
                 "interpolation = bicubic)])" % rrc,
                 "random_apply(random_crop(64, padding = 6), p = 0.5)",
                 "trivial_augment_wide()", "to(uint8)"],
                [("random_choice", {"branches": [[("rrc", {})],
                                                 [("rrc", {"interp": "bicubic"})]]}),
                 ("random_apply", {"ops": [("random_crop", {"padding": 6})]}),
                 ("policy", {})])
        shards(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("ok: torch-trace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
