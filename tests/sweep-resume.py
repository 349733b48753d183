#!/usr/bin/python3
"""sweep-resume.py - resume in a sweep, and a trainer killed inside an
epoch grown for it (real processes, PyTorch trainers, SIGKILL;
tensorsocket(7) Join policies). tsrun serves epochs = 2 of a shuffled
synthetic set of 2000 samples, ring 64 samples; trainer A, there from the
start at 40 ms a batch, sets the pace.

- S starts with A, saves state_dict() after 640 samples of epoch 0, reads
  on and is SIGKILLed inside epoch 0.
- R2 loads S's state once the ring is past index 640 of epoch 0 (next
  ring epoch), R5 once the ring is in epoch 1 before index 640 (current
  ring epoch), R4 once it is past index 640 of epoch 1 (next, an epoch
  grown for it): each gets exactly the 1360 samples S still owed
  (indices 640..1999 of epoch 1, 1, 2), then 1 whole epoch (S's epochs_left
  2, the rest counted) and the end of the stream; R2's and R5's samples
  are A's at those positions (the stream), not the ones S missed
  (epoch 0's), and each warns.
- K joins late (first whole epoch 1, so epoch 2 is grown for it) and is
  SIGKILLed inside epoch 2: R4 still reads its epoch 3, tsrun exits 0.
- Exact resume: a second tsrun run --start 0:640 and R3 with S's state
  gets the very samples A had at (0, 640..1999), then A's epoch 1 whole,
  no warning, and that tsrun exits 0.
- Alone: a trainer that joined late is SIGKILLed inside the epoch grown
  for it and nobody else is connected: tsrun ends (exit 0) within 20 s,
  not waiting for readers of that epoch.
"""
import json
import os
import signal
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

M, EPOCHS, SAVE_AT = 2000, 2, 640
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


# A trainer: waits for its go file (torch and tsrun already imported, so
# that it connects within milliseconds of the test's decision), loads a
# state when told, records every batch (epoch, index, n, a hash per
# sample) per pass, saves its state_dict() after `save` samples.
TRAINER = r'''
import hashlib, json, os, sys, time, warnings
import torch  # before the go file: the import takes seconds
import tsrun
sock, out, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
go, state, save = args.pop("go", None), args.pop("state", None), args.pop("save", None)
pause = args.pop("pause", 0)
if go:
    open(go + ".ready", "w").close()
while go and not os.path.exists(go):
    time.sleep(0.01)
rec = {"passes": [], "error": None, "warnings": [], "state": None}
def flush():
    with open(out + ".tmp", "w") as f:
        json.dump(rec, f)
    os.replace(out + ".tmp", out)
try:
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        loader = tsrun.Loader(sock, timeout=120, **args)
        if state:
            with open(state) as f:
                loader.load_state_dict(json.load(f))
        rec["warnings"] = [str(w.message) for w in ws]
    seen = 0
    while True:
        batches = []
        rec["passes"].append(batches)
        for images, labels in loader:
            hs = [hashlib.blake2b(images[k].numpy().tobytes(), digest_size=8).hexdigest()
                  for k in range(len(labels))]
            batches.append([loader.epoch, loader.index, len(labels), hs])
            seen += len(labels)
            if save is not None and seen == save:
                rec["state"] = loader.state_dict()
                flush()
            time.sleep(pause)
        if not batches:
            rec["passes"].pop()
            break
except tsrun.TsrunError as e:
    rec["error"] = "%s: %s" % (type(e).__name__, e)
flush()
'''


class Run:
    """One tsrun and its trainers, in tmp."""

    def __init__(self, tmp, name, extra=(), epochs=EPOCHS, wait=1):
        self.tmp, self.name = tmp, name
        self.sock = os.path.join(tmp, name + ".sock")
        ts = os.path.join(tmp, name + ".ts")
        with open(ts, "w") as f:
            f.write("pipeline p = synthetic(size = 4, count = %d, classes = 10)\n"
                    "    | shuffle(seed = 3) | batch(8)\n"
                    "serve p { socket = \"%s\" epochs = %d ring = 64 samples }\n"
                    % (M, self.sock, epochs))
        self.tr = os.path.join(tmp, "trainer.py")
        with open(self.tr, "w") as f:
            f.write(TRAINER)
        self.prod = subprocess.Popen([TSRUN, "run", ts, "--wait", str(wait)] + ([] if os.environ.get("DBG") else ["-q"]) + list(extra),
                                     stdout=subprocess.DEVNULL, stderr=None if os.environ.get("DBG") else subprocess.PIPE)
        for _ in range(200):
            if os.path.exists(self.sock) or self.prod.poll() is not None:
                break
            time.sleep(0.05)
        self.procs, self.outs = {}, {}

    def start(self, k, **args):
        self.outs[k] = os.path.join(self.tmp, "%s-%s.json" % (self.name, k))
        self.procs[k] = subprocess.Popen([PY, self.tr, self.sock, self.outs[k],
                                          json.dumps(args)])

    def go(self, k):
        """Let k connect, once it is ready to (torch imported)."""
        go = self.go_path(k)
        t_end = time.monotonic() + 120
        while not os.path.exists(go + ".ready") and time.monotonic() < t_end and \
                self.procs[k].poll() is None:
            time.sleep(0.02)
        open(go, "w").close()

    def go_path(self, k):
        return os.path.join(self.tmp, "%s-%s.go" % (self.name, k))

    def position(self, k):
        """k's release position in the status file; -1 before it shows."""
        st = subprocess.run([TSRUN, "stat", self.sock, "--json"], capture_output=True,
                            text=True, timeout=30)
        try:
            cs = json.loads(st.stdout).get("consumers", [])
        except ValueError:
            return -1
        return max((c["position"] for c in cs if c["pid"] == self.procs[k].pid),
                   default=-1)

    def go_resume(self, k, pace="A"):
        """Let resumer k connect; the epochs it may resume in, from the
        pace trainer's position (the ring's oldest sample; its head is at
        most the ring, 64 samples, further) before the go and once k is
        connected: index 640 of the epoch of the oldest sample when that
        is not past it, else of the next."""
        p1 = self.position(pace)
        self.go(k)
        t_end = time.monotonic() + 60
        while self.position(k) < 0 and time.monotonic() < t_end and \
                self.procs[k].poll() is None:
            time.sleep(0.02)
        p2 = self.position(pace)
        want = set()
        for q in range(max(p1, 0), max(p2, p1, 0) + 65):
            want.add(q // M if q % M <= SAVE_AT else q // M + 1)
        return sorted(want)

    def wait_for(self, k, lo, hi=None, limit=120):
        """Until k's position is at least lo (False past hi, or when k
        or the limit ends first)."""
        t_end = time.monotonic() + limit
        while time.monotonic() < t_end and self.procs[k].poll() is None:
            p = self.position(k)
            if p >= lo:
                return hi is None or p <= hi
            time.sleep(0.05)
        return False

    def finish(self, what, limit=120):
        t_end = time.monotonic() + limit
        while any(p.poll() is None for p in self.procs.values()) and \
                time.monotonic() < t_end:
            time.sleep(0.2)
        for k, p in self.procs.items():
            if p.poll() is None:
                check(False, "%s: trainer %s still running after %d s" % (what, k, limit))
                p.kill()
                p.wait()
        return self.ended(what, 60)

    def ended(self, what, limit):
        try:
            self.prod.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.prod.kill()
            self.prod.wait()
            check(False, "%s: tsrun did not exit within %d s" % (what, limit))
            return False
        err = self.prod.stderr.read().decode(errors="replace")
        return check(self.prod.returncode == 0, "%s: tsrun exited %s: %s"
                     % (what, self.prod.returncode, err[-400:]))

    def rec(self, k):
        try:
            with open(self.outs[k]) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            check(False, "%s: no record for %s: %s" % (self.name, k, e))
            return {"passes": [], "error": "no record", "warnings": [], "state": None}


def samples(rec):
    """{(epoch, index): hash} of every sample rec was handed."""
    out = {}
    for p in rec["passes"]:
        for e, i, n, hs in p:
            for k in range(n):
                out[(e, i + k)] = hs[k]
    return out


def passes(rec):
    """Per pass: (its epochs, its indices in order)."""
    res = []
    for p in rec["passes"]:
        res.append((sorted({b[0] for b in p}),
                    [i + k for _, i, n, _ in p for k in range(n)]))
    return res


def check_resumed(name, rec, epoch, a_samples=None, missed=None):
    """rec resumed S's state (0, 640, epochs_left 2) and got the 1360
    samples owed at indices 640.. of `epoch`, then one whole epoch."""
    ps = passes(rec)
    check(rec["error"] is None, "%s: %s" % (name, rec["error"]))
    check(len(ps) == 2, "%s: %d passes, want 2 (the rest owed, then one whole epoch): %s"
          % (name, len(ps), [(e, len(ix)) for e, ix in ps]))
    if len(ps) >= 1:
        e, ix = ps[0]
        check(e == [epoch] and ix == list(range(SAVE_AT, M)),
              "%s: first pass epochs %s, %d samples from index %s; want epoch %d, "
              "the %d owed, indices %d..%d" % (name, e, len(ix), ix[:1], epoch,
                                              M - SAVE_AT, SAVE_AT, M - 1))
    if len(ps) >= 2:
        e, ix = ps[1]
        check(e == [epoch + 1] and ix == list(range(M)),
              "%s: second pass epochs %s, %d samples; want epoch %d whole"
              % (name, e, len(ix), epoch + 1))
    if a_samples is not None:
        got = samples(rec)
        same = [got[p] == a_samples.get(p) for p in got if p in a_samples]
        check(same and all(same), "%s: %d of %d samples are not A's at the same position"
              % (name, same.count(False), len(same)))
    if missed is not None:
        got = samples(rec)
        firsts = [got[(epoch, i)] for i in range(SAVE_AT, M) if (epoch, i) in got]
        equal = sum(1 for h, m in zip(firsts, missed) if h == m)
        check(firsts and equal < len(firsts) // 4,
              "%s: %d of %d of its first pass's samples are the ones S missed "
              "(the ring had moved on: they cannot be)" % (name, equal, len(firsts)))


def sweep(tmp):
    """A, S, R2, R5, R4 and K on one tsrun (the module's docstring)."""
    run = Run(tmp, "sweep", wait=2)  # A and S both from the start
    state = os.path.join(tmp, "state.json")
    run.start("A", batch_size=8, pause=0.04)
    run.start("S", batch_size=8, pause=0.01, save=SAVE_AT)
    for k in ("R2", "R5", "R4"):
        run.start(k, batch_size=8, pause=0.005, go=run.go_path(k), state=state)
    # S saves at 640 and is killed inside epoch 0
    t_end = time.monotonic() + 120
    while time.monotonic() < t_end and not os.path.exists(run.outs["S"]):
        time.sleep(0.05)
    check(run.wait_for("S", SAVE_AT + 80), "S never got past its saved position")
    run.procs["S"].send_signal(signal.SIGKILL)
    run.procs["S"].wait()
    srec = run.rec("S")
    st = srec["state"]
    check(st is not None and st["epoch"] == 0 and st["index"] == SAVE_AT and
          st.get("epochs_left") == EPOCHS,
          "S's state_dict %s, want epoch 0 index %d epochs_left %d" % (st, SAVE_AT, EPOCHS))
    with open(state, "w") as f:
        json.dump(st or {}, f)
    # K: joins late (its first whole epoch is 1), killed inside epoch 2
    run.start("K", batch_size=8, pause=0.005)
    # R2: the ring is past index 640 of epoch 0 (next ring epoch: 1)
    want = {}
    check(run.wait_for("A", 1200), "A never reached 1200")
    want["R2"] = run.go_resume("R2")
    # R5: the ring in epoch 1, before index 640 (current ring epoch: 1)
    run.wait_for("A", M + 100)
    want["R5"] = run.go_resume("R5")
    # R4: the ring past index 640 of epoch 1: epoch 2, grown for it
    check(run.wait_for("A", M + 1200), "A never reached %d" % (M + 1200))
    want["R4"] = run.go_resume("R4")
    print("resume epochs the ring's positions allow:", want)
    for k, epoch in (("R2", 1), ("R5", 1), ("R4", 2)):
        check(epoch in want[k], "%s went when the ring allowed epochs %s, not %d "
              "(the test missed its window)" % (k, want[k], epoch))
    # K inside epoch 2 (an epoch served past the planned 2), then killed
    check(run.wait_for("K", 2 * M + 300), "K never read into epoch 2")
    run.procs["K"].send_signal(signal.SIGKILL)
    run.procs["K"].wait()
    run.finish("sweep")
    a = run.rec("A")
    a_samples = samples(a)
    check(a["error"] is None and [e for e, _ in passes(a)] == [[0], [1]],
          "A: passes %s, error %s; want epochs 0 and 1" % ([e for e, _ in passes(a)],
                                                             a["error"]))
    missed = [a_samples.get((0, i)) for i in range(SAVE_AT, M)]
    for k in ("R2", "R5", "R4"):
        r = run.rec(k)
        ps = passes(r)
        epoch = ps[0][0][0] if ps and ps[0][0] else None
        check(epoch in want[k], "%s resumed in epoch %s, want %s" % (k, epoch, want[k]))
        if epoch is None:
            continue
        check_resumed(k, r, epoch, a_samples if epoch < EPOCHS else None,
                      missed if epoch < EPOCHS else None)
        check(any("past the saved position" in w and "epoch %d" % epoch in w
                  for w in r["warnings"]),
              "%s: no warning naming epoch %d: %s" % (k, epoch, r["warnings"]))
    return a_samples, st


def exact(tmp, a_samples, st):
    """A producer restarted with --start 0:640: the same samples as A's."""
    run = Run(tmp, "exact", ["--start", "%d:%d" % (st["epoch"], st["index"])])
    state = os.path.join(tmp, "state.json")
    run.start("R3", batch_size=8, state=state)
    run.finish("exact (--start)")
    r = run.rec("R3")
    check_resumed("R3 (--start)", r, 0, a_samples)
    check(not any("past" in w for w in r["warnings"]),
          "R3 (--start): warned %s" % r["warnings"])


def alone(tmp):
    """Epochs = 1: B joins late (its first whole epoch, 1, is grown for
    it) and is killed inside it, nobody else connected: tsrun ends."""
    run = Run(tmp, "alone", epochs=1)
    run.start("A", batch_size=8, pause=0.02, go=run.go_path("A"))
    run.start("B", batch_size=8, pause=0.02, go=run.go_path("B"))
    t_end = time.monotonic() + 120
    while not os.path.exists(run.go_path("B") + ".ready") and time.monotonic() < t_end:
        time.sleep(0.02)
    run.go("A")
    check(run.wait_for("A", 600), "alone: A never reached 600")
    run.go("B")
    check(run.wait_for("B", M + 400), "alone: B never read into epoch 1")
    check(run.procs["A"].poll() is not None or run.procs["A"].wait(timeout=60) == 0,
          "alone: A did not end")
    run.procs["B"].send_signal(signal.SIGKILL)
    run.procs["B"].wait()
    run.ended("alone (B killed in the epoch grown for it)", 20)
    check(run.rec("A")["error"] is None, "alone: A: %s" % run.rec("A")["error"])


def main():
    with tempfile.TemporaryDirectory(prefix="tsrun-resume.") as tmp:
        a_samples, st = sweep(tmp)
        if st:
            exact(tmp, a_samples, st)
        alone(tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
