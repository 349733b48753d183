#!/usr/bin/python3
"""loader.py - tsrun.Loader's images/s against `tsrun consume` (the C
client, zero-copy) on the same stream, A B A B ...: one `tsrun run` of a
synthetic pipeline per side and round (--wait 1, the producer runs ahead
by the ring), each side reading the whole stream.

Sides: consume (C), safe (the default: private copy-on-write batches),
raw (raw_views=True), safe+copy and raw+copy (the trainer copies each
batch, as moving it to a device would: images.clone()), safe+inplace (an
in-place op on every batch, timm's Mixup: x.mul_(lam).add_(x.flip(0),
alpha=1-lam), which copies the pages it writes), safe+mixup and
safe+mixup-elem (Loader(mixup=tsrun.Mixup(mixup_alpha=0.8,
cutmix_alpha=1.0, label_smoothing=0.1)) in batch and elem mode: libtsclient
mixes each batch in place and makes its soft targets).

    /usr/bin/python3 perf/loader.py [--size 224] [--batch 64]
        [--samples 4096] [--epochs 2] [--rounds 3] [--sides consume,safe,raw]

Prints, per side, the median images/s with its range over rounds and the
median ratio to consume. Run it on a quiet machine; CPU time of the
trainer process is printed beside (getrusage of the child)."""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

TRAINER = r"""
import sys, time, torch, tsrun
sock, side = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
mix = None
if "+mixup" in side:
    mix = tsrun.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1,
                      num_classes=10, mode="elem" if side.endswith("-elem") else "batch")
loader = tsrun.Loader(sock, raw_views=side.startswith("raw"), timeout=60, mixup=mix)
n, t0, lam = 0, None, 0.7
while True:
    k = 0
    for x, y in loader:
        if t0 is None:
            t0 = time.monotonic()
        if side.endswith("+copy"):
            x = x.clone()
        elif side.endswith("+inplace"):
            x.mul_(lam).add_(x.flip(0), alpha=1 - lam)
        n += x.shape[0]
        k += 1
    if k == 0:
        break
dt = time.monotonic() - t0
print("images/s %.1f n %d" % (n / dt, n))
"""


def pipeline(tmp, a):
    sock = os.path.join(tmp, "loader.sock")
    path = os.path.join(tmp, "loader.ts")
    with open(path, "w") as f:
        f.write(f"pipeline p = synthetic({a.size}, count = {a.samples}) | "
                f"to(float32, nchw) | batch({a.batch})\n"
                f'serve p {{\n socket = "{sock}"\n epochs = {a.epochs}\n'
                f" ring = 8 batches\n memory = 64 GiB\n}}\n")
    return path, sock


def one(a, tmp, side):
    path, sock = pipeline(tmp, a)
    tsrun = a.tsrun
    prod = subprocess.Popen([tsrun, "run", path, "--quiet", "--wait", "1"],
                            stderr=subprocess.PIPE, text=True)
    for _ in range(400):
        if os.path.exists(sock):
            break
        time.sleep(0.025)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src", "python"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if side == "consume":
        cmd = [tsrun, "consume", sock]
    else:
        cmd = ["/usr/bin/python3", "-c", TRAINER, sock, side]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    prod.wait(timeout=60)
    out = r.stdout + r.stderr
    rate = None
    for line in out.splitlines():
        w = line.replace(":", " ").split()
        if "images/s" in w:
            i = w.index("images/s")
            for tok in (w[i + 1:i + 2] + w[i - 1:i]):
                try:
                    rate = float(tok)
                    break
                except ValueError:
                    pass
    if r.returncode or rate is None:
        raise SystemExit(f"{side}: rc {r.returncode}: {out[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rate, cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sides", default="consume,safe,raw,safe+copy,raw+copy,safe+inplace")
    p.add_argument("--tsrun", default=None, help="default: the newest build*/src/tsrun")
    a = p.parse_args()
    a.tsrun = a.tsrun or benchlib.find_build_file("src/tsrun")
    sides = a.sides.split(",")
    res = {s: [] for s in sides}
    with tempfile.TemporaryDirectory(prefix="ts-perf-loader-") as tmp:
        for r in range(a.rounds):
            for s in sides:
                res[s].append(one(a, tmp, s))
    base = statistics.median(x for x, _ in res["consume"]) if "consume" in res else None
    print(f"{a.size}x{a.size}x3 float32, batch {a.batch}, {a.samples} x {a.epochs} "
          f"samples, {a.rounds} rounds")
    for s in sides:
        rates = [x for x, _ in res[s]]
        med = statistics.median(rates)
        cpu = statistics.median(c for _, c in res[s])
        ratio = f"  {med / base:.2f}x consume" if base else ""
        print(f"{s:14s} {med:10.0f} images/s  (range {min(rates):.0f}-{max(rates):.0f})  "
              f"cpu {cpu:.2f} s{ratio}")


if __name__ == "__main__":
    main()
