"""pytrainer.py - shared by the tests/python-*.py tests (not a test): a
real `tsrun run` of a synthetic pipeline, trainers run as separate
/usr/bin/python3 processes, and the skip rules."""
import os
import subprocess
import sys
import time

TSRUN = os.environ.get("TSRUN")
LIB = os.environ.get("TS_LIBTSCLIENT")
SRC = os.environ.get("TS_SRCDIR", "..")


def need_torch():
    """Skip (77) without tsrun, libtsclient or torch; make tsrun importable."""
    if not TSRUN or not LIB:
        print("TSRUN / TS_LIBTSCLIENT not set: skip")
        sys.exit(77)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("no torch: skip")
        sys.exit(77)
    os.environ["TSRUN_LIBTSCLIENT"] = LIB
    sys.path.insert(0, os.path.join(SRC, "src", "python"))


class Checks:
    def __init__(self):
        self.failures = []

    def __call__(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what, flush=True)
        return cond

    def exit(self):
        if self.failures:
            print(f"{len(self.failures)} failures")
            return 1
        print("ok")
        return 0


def pipeline(tmp, name, source, epochs, ring=4, batch=10, tail="to(float32, nchw)"):
    """Write tmp/name.ts serving source | tail | batch(batch) at tmp/name.sock."""
    sock = os.path.join(tmp, name + ".sock")
    path = os.path.join(tmp, name + ".ts")
    with open(path, "w") as f:
        f.write(f"pipeline p = {source} | {tail} | batch({batch})\n"
                f'serve p {{\n    socket = "{sock}"\n    epochs = {epochs}\n'
                f"    ring = {ring} batches\n}}\n")
    return path, sock


def run(path, *args):
    """Start `tsrun run path args`; returns the process once its socket is up."""
    sock = None
    for line in open(path):
        if "socket" in line and "=" in line:
            sock = line.split('"')[1]
    if sock and os.path.exists(sock):
        os.unlink(sock)
    p = subprocess.Popen([TSRUN, "run", path, "--quiet", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while sock and not os.path.exists(sock):
        if p.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"tsrun run {path} did not start: rc {p.poll()}: "
                             f"{p.stderr.read() if p.poll() is not None else ''}")
        time.sleep(0.02)
    time.sleep(0.3)  # from bind to listen (a loaded, sanitized run is slow)
    return p


def stop(p):
    if p.poll() is None:
        p.kill()
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        return ""
    return err


def trainer(code, *args, **popen):
    """A trainer: /usr/bin/python3 -c code with tsrun importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(SRC, "src", "python")
    env["TSRUN_LIBTSCLIENT"] = LIB
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)
