#!/usr/bin/python3
"""mixup.py - tsrun.Mixup and Loader(mixup=) (Mixup, CutMix, label smoothing
per trainer, in the client):

- against timm.data.Mixup's algorithm, written here in torch from its
  documentation (timm is not installed): for the draws libtsclient made
  (Mixup.params), timm's batch/pair/elem code paths give the same image
  and target bytes, NCHW and NHWC; the middle of an odd batch unchanged;
- the draws against timm's sampling, simulated with numpy's generator as
  timm calls it: lam, CutMix boxes and their corrected lam have the same
  distributions (two-sample Kolmogorov-Smirnov), prob and switch_prob
  the same shares;
- the torch path (CUDA, float16 batches) gives the C path's bytes;
- against a real `tsrun run`: a loader without mixup gets the batches it
  gets today (equal to a raw view of the ring, int64 labels) beside one
  that mixes, whose batches are Mixup on them at their (epoch, index);
  raw_views with mixup mixes a copy; mixup_enabled = False takes effect
  at the next batch; a rerun, and a resume from state_dict, mix alike;
- two nodes of a shard() pipeline: each Loader mixes at the batch's
  position in the whole epoch, so the nodes' draws differ;
- the C client (tests/tools/mix-tool.c, ts_client_mix_batch) and a Python
  trainer on one stream write identical bytes;
- a PyTorch trainer trains with soft-target cross-entropy on mixed
  batches and its loss falls;
- bad parameters and misuse: clear errors."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytrainer  # noqa: E402

pytrainer.need_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import tsrun  # noqa: E402

check = pytrainer.Checks()
MIX_TOOL = os.environ.get("TS_TOOL_MIX_TOOL")

# ---- timm's algorithm (timm/data/mixup.py, as documented), params given --


def timm_target(target, k, lam, smoothing):
    """mixup_target: smoothed one-hots of target and of target.flip(0),
    y1 * lam + y2 * (1 - lam); lam a float (batch) or a float32 (n, 1)."""
    off = smoothing / k
    on = 1.0 - smoothing + off
    y1 = torch.full((len(target), k), off).scatter_(1, target.long().view(-1, 1), on)
    y2 = torch.full((len(target), k), off).scatter_(1, target.flip(0).long().view(-1, 1), on)
    return y1 * lam + y2 * (1.0 - lam)


def timm_mix(x, target, ps, mode, k, smoothing):
    """x (N, C, H, W) mixed in place by timm's _mix_batch / _mix_pair /
    _mix_elem with the draws ps; returns the targets."""
    n = len(x)
    if mode == "batch":
        p = ps[0]
        lam = p["lam_drawn"]  # timm's lam is a double here
        if p["op"] == "box":
            yl, yh, xl, xh = p["box"]
            x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
        elif p["op"] == "blend":
            x_flipped = x.flip(0).mul_(1. - lam)
            x.mul_(lam).add_(x_flipped)
        else:
            check(lam == 1.0, f"op none with {p}")
        return timm_target(target, k, lam, smoothing)
    units = n // 2 if mode == "pair" else n
    # timm keeps these lams in a float32 array
    lam_batch = np.array([ps[i]["lam_drawn"] for i in range(units)], dtype=np.float32)
    x_orig = x.clone()
    for i in range(units):
        j = n - i - 1
        lam = lam_batch[i]
        if ps[i]["op"] == "none":
            check(lam == 1.0, f"op none with lam {lam}")
            continue
        if ps[i]["op"] == "box":
            yl, yh, xl, xh = ps[i]["box"]
            x[i][:, yl:yh, xl:xh] = x_orig[j][:, yl:yh, xl:xh]
            if mode == "pair":
                x[j][:, yl:yh, xl:xh] = x_orig[i][:, yl:yh, xl:xh]
        else:
            x[i] = x[i] * lam + x_orig[j] * (1 - lam)
            if mode == "pair":
                x[j] = x[j] * lam + x_orig[i] * (1 - lam)
    if mode == "pair":
        lam_batch = np.concatenate((lam_batch, lam_batch[::-1]))
    lam_t = torch.tensor(lam_batch, dtype=x.dtype).unsqueeze(1)
    return timm_target(target, k, lam_t, smoothing)


CONFIGS = [
    # mode, kwargs
    ("batch", dict(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1)),
    ("batch", dict(mixup_alpha=0.2, cutmix_alpha=0.0, prob=0.7)),
    ("batch", dict(mixup_alpha=0.0, cutmix_alpha=1.0, correct_lam=False)),
    ("batch", dict(cutmix_minmax=(0.2, 0.8), mixup_alpha=0.0)),
    ("pair", dict(mixup_alpha=0.8, cutmix_alpha=1.0, switch_prob=0.5, label_smoothing=0.1)),
    ("pair", dict(mixup_alpha=1.0, cutmix_alpha=0.0, prob=0.5)),
    ("elem", dict(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1)),
    ("elem", dict(mixup_alpha=0.0, cutmix_alpha=1.0, cutmix_minmax=(0.3, 0.9))),
    ("elem", dict(mixup_alpha=0.4, cutmix_alpha=0.0, prob=0.6, label_smoothing=0.2)),
]


def reference():
    g = torch.Generator().manual_seed(3)
    k = 7
    done = 0
    for mode, kw in CONFIGS:
        mix = tsrun.Mixup(mode=mode, num_classes=k, seed=5, **kw)
        for layout in ("nchw", "nhwc"):
            for index in range(0, 40 * 8, 8):
                x = torch.rand((8, 3, 13, 11), generator=g) * 4 - 1
                y = torch.randint(0, k, (8,), generator=g)
                ps = mix.params(8, 13, 11, epoch=1, index=index)
                want = x.clone()
                wt = timm_mix(want, y.clone(), ps, mode, k, mix.label_smoothing)
                got = x.clone() if layout == "nchw" else x.permute(0, 2, 3, 1).contiguous()
                got, gt = mix(got, y, epoch=1, index=index, layout=layout)
                if layout == "nhwc":
                    got = got.permute(0, 3, 1, 2)
                ok = torch.equal(got, want) and torch.equal(gt, wt)
                if not check(ok, f"{mode} {kw} {layout} index {index}: not timm's bytes "
                             f"(images max diff {float((got - want).abs().max())}, "
                             f"targets {float((gt - wt).abs().max())})"):
                    return
                check(gt.dtype == torch.float32 and gt.shape == (8, k), "targets' type")
                done += 1
    # An odd batch: timm's mix of the others, the middle as it was.
    mix = tsrun.Mixup(mode="elem", mixup_alpha=1.0, cutmix_alpha=1.0, num_classes=k,
                      label_smoothing=0.1, seed=2)
    for index in range(0, 200, 7):
        x = torch.rand((7, 3, 10, 10), generator=g)
        y = torch.randint(0, k, (7,), generator=g)
        got, gt = mix(x.clone(), y, epoch=0, index=index)
        check(torch.equal(got[3], x[3]), "odd batch: the middle sample changed")
        sm = torch.full((k,), 0.1 / k).scatter_(0, y[3:4], 1 - 0.1 + 0.1 / k)
        check(torch.equal(gt[3], sm), f"odd batch: middle target {gt[3]} not {sm}")
    print(f"timm's algorithm: {done} batches equal byte for byte, NCHW and NHWC")


# ---- the draws against timm's sampling -------------------------------------


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic and its 0.1% critical value."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.concatenate((a, b))
    d = np.max(np.abs(np.searchsorted(a, grid, side="right") / len(a)
                      - np.searchsorted(b, grid, side="right") / len(b)))
    crit = 1.95 * np.sqrt((len(a) + len(b)) / (len(a) * len(b)))
    return d, crit


def timm_elem_draws(rs, n, mixup_alpha, cutmix_alpha, prob, switch, h, w, minmax, correct):
    """timm's _params_per_elem and cutmix_bbox_and_lam with numpy's
    generator: per sample (mixed, cutmix, lam, box area)."""
    use_cut = rs.rand(n) < switch
    lam_mix = np.where(use_cut, rs.beta(cutmix_alpha, cutmix_alpha, size=n),
                       rs.beta(mixup_alpha, mixup_alpha, size=n)).astype(np.float32)
    mixed = rs.rand(n) < prob
    out = []
    for i in range(n):
        if not mixed[i]:
            out.append((False, False, 1.0, 0))
            continue
        lam = lam_mix[i]
        if not use_cut[i]:
            out.append((True, False, float(lam), 0))
            continue
        if minmax is not None:
            ch = rs.randint(int(h * minmax[0]), int(h * minmax[1]))
            cw = rs.randint(int(w * minmax[0]), int(w * minmax[1]))
            yl, xl = rs.randint(0, h - ch), rs.randint(0, w - cw)
            yh, xh = yl + ch, xl + cw
        else:
            ratio = np.sqrt(1 - lam)
            ch, cw = int(h * ratio), int(w * ratio)
            cy, cx = rs.randint(0, h), rs.randint(0, w)
            yl, yh = np.clip(cy - ch // 2, 0, h), np.clip(cy + ch // 2, 0, h)
            xl, xh = np.clip(cx - cw // 2, 0, w), np.clip(cx + cw // 2, 0, w)
        area = (yh - yl) * (xh - xl)
        if correct or minmax is not None:
            lam = 1.0 - area / float(h * w)
        out.append((True, True, float(lam), int(area)))
    return out


def distributions():
    h, w = 32, 24
    rs = np.random.RandomState(0)
    cases = [
        dict(mixup_alpha=0.8, cutmix_alpha=1.0, prob=0.8, switch_prob=0.5, minmax=None,
             correct=True),
        dict(mixup_alpha=0.3, cutmix_alpha=2.0, prob=1.0, switch_prob=0.7, minmax=None,
             correct=False),
        dict(mixup_alpha=1.0, cutmix_alpha=1.0, prob=1.0, switch_prob=1.0,
             minmax=(0.25, 0.75), correct=True),
    ]
    for c in cases:
        mix = tsrun.Mixup(mixup_alpha=c["mixup_alpha"], cutmix_alpha=c["cutmix_alpha"],
                          prob=c["prob"], switch_prob=c["switch_prob"],
                          cutmix_minmax=c["minmax"], correct_lam=c["correct"],
                          mode="elem", num_classes=10, seed=9)
        ours = []
        for b in range(500):
            for p in mix.params(20, h, w, epoch=0, index=b * 20):
                y0, y1, x0, x1 = p["box"]
                ours.append((p["op"] != "none", p["op"] == "box", p["lam"],
                             (y1 - y0) * (x1 - x0)))
        theirs = timm_elem_draws(rs, len(ours), c["mixup_alpha"], c["cutmix_alpha"], c["prob"],
                                 c["switch_prob"], h, w, c["minmax"], c["correct"])
        for name, pick in (("mixed share", lambda t: t[0]),
                           ("cutmix share", lambda t: t[1])):
            a = np.mean([pick(t) for t in ours])
            b = np.mean([pick(t) for t in theirs])
            check(abs(a - b) < 0.02, f"{c}: {name} {a:.3f}, timm's {b:.3f}")
        for name, sel, val in (("Mixup lam", lambda t: t[0] and not t[1], 2),
                               ("CutMix lam", lambda t: t[1], 2),
                               ("CutMix box area", lambda t: t[1], 3)):
            a = [t[val] for t in ours if sel(t)]
            b = [t[val] for t in theirs if sel(t)]
            if not a and not b:
                continue
            d, crit = ks(a, b)
            check(d < crit, f"{c}: {name}: KS {d:.4f} >= {crit:.4f} against timm's sampling")
    print("draws: timm's distributions (lam, boxes, prob, switch_prob)")


def torch_path():
    """The torch path (CUDA, float16, strided) gives the C path's bytes."""
    g = torch.Generator().manual_seed(1)
    for mode, kw in CONFIGS:
        mix = tsrun.Mixup(mode=mode, num_classes=6, seed=4, **kw)
        for index in range(0, 80, 8):
            x = torch.rand((8, 3, 9, 12), generator=g)
            y = torch.randint(0, 6, (8,), generator=g)
            a, ta = mix(x.clone(), y, epoch=3, index=index)
            strided = x.clone().permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
            b, tb = mix(strided, y, epoch=3, index=index)  # not contiguous: torch path
            check(torch.equal(a, b) and torch.equal(ta, tb),
                  f"{mode} {kw}: torch path differs from the C path")
    if torch.cuda.is_available():
        mix = tsrun.Mixup(mode="elem", mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=6)
        x = torch.rand((8, 3, 9, 12), generator=g)
        y = torch.randint(0, 6, (8,), generator=g)
        a, ta = mix(x.clone(), y, epoch=0, index=0)
        b, tb = mix(x.clone().cuda(), y.cuda(), epoch=0, index=0)
        check(torch.equal(a, b.cpu()) and torch.equal(ta, tb.cpu()), "CUDA path differs")
        print("CUDA batches: the C path's bytes")
    print("torch path: the C path's bytes")


# ---- against a real producer -----------------------------------------------

SOURCE = "synthetic(12, count = 96, classes = 10) | shuffle(seed = 5)"
NORM = "normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]) | to(float32, nchw)"


def side_by_side(tmp):
    path, sock = pytrainer.pipeline(tmp, "side", SOURCE, 2, batch=16, tail=NORM)
    prod = pytrainer.run(path, "--wait", "4")
    mix = tsrun.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10,
                      mode="elem", seed=7)
    la = tsrun.Loader(sock, batch_size=16, timeout=30, mixup=mix)
    lraw = tsrun.Loader(sock, batch_size=16, timeout=30, raw_views=True,
                        mixup=tsrun.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0,
                                          label_smoothing=0.1, num_classes=10, mode="elem",
                                          seed=7))
    lb = tsrun.Loader(sock, batch_size=16, timeout=30)
    lr = tsrun.Loader(sock, batch_size=16, timeout=30, raw_views=True)
    check(la.mixup is mix and lb.mixup is None, "loader.mixup")
    n = 0
    ref = tsrun.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10,
                      mode="elem", seed=7)
    kept = []
    for _ in range(2):
        for (xa, ta), (xw, tw), (xb, yb), (xr, yr) in zip(la, lraw, lb, lr):
            check(torch.equal(xb, xr) and torch.equal(yb, yr),
                  f"batch {n}: a loader without mixup differs from the ring")
            check(yb.dtype == torch.int64 and yb.shape == (16,), f"labels {yb.dtype}")
            want, wt = ref(xb.clone(), yb, epoch=lb.epoch, index=lb.index)
            check(torch.equal(xa, want) and torch.equal(ta, wt),
                  f"batch {n}: Loader(mixup=) is not Mixup at (epoch, index)")
            check(torch.equal(xw, want) and torch.equal(tw, wt),
                  f"batch {n}: raw_views with mixup differs")
            check(not torch.equal(xa, xb), f"batch {n}: nothing mixed")
            check(ta.dtype == torch.float32 and ta.shape == (16, 10), f"targets {ta.shape}")
            kept.append((xa, xa.clone(), xb.clone()))
            n += 1
    check(n == 12, f"{n} batches side by side")
    check(all(torch.equal(x, c) for x, c, _ in kept), "a kept mixed batch changed")
    la.close()
    lraw.close()
    lb.close()
    lr.close()
    pytrainer.stop(prod)
    print(f"beside a mixing loader, one without mixup gets the ring's batches ({n})")

    # mixup_enabled = False: from the next batch, smoothing only; a rerun
    # (a new producer, the same seed) mixes alike.
    prod = pytrainer.run(path, "--wait", "2")
    mix = tsrun.Mixup(mixup_alpha=1.0, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10,
                      seed=7, mode="elem")
    la = tsrun.Loader(sock, batch_size=16, timeout=30, mixup=mix)
    lb = tsrun.Loader(sock, batch_size=16, timeout=30)
    first = []
    for k, ((xa, ta), (xb, yb)) in enumerate(zip(la, lb)):
        if k < 3:
            first.append((xa.clone(), ta.clone()))
            check(not torch.equal(xa, xb), f"batch {k} not mixed")
            if k == 2:
                mix.mixup_enabled = False
        else:
            sm = torch.full((16, 10), 0.01).scatter_(1, yb.view(-1, 1), 0.91)
            check(torch.equal(xa, xb) and torch.allclose(ta, sm, atol=1e-7),
                  f"batch {k}: mixup_enabled = False, still mixed")
    la.close()
    lb.close()
    pytrainer.stop(prod)
    def mixer():
        return tsrun.Mixup(mixup_alpha=1.0, cutmix_alpha=1.0, label_smoothing=0.1,
                           num_classes=10, seed=7, mode="elem")

    prod = pytrainer.run(path, "--wait", "1")
    la = tsrun.Loader(sock, batch_size=16, timeout=30, mixup=mixer())
    again = []
    for xa, ta in la:
        again.append((xa, ta))
        if len(again) == 4:
            break
    check(len(again) == 4 and all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
                                  for a, b in zip(first, again)),
          "a rerun with the same seed mixed otherwise")
    state = {"epoch": 0, "index": 48}
    la.close()
    pytrainer.stop(prod)
    # Resumed from a state_dict (the producer restarted there): the same mix.
    prod = pytrainer.run(path, "--wait", "1", "--start", "0:48")
    la = tsrun.Loader(sock, batch_size=16, timeout=30, join="now", mixup=mixer())
    la.load_state_dict(state)
    xa, ta = next(iter(la))
    check(la.index == 48 and torch.equal(xa, again[3][0]) and torch.equal(ta, again[3][1]),
          f"resumed at index {la.index}: not the mix of the batch there")
    la.close()
    pytrainer.stop(prod)
    print("mixup_enabled = False holds from the next batch; a rerun and a resume mix alike")


PY_WRITER = r"""
import sys, tsrun
mode, out = sys.argv[2], sys.argv[3]
kw = eval(sys.argv[4])
loader = tsrun.Loader(sys.argv[1], batch_size=16, timeout=60,
                      mixup=tsrun.Mixup(mode=mode, num_classes=10, seed=21, **kw))
n = 0
with open(out, "wb") as f:
    while True:
        k = 0
        for x, t in loader:
            f.write(x.numpy().tobytes())
            f.write(t.numpy().tobytes())
            k += 1
            n += 1
        if k == 0:
            break
print("batches", n, flush=True)
"""


def c_client(tmp):
    if not MIX_TOOL:
        check(False, "TS_TOOL_MIX_TOOL is not set (tests/meson.build)")
        return
    cases = [
        ("elem", "to(float32, nchw)", dict(mixup_alpha=0.8, cutmix_alpha=1.0,
                                            label_smoothing=0.1),
         ["--mixup", "0.8", "--cutmix", "1.0", "--smoothing", "0.1"]),
        ("batch", "to(float32, nhwc)", dict(mixup_alpha=0.0, cutmix_minmax=(0.2, 0.7),
                                            prob=0.8),
         ["--mixup", "0", "--minmax", "0.2,0.7", "--prob", "0.8"]),
        ("pair", NORM, dict(mixup_alpha=0.5, cutmix_alpha=1.0, switch_prob=0.3,
                            correct_lam=False),
         ["--mixup", "0.5", "--cutmix", "1.0", "--switch", "0.3", "--no-correct"]),
    ]
    for mode, tail, kw, args in cases:
        # 89 samples: each epoch ends in an odd batch (9)
        path, sock = pytrainer.pipeline(tmp, "c" + mode, "synthetic(12, count = 89, "
                                        "classes = 10) | shuffle(seed = 3)", 2, batch=16,
                                        tail=tail)
        prod = pytrainer.run(path, "--wait", "2")
        cout, pout = os.path.join(tmp, "c.bin"), os.path.join(tmp, "py.bin")
        c = subprocess.Popen([MIX_TOOL, sock, cout, "--batch", "16", "--seed", "21",
                              "--mode", mode, "--classes", "10", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p = pytrainer.trainer(PY_WRITER, sock, mode, pout, repr(kw))
        co, ce = c.communicate(timeout=120)
        po, pe = p.communicate(timeout=120)
        pytrainer.stop(prod)
        check(c.returncode == 0 and "batches 12 samples 178" in co,
              f"mix-tool {mode}: rc {c.returncode}: {co} {ce[-800:]}")
        check(p.returncode == 0 and "batches 12" in po,
              f"Python writer {mode}: rc {p.returncode}: {po} {pe[-1500:]}")
        a = open(cout, "rb").read() if os.path.exists(cout) else b""
        b = open(pout, "rb").read() if os.path.exists(pout) else b""
        want = 178 * (3 * 12 * 12 + 10) * 4
        check(len(a) == want and a == b,
              f"{mode}: C client {len(a)} bytes, Python {len(b)} (want {want}); "
              f"equal: {a == b}")
    print("C client and Python client: identical bytes (elem NCHW, batch NHWC, pair)")


TRAINER = r"""
import sys, torch, tsrun
torch.manual_seed(0)
mix = tsrun.Mixup(mixup_alpha=0.4, cutmix_alpha=1.0, label_smoothing=0.1,
                  num_classes=10, mode="batch", seed=1)
loader = tsrun.Loader(sys.argv[1], batch_size=16, timeout=60, mixup=mix)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 12 * 12, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
while True:
    epoch = []
    for x, t in loader:
        assert t.dtype == torch.float32 and t.shape == (x.shape[0], 10)
        loss = torch.sum(-t * torch.log_softmax(model(x), dim=-1), dim=-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch.append(loss.item())
    if not epoch:
        break
    losses.append(sum(epoch) / len(epoch))
print("losses", " ".join("%.4f" % l for l in losses), flush=True)
"""


def trainer(tmp):
    path, sock = pytrainer.pipeline(tmp, "train", SOURCE, 12, batch=16, tail=NORM)
    prod = pytrainer.run(path, "--wait", "1")
    p = pytrainer.trainer(TRAINER, sock)
    out, err = p.communicate(timeout=300)
    pytrainer.stop(prod)
    words = [w.split()[1:] for w in out.splitlines() if w.startswith("losses")]
    losses = [float(v) for v in words[0]] if words else []
    check(p.returncode == 0 and len(losses) == 12,
          f"trainer: rc {p.returncode}: {out} {err[-1500:]}")
    if len(losses) == 12:
        check(all(np.isfinite(losses)) and losses[-1] < 0.85 * losses[0],
              f"soft-target loss did not fall: {losses}")
        print(f"trainer: soft-target cross-entropy {losses[0]:.3f} -> {losses[-1]:.3f} "
              "over 12 epochs of mixed batches")


def errors(tmp):
    def raises(exc, says, fn):
        try:
            fn()
        except exc as e:
            check(says in str(e), f"{exc.__name__} {e!r} does not say {says!r}")
            return
        except Exception as e:  # noqa: BLE001
            check(False, f"{says}: raised {type(e).__name__}: {e}")
            return
        check(False, f"no {exc.__name__} for {says!r}")

    raises(ValueError, "num_classes must be set", lambda: tsrun.Mixup(num_classes=0))
    raises(ValueError, "mode must be 'batch', 'pair' or 'elem'",
           lambda: tsrun.Mixup(num_classes=3, mode="row"))
    raises(ValueError, "prob = 2 is outside 0 .. 1", lambda: tsrun.Mixup(num_classes=3, prob=2))
    raises(ValueError, "mixup_alpha = -1", lambda: tsrun.Mixup(num_classes=3, mixup_alpha=-1))
    raises(ValueError, "cutmix_minmax = (0.9, 0.1)",
           lambda: tsrun.Mixup(num_classes=3, cutmix_minmax=(0.9, 0.1)))
    raises(TypeError, "cutmix_minmax must be None or (min, max)",
           lambda: tsrun.Mixup(num_classes=3, cutmix_minmax=0.5))
    raises(TypeError, "mixup_alpha must be a number", lambda: tsrun.Mixup("x", num_classes=3))
    mix = tsrun.Mixup(num_classes=3)
    raises(ValueError, "has label 5, outside 0 .. 2",
           lambda: mix(torch.zeros(4, 3, 5, 5), torch.tensor([0, 1, 5, 2])))
    raises(TypeError, "images must be floating point",
           lambda: mix(torch.zeros(4, 3, 5, 5, dtype=torch.uint8), torch.zeros(4)))
    raises(TypeError, "labels must be 4 integer classes",
           lambda: mix(torch.zeros(4, 3, 5, 5), torch.zeros(3, dtype=torch.int64)))
    raises(TypeError, "4-D tensor", lambda: mix(torch.zeros(3, 5, 5), torch.zeros(3)))

    # a uint8 pipeline, a callable that is not a tsrun.Mixup, a label too large
    path, sock = pytrainer.pipeline(tmp, "u8", SOURCE, 50, batch=16, tail="to(uint8, nhwc)")
    prod = pytrainer.run(path, "--wait", "1")
    raises(ValueError, "end the pipeline with to(float32, ...)",
           lambda: tsrun.Loader(sock, batch_size=16, timeout=10, mixup=mix))
    raises(TypeError, "mixup must be a tsrun.Mixup",
           lambda: tsrun.Loader(sock, batch_size=16, timeout=10, mixup=lambda x, y: (x, y)))
    pytrainer.stop(prod)
    path, sock = pytrainer.pipeline(tmp, "k", SOURCE, 50, batch=16)
    prod = pytrainer.run(path, "--wait", "1")
    loader = tsrun.Loader(sock, batch_size=16, timeout=10, mixup=tsrun.Mixup(num_classes=3))
    raises(ValueError, "num_classes must be the data set's class count", lambda: next(iter(loader)))
    loader.close()
    pytrainer.stop(prod)
    print("bad parameters and misuse: clear errors")


def nodes(tmp):
    """Two nodes of shuffle | shard(i, 2): each Loader mixes its batch at the
    batch's position in the whole epoch (node + 2 x index, ts_client_node),
    so the nodes' draws differ at the same node-local index."""
    drawn = []
    for node in (0, 1):
        src = f"synthetic(12, count = 64, classes = 10) | shuffle(seed = 5) | shard({node}, 2)"
        path, sock = pytrainer.pipeline(tmp, f"node{node}", src, 1, batch=8, tail=NORM)
        prod = pytrainer.run(path, "--wait", "2")
        la = tsrun.Loader(sock, batch_size=8, timeout=30,
                          mixup=tsrun.Mixup(cutmix_alpha=1.0, num_classes=10, mode="elem",
                                            seed=7))
        lb = tsrun.Loader(sock, batch_size=8, timeout=30)
        ref = tsrun.Mixup(cutmix_alpha=1.0, num_classes=10, mode="elem", seed=7)
        mine = []
        for (xa, ta), (xb, yb) in zip(la, lb):
            want, wt = ref(xb.clone(), yb, epoch=lb.epoch, index=node + 2 * lb.index)
            check(torch.equal(xa, want) and torch.equal(ta, wt),
                  f"node {node} batch at {lb.index}: not Mixup at node + 2 x index")
            mine.append((lb.index, ref.params(8, 12, 12, lb.epoch, node + 2 * lb.index)))
        drawn.append(dict(mine))
        la.close()
        lb.close()
        pytrainer.stop(prod)
    same = [i for i in drawn[0] if i in drawn[1] and drawn[0][i] == drawn[1][i]]
    check(len(drawn[0]) == 4 and not same,
          f"nodes mix alike at node-local indices {same} of {sorted(drawn[0])}")


def main():
    reference()
    distributions()
    torch_path()
    with tempfile.TemporaryDirectory() as tmp:
        side_by_side(tmp)
        c_client(tmp)
        trainer(tmp)
        errors(tmp)
        nodes(tmp)
    return check.exit()


if __name__ == "__main__":
    sys.exit(main())
