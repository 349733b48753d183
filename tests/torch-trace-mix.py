#!/usr/bin/python3
"""tsrun.Mixup(trace=FILE): every traced batch replayed with timm's Mixup
and CutMix formulas, on the same decoded photos.

timm is not installed: its algorithm (timm/data/mixup.py, 0.9:
Mixup._mix_batch, _mix_pair, _mix_elem, rand_bbox, rand_bbox_minmax,
cutmix_bbox_and_lam, mixup_target) is transcribed below, and fed the
draws the trace holds (lam as drawn, and the box's position, the one draw
a box does not determine). Photos from /usr/share/backgrounds/mate/nature
are decoded by PIL and turned into a float32 batch by
torchvision.transforms.functional.to_tensor; the Mixup mixes a copy
(NCHW, and NHWC), writing its trace; then for every line:

  the partner is n - 1 - i; op none has lam 1 and leaves the sample;
  a box is one rand_bbox (or rand_bbox_minmax) can give for lam_drawn on
      this image size, and lam is cutmix_bbox_and_lam's corrected lam
      (correct_lam, or with cutmix_minmax), rounded as timm holds it in
      the mode (a double in batch mode, the float32 lam_batch else);
  lam_partner is 1 - lam as timm computes it in the mode;
  the images are equal to timm's mix of the unmixed photos with those
      draws, and the targets to mixup_target's, byte for byte;
  the same through Loader(mixup=Mixup(trace=...)) on a real `tsrun run`
      of the photos (its unmixed batches from a loader beside it);
  batch, pair and elem modes, Mixup and CutMix and the switch between
      them, prob < 1, correct_lam false, cutmix_minmax, an odd batch
      (whose middle sample timm would refuse: its own partner, unchanged);
and with one traced parameter moved (lam_drawn, the box, the partner) the
replay fails, so the test can fail. Every comparison is tsrun against
timm's formulas, none tsrun against tsrun.
"""
import copy
import functools
import json
import os
import sys
import shutil
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytrainer  # noqa: E402

pytrainer.need_torch()
try:
    import numpy as np  # noqa: E402
    import torch  # noqa: E402
    import torchvision.transforms.functional as F  # noqa: E402
    from PIL import Image  # noqa: E402
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)
import tsrun  # noqa: E402

PHOTOS = "/usr/share/backgrounds/mate/nature"
H, W = 56, 72
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        failures.append(name)
    return ok


# ---- timm.data.mixup, transcribed; the random draws come from the trace -----

def rand_bbox_fits(shape, lam, box):
    """rand_bbox(img_shape, lam): cut_rat = sqrt(1 - lam), cut_h =
    int(img_h * cut_rat), cut_w likewise, cy = randint(0, img_h), cx =
    randint(0, img_w), yl = clip(cy - cut_h // 2, 0, img_h), yh =
    clip(cy + cut_h // 2, 0, img_h), xl, xh likewise: whether some cy,
    cx give box."""
    img_h, img_w = shape[-2:]
    cut_rat = np.sqrt(1 - lam)
    cut_h, cut_w = int(img_h * cut_rat), int(img_w * cut_rat)
    yl, yh, xl, xh = box

    return cut_h in cuts(yl, yh, img_h) and cut_w in cuts(xl, xh, img_w)


def rand_bbox_minmax_fits(shape, minmax, box):
    """rand_bbox_minmax: cut_h = randint(int(img_h * min), int(img_h *
    max)), cut_w likewise, yl = randint(0, img_h - cut_h), yu = yl +
    cut_h, xl, xu likewise."""
    img_h, img_w = shape[-2:]
    yl, yu, xl, xu = box
    ch, cw = yu - yl, xu - xl
    return (int(img_h * minmax[0]) <= ch < int(img_h * minmax[1]) and
            int(img_w * minmax[0]) <= cw < int(img_w * minmax[1]) and
            0 <= yl < img_h - ch and 0 <= xl < img_w - cw)


@functools.lru_cache(maxsize=None)
def cuts(lo, hi, n):
    """The sides cut whose clip(c - cut // 2, 0, n), clip(c + cut // 2, 0,
    n) is (lo, hi) for some centre c in [0, n)."""
    return frozenset(cut for cut in range(n + 1) for c in range(n)
                     if (min(max(c - cut // 2, 0), n), min(max(c + cut // 2, 0), n)) ==
                     (lo, hi))


def rand_bbox_any_lam_fits(shape, box):
    """Whether rand_bbox gives box for some lam: sides int(img_h * r) and
    int(img_w * r) of one ratio r, some centre, clipped."""
    img_h, img_w = shape[-2:]
    yl, yh, xl, xh = box
    return any(max(ch / img_h, cw / img_w) < min((ch + 1) / img_h, (cw + 1) / img_w)
               for ch in cuts(yl, yh, img_h) for cw in cuts(xl, xh, img_w))


def cutmix_bbox_and_lam(shape, lam, box, minmax, correct_lam):
    """The box (given: its position is a draw) and lam as timm corrects
    it; None when timm's rand_bbox could not give this box. With
    correct_lam the trace's lam is already the corrected one (the draw
    the box's sides came from is not in it): the box must be one of some
    lam, and lam its area's."""
    if minmax is not None:
        fits = rand_bbox_minmax_fits(shape, minmax, box)
    elif correct_lam:
        fits = rand_bbox_any_lam_fits(shape, box)
    else:
        fits = rand_bbox_fits(shape, lam, box)
    if not fits:
        return None
    if correct_lam or minmax is not None:
        yl, yu, xl, xu = box
        corrected = 1. - (yu - yl) * (xu - xl) / float(shape[-2] * shape[-1])
        if corrected != lam and np.float32(corrected) != np.float32(lam):
            return None
        lam = corrected
    return lam


def mixup_target(target, num_classes, lam, smoothing):
    """one_hot with smoothing of target and of target.flip(0), y1 * lam +
    y2 * (1 - lam)."""
    off = smoothing / num_classes
    on = 1. - smoothing + off
    y1 = torch.full((target.size(0), num_classes), off).scatter_(1, target.long().view(-1, 1),
                                                                 on)
    y2 = torch.full((target.size(0), num_classes), off).scatter_(
        1, target.flip(0).long().view(-1, 1), on)
    return y1 * lam + y2 * (1. - lam)


def timm_mix(x, target, line, kw):
    """x (N, C, H, W) mixed in place as timm's Mixup.__call__ mixes it with
    the traced draws; returns (targets, [why a draw is not timm's])."""
    n, mode, mixed = len(x), line["mode"], line["mixed"]
    minmax = kw.get("cutmix_minmax")
    correct = kw.get("correct_lam", True)
    k, smoothing = kw["num_classes"], kw.get("label_smoothing", 0.1)
    bad = ["sample %d's partner %d, not n - 1 - i" % (i, p["partner"])
           for i, p in enumerate(mixed) if p["partner"] != n - 1 - i]
    if mode == "batch":
        # _mix_batch: lam, use_cutmix = _params_per_batch() (lam a double)
        p = mixed[0]
        lam = p["lam_drawn"]
        x_orig = x.clone()
        if p["op"] == "none":
            if lam != 1.:
                bad.append("op none with lam %r" % lam)
            lam = 1.
        elif p["op"] == "box":
            lam = cutmix_bbox_and_lam(x.shape, lam, p["box"], minmax, correct)
            if lam is None:
                return None, bad + ["box %s is not rand_bbox's" % (p["box"],)]
            yl, yh, xl, xh = p["box"]
            x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
        else:
            x_flipped = x.flip(0).mul_(1. - lam)
            x.mul_(lam).add_(x_flipped)
        for i, q in enumerate(mixed):
            if (i == n - 1 - i and q["op"] != "none") or \
                    (i != n - 1 - i and (q["op"], q["box"], q["lam_drawn"]) !=
                     (p["op"], p["box"], p["lam_drawn"])):
                bad.append("sample %d's draw is not the batch's" % i)
            elif q["op"] != "none" and (q["lam"] != np.float32(lam) or
                                        q["lam_partner"] != np.float32(1. - lam)):
                bad.append("sample %d's lam %r, %r: timm's %r" % (i, q["lam"],
                                                                   q["lam_partner"], lam))
        t = mixup_target(target, k, lam, smoothing)
        if n % 2:
            # an odd batch (timm refuses it): the middle, its own partner,
            # stays as it is, its target only smoothed
            m = n // 2
            x[m] = x_orig[m]
            t[m] = mixup_target(target[m:m + 1], k, 1., smoothing)[0]
        return t, bad
    # _mix_pair / _mix_elem: lam_batch, use_cutmix = _params_per_elem(units)
    units = n // 2 if mode == "pair" else n
    lam_batch = np.array([mixed[i]["lam_drawn"] for i in range(units)], dtype=np.float32)
    x_orig = x.clone()
    for i in range(units):
        j = n - i - 1
        lam = lam_batch[i]
        p = mixed[i]
        if i == j or p["op"] == "none":
            if p["op"] != "none" or lam != 1.:
                bad.append("sample %d: op %s, lam %r, where timm leaves it" % (i, p["op"], lam))
            lam_batch[i] = 1.
            continue
        if p["op"] == "box":
            lam = cutmix_bbox_and_lam(x.shape, lam, p["box"], minmax, correct)
            if lam is None:
                bad.append("sample %d's box %s is not rand_bbox's" % (i, p["box"]))
                continue
            yl, yh, xl, xh = p["box"]
            x[i][:, yl:yh, xl:xh] = x_orig[j][:, yl:yh, xl:xh]
            if mode == "pair":
                x[j][:, yl:yh, xl:xh] = x_orig[i][:, yl:yh, xl:xh]
            lam_batch[i] = lam
        else:
            x[i] = x[i] * lam + x_orig[j] * (1 - lam)
            if mode == "pair":
                x[j] = x[j] * lam + x_orig[i] * (1 - lam)
    if mode == "pair":
        if n % 2:
            lam_batch = np.concatenate((lam_batch, [1.], lam_batch[::-1]))
        else:
            lam_batch = np.concatenate((lam_batch, lam_batch[::-1]))
        for i in range(units):
            q, p = mixed[n - 1 - i], mixed[i]
            if (q["op"], q["box"], q["lam_drawn"]) != (p["op"], p["box"], p["lam_drawn"]):
                bad.append("pair %d, %d drew apart" % (i, n - 1 - i))
    for i, p in enumerate(mixed):
        want = np.float32(lam_batch[i]) if i < len(lam_batch) else np.float32(1.)
        if p["lam"] != want or (p["op"] != "none" and p["lam_partner"] != np.float32(1 - want)):
            bad.append("sample %d's lam %r, %r: timm's %r" % (i, p["lam"], p["lam_partner"],
                                                               want))
    lam_t = torch.tensor(lam_batch, dtype=x.dtype).unsqueeze(1)
    return mixup_target(target, k, lam_t, smoothing), bad


# ---- the batches -----------------------------------------------------------

def photos():
    names = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
    out = []
    for k, f in enumerate(names[:9]):
        im = Image.open(os.path.join(PHOTOS, f)).convert("RGB")
        out.append(im.resize((W + 3 * k, H + 2 * k), Image.BILINEAR).crop((k, 0, k + W, H)))
    return out


CONFIGS = [
    ("batch", dict(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1)),
    ("batch", dict(mixup_alpha=0.2, cutmix_alpha=0.0, prob=0.6)),
    ("batch", dict(mixup_alpha=0.0, cutmix_alpha=1.0, correct_lam=False)),
    ("batch", dict(mixup_alpha=0.0, cutmix_alpha=1.0, cutmix_minmax=(0.2, 0.8))),
    ("pair", dict(mixup_alpha=0.8, cutmix_alpha=1.0, switch_prob=0.5)),
    ("pair", dict(mixup_alpha=1.0, cutmix_alpha=0.0, prob=0.5, label_smoothing=0.0)),
    ("elem", dict(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1)),
    ("elem", dict(mixup_alpha=0.0, cutmix_alpha=1.0, cutmix_minmax=(0.3, 0.9))),
    ("elem", dict(mixup_alpha=0.4, cutmix_alpha=0.7, prob=0.6, label_smoothing=0.2,
                  correct_lam=False)),
]


def replay_all(lines, batches, kw, layout_of):
    """(batches equal, [failures]) replaying every line on its batch."""
    equal, why = 0, []
    for line in lines:
        key = (line["epoch"], line["index"], line["n"])
        x, y, got, gt = batches[key]
        want = x.clone()
        wt, bad = timm_mix(want, y.clone(), line, kw)
        if bad or wt is None:
            why.append("%s: %s" % (key, bad[0] if bad else "no targets"))
            continue
        g = got if layout_of[key] == "nchw" else got.permute(0, 3, 1, 2)
        if not torch.equal(g, want):
            why.append("%s: images differ by up to %g" % (key, float((g - want).abs().max())))
        elif not torch.equal(gt, wt):
            why.append("%s: targets differ by up to %g" % (key, float((gt - wt).abs().max())))
        else:
            equal += 1
    return equal, why


def perturbations(line):
    """Copies of line with one draw moved: lam_drawn, a box, a partner."""
    out = []
    for i, p in enumerate(line["mixed"]):
        if line["mode"] != "batch" and i >= (len(line["mixed"]) + 1) // 2:
            break
        if p["op"] == "blend":
            q = copy.deepcopy(line)
            targets = range(len(q["mixed"])) if line["mode"] == "batch" else \
                [i, len(q["mixed"]) - 1 - i] if line["mode"] == "pair" else [i]
            for t in targets:
                q["mixed"][t]["lam_drawn"] = min(1.0, p["lam_drawn"] + 0.01) \
                    if p["lam_drawn"] < 0.99 else p["lam_drawn"] - 0.01
            out.append(("lam_drawn", q))
        elif p["op"] == "box" and p["box"][0] < p["box"][1] and p["box"][2] < p["box"][3]:
            # (an empty box moved is still empty: nothing to see)
            q = copy.deepcopy(line)
            yl, yh, xl, xh = p["box"]
            d = 1 if yh < H else -1
            targets = range(len(q["mixed"])) if line["mode"] == "batch" else \
                [i, len(q["mixed"]) - 1 - i] if line["mode"] == "pair" else [i]
            for t in targets:
                q["mixed"][t]["box"] = [yl + d, yh + d, xl, xh]
            out.append(("box", q))
        if line["mode"] == "elem" and p["op"] != "none" and len(out) < 3:
            q = copy.deepcopy(line)
            q["mixed"][i]["partner"] = (p["partner"] + 1) % len(q["mixed"])
            out.append(("partner", q))
        if len(out) >= 3:
            break
    return out


def loader_case(tmp, ims, k):
    """Loader(mixup=Mixup(trace=...)) on a real `tsrun run` of the photos
    (PNG, to(float32, nchw): F.to_tensor's values): each traced batch
    replayed with timm's formulas on the same batch of a loader beside it
    without mixup."""
    folder = os.path.join(tmp, "photos")
    for i, im in enumerate(ims):
        d = os.path.join(folder, "c%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        im.save(os.path.join(d, "%02d.png" % i))
    path, sock = pytrainer.pipeline(tmp, "mix", 'folder("%s") | shuffle(seed = 2) | '
                                    'decode(rgb) | center_crop([%d, %d])' % (folder, H, W), 3,
                                    batch=4)
    prod = pytrainer.run(path, "--wait", "2")
    kw = dict(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=k)
    tpath = os.path.join(tmp, "loader.jsonl")
    mix = tsrun.Mixup(mode="elem", seed=9, trace=tpath, **kw)
    la = tsrun.Loader(sock, batch_size=4, timeout=30, mixup=mix)
    lb = tsrun.Loader(sock, batch_size=4, timeout=30)
    batches, layout_of = {}, {}
    try:
        for _ in range(3):
            for (xa, ta), (xb, yb) in zip(la, lb):
                key = (lb.epoch, lb.index, len(xb))
                batches[key] = (xb.clone(), yb.clone(), xa.clone(), ta.clone())
                layout_of[key] = "nchw"
    finally:
        la.close()
        lb.close()
        pytrainer.stop(prod)
    mix._trace_file.close()
    with open(tpath) as f:
        lines = [json.loads(s) for s in f]
    pix = {tuple(F.to_tensor(im).flatten()[:64].tolist()) for im in ims}
    check("Loader: its unmixed samples are the photos' F.to_tensor values",
          all(tuple(x.flatten()[:64].tolist()) in pix for b in batches.values() for x in b[0]))
    check("Loader: a trace line per batch (%d)" % len(lines),
          len(lines) == len(batches) and len(lines) >= 6)
    equal, why = replay_all(lines, batches, kw, layout_of)
    check("Loader(mixup=): %d of %d batches equal to timm's mix with the traced draws"
          % (equal, len(lines)), not why and equal == len(lines), why[0] if why else "")
    moved = [q for line in lines for _, q in perturbations(line)]
    caught = sum(replay_all([q], batches, kw, layout_of)[0] == 0 for q in moved)
    check("Loader(mixup=): each moved draw fails the replay (%d of %d)" % (caught, len(moved)),
          moved and caught == len(moved))


def main():
    if not os.path.isdir(PHOTOS):
        print("skip: no photos in", PHOTOS, "(install mate-backgrounds)")
        return 77
    ims = photos()
    if len(ims) < 9:
        print("skip: too few photos in", PHOTOS)
        return 77
    base = torch.stack([F.to_tensor(im) for im in ims])  # float32 (9, 3, H, W)
    tmp = tempfile.mkdtemp(prefix="ts-torch-trace-mix.")
    k = 11
    g = torch.Generator().manual_seed(4)
    for c, (mode, kw) in enumerate(CONFIGS):
        kw = dict(kw, num_classes=k)
        path = os.path.join(tmp, "mix%d.jsonl" % c)
        try:
            mix = tsrun.Mixup(mode=mode, seed=c + 1, trace=path, **kw)
        except TypeError as e:
            check("tsrun.Mixup takes trace=", False, str(e))
            break
        batches, layout_of = {}, {}
        for b in range(24):
            n = 9 if b % 6 == 5 else 8  # some odd batches
            perm = torch.randperm(9, generator=g)[:n]
            x = base[perm].clone()
            y = torch.randint(0, k, (n,), generator=g)
            layout = "nhwc" if b % 2 else "nchw"
            epoch, index = b // 8, (b % 8) * 8
            xin = x.clone() if layout == "nchw" else x.permute(0, 2, 3, 1).contiguous()
            got, gt = mix(xin, y, epoch=epoch, index=index, layout=layout)
            batches[(epoch, index, n)] = (x, y, got, gt)
            layout_of[(epoch, index, n)] = layout
        mix._trace_file.close()
        with open(path) as f:
            lines = [json.loads(s) for s in f]
        name = "%s %s" % (mode, kw)
        check(name + ": a trace line per batch", len(lines) == len(batches),
              "%d lines, %d batches" % (len(lines), len(batches)))
        ops = {p["op"] for line in lines for p in line["mixed"]}
        want_ops = ({"box"} if kw.get("cutmix_alpha", 0) > 0 else set()) | \
            ({"blend"} if kw.get("mixup_alpha", 1.0) > 0 else set())
        check(name + ": the trace has the mixes the parameters make",
              want_ops <= ops and (kw.get("prob", 1.0) == 1.0 or "none" in ops),
              "ops %s" % sorted(ops))
        equal, why = replay_all(lines, batches, kw, layout_of)
        check(name + ": %d of %d batches equal to timm's mix of the photos with the traced "
              "draws, images and targets" % (equal, len(lines)), not why and equal == len(lines),
              why[0] if why else "")
        moved = [(w, q) for line in lines for w, q in perturbations(line)]
        caught = 0
        kinds = set()
        for what, q in moved:
            e, _ = replay_all([q], batches, kw, layout_of)
            caught += e == 0
            kinds.add(what)
            if e:
                print("     not caught: %s moved in %s" % (what, q))
        check(name + ": each moved draw (%s) fails the replay (%d of %d)"
              % (", ".join(sorted(kinds)), caught, len(moved)), moved and caught == len(moved))
    try:
        loader_case(tmp, ims, k)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("ok: torch-trace-mix")
    return 0


if __name__ == "__main__":
    sys.exit(main())
