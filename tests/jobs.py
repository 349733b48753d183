#!/usr/bin/python3
"""jobs.py - the ranks of data-parallel jobs split one tsrun stream (real
processes, tensorsocket(7)).

1. torch.distributed with the gloo backend on CPU: examples/train_ddp.py
   started by torchrun (--standalone --nproc_per_node 2, so rank and world size come from
   LOCAL_RANK / LOCAL_WORLD_SIZE): two 2-rank jobs and a lone trainer read
   one tsrun for 2 epochs while training a tiny model with DDP's
   all-reduced gradients. Per job and epoch every sample index is read by
   exactly one rank; both ranks take the same number of steps; the ranks'
   parameters are equal at the end (the all-reduce ran); the two jobs and
   the lone trainer see the same stream.
2. Equal shares of an odd epoch: pad (ceil, the last ranks' final batches
   overlap) and job_drop_last (floor, the rest read by none).
3. A rank that connects late: its partner waits, holding nobody back, so
   a lone trainer reads on; then both start at one whole epoch. A rank
   that never comes: its partner gets JobFailed naming it and the serve
   setting job_timeout (which follows stall_timeout), the stream goes on.
4. A rank killed with SIGKILL: its partner gets JobFailed naming it, not a
   hang; the lone trainer reads on to the end.
5. Refusals: another world size, a rank connected twice; Loader argument
   errors.
6. len(loader) of every rank is the batches its pass yields, checked
   against the count each pass yielded and, for whole epochs, against
   torch's DistributedSampler (num_samples, then batches of batch_size):
   2 and 3 ranks, job_drop_last and drop_last both ways, a trainer batch
   other than the pipeline's, and a job that joins mid-epoch
   (join="now").
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
    import torch.distributed  # noqa: F401
except ImportError:
    print("torch.distributed is missing: skip")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


TRAINER = r'''
import json, os, sys, time
import tsrun
def every_epoch(loader):
    # one pass of the Loader per epoch, until a pass yields nothing
    while True:
        n = 0
        for batch in loader:
            n += 1
            yield batch
        if n == 0:
            return
sock, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
args = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
delay = args.pop("delay", 0)
die_after = args.pop("die_after", None)
pause = args.pop("pause", 0.002)
time.sleep(delay)
rec = {"batches": [], "error": None, "t0": time.monotonic()}
try:
    args.setdefault("timeout", 120)
    loader = tsrun.Loader(sock, **args)
    rec["rank"], rec["world"] = loader.rank, loader.world_size
    for images, labels in every_epoch(loader):
        rec["batches"].append([loader.epoch, loader.index, [int(x) for x in labels]])
        if die_after is not None and len(rec["batches"]) >= die_after:
            with open(out, "w") as f:
                json.dump(rec, f)
            os.kill(os.getpid(), 9)
        if args.get("batch_size") and mode == "slow":
            time.sleep(pause)
except tsrun.JobFailed as e:
    rec["error"] = "JobFailed: %s" % e
    rec["t_error"] = time.monotonic()
except tsrun.TsrunError as e:
    rec["error"] = "%s: %s" % (type(e).__name__, e)
with open(out, "w") as f:
    json.dump(rec, f)
'''


def pipeline(tmp, name, count, epochs, ring, batch=16, extra=""):
    sock = os.path.join(tmp, name + ".sock")
    path = os.path.join(tmp, name + ".ts")
    with open(path, "w") as f:
        f.write("pipeline p = synthetic(size = 4, count = %d, classes = %d)\n"
                "    | shuffle(seed = 11) | batch(%d)\n"
                "serve p { socket = \"%s\" epochs = %d ring = %s %s }\n"
                % (count, count, batch, sock, epochs, ring, extra))
    return path, sock


PRODUCERS = []


def start_tsrun(ts, sock, wait):
    p = subprocess.Popen([TSRUN, "run", ts, "--wait", str(wait), "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    PRODUCERS.append(p)
    for _ in range(200):
        if os.path.exists(sock) or p.poll() is not None:
            break
        time.sleep(0.05)
    return p


def env_clean():
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
              "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    return env


def trainer(tmp, sock, out, mode="plain", **args):
    path = os.path.join(tmp, "trainer.py")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(TRAINER)
    return subprocess.Popen([PY, path, sock, out, mode, json.dumps(args)],
                            env=env_clean(), stderr=subprocess.PIPE, text=True)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        failures.append("%s: %s" % (path, e))
        print("FAIL: no record", path, e)
        return None


def by_epoch(rec):
    out = {}
    for e, i, labels in rec["batches"]:
        out.setdefault(e, []).append((i, labels))
    return out


def stream_of(rec):
    """(epoch, index) -> label of every sample a trainer read."""
    s = {}
    for e, i, labels in rec["batches"]:
        for k, x in enumerate(labels):
            s[(e, i + k)] = x
    return s


def ddp_jobs(tmp):
    """The recipe of tensorsocket(7): examples/train_ddp.py under torchrun."""
    m, epochs = 200, 2
    ts, sock = pipeline(tmp, "ddp", m, epochs, "4 batches")
    prod = start_tsrun(ts, sock, 5)
    example = os.path.join(os.environ.get("TS_SRCDIR", "."), "examples", "train_ddp.py")
    runs = []
    for job in ("sweep-a", "sweep-b"):
        outs = [os.path.join(tmp, "%s-%d.json" % (job, r)) for r in range(2)]
        # -r 1 -t 1: torch 1.13's torchrun under Python 3.11 cannot map
        # its default redirect "0" (Std.NONE is no longer iterated as a
        # member) and fails at start; an explicit stdout redirect works.
        # Two jobs at once: each its own rendezvous on a free port
        # (torchrun's "stacked single-node" recipe); --standalone would
        # put both on port 29400, where the second joins the first's
        # store and fails when that job ends first.
        p = subprocess.Popen([PY, "-m", "torch.distributed.run", "--rdzv_backend", "c10d",
                              "--rdzv_endpoint", "localhost:0", "--nnodes", "1",
                              "--nproc_per_node", "2", "-r", "1", "-t", "1", example,
                              "--socket", sock, "--job", job, "--batch-size", "16",
                              "--record", os.path.join(tmp, job + "-%d.json")],
                             env=env_clean(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        runs.append((job, p, outs))
    lone_out = os.path.join(tmp, "lone.json")
    lone = trainer(tmp, sock, lone_out, batch_size=24, timeout=300)
    for job, p, outs in runs:
        try:
            log, _ = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            log, _ = p.communicate()
        if not check(p.returncode == 0, "torchrun %s exited %s" % (job, p.returncode)):
            print("--- torchrun %s:" % job)
            print("\n".join(l for l in log.splitlines() if l.strip())[-6000:])
    lone.wait(timeout=120)
    prod.wait(timeout=120)
    check(prod.returncode == 0, "tsrun exited %s" % prod.returncode)
    lone_rec = load(lone_out)
    streams = []
    for job, p, outs in runs:
        recs = [load(o) for o in outs]
        if None in recs:
            continue
        for r, rec in enumerate(recs):
            check(rec["error"] is None, "%s rank %d: %s" % (job, r, rec["error"]))
            check(rec["job_rank"] == r and rec["job_world"] == 2,
                  "%s: rank %s of %s from LOCAL_RANK/LOCAL_WORLD_SIZE, want %d of 2"
                  % (job, rec["job_rank"], rec["job_world"], r))
            check(rec.get("params_equal"), "%s rank %d: parameters differ across ranks "
                  "(gradients not all-reduced)" % (job, r))
        check(recs[0]["steps"] == recs[1]["steps"] == epochs * 7,
              "%s: ranks took %d and %d steps, want %d each" %
              (job, recs[0]["steps"], recs[1]["steps"], epochs * 7))
        per = [by_epoch(rec) for rec in recs]
        for e in range(epochs):
            seen = {}
            for r in range(2):
                for i, labels in per[r].get(e, []):
                    for k in range(len(labels)):
                        seen[i + k] = seen.get(i + k, 0) + 1
            check(sorted(seen) == list(range(m)) and set(seen.values()) == {1},
                  "%s epoch %d: indices read %d distinct, %d more than once, want %d once"
                  % (job, e, len(seen), sum(v > 1 for v in seen.values()), m))
        merged = {}
        for rec in recs:
            merged.update(stream_of(rec))
        streams.append(merged)
    if lone_rec and len(streams) == 2:
        lone_stream = stream_of(lone_rec)
        check(len(lone_stream) == m * epochs, "lone trainer read %d samples, want %d"
              % (len(lone_stream), m * epochs))
        check(streams[0] == streams[1], "the two jobs saw different streams")
        check(streams[0] == lone_stream, "the jobs and the lone trainer saw different streams")


def equal_shares(tmp):
    m = 101
    for drop in (False, True):
        ts, sock = pipeline(tmp, "odd%d" % drop, m, 1, "4 batches", batch=8)
        prod = start_tsrun(ts, sock, 3)
        outs = [os.path.join(tmp, "odd%d-%d.json" % (drop, r)) for r in range(3)]
        ps = [trainer(tmp, sock, outs[r], job="odd", rank=r, world_size=3,
                      batch_size=8, join="next_epoch", job_drop_last=drop)
              for r in range(3)]
        for p in ps:
            p.wait(timeout=120)
        prod.wait(timeout=60)
        recs = [load(o) for o in outs]
        if None in recs:
            continue
        want = m // 3 if drop else -(-m // 3)
        seen = {}
        for r, rec in enumerate(recs):
            n = sum(len(labels) for _, _, labels in rec["batches"])
            check(n == want, "drop=%s rank %d read %d, want %d" % (drop, r, n, want))
            check(len(rec["batches"]) == len(recs[0]["batches"]),
                  "drop=%s: ranks took different numbers of batches" % drop)
            for e, i, labels in rec["batches"]:
                for k in range(len(labels)):
                    seen[i + k] = seen.get(i + k, 0) + 1
        if drop:
            check(len(seen) == want * 3 and set(seen.values()) == {1},
                  "drop: %d distinct, want %d each once" % (len(seen), want * 3))
        else:
            check(sorted(seen) == list(range(m)) and sum(seen.values()) == want * 3,
                  "pad: the union is not the epoch plus %d repeats" % (want * 3 - m))


def late_rank(tmp):
    """A rank that connects late: its partner waits, holding nobody (the
    ring is far smaller than an epoch, and the lone trainer reads on);
    then both start at one position by the job's policy, a whole epoch."""
    m, epochs = 2000, 4
    ts, sock = pipeline(tmp, "late", m, epochs, "32 samples", batch=8)
    # --wait 1: the lone trainer starts it; rank 0 waiting counts for none
    prod = start_tsrun(ts, sock, 1)
    outs = [os.path.join(tmp, "late-%d.json" % r) for r in range(2)]
    lone_out = os.path.join(tmp, "late-lone.json")
    lone = trainer(tmp, sock, lone_out, mode="slow", batch_size=8, join="now",
                   pause=0.01)
    p0 = trainer(tmp, sock, outs[0], job="late", rank=0, world_size=2, batch_size=8)
    p1 = trainer(tmp, sock, outs[1], job="late", rank=1, world_size=2, batch_size=8,
                 delay=2.0)
    for p in (p0, p1, lone):
        p.wait(timeout=120)
    prod.wait(timeout=60)
    recs = [load(o) for o in outs]
    rl = load(lone_out)
    if None in recs or rl is None:
        return
    check(rl["error"] is None and sum(len(x[2]) for x in rl["batches"]) == m * epochs,
          "late rank: the lone trainer read %d samples (%s), want %d"
          % (sum(len(x[2]) for x in rl["batches"]), rl["error"], m * epochs))
    for r, rec in enumerate(recs):
        if not check(rec["error"] is None and rec["batches"],
                     "late rank: rank %d read %d batches: %s" % (r, len(rec["batches"]),
                                                                 rec["error"])):
            return
    e = recs[0]["batches"][0][0]
    check(recs[0]["batches"][0][:2] == [e, 0] and recs[1]["batches"][0][:2] == [e, 8]
          and e >= 1,
          "late rank: first batches at %s and %s, want one epoch's start past 0 (the "
          "stream went on while rank 0 waited): [e, 0] and [e, 8]"
          % (recs[0]["batches"][0][:2], recs[1]["batches"][0][:2]))
    n = len(recs[0]["batches"])
    check(n == len(recs[1]["batches"]) and n > 0 and n % (m // 16) == 0,
          "late rank: %d and %d batches, want equal whole epochs of %d"
          % (n, len(recs[1]["batches"]), m // 16))


def job_timeout(tmp):
    """Rank 1 never comes (stall_timeout = 2, which job_timeout follows):
    the lone trainer reads on meanwhile, rank 0 gets JobFailed naming rank
    1 and the setting after about 2 s, and the stream goes on to its end."""
    m = 8000
    ts, sock = pipeline(tmp, "jt", m, 1, "64 samples", batch=8,
                        extra="stall_timeout = 2")
    prod = start_tsrun(ts, sock, 1)
    out0 = os.path.join(tmp, "jt-0.json")
    lone_out = os.path.join(tmp, "jt-lone.json")
    p0 = trainer(tmp, sock, out0, job="jt", rank=0, world_size=2, batch_size=8)
    lone = trainer(tmp, sock, lone_out, mode="slow", batch_size=8, join="now",
                   pause=0.004)
    p0.wait(timeout=60)
    lone.wait(timeout=60)
    prod.wait(timeout=60)
    check(prod.returncode == 0, "job_timeout: tsrun exited %s" % prod.returncode)
    r0, rl = load(out0), load(lone_out)
    if r0:
        waited = r0.get("t_error", 0) - r0["t0"]
        check(r0["error"] and r0["error"].startswith("JobFailed") and
              "waited 2 s for its rank 1 of 2, which never connected (serve setting "
              "job_timeout = 2)" in r0["error"] and not r0["batches"],
              "job_timeout: rank 0 got %d batches, %s" % (len(r0["batches"]), r0["error"]))
        check(1.5 < waited < 30, "job_timeout: rank 0's error came after %.1f s, want "
              "about 2" % waited)
    if rl:
        check(rl["error"] is None and sum(len(x[2]) for x in rl["batches"]) == m,
              "job_timeout: the lone trainer read %d samples (%s), want %d"
              % (sum(len(x[2]) for x in rl["batches"]), rl["error"], m))


def crash(tmp):
    ts, sock = pipeline(tmp, "crash", 4000, 1, "64 samples", batch=8)
    prod = start_tsrun(ts, sock, 3)
    outs = [os.path.join(tmp, "crash-%d.json" % r) for r in range(2)]
    p0 = trainer(tmp, sock, outs[0], mode="slow", job="c", rank=0, world_size=2,
                 batch_size=8)
    p1 = trainer(tmp, sock, outs[1], job="c", rank=1, world_size=2, batch_size=8,
                 die_after=5)
    lone_out = os.path.join(tmp, "crash-lone.json")
    lone = trainer(tmp, sock, lone_out, mode="slow", batch_size=8)
    p1.wait(timeout=120)
    check(p1.returncode == -signal.SIGKILL, "rank 1 was not killed: %s" % p1.returncode)
    t0 = time.monotonic()
    p0.wait(timeout=60)
    took = time.monotonic() - t0
    lone.wait(timeout=120)
    prod.wait(timeout=60)
    r0 = load(outs[0])
    if r0:
        check(r0["error"] and r0["error"].startswith("JobFailed") and "rank 1 (pid %d)" % p1.pid
              in r0["error"], "rank 0 after its partner died: %s" % r0["error"])
        check(took < 10, "rank 0 took %.1f s to learn its partner died" % took)
    rl = load(lone_out)
    if rl:
        check(rl["error"] is None and sum(len(x[2]) for x in rl["batches"]) == 4000,
              "lone trainer: %s after %d samples" % (rl["error"],
                                                     sum(len(x[2]) for x in rl["batches"])))


def refusals(tmp):
    ts, sock = pipeline(tmp, "ref", 100000, 1, "64 samples", batch=8)
    prod = start_tsrun(ts, sock, 1)
    hold = trainer(tmp, sock, os.path.join(tmp, "ref-0.json"), mode="slow", job="r",
                   rank=0, world_size=2, batch_size=8, timeout=60)
    time.sleep(3)
    code = r'''
import sys, tsrun
sock = sys.argv[1]
def refused(**kw):
    try:
        tsrun.Loader(sock, timeout=5, **kw).close()
        return "connected"
    except tsrun.TsrunError as e:
        return str(e)
    except ValueError as e:
        return "ValueError: %s" % e
print(refused(job="r", rank=1, world_size=3, batch_size=8))
print(refused(job="r", rank=0, world_size=2, batch_size=8))
print(refused(job="r", rank=1, world_size=2, batch_size=16))
print(refused(rank=1))
print(refused(job="r"))
print(refused(job="a b", rank=0, world_size=1))
'''
    r = subprocess.run([PY, "-c", code, sock], capture_output=True, text=True,
                       env=env_clean(), timeout=120)
    lines = r.stdout.splitlines() + [""] * 6
    check("asks for world size 3, but its other ranks have 2" in lines[0], "world: " + lines[0])
    check("rank 0 of job 'r' is already connected" in lines[1], "twice: " + lines[1])
    check("asks for batch size 16, but its other ranks have 8" in lines[2], "batch: " + lines[2])
    check(lines[3].startswith("ValueError: rank and world_size are for a job"), "no job: " + lines[3])
    check("needs rank" in lines[4] and "LOCAL_RANK" in lines[4], "env: " + lines[4])
    check("printable characters without spaces" in lines[5], "name: " + lines[5])
    hold.kill()
    hold.wait()
    prod.send_signal(signal.SIGINT)
    prod.wait(timeout=60)


LEN_JOB = r'''
import json, sys, threading
import tsrun
sock, out, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
world, passes = args.pop("world_size"), args.pop("passes", 99)
recs = [None] * world
done = threading.Barrier(world)  # a rank closing early fails its job

def rank(r):
    rec = {"passes": [], "error": None}
    try:
        loader = tsrun.Loader(sock, rank=r, world_size=world, timeout=120, **args)
        while len(rec["passes"]) < passes:
            n = len(loader)
            got, first = 0, None
            for images, labels in loader:
                if first is None:
                    first = [loader.epoch, loader.index]
                got += 1
            if got == 0 and n == 0:
                break
            rec["passes"].append([n, got, first])
        done.wait(timeout=120)
        loader.close()
    except tsrun.TsrunError as e:
        rec["error"] = "%s: %s" % (type(e).__name__, e)
    recs[r] = rec

ts = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
for t in ts:
    t.start()
for t in ts:
    t.join()
with open(out, "w") as f:
    json.dump(recs, f)
'''


def len_job(tmp, sock, name, **args):
    path = os.path.join(tmp, "len_job.py")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(LEN_JOB)
    out = os.path.join(tmp, "len-%s.json" % name)
    p = subprocess.Popen([PY, path, sock, out, json.dumps(dict(args, job=name))],
                         env=env_clean())
    return p, out


def sampler_batches(m, world, batch, job_drop, drop_last):
    """Batches per epoch of one rank, from torch's own DistributedSampler."""
    import torch.utils.data as tud
    n = len(tud.DistributedSampler(range(m), num_replicas=world, rank=0,
                                   shuffle=False, drop_last=job_drop))
    return n // batch if drop_last else -(-n // batch)


def lengths(tmp):
    m, epochs = 203, 2
    cases = [  # world, trainer batch, job_drop_last, drop_last
        (2, 8, False, False), (2, 16, True, True),
        (3, 12, False, True), (3, 8, True, False),
    ]
    for half in (cases[:2], cases[2:]):
        ts, sock = pipeline(tmp, "len%d" % half[0][0], m, epochs, "4 batches", batch=16)
        prod = start_tsrun(ts, sock, sum(c[0] for c in half))
        runs = []
        for w, b, jd, dl in half:
            name = "w%db%d%s%s" % (w, b, "J" if jd else "", "D" if dl else "")
            runs.append((name, w, b, jd, dl) +
                        len_job(tmp, sock, name, world_size=w, batch_size=b,
                                job_drop_last=jd, drop_last=dl))
        for name, w, b, jd, dl, p, out in runs:
            p.wait(timeout=240)
            recs = load(out)
            if not recs:
                continue
            want = sampler_batches(m, w, b, jd, dl)
            for r, rec in enumerate(recs):
                if not check(rec and rec["error"] is None and len(rec["passes"]) == epochs,
                             "len %s rank %d: %s" % (name, r, rec)):
                    continue
                for n, got, first in rec["passes"]:
                    check(n == got == want, "len %s rank %d epoch %s: len() %d, the pass "
                          "yielded %d, DistributedSampler gives %d batches"
                          % (name, r, first, n, got, want))
        prod.wait(timeout=60)
        check(prod.returncode == 0, "len: tsrun exited %s" % prod.returncode)


def lengths_join(tmp):
    """A job joining mid-epoch: its first pass is the rest of the epoch."""
    m = 4000
    ts, sock = pipeline(tmp, "lenj", m, 0, "8 batches", batch=8)
    prod = start_tsrun(ts, sock, 1)
    lone_out = os.path.join(tmp, "lenj-lone.json")
    lone = trainer(tmp, sock, lone_out, mode="slow", batch_size=8)
    time.sleep(2.5)
    p, out = len_job(tmp, sock, "join", world_size=2, batch_size=8, join="now",
                     job_drop_last=True, passes=2)
    p.wait(timeout=240)
    lone.kill()
    lone.wait()
    prod.send_signal(signal.SIGINT)
    prod.wait(timeout=60)
    recs = load(out)
    if not recs:
        return
    for r, rec in enumerate(recs):
        if not check(rec["error"] is None and rec["passes"],
                     "len join rank %d: %s" % (r, rec)):
            continue
        for n, got, first in rec["passes"]:
            check(n == got, "len join rank %d pass from %s: len() %d, yielded %d"
                  % (r, first, n, got))
        n0, _, first = rec["passes"][0]
        check(first[1] > 0 and n0 < m // 16,
              "len join rank %d: first pass from %s with %d batches, want a mid-epoch start"
              % (r, first, n0))


def main():
    with tempfile.TemporaryDirectory(prefix="tsrun-jobs.") as tmp:
        try:
            parts = (ddp_jobs, equal_shares, late_rank, job_timeout, crash, refusals,
                     lengths, lengths_join)
            only = sys.argv[1:]
            for part in parts:
                if only and part.__name__ not in only:
                    continue
                try:
                    part(tmp)
                except subprocess.TimeoutExpired as e:
                    check(False, "%s: timed out: %s" % (part.__name__, e))
        finally:
            for p in PRODUCERS:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
