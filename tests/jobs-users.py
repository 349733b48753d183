#!/usr/bin/python3
"""jobs-users.py - a job is its user's, and a trainer's pid is the
kernel's (real processes, two local users in a share group,
tensorsocket(7) Jobs).

1. Two users' jobs of one name: tsrun (root) serves with group = "users";
   root's rank 0 of job "ddp" connects, then nobody (a member of the
   group) connects as rank 1 of "ddp", then root's real rank 1. nobody's
   connection is its own job: root's ranks split the epoch between them
   (equal halves, every index once), and nobody's rank, alone in its job,
   gets JobFailed at job_timeout naming rank 0 as missing, having read
   nothing of root's job.
2. The pid in the status file and in JobFailed is SO_PEERCRED's: a raw
   client whose hello claims pid 4242 joins root's job "x" as rank 1 and
   leaves early; `tsrun stat --json` lists its real pid, never 4242, and
   rank 0's JobFailed names the real pid.

Needs root (to be another user), setpriv and the group "users"; exits 77
otherwise.
"""
import grp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsproto import proto_version  # noqa: E402

TSRUN = os.environ.get("TSRUN")
PY = "/usr/bin/python3"
if not TSRUN:
    print("TSRUN not set: skip")
    sys.exit(77)
if os.geteuid() != 0 or not shutil.which("setpriv"):
    print("not root or no setpriv: skip")
    sys.exit(77)
try:
    GID = grp.getgrnam("users").gr_gid
    import torch  # noqa: F401
except (KeyError, ImportError) as e:
    print("no group 'users' or no torch (%s): skip" % e)
    sys.exit(77)
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=%d" % GID]

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
    loader = tsrun.Loader(sock, timeout=60, **args)
    for images, labels in loader:
        rec["batches"].append([loader.epoch, loader.index, [int(x) for x in labels]])
        time.sleep(pause)
except tsrun.TsrunError as e:
    rec["error"] = "%s: %s" % (type(e).__name__, e)
with open(out, "w") as f:
    json.dump(rec, f)
'''

# A client that lies in its hello: pid 4242. It keeps the connection (and
# the descriptors the welcome carries) for a while, then leaves early.
RAW = r'''
import array, os, socket, struct, sys, time
sock, job, rank, world = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4])
body = struct.pack("<IIBBHIIIB3x", int(sys.argv[6]), 8, 1, 0, 0, 4242, rank, world, 0) + job.ljust(64, b"\0")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
s.sendall(struct.pack("<IHH", 0x4b535354, 1, len(body)) + body)
fds = array.array("i")
msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(2 * fds.itemsize))
kind = struct.unpack("<IHH", msg[:8])[1]
print("welcome" if kind == 2 else "refused: %r" % msg[8:], os.getpid(), flush=True)
time.sleep(float(sys.argv[5]))
'''


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def env_clean():
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(k, None)
    return env


def serve(tmp, name, count, extra):
    os.mkdir(os.path.join(tmp, name), 0o710)
    os.chown(os.path.join(tmp, name), 0, GID)
    os.chmod(os.path.join(tmp, name), 0o710)
    sock = os.path.join(tmp, name, "train.sock")
    ts = write(tmp, name + ".ts",
               "pipeline p = synthetic(size = 4, count = %d, classes = %d)\n"
               "    | batch(8)\n"
               "serve p { socket = \"%s\" epochs = 1 ring = 64 samples group = \"users\""
               " %s }\n" % (count, count, sock, extra))
    return ts, sock


def start_tsrun(ts, sock, wait):
    log = open(ts + ".log", "w")
    p = subprocess.Popen([TSRUN, "run", ts, "--wait", str(wait), "-q"],
                         stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    for _ in range(200):
        if os.path.exists(sock) or p.poll() is not None:
            break
        time.sleep(0.05)
    return p


def trainer(tmp, sock, out, user=None, **args):
    path = os.path.join(tmp, "trainer.py")
    if not os.path.exists(path):
        write(tmp, "trainer.py", TRAINER)
    return subprocess.Popen((user or []) + [PY, path, sock, out, json.dumps(args)],
                            env=env_clean())


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, "no record %s: %s" % (path, e))
        return None


def two_users(tmp):
    m = 400
    ts, sock = serve(tmp, "users", m, "job_timeout = 3")
    prod = start_tsrun(ts, sock, 2)
    outs = [os.path.join(tmp, "ddp-%d.json" % r) for r in range(2)]
    intruder_out = os.path.join(tmp, "intruder.json")
    # 0.5 s a batch: the stream (12 s) outlasts job_timeout
    r0 = trainer(tmp, sock, outs[0], job="ddp", rank=0, world_size=2, batch_size=8,
                 pause=0.5)
    intruder = trainer(tmp, sock, intruder_out, user=NOBODY, job="ddp", rank=1,
                       world_size=2, batch_size=8)
    r1 = trainer(tmp, sock, outs[1], job="ddp", rank=1, world_size=2, batch_size=8,
                 delay=2.0, pause=0.5)
    for p in (r0, r1, intruder):
        p.wait(timeout=120)
    try:
        prod.wait(timeout=60)
    except subprocess.TimeoutExpired:
        print(subprocess.run([TSRUN, "stat", sock, "--json"], capture_output=True,
                             text=True).stdout)
        with open(ts + ".log") as f:
            print(f.read())
        prod.kill()
        raise
    recs = [load(o) for o in outs]
    ri = load(intruder_out)
    if None not in recs:
        seen = {}
        for r, rec in enumerate(recs):
            n = sum(len(b[2]) for b in rec["batches"])
            check(rec["error"] is None and n == m // 2,
                  "root's rank %d: %d samples, %s; want %d" % (r, n, rec["error"], m // 2))
            for e, i, labels in rec["batches"]:
                for k in range(len(labels)):
                    seen[i + k] = seen.get(i + k, 0) + 1
        check(sorted(seen) == list(range(m)) and set(seen.values()) == {1},
              "root's job: %d distinct indices, want each of %d once" % (len(seen), m))
    if ri:
        check(not ri["batches"] and ri["error"] and ri["error"].startswith("JobFailed") and
              "for its rank 0 of 2, which never connected (serve setting job_timeout = 3)"
              in ri["error"],
              "nobody's rank 1 of 'ddp': %d batches, %s" % (len(ri["batches"]), ri["error"]))


def stat_pids(sock):
    """The consumers' pids in the status file (tsrun stat --json)."""
    st = subprocess.run([TSRUN, "stat", sock, "--json"], capture_output=True, text=True,
                        timeout=30)
    try:
        return [c.get("pid") for c in json.loads(st.stdout).get("consumers", [])]
    except ValueError:
        return None


def kernel_pid(tmp):
    ts, sock = serve(tmp, "pid", 100000, "")
    prod = start_tsrun(ts, sock, 1)
    out0 = os.path.join(tmp, "x-0.json")
    r0 = trainer(tmp, sock, out0, job="x", rank=0, world_size=2, batch_size=8,
                 pause=0.01)
    # rank 0 first (it waits for rank 1), then the raw rank 1
    for _ in range(600):
        if stat_pids(sock):
            break
        time.sleep(0.1)
    raw_path = write(tmp, "raw.py", RAW)
    raw = subprocess.Popen([PY, raw_path, sock, "x", "1", "2", "3", str(proto_version())],
                           stdout=subprocess.PIPE, text=True)
    line = raw.stdout.readline().split()
    check(line[:1] == ["welcome"], "the raw rank: %s" % line)
    real = int(line[1]) if len(line) > 1 else -1
    check(real == raw.pid, "the raw rank says pid %d, Popen %d" % (real, raw.pid))
    time.sleep(1.0)
    pids = stat_pids(sock)
    check(pids is not None and real in pids and 4242 not in pids,
          "status file: consumer pids %s, want the raw rank's real pid %d, not 4242"
          % (pids, real))
    raw.wait(timeout=60)
    r0.wait(timeout=60)
    rec = load(out0)
    if rec:
        check(rec["error"] and rec["error"].startswith("JobFailed") and
              "rank 1 (pid %d)" % real in rec["error"],
              "rank 0 after the raw rank left: %s" % rec["error"])
    prod.terminate()
    prod.wait(timeout=60)


def main():
    tmp = tempfile.mkdtemp(prefix="tsrun-jobs-users.")
    os.chmod(tmp, 0o1777)  # nobody writes its record here
    try:
        for part in (two_users, kernel_pid):
            if len(sys.argv) > 1 and part.__name__ not in sys.argv[1:]:
                continue
            try:
                part(tmp)
            except subprocess.TimeoutExpired as e:
                check(False, "%s: timed out: %s" % (part.__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
