#!/usr/bin/python3
"""sweep-epochs.py - epochs count per trainer (real processes,
tensorsocket(7) Join policies): tsrun serves epochs = 2 of a synthetic set;
trainer A is there from the start, B joins once A is past a ring's worth
of epoch 0 (next_epoch: its first whole epoch is 1) and C once A is in
epoch 1, with join="now". Each gets 2 whole epochs from where it
joined (every index of each once, consecutive epochs; C's partial first
epoch on top), the producer serves until the last of them has its epochs
and then exits 0, and the status file (tsrun stat --json) says what each
still needs (epochs_left, end_epoch).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

TSRUN = os.environ.get("TSRUN")
PY = "/usr/bin/python3"
if not TSRUN:
    print("TSRUN not set: skip")
    sys.exit(77)
try:
    import torch  # noqa: F401
except ImportError:
    print("torch is missing: skip")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


TRAINER = r'''
import json, sys, time
import tsrun
sock, out, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
time.sleep(args.pop("delay", 0))
pause = args.pop("pause", 0)
rec = {"batches": [], "error": None}
try:
    loader = tsrun.Loader(sock, timeout=120, **args)
    while True:
        n = 0
        for images, labels in loader:
            rec["batches"].append([loader.epoch, loader.index, len(labels)])
            n += 1
            time.sleep(pause)
        if n == 0:
            break
except tsrun.TsrunError as e:
    rec["error"] = "%s: %s" % (type(e).__name__, e)
with open(out, "w") as f:
    json.dump(rec, f)
'''


def whole_epochs(rec, m):
    """The epochs of rec read whole (every index once), in order, and the
    partial ones."""
    per = {}
    for e, i, n in rec["batches"]:
        per.setdefault(e, []).extend(range(i, i + n))
    whole = [e for e in sorted(per) if sorted(per[e]) == list(range(m))]
    partial = [e for e in sorted(per) if e not in whole]
    return whole, partial


def main():
    m, epochs = 2000, 2
    with tempfile.TemporaryDirectory(prefix="tsrun-sweep.") as tmp:
        sock = os.path.join(tmp, "s.sock")
        ts = os.path.join(tmp, "s.ts")
        with open(ts, "w") as f:
            f.write("pipeline p = synthetic(size = 4, count = %d, classes = 10)\n"
                    "    | shuffle(seed = 3) | batch(8)\n"
                    "serve p { socket = \"%s\" epochs = %d ring = 64 samples }\n"
                    % (m, sock, epochs))
        tr = os.path.join(tmp, "trainer.py")
        with open(tr, "w") as f:
            f.write(TRAINER)
        prod = subprocess.Popen([TSRUN, "run", ts, "--wait", "1", "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(sock) or prod.poll() is not None:
                break
            time.sleep(0.05)
        outs = {k: os.path.join(tmp, k + ".json") for k in "ABC"}
        seen = []  # (pid, epochs_left, end_epoch) from the status file

        def look():
            """The status file's trainers, noted in seen; A's position."""
            st = subprocess.run([TSRUN, "stat", sock, "--json"], capture_output=True,
                                text=True, timeout=30)
            try:
                cs = json.loads(st.stdout).get("consumers", [])
            except ValueError:
                return -1
            for c in cs:
                seen.append((c["pid"], c.get("epochs_left"), c.get("end_epoch")))
            return max((c["position"] for c in cs if c["pid"] == procs["A"].pid),
                       default=-1)

        def start(k, **args):
            procs[k] = subprocess.Popen([PY, tr, sock, outs[k], json.dumps(args)])

        # 30 ms a batch: an epoch takes 7.5 s. B is started once A is
        # past a ring's worth of epoch 0 (so B's first whole epoch is 1),
        # C once A is in epoch 1 (join now: a partial epoch, then 2).
        procs = {}
        start("A", batch_size=8, pause=0.03)
        for k, at, args in (("B", 600, {}), ("C", m + 600, {"join": "now"})):
            t_end = time.monotonic() + 120
            while look() < at and time.monotonic() < t_end and procs["A"].poll() is None:
                time.sleep(0.1)
            start(k, batch_size=8, pause=0.01, **args)
        while any(p.poll() is None for p in procs.values()):
            look()
            time.sleep(0.3)
        try:
            prod.wait(timeout=60)
        except subprocess.TimeoutExpired:
            prod.kill()
            prod.wait()
            check(False, "tsrun did not exit once every trainer had its epochs")
        check(prod.returncode == 0, "tsrun exited %s" % prod.returncode)
        recs = {}
        for k, path in outs.items():
            try:
                with open(path) as f:
                    recs[k] = json.load(f)
            except (OSError, ValueError) as e:
                check(False, "no record for %s: %s" % (k, e))
        firsts = {}
        for k, rec in recs.items():
            whole, partial = whole_epochs(rec, m)
            check(rec["error"] is None, "%s: %s" % (k, rec["error"]))
            check(len(whole) == epochs and whole == list(range(whole[0], whole[0] + epochs))
                  if whole else False,
                  "%s: whole epochs %s, want %d consecutive ones" % (k, whole, epochs))
            if k == "C":
                check(len(partial) == 1 and whole and partial[0] == whole[0] - 1,
                      "C (join now): partial epochs %s before its whole ones %s, want one"
                      % (partial, whole))
            else:
                check(not partial, "%s: partial epochs %s" % (k, partial))
            firsts[k] = whole[0] if whole else None
        check(firsts.get("A") == 0, "A's first epoch %s, want 0" % firsts.get("A"))
        check(firsts.get("B") is not None and firsts["B"] >= 1,
              "B joined late: first whole epoch %s, want 1 or later (the ring is 64 "
              "samples)" % firsts.get("B"))
        pids = {k: p.pid for k, p in procs.items()}
        for k in "AB":
            if firsts.get(k) is None:
                continue
            ends = {end for pid, left, end in seen if pid == pids[k]}
            lefts = {left for pid, left, end in seen if pid == pids[k]}
            check(ends <= {firsts[k] + epochs} and lefts <= set(range(epochs + 1)),
                  "status file: %s has end_epoch %s, epochs_left %s; want %d and 0..%d"
                  % (k, sorted(ends), sorted(lefts), firsts[k] + epochs, epochs))
        check(any(left == epochs for pid, left, end in seen if pid == pids["B"]),
              "status file: B never showed %d epochs left (%s)"
              % (epochs, [x for x in seen if x[0] == pids["B"]][:5]))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
