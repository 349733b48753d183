"""Helpers shared by perf/compare.py and perf/sharing.py (stdlib only).

Finding the binaries, making the data set, writing a pipeline file for it,
warming the page cache, running a side with its wall time, CPU time and
peak RSS (os.wait4), parsing "key: value" output, and summarising ratios.
"""
import glob
import os
import re
import statistics
import subprocess
import sys
import time

PERF = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(PERF)
TORCH_PYTHON = "/usr/bin/python3"   # Debian's python3-torch lives here


def find_build_file(rel, env=None):
    """$env if set, else ROOT/build*/rel (the newest)."""
    if env and os.environ.get(env):
        return os.environ[env]
    cands = [p for p in glob.glob(os.path.join(ROOT, "build*", rel)) if os.access(p, os.X_OK)]
    if not cands:
        sys.exit(f"cannot find {rel} under {ROOT}/build*: build first "
                 f"(meson setup build && meson compile -C build) or set {env}")
    return max(cands, key=os.path.getmtime)


def cpu_list(spec):
    """'0-3,6' -> [0, 1, 2, 3, 6]; None -> this process' affinity."""
    if not spec:
        return sorted(os.sched_getaffinity(0))
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def pin(cmd, cpus):
    """Prefix cmd with taskset so both sides run on the same cores."""
    return ["taskset", "-c", ",".join(map(str, cpus))] + cmd


def make_dataset(tsrun, data, images, val):
    """Make (or reuse) the data set with `tsrun make-dataset`."""
    cmd = [tsrun, "make-dataset", data, "--images", str(images), "--val", str(val), "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    print(r.stdout.strip(), file=sys.stderr)


def image_files(root):
    out = []
    for d, _, files in os.walk(root):
        out.extend(os.path.join(d, f) for f in files
                   if f.lower().endswith((".jpg", ".jpeg", ".png")))
    return sorted(out)


def warm_cache(files):
    """Read every file once, so both sides start with the same warm page
    cache (the alternative, dropping it, needs root)."""
    n = 0
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass
        n += 1
    return n


def pipeline_text(data, recipe, batch, epochs, threads, socket=None):
    """A pipeline file for the data set: examples/imagenet.ts (train) or
    examples/imagenet-val.ts (val) with the folder, batch, epochs, threads
    and socket replaced; "decode" is folder | decode only (no batch)."""
    split_dir = os.path.join(data, "val" if recipe == "val" and
                             os.path.isdir(os.path.join(data, "val")) else "train")
    if recipe == "decode":
        # No serve block: a pipeline without a fixed sample size cannot be
        # served, only benched.
        return f'pipeline decode =\n    folder("{split_dir}")\n    | decode(rgb)\n'

    else:
        src = os.path.join(ROOT, "examples", "imagenet.ts" if recipe == "train" else "imagenet-val.ts")
        with open(src) as fh:
            text = fh.read()
        text = re.sub(r'folder\("[^"]*"', f'folder("{split_dir}"', text, count=1)
        text = re.sub(r"batch\(\d+\)", f"batch({batch})", text, count=1)
        text = re.sub(r"epochs\s*=\s*\d+", f"epochs = {epochs}", text, count=1)
        text = re.sub(r"\n\s*threads\s*=.*", "", text)
        text = re.sub(r"\n\s*memory\s*=.*", "", text)
    if socket:
        if re.search(r"socket\s*=", text):
            text = re.sub(r'socket\s*=\s*"[^"]*"', f'socket = "{socket}"', text, count=1)
        else:
            text = re.sub(r"(serve \w+ \{\n)", rf'\1    socket = "{socket}"\n', text, count=1)
    text = re.sub(r"(serve \w+ \{\n)", rf"\1    threads = {threads}\n", text, count=1)
    return text


def parse_kv(text):
    """'images/s: 123.4' lines -> {'images/s': 123.4}; numbers become
    floats (the first number on the line), the rest stay strings."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*([A-Za-z_/]+[A-Za-z_/ ]*?)\s*:\s*(.*)$", line)
        if not m:
            continue
        k, v = m.group(1).strip(), m.group(2).strip()
        n = re.match(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", v)
        out[k] = float(n.group(0)) if n and k != "digest" else v
    return out


class Proc:
    """A started process whose output is drained by threads and which is
    reaped with os.wait4, so its own CPU time and peak RSS are known (not
    the whole session's). Several may run at once."""

    def __init__(self, cmd, env=None):
        import threading
        self.cmd = cmd
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)
        self._bufs = {"out": [], "err": []}
        self._threads = [threading.Thread(target=self._read, args=(self.p.stdout, "out")),
                         threading.Thread(target=self._read, args=(self.p.stderr, "err"))]
        for t in self._threads:
            t.start()

    def _read(self, f, key):
        self._bufs[key].append(f.read())

    def finish(self, timeout=None):
        """Wait for the end (killing it after timeout seconds); return a
        dict: the parsed "key: value" output plus rc, ext_wall, ext_cpu
        (user+sys of it and its reaped children) and ext_max_rss (MiB, the
        largest single process), stdout and stderr."""
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = False
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                timed_out = True
                self.p.kill()
                t.join()
        _, status, ru = os.wait4(self.p.pid, 0)
        self.p.returncode = os.waitstatus_to_exitcode(status)
        out, err = "".join(self._bufs["out"]), "".join(self._bufs["err"])
        res = parse_kv(out)
        res.update({
            "rc": self.p.returncode,
            "timed_out": timed_out,
            "ext_wall": time.monotonic() - self.t0,
            "ext_cpu": ru.ru_utime + ru.ru_stime,
            "ext_max_rss": ru.ru_maxrss / 1024.0,
            "stdout": out,
            "stderr": err,
        })
        return res

    def stop(self):
        """Ask it to end (SIGINT, as a terminal would)."""
        import signal
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)


def run_measured(cmd, timeout=None):
    """Run cmd to the end; see Proc.finish for the result."""
    return Proc(cmd).finish(timeout)


def summary(values):
    """(median, min, max) of a list of numbers."""
    return statistics.median(values), min(values), max(values)


def fmt_range(values, digits=2):
    med, lo, hi = summary(values)
    return f"{med:.{digits}f} (range {lo:.{digits}f}-{hi:.{digits}f}, n={len(values)})"
