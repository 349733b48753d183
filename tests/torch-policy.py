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
  - random_apply: RandomApply(p) applied or not; random_choice:
    RandomChoice(weights) chosen alternative; same test.
Then the output of pipelines with the three does not depend on the
thread count (`tsrun bench` digests with 1 and 2 threads).
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torchvision.transforms as T
except Exception as e:  # noqa: BLE001
    print("skip: torch/torchvision not importable:", e)
    sys.exit(77)

TOOL = os.environ.get("TS_TOOL_POLICY_TOOL")
TSRUN = os.environ.get("TSRUN")
if not TOOL or not os.access(TOOL, os.X_OK) or not TSRUN:
    print("skip: TS_TOOL_POLICY_TOOL or TSRUN not set or not built")
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


def threads():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.ts")
        with open(path, "w") as f:
            f.write("""pipeline p =
    synthetic([96, 128], count = 300)
    | random_apply(color_jitter(0.4, 0.4, 0.4, 0.1) | grayscale(3), p = 0.8)
    | random_choice([equalize, posterize(4) | autocontrast, invert], p = [2, 1, 1])
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
    threads()
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
