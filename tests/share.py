#!/usr/bin/python3
"""share.py - one producer, many consumers (real processes).

1, 2 and 4 C consumers with batch sizes 32, 64, 100 and 256 receive the
same stream: every byte checked against the generator by the consumer,
equal whole-stream digests, contiguous coverage, no batch across an epoch
boundary. Then a late joiner under each join policy ("now" starts at its
next batch boundary).
"""
import os
import subprocess
import sys
import tempfile
import time

TOOL = os.environ.get("TS_TOOL_PRODUCER_TOOL")
if not TOOL:
    print("TS_TOOL_PRODUCER_TOOL not set: skip")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def start_producer(sock, *args):
    p = subprocess.Popen([TOOL, sock, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("ready"), line + p.stderr.read()
    return p


def consumer(sock, out, batch, *extra):
    return subprocess.Popen([TOOL, "consume", sock, "--batch", str(batch),
                             "--out", out, *extra])


def parse(path):
    batches, digest, end = [], None, None
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[0] == "welcome":
                continue
            if w[0] == "mismatch":
                failures.append(f"{path}: {line.strip()}")
            elif w[0] == "stream-digest":
                digest = w[1]
            elif w[0] in ("eos", "error:"):
                end = line.strip()
            else:
                batches.append(tuple(int(x) for x in w[:4]))
    return batches, digest, end


def check_stream(path, batch, spe, total, start=0, drop_last=False):
    batches, digest, end = parse(path)
    check(end == "eos", f"{path}: ended with {end}")
    seq = start
    for (s, e, i, n) in batches:
        check(s == seq or drop_last, f"{path}: batch at {s}, expected {seq}")
        seq = s + n
        check(e == s // spe and i == s % spe, f"{path}: position of {s}")
        check(i + n <= spe, f"{path}: batch {s} straddles an epoch")
        check(n == batch or i + n == spe,
              f"{path}: short batch {n} at {s} not at an epoch end")
        if failures:
            break
    check(seq == total or drop_last, f"{path}: stopped at {seq}, want {total}")
    return digest


def run_group(tmp, batches, spe=1000, epochs=2):
    sock = os.path.join(tmp, f"g{len(batches)}.sock")
    prod = start_producer(sock, "--samples-per-epoch", str(spe), "--epochs",
                          str(epochs), "--shape", "4x4x3", "--capacity", "1024",
                          "--min-consumers", str(len(batches)))
    outs, procs = [], []
    for k, b in enumerate(batches):
        out = os.path.join(tmp, f"g{len(batches)}-{k}-b{b}.txt")
        outs.append(out)
        procs.append(consumer(sock, out, b))
    for p in procs:
        check(p.wait(timeout=120) == 0, f"consumer exit status {p.returncode}")
    prod.wait(timeout=30)
    digests = [check_stream(o, b, spe, spe * epochs) for o, b in zip(outs, batches)]
    check(len(set(digests)) == 1, f"stream digests differ: {digests}")
    print(f"{len(batches)} consumers {batches}: identical, digest {digests[0]}")


def wait_seq(path, proc, seq, timeout=60):
    """Block until the consumer writing path has read a batch at or past
    seq; False if it exited or timed out first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        for line in reversed(lines[:-1]):  # the last may be half written
            w = line.split()
            if w and w[0].isdigit():
                if int(w[0]) >= seq:
                    return True
                break
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    return False


def late_joiners(tmp):
    sock = os.path.join(tmp, "late.sock")
    spe = 400
    prod = start_producer(sock, "--samples-per-epoch", str(spe), "--epochs", "4",
                          "--shape", "4x4x3", "--capacity", "512", "--rate", "2000",
                          "--min-consumers", "1")
    first = os.path.join(tmp, "late-first.txt")
    a = consumer(sock, first, 32)
    # Mid epoch 1 (seq 600..800 at 2000/s), judged by what the first
    # consumer has read rather than by a sleep, which a loaded machine
    # stretches: the joiners must find the head past 0 and epoch 0 gone.
    check(wait_seq(first, a, 600), "first consumer never reached seq 600")
    now_out = os.path.join(tmp, "late-now.txt")
    next_out = os.path.join(tmp, "late-next.txt")
    b = consumer(sock, now_out, 64, "--join", "now")
    c = consumer(sock, next_out, 50, "--join", "next")
    for p in (a, b, c):
        check(p.wait(timeout=60) == 0, "late joiner exit status")
    prod.wait(timeout=30)
    check_stream(first, 32, spe, 4 * spe)
    with open(now_out) as f:
        w = f.readline().split()
    start_now = int(w[2].split("=")[1])
    check(start_now > 0, f"join now started at {start_now}")
    # It joined at the head and reads from the next batch boundary of the
    # epoch: the first index that is a multiple of 64, or the next epoch.
    idx = start_now % spe
    up = -(-idx // 64) * 64
    aligned = start_now - idx + up if up < spe else (start_now // spe + 1) * spe
    check_stream(now_out, 64, spe, 4 * spe, start=aligned)
    nb, _, _ = parse(next_out)
    check(nb and nb[0][2] == 0, f"join next_epoch first batch {nb[:1]}")
    check(nb and nb[0][1] >= 1, "join next_epoch epoch")
    # A whole epoch: it sees every index of its first epoch.
    e0 = nb[0][1] if nb else -1
    seen = sum(n for (s, e, i, n) in nb if e == e0)
    check(seen == spe, f"join next_epoch saw {seen} of epoch {e0}")
    print(f"late joiners: now at seq {start_now}, next_epoch at epoch {e0}")


def main():
    with tempfile.TemporaryDirectory(prefix="ts-share-") as tmp:
        run_group(tmp, [32])
        run_group(tmp, [64, 100])
        run_group(tmp, [32, 64, 100, 256])
        late_joiners(tmp)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
