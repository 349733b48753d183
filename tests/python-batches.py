#!/usr/bin/python3
"""python-batches.py - a tsrun.Loader batch is an ordinary tensor, against
a real `tsrun run` (synthetic images, float32 NCHW):

- timm-style Mixup in place on every batch, x.mul_(lam).add_(x.flip(0)
  * (1 - lam)), by one trainer process (training a small model on it)
  while another, slower one hashes every batch it reads: its digest equals
  that of the same stream read with no Mixup trainer beside it; and in one
  process, batch by batch, a second loader sees the ring unchanged under
  the first's in-place writes;
- every batch kept, with its clone, across iterations, after close() and
  after the producer has exited: all equal, and in-place ops on them
  still work; in a loop that keeps nothing no batch is copied;
- the producer killed with SIGKILL: ProducerGone within a second, and the
  batches held still read and write;
- a JPEG cut short among real ones (on_error = fail): the trainer's
  ProducerGone says which file and why, through the ring's reason;
- raw_views=True: zero-copy read-only views of the ring; writing one ends
  the process with SIGSEGV, as documented."""
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytrainer  # noqa: E402

pytrainer.need_torch()
import torch  # noqa: E402
import tsrun  # noqa: E402

check = pytrainer.Checks()
SOURCE = "synthetic(12, count = 96, classes = 10) | shuffle(seed = 5)"

MIXUP = r"""
import sys, torch, tsrun
torch.manual_seed(0)
loader = tsrun.Loader(sys.argv[1], batch_size=16, timeout=60)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 12 * 12, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = 0
while True:
    n = 0
    for x, y in loader:
        lam = 0.7
        x.mul_(lam).add_(x.flip(0).mul_(1 - lam))   # timm Mixup, in place
        target = torch.nn.functional.one_hot(y, 10).float()
        target = target * lam + target.flip(0) * (1 - lam)
        loss = torch.nn.functional.cross_entropy(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
        steps += 1
    if n == 0:
        break
print("steps", steps, flush=True)
"""

DIGEST = r"""
import hashlib, sys, time, tsrun
loader = tsrun.Loader(sys.argv[1], batch_size=16, timeout=60)
h = hashlib.sha256()
n = 0
while True:
    k = 0
    for x, y in loader:
        time.sleep(0.02)   # slower than the Mixup trainer: it writes first
        h.update(x.numpy().tobytes())
        h.update(y.numpy().tobytes())
        n += x.shape[0]
        k += 1
    if k == 0:
        break
print("digest", h.hexdigest(), n, flush=True)
"""


def digest_of(p):
    out, err = p.communicate(timeout=120)
    words = [w.split() for w in out.splitlines() if w.startswith("digest ")]
    check(p.returncode == 0 and words, f"digest trainer: rc {p.returncode}: {err[-1500:]}")
    return words[0][1:] if words else None


def mixup(tmp):
    path, sock = pytrainer.pipeline(tmp, "mix", SOURCE, 3, batch=16)
    # Alone: the reference digest of the stream.
    prod = pytrainer.run(path, "--wait", "1")
    alone = digest_of(pytrainer.trainer(DIGEST, sock))
    pytrainer.stop(prod)
    # Beside a trainer that mixes every batch in place.
    prod = pytrainer.run(path, "--wait", "2")
    mixer = pytrainer.trainer(MIXUP, sock)
    beside = digest_of(pytrainer.trainer(DIGEST, sock))
    out, err = mixer.communicate(timeout=120)
    check(mixer.returncode == 0 and "steps 18" in out,
          f"Mixup trainer: rc {mixer.returncode}: {out} {err[-1500:]}")
    pytrainer.stop(prod)
    check(alone is not None and alone == beside and alone[1] == "288",
          f"digest alone {alone}, beside an in-place Mixup {beside}")
    print(f"Mixup in place beside a reader: digest unchanged ({alone})")

    # One process, batch by batch: b reads the ring after a wrote it.
    prod = pytrainer.run(path, "--wait", "2")
    la = tsrun.Loader(sock, batch_size=16, timeout=30)
    lb = tsrun.Loader(sock, batch_size=16, timeout=30)
    n = 0
    for (xa, ya), (xb, yb) in zip(la, lb):
        before = xa.clone()
        xa.mul_(0.7).add_(xa.flip(0).mul_(0.3))
        xa[0].fill_(123.0)
        check(torch.equal(xb, before), f"batch {n}: the second loader sees the first's writes")
        check(not torch.equal(xa, before), f"batch {n}: in-place op had no effect")
        n += 1
    check(n == 6, f"{n} batches side by side")
    # b never writes: its mappings serve later batches of the same range
    # (and showed their new samples above); a's are written, never reused.
    check(lb._keeper.reused > 0 and la._keeper.reused == 0,
          f"spans reused: a {la._keeper.reused}, b {lb._keeper.reused}")
    la.close()
    lb.close()
    pytrainer.stop(prod)


def kept(tmp):
    path, sock = pytrainer.pipeline(tmp, "kept", SOURCE, 3, batch=16)
    prod = pytrainer.run(path, "--wait", "1")
    loader = tsrun.Loader(sock, batch_size=16, timeout=30)
    keep = []
    for epoch in range(3):
        for x, y in loader:
            keep.append((x, y, x.clone(), y.clone()))
        bad = [k for k, (x, y, cx, cy) in enumerate(keep)
               if not (torch.equal(x, cx) and torch.equal(y, cy))]
        check(not bad, f"after epoch {epoch}: kept batches {bad} changed")
    check(len(keep) == 18, f"{len(keep)} batches kept")
    copied = loader._keeper.copied
    check(copied >= 16, f"only {copied} kept batches were copied out of the ring")
    loader.close()
    prod.wait(timeout=30)
    bad = [k for k, (x, y, cx, cy) in enumerate(keep)
           if not (torch.equal(x, cx) and torch.equal(y, cy))]
    check(not bad, f"after close and the producer's exit: kept batches {bad} changed")
    for x, _, cx, _ in keep:  # still ordinary tensors
        x.add_(1)
        check(torch.equal(x, cx + 1), "in-place op on a kept batch after close")
    # A loop that keeps nothing copies nothing: zero-copy all along.
    prod = pytrainer.run(path, "--wait", "1")
    loader = tsrun.Loader(sock, batch_size=16, timeout=30)
    s = 0.0
    for epoch in range(3):
        for x, y in loader:
            s += float(x.sum())
    check(loader._keeper.copied == 0, f"{loader._keeper.copied} batches copied in a "
                                      "loop that keeps none")
    loader.close()
    pytrainer.stop(prod)
    print("kept batches keep their values; a plain loop copies none")


def killed(tmp):
    path, sock = pytrainer.pipeline(tmp, "kill", "synthetic(12, count = 100000)", 1,
                                    batch=16)
    prod = pytrainer.run(path, "--wait", "1")
    loader = tsrun.Loader(sock, batch_size=16, timeout=30)
    it = iter(loader)
    held = [next(it) for _ in range(3)]
    clones = [x.clone() for x, _ in held]
    prod.send_signal(signal.SIGKILL)
    prod.wait()
    t0 = time.monotonic()
    try:
        for _ in it:
            pass
        check(False, "no error after the producer was killed")
    except tsrun.ProducerGone as e:
        dt = time.monotonic() - t0
        check(dt < 1.5, f"ProducerGone after {dt:.2f} s")
        print(f"producer killed: ProducerGone after {dt:.2f} s: {e}")
    for (x, _), c in zip(held, clones):
        check(torch.equal(x, c), "a held batch changed after the producer died")
        x.mul_(2)
        check(torch.equal(x, c * 2), "in-place op after the producer died")
    loader.close()
    check(all(torch.equal(x, c * 2) for (x, _), c in zip(held, clones)),
          "held batches after close")


DECODE = r"""
import sys, torch, tsrun
loader = tsrun.Loader(sys.argv[1], batch_size=4, timeout=60)
model = torch.nn.Conv2d(3, 4, 3)
n = 0
try:
    for x, y in loader:
        model(x).mean().backward()
        n += x.shape[0]
    print("no error after", n, flush=True)
except tsrun.ProducerGone as e:
    print("ProducerGone after", n, ":", e, flush=True)
"""


def decode_failure(tmp):
    """A JPEG cut short among real ones, on_error = fail: the trainer's
    ProducerGone names the file and libjpeg's reason."""
    data = os.path.join(tmp, "ds")
    r = subprocess.run([pytrainer.TSRUN, "make-dataset", data, "--images", "24",
                        "--classes", "2", "--quiet"], capture_output=True, text=True)
    check(r.returncode == 0, f"make-dataset: {r.stderr}")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(data, "train"))
                   for f in fs if f.endswith(".jpg"))
    bad = files[len(files) // 2]
    with open(bad, "rb") as f:
        head = f.read(2000)
    with open(bad, "wb") as f:
        f.write(head)
    path, sock = pytrainer.pipeline(tmp, "dec", f'folder("{data}/train") | decode(rgb) | '
                                    'resize(32, 32)', 1, batch=4)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("    ring = 4 batches\n", "    ring = 4 batches\n"
                             "    on_error = fail\n"))
    prod = pytrainer.run(path, "--wait", "1")
    p = pytrainer.trainer(DECODE, sock)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0 and "ProducerGone" in out and bad in out
          and ("JPEG" in out or "premature" in out),
          f"decode failure in the trainer: rc {p.returncode}: {out} {err[-800:]}")
    print(f"decode failure reached the trainer: {out.strip()}")
    pytrainer.stop(prod)


RAW = r"""
import sys, tsrun
loader = tsrun.Loader(sys.argv[1], batch_size=16, raw_views=True, timeout=30)
x, y = next(iter(loader))
print("read", float(x.sum()), flush=True)
x.mul_(2)
print("wrote", flush=True)
"""


def raw(tmp):
    path, sock = pytrainer.pipeline(tmp, "raw", SOURCE, 1, batch=16)
    prod = pytrainer.run(path, "--wait", "1")
    p = pytrainer.trainer(RAW, sock)
    out, err = p.communicate(timeout=60)
    # Under a preloaded AddressSanitizer the SIGSEGV is its report and abort.
    segv = p.returncode == -signal.SIGSEGV or (
        p.returncode == -signal.SIGABRT and "AddressSanitizer: SEGV" in err)
    check(segv and "read" in out and "wrote" not in out,
          f"raw view written: rc {p.returncode}: {out} {err[-500:]}")
    pytrainer.stop(prod)
    print("raw_views: a write to a read-only view ends the process (SIGSEGV)")


def main():
    with tempfile.TemporaryDirectory(prefix="ts-pyb-", ignore_cleanup_errors=True) as tmp:
        mixup(tmp)
        kept(tmp)
        killed(tmp)
        decode_failure(tmp)
        raw(tmp)
    return check.exit()


if __name__ == "__main__":
    sys.exit(main())
