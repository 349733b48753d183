#!/usr/bin/python3
"""faults.py - consumers and producers dying, misbehaving, stopping.

- a consumer SIGKILLed mid-epoch 100 times at random points while two
  others finish their epochs (intact, in bounded time);
- the producer SIGKILLed: every consumer errors out within 1 s;
- a consumer trying to write the ring fails; the producer is untouched;
- garbage on the socket: the connection is dropped, serving goes on;
- a SIGSTOPped consumer holds the ring and the status names it;
- a producer error reaches the consumers as an error, not a hang.
"""
import os
import random
import signal
import socket
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


def start_producer(sock, *args, stderr=subprocess.DEVNULL):
    p = subprocess.Popen([TOOL, sock, "--shape", "4x4x3", *args],
                         stdout=subprocess.PIPE, stderr=stderr, text=True)
    line = p.stdout.readline()
    assert line.startswith("ready"), line
    return p


def consumer(sock, out, batch, *extra):
    return subprocess.Popen([TOOL, "consume", sock, "--batch", str(batch),
                             "--out", out, *extra])


def tail(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_welcome(path, proc, timeout=30):
    """Block until the consumer writing path has attached; return its start
    seq (None if it exited or timed out first). Spawning is asynchronous:
    without this, which consumer attaches first is up to the scheduler."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in tail(path).splitlines():
            if line.startswith("welcome"):
                return int(line.split("start=")[1].split()[0])
        if proc.poll() is not None:
            return None
        time.sleep(0.005)
    return None


def fnv64(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def expected_digest(spe, epochs, sample_bytes):
    """The stream digest producer-tool's consumer prints for the whole
    stream, computed from the generator formula independently of it."""
    h = 0xcbf29ce484222325
    js = range(sample_bytes)
    for e in range(epochs):
        for i in range(spe):
            h = fnv64(bytes((e * 131 + i * 31 + j * 7 + (j >> 8) * 3) & 255
                            for j in js), h)
    return f"{h:016x}"


KILLS = 100


def kill_consumers(tmp):
    sock = os.path.join(tmp, "kill.sock")
    prod = start_producer(sock, "--samples-per-epoch", "3000", "--epochs", "2",
                          "--capacity", "256", "--min-consumers", "2")
    outs = [os.path.join(tmp, f"survivor{k}.txt") for k in range(2)]
    # Slow survivors: they must outlast 100 kills (about 10 s).
    survivors = [consumer(sock, outs[0], 64, "--sleep-us", "140000"),
                 consumer(sock, outs[1], 100, "--sleep-us", "220000")]
    # Both survivors must be the two consumers that satisfy
    # --min-consumers 2. Spawning a victim before they attach lets it take
    # a survivor's place: the producer then starts, and the late survivor
    # joins "now" at the head (e.g. seq 256), so its stream digest differs
    # from the other's although every byte it got was right.
    starts = [wait_welcome(o, p) for o, p in zip(outs, survivors)]
    check(starts == [0, 0], f"survivors attached at {starts}, want [0, 0]")
    rng = random.Random(4)
    for k in range(KILLS):
        victim = consumer(sock, os.path.join(tmp, f"victim{k}.txt"),
                          rng.choice([16, 32, 100]), "--sleep-us", "200")
        time.sleep(rng.uniform(0.01, 0.08))
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
    attached = sum("welcome" in tail(os.path.join(tmp, f"victim{k}.txt"))
                   for k in range(KILLS))
    check(all(p.poll() is None for p in survivors),
          "survivors finished before the kills ended (test too fast)")
    t0 = time.monotonic()
    for p in survivors:
        try:
            check(p.wait(timeout=60) == 0, f"survivor exit {p.returncode}")
        except subprocess.TimeoutExpired:
            p.kill()
            check(False, "survivor hung behind a killed consumer")
    for o in outs:
        text = tail(o)
        check("eos" in text and "mismatch" not in text, f"{o}: {text[-200:]}")
    digests = {line.split()[1] for o in outs for line in open(o)
               if line.startswith("stream-digest")}
    check(len(digests) == 1, f"survivors' digests differ {digests}")
    want = expected_digest(3000, 2, 4 * 4 * 3)
    check(digests == {want}, f"survivors' digests {digests}, whole stream {want}")
    prod.wait(timeout=30)
    print(f"{KILLS} killed consumers ({attached} attached before the kill): "
          f"survivors finished {time.monotonic() - t0:.2f}s after the last kill")


def kill_producer(tmp):
    sock = os.path.join(tmp, "prod.sock")
    prod = start_producer(sock, "--epochs", "0", "--rate", "3000")
    outs = [os.path.join(tmp, f"orphan{k}.txt") for k in range(3)]
    cons = [consumer(sock, outs[k], b) for k, b in enumerate([32, 64, 256])]
    for o, p in zip(outs, cons):
        check(wait_welcome(o, p) is not None, f"{o}: never attached")
    time.sleep(0.2)
    prod.send_signal(signal.SIGKILL)
    t0 = time.monotonic()
    for k, p in enumerate(cons):
        try:
            rc = p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        dt = time.monotonic() - t0
        check(rc == 3, f"orphan {k} exit {rc}")
        check(dt < 1.0, f"orphan {k} took {dt:.3f}s to notice")
        check("producer hung up" in tail(outs[k]), f"orphan {k}: {tail(outs[k])[-200:]}")
    prod.wait()
    print(f"producer killed: consumers out within {time.monotonic() - t0:.3f}s")


def write_and_garbage(tmp):
    sock = os.path.join(tmp, "rw.sock")
    prod = start_producer(sock, "--samples-per-epoch", "2000", "--epochs", "1",
                          "--min-consumers", "1", "--capacity", "512")
    tw = subprocess.run([TOOL, "try-write", sock], capture_output=True,
                        text=True, timeout=20)
    check(tw.returncode == 0, "a consumer could write the ring:\n" + tw.stdout)
    for line in tw.stdout.splitlines():
        check("ALLOWED" not in line, line)
    rng = random.Random(7)
    for k in range(10):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        if k == 0:
            s.sendall(b"TSSK\x01\x00\xff\x00" + b"\x00" * 300)  # long hello
        else:
            s.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
        s.settimeout(6)
        try:
            while s.recv(4096):
                pass
            dropped = True
        except socket.timeout:
            dropped = False
        except ConnectionResetError:
            dropped = True
        check(dropped, f"garbage connection {k} not dropped")
        s.close()
    out = os.path.join(tmp, "after.txt")
    c = consumer(sock, out, 64)
    check(c.wait(timeout=60) == 0, "consumer after garbage")
    text = tail(out)
    check("eos" in text and "mismatch" not in text, "stream after garbage")
    check(prod.wait(timeout=30) == 0, "producer after garbage/write attempts")
    print("write attempts refused, garbage dropped, producer untouched")


def stopped_consumer(tmp):
    sock = os.path.join(tmp, "stop.sock")
    prod = start_producer(sock, "--epochs", "1", "--samples-per-epoch", "5000",
                          "--capacity", "256", "--status", "100", "--linger", "2",
                          "--rate", "5000",
                          stderr=subprocess.PIPE)
    out = os.path.join(tmp, "stopped.txt")
    c = consumer(sock, out, 32)
    check(wait_welcome(out, c) is not None, "stopped consumer never attached")
    time.sleep(0.1)
    c.send_signal(signal.SIGSTOP)
    time.sleep(0.5)
    c.send_signal(signal.SIGKILL)
    c.wait()
    try:
        _, err = prod.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        prod.kill()
        _, err = prod.communicate()
        check(False, "producer stuck after the stopped consumer was killed")
    check(f"[pid={c.pid} batch=32 lag=" in err, "status did not name the "
          f"stopped consumer {c.pid}: {err[-300:]}")
    print(f"stopped consumer {c.pid} named in the status")


def producer_error(tmp):
    sock = os.path.join(tmp, "err.sock")
    prod = start_producer(sock, "--epochs", "1", "--samples-per-epoch", "1000",
                          "--fail-at", "500", "--min-consumers", "1",
                          "--linger", "5")
    out = os.path.join(tmp, "err.txt")
    c = consumer(sock, out, 64)
    check(c.wait(timeout=20) == 3, "consumer did not report the producer error")
    text = tail(out)
    check("-5008" in text, f"error text: {text[-200:]}")
    prod.wait(timeout=20)
    print("producer error reached the consumer")


def main():
    with tempfile.TemporaryDirectory(prefix="ts-faults-") as tmp:
        kill_consumers(tmp)
        kill_producer(tmp)
        write_and_garbage(tmp)
        stopped_consumer(tmp)
        producer_error(tmp)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
