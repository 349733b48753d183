#!/usr/bin/python3
"""joins.py - trainers joining at several points of the first epoch get
whole epochs by default (real processes).

A pacing trainer holds the producer at known points (it reads a given
number of batches, then waits for the test's go): the ring is 256
samples, an epoch 400, so
  - at 0 (256 published, the epoch's start still in the ring) a default
    joiner starts at epoch 0, index 0: the whole epoch;
  - after 13 batches (12 released: a trainer holds the batch it has until
    it asks for the next; 96 + 256 = 352 published, the start overwritten)
    a default joiner starts at the next epoch's start, and a "now" joiner
    at the next batch boundary (index 352);
  - after 38 batches (296 released, 552 published: epoch 1 under way, its
    start still in the ring) a default joiner starts at epoch 1, index 0.
Each trainer gets EPOCHS whole epochs from where it joined, so the
producer serves on past its EPOCHS for the late ones. Every default
joiner reads each epoch it sees whole (indices 0..399 in
order, every batch full but the epoch's last), as does the pacer, whom no
join rewinds; every batch carries its (epoch, index).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

TSRUN = os.environ.get("TSRUN")
if not TSRUN:
    print("TSRUN not set: skip")
    sys.exit(77)

M, EPOCHS, B = 400, 3, 8
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


TRAINER = r'''
import json, os, sys, time, tsrun
def every_epoch(loader):
    # one pass of the Loader per epoch, until a pass yields nothing
    while True:
        n = 0
        for batch in loader:
            n += 1
            yield batch
        if n == 0:
            return
sock, out, join, plan = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
kw = {} if join == "default" else {"join": join}
loader = tsrun.Loader(sock, batch_size=8, timeout=60, **kw)
open(out + ".connected", "w").close()
rec, n = [], 0
for stop, go in plan:       # stop 0: before the first batch
    if stop == 0:
        while not os.path.exists(go):
            time.sleep(0.02)
for images, labels in every_epoch(loader):
    rec.append([loader.epoch, loader.index, len(labels)])
    n += 1
    if rec and len(rec) == 1:
        open(out + ".first", "w").close()
    for stop, go in plan:   # after `stop` batches, wait for file `go`
        if n == stop:
            open(out + ".at%d" % stop, "w").close()
            while not os.path.exists(go):
                time.sleep(0.02)
with open(out, "w") as f:
    json.dump(rec, f)
'''


def wait_file(path, secs=60):
    t = time.monotonic() + secs
    while not os.path.exists(path):
        if time.monotonic() > t:
            return check(False, "timed out waiting for " + os.path.basename(path))
        time.sleep(0.02)
    return True


def whole_epochs(name, rec, first_epoch, partial_first=None):
    """rec reads epochs first_epoch.. whole (and, with partial_first, its
    first epoch from that index): EPOCHS whole ones, however late it
    joined (epochs count per trainer)."""
    epochs = {}
    for e, i, n in rec:
        epochs.setdefault(e, []).append((i, n))
    end = first_epoch + EPOCHS + (partial_first is not None)
    check(sorted(epochs) == list(range(first_epoch, end)),
          "%s: epochs %s, want %d..%d" % (name, sorted(epochs), first_epoch, end - 1))
    for e, batches in epochs.items():
        start = partial_first if (partial_first is not None and e == first_epoch) else 0
        want, ok = start, True
        for i, n in batches:
            ok = ok and i == want and (n == B or i + n == M)
            want = i + n
        check(ok and want == M, "%s: epoch %d is not whole from %d: %s"
              % (name, e, start, batches[:3]))


def main():
    with tempfile.TemporaryDirectory(prefix="tsrun-joins.") as tmp:
        sock = os.path.join(tmp, "j.sock")
        ts = os.path.join(tmp, "j.ts")
        with open(ts, "w") as f:
            f.write("pipeline p = synthetic(size = 4, count = %d) | batch(%d)\n"
                    "serve p { socket = \"%s\" epochs = %d ring = 256 samples }\n"
                    % (M, B, sock, EPOCHS))
        script = os.path.join(tmp, "t.py")
        with open(script, "w") as f:
            f.write(TRAINER)
        prod = subprocess.Popen([TSRUN, "run", ts, "--wait", "1", "-q"],
                                stderr=subprocess.PIPE, text=True)
        wait_file(sock, 20)

        def go(name):
            open(os.path.join(tmp, name), "w").close()

        def start(name, join, plan=()):
            out = os.path.join(tmp, name + ".json")
            p = subprocess.Popen([sys.executable, script, sock, out, join,
                                  json.dumps([[s, os.path.join(tmp, g)] for s, g in plan])])
            return p, out

        # The pacer stops before its first batch and after 13 and 38
        # (0, 96, 296 samples released).
        pacer, pacer_out = start("pacer", "default",
                                 [(0, "go0"), (13, "go13"), (38, "go38")])
        wait_file(pacer_out + ".connected")
        time.sleep(1.5)                    # 256 published: the ring is full
        j0, j0_out = start("j0", "default")
        wait_file(j0_out + ".first")       # it starts at the epoch's start
        go("go0")
        wait_file(pacer_out + ".at13")
        time.sleep(1.5)                    # j0 keeps up; 352 published
        j1, j1_out = start("j1", "default")
        jn, jn_out = start("jnow", "now")
        wait_file(j1_out + ".connected")
        wait_file(jn_out + ".connected")
        go("go13")
        wait_file(pacer_out + ".at38")
        time.sleep(1.5)                    # 296 released, 552 published
        j2, j2_out = start("j2", "default")
        wait_file(j2_out + ".first")
        go("go38")
        for p in (pacer, j0, j1, jn, j2):
            p.wait(timeout=120)
            check(p.returncode == 0, "a trainer exited %s" % p.returncode)
        prod.wait(timeout=60)
        check(prod.returncode == 0, "tsrun exited %s: %s" % (prod.returncode,
                                                             prod.stderr.read()[-500:]))
        recs = {}
        for name, out in (("pacer", pacer_out), ("j0", j0_out), ("j1", j1_out),
                          ("jnow", jn_out), ("j2", j2_out)):
            try:
                with open(out) as f:
                    recs[name] = json.load(f)
            except (OSError, ValueError) as e:
                check(False, "%s: no record: %s" % (name, e))
        if len(recs) == 5:
            whole_epochs("pacer", recs["pacer"], 0)
            whole_epochs("j0 (joined with 256 of 400 published)", recs["j0"], 0)
            whole_epochs("j1 (joined with the start overwritten)", recs["j1"], 1)
            whole_epochs("jnow (join='now' at 352)", recs["jnow"], 0, partial_first=352)
            whole_epochs("j2 (joined in epoch 1, its start in the ring)", recs["j2"], 1)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
