#!/usr/bin/python3
"""check-scale.py - `tsrun check` is linear in the size of the file.

Issue 16 measured 18 s for 20,000 pipelines (1.7 MB) and over 60 s for
40,000: every name lookup walked every statement, a let chain was walked
per link, diagnostics were sorted by insertion and each rendered line was
found from the start of the file. Here files of about 2 MB, generated:
many pipelines with their lets and serve blocks, a chain of 70,000 lets,
and one error in each of 20,000 pipelines (every diagnostic rendered),
each checked by the real binary. The bound is CPU time of the tsrun
process (not wall time: the machine may be loaded): under a second in a
release build (the quadratic checker took 18 s), ten under the
sanitizers; none under an emulator (a cross build), where only the
results are checked.
"""
import os
import resource
import subprocess
import sys
import tempfile

TSRUN = os.environ.get("TSRUN")
if not TSRUN:
    print("skip: TSRUN not set")
    sys.exit(77)
WRAP = os.environ.get("TS_EXE_WRAPPER", "").split()
SANITIZED = os.environ.get("TS_SANITIZE", "none") not in ("", "none")
LIMIT = None if WRAP else (10.0 if SANITIZED else 1.0)
failed = 0


def fail(msg):
    global failed
    print("FAIL:", msg)
    failed += 1


def check(path):
    """Run tsrun check on path: (exit status, stderr, CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(WRAP + [TSRUN, "check", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.returncode, p.stderr.decode("utf-8", "replace"), cpu


def pipelines(n):
    out = ["let mean = [0.485, 0.456, 0.406]\n", "let std = [0.229, 0.224, 0.225]\n"]
    for i in range(n):
        out.append(f"let size{i} = {24 + i % 8}\n")
        out.append(f"pipeline p{i} =\n    synthetic(32, count = 100)\n"
                   f"    | random_resized_crop(size{i})\n    | flip(horizontal)\n"
                   f"    | normalize(mean, std)\n    | to(float32, nchw)\n    | batch(8)\n")
        if i % 4 == 0:
            out.append(f"serve p{i} {{ epochs = 1 }}\n")
    return "".join(out)


def let_chain(n):
    # used first, defined after, each let naming the next
    out = ["pipeline p = synthetic(a0) | to(uint8, nhwc) | batch(8)\n"]
    out += [f"let a{i} = a{i + 1}\n" for i in range(n)]
    out.append(f"let a{n} = 16\n")
    out += [f"pipeline q{i} = synthetic(a{i}) | to(uint8, nhwc) | batch(8)\n"
            for i in range(0, n, 7)]
    return "".join(out)


def errors(n):
    pad = "# " + "x" * 50
    return "".join(f"pipeline p{i} = synthetic(32) | decode | batch(8)  {pad}\n"
                   for i in range(n))


with tempfile.TemporaryDirectory(prefix="tsrun-check-scale.") as d:
    cases = [
        ("pipelines", pipelines(11000), 0, None),
        ("let chain", let_chain(70000), 0, None),
        ("errors", errors(20000), 1, 20000),
    ]
    for name, text, want_rc, want_errors in cases:
        path = os.path.join(d, name.replace(" ", "-") + ".ts")
        with open(path, "w") as f:
            f.write(text)
        size = os.path.getsize(path)
        if size < 2_000_000:
            fail(f"{name}: the generated file is only {size} bytes")
        rc, err, cpu = check(path)
        if rc != want_rc:
            fail(f"{name}: exit {rc}, expected {want_rc}: {err[:500]}")
        if want_errors is not None:
            n = err.count(": error: ")
            if n != want_errors:
                fail(f"{name}: {n} errors reported, expected {want_errors}")
            if err.count("already decoded") != want_errors:
                fail(f"{name}: not every error is the decode one")
        elif err.strip():
            fail(f"{name}: diagnostics for a valid file: {err[:500]}")
        if LIMIT is not None and cpu > LIMIT:
            fail(f"{name}: {size / 1e6:.1f} MB checked in {cpu:.2f} s of CPU, more than {LIMIT} s")
        print(f"ok   {name}: {size / 1e6:.2f} MB checked in {cpu:.3f} s of CPU (exit {rc})")

print("check-scale: all passed" if not failed else f"check-scale: {failed} failed")
sys.exit(1 if failed else 0)
