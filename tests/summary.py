#!/usr/bin/python3
"""summary.py - what `tsrun run` says at the end is what it knows.

Real processes: tsrun run serving a synthetic pipeline of 100 samples in
batches of 10, and trainers that are tsrun consume (C) and tsrun.Loader
(PyTorch).
- A trainer that stops after 5 batches (tsrun consume --max-batches 5)
  without asking for a sixth is counted with its last batch: 50 images,
  not 40 (the client releases what it was handed when it closes).
- A trainer that comes and goes between two status snapshots (0.1 s
  apart: 2 batches of tiny samples) has no rate: its line says
  "img/s n/a (seen in one status snapshot)", never "0 img/s" beside the
  20 images it read.
- A trainer that writes garbage into its control page (release
  2^64-1, skipped 2^63: the page is its own, read-write) does not make the
  summary or the status file say 18446744073709551615 images: figures
  are bounded by what tsrun published (the head).
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TSRUN = os.environ.get("TSRUN")
LIB = os.environ.get("TS_LIBTSCLIENT")
if not TSRUN or not LIB:
    print("skip: TSRUN / TS_LIBTSCLIENT not set")
    sys.exit(77)
try:
    import torch  # noqa: F401
except ImportError:
    print("skip: no torch")
    sys.exit(77)
os.environ["TSRUN_LIBTSCLIENT"] = LIB
sys.path.insert(0, os.path.join(os.environ.get("TS_SRCDIR", ".."), "src", "python"))
import tsrun  # noqa: E402

WRAP = os.environ.get("TS_EXE_WRAPPER", "").split()
failed = 0


def check(cond, what, detail=""):
    global failed
    if cond:
        print("ok  ", what)
    else:
        print("FAIL:", what, detail)
        failed += 1


def serve(d, name, wait):
    sock = os.path.join(d, name + ".sock")
    ts = os.path.join(d, name + ".ts")
    with open(ts, "w") as f:
        f.write("pipeline s = synthetic(size = 8, count = 100) | to(uint8, nhwc) | batch(10)\n"
                f'serve s {{ socket = "{sock}" epochs = 1 ring = 4 batches }}\n')
    err = open(os.path.join(d, name + ".err"), "w+")
    p = subprocess.Popen(WRAP + [TSRUN, "run", ts, "--wait", str(wait)], stderr=err)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return p, sock, err


def log_of(err):
    err.seek(0)
    return err.read()


def ctl_page_address():
    """The start of this process's mapping of its control page (the
    memfd tsrun-ctl, one page, read-write)."""
    with open("/proc/self/maps") as f:
        for line in f:
            if "tsrun-ctl" in line and " rw" in line:
                return int(line.split("-")[0], 16)
    return None


with tempfile.TemporaryDirectory(prefix="tsrun-summary.", dir="/tmp") as d:
    # 1. A trainer that stops after 5 batches, beside one that reads all.
    p, sock, err = serve(d, "last", 2)
    short = subprocess.Popen(WRAP + [TSRUN, "consume", sock, "--batch", "10",
                                     "--max-batches", "5"], stdout=subprocess.PIPE, text=True)
    full = subprocess.Popen(WRAP + [TSRUN, "consume", sock, "--batch", "10"],
                            stdout=subprocess.PIPE, text=True)
    out_short, _ = short.communicate(timeout=60)
    out_full, _ = full.communicate(timeout=60)
    check(p.wait(timeout=60) == 0, "tsrun run ended by itself (1 epoch)")
    log = log_of(err)
    check("images: 50" in out_short, "the short trainer read 5 batches")
    counts = {int(m.group(1)): int(m.group(2)) for m in
              re.finditer(r"summary: consumer (\d+) \(batch 10\): (\d+) images", log)}
    check(counts.get(short.pid) == 50,
          f"its last batch is counted: {counts.get(short.pid)} images, expected 50", log)
    check(counts.get(full.pid) == 100, f"the other trainer: {counts.get(full.pid)} images")

    # 2. A trainer seen in one snapshot: it reads 2 batches and leaves
    # within one 0.1 s poll (almost always: when it straddles two, its
    # rate must be a positive figure).
    p, sock, err = serve(d, "once", 1)
    quick = subprocess.Popen(WRAP + [TSRUN, "consume", sock, "--batch", "10",
                                     "--max-batches", "2"], stdout=subprocess.PIPE, text=True)
    out_quick, _ = quick.communicate(timeout=60)
    # tsrun waits for a trainer again (--wait 1): one more ends the run
    subprocess.run(WRAP + [TSRUN, "consume", sock, "--batch", "10"],
                   stdout=subprocess.DEVNULL, timeout=60)
    try:
        status = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        status = p.wait()
    check(status == 0, "tsrun run ended by itself after the two trainers")
    log = log_of(err)
    m = re.search(rf"summary: consumer {quick.pid} \(batch 10\): (\d+) images, (.*)", log)
    check(m is not None and m.group(1) == "20", "the quick trainer's 20 images are counted", log)
    # the rate, before the wait figure that follows it
    rate = m.group(2).split(", waited")[0] if m else ""
    timed = re.fullmatch(r"(\d+) img/s", rate)
    check(rate == "img/s n/a (seen in one status snapshot)" or
          (timed is not None and int(timed.group(1)) > 0),
          f"the quick trainer's rate is n/a or a positive figure, not 0: '{rate}'", log)

    # 3. A trainer that writes garbage into its control page once it has
    # read everything: release 2^64-1, skipped 2^63.
    p, sock, err = serve(d, "garbage", 1)
    loader = tsrun.Loader(sock, batch_size=10)
    n = 0
    for images, labels in loader:
        n += images.shape[0]
    addr = ctl_page_address()
    check(addr is not None, "the control page is mapped in the trainer")
    status_path = sock + ".status.json"
    if addr is not None:
        ctypes.c_uint64.from_address(addr + 64).value = 2**64 - 1   # release
        ctypes.c_uint64.from_address(addr + 200).value = 2**63      # skipped
        # the status file, rewritten once a second while we are connected
        time.sleep(2.5)
        try:
            with open(status_path) as f:
                st = json.load(f)
            pos = [c["position"] for c in st["consumers"]]
            check(pos and all(0 <= x <= 100 for x in pos),
                  f"the status file's positions are within the head: {pos}")
            rates = [c["images_per_s"] for c in st["consumers"]]
            check(all(0 <= r <= 1000 for r in rates),
                  f"the status file's rates are from vouched positions: {rates}")
        except (OSError, ValueError, KeyError) as e:
            check(False, f"status file readable: {e}")
    pid = os.getpid()
    loader.close()
    del loader
    check(p.wait(timeout=60) == 0, "tsrun run ended by itself")
    log = log_of(err)
    check(n == 100, f"the Loader read 100 samples ({n})")
    m = re.search(rf"summary: consumer {pid} \(batch 10\): (\d+) images", log)
    got = int(m.group(1)) if m else None
    check(got is not None and got <= 100,
          f"the garbage page is bounded by the head: {got} images", log)
    check("18446744073709551615" not in log and "9223372036854775808" not in log,
          "no control-page value reaches the log")

print("summary: all passed" if not failed else f"summary: {failed} failed")
sys.exit(1 if failed else 0)
