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


def build_options(build_dir):
    """{option: value} of a meson build folder (meson-info), or None."""
    import json
    path = os.path.join(build_dir, "meson-info", "intro-buildoptions.json")
    try:
        with open(path) as fh:
            return {o["name"]: o["value"] for o in json.load(fh)}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_release(opts):
    san = opts.get("b_sanitize", "none")
    if isinstance(san, list):
        san = ",".join(san) or "none"
    return opts.get("buildtype") == "release" and san in ("none", "")


def release_build():
    """The build folder the figures come from: $TSRUN_BUILD if set, else
    ROOT/build when it is a release build without sanitizers, else the
    newest such ROOT/build*. Never an ASan or debug build (scripts/test
    leaves one newer than the release)."""
    if os.environ.get("TSRUN_BUILD"):
        d = os.environ["TSRUN_BUILD"]
        opts = build_options(d)
        if opts is None:
            sys.exit(f"TSRUN_BUILD={d} is not a meson build folder")
        if not is_release(opts):
            print(f"warning: TSRUN_BUILD={d} is buildtype {opts.get('buildtype')}, "
                  f"b_sanitize {opts.get('b_sanitize')}: figures will not be a release's",
                  file=sys.stderr)
        return d
    cands = []
    for d in glob.glob(os.path.join(ROOT, "build*")):
        opts = build_options(d) if os.path.isdir(d) else None
        if opts is not None and is_release(opts):
            cands.append(d)
    if not cands:
        sys.exit(f"no release build under {ROOT}/build*: "
                 f"meson setup build --buildtype=release && meson compile -C build, "
                 f"or set TSRUN_BUILD")
    main = os.path.join(ROOT, "build")
    return main if main in cands else max(cands, key=os.path.getmtime)


def find_build_file(rel, env=None):
    """$env if set, else rel inside release_build()."""
    if env and os.environ.get(env):
        return os.environ[env]
    build = release_build()
    path = os.path.join(build, rel)
    if not os.access(path, os.X_OK):
        sys.exit(f"{path} is missing: meson compile -C {build}"
                 + (f", or set {env}" if env else ""))
    return path


def split_dir(data, recipe):
    """The class-folder tree a recipe reads: DATA/val for val and DATA/train
    otherwise when DATA is a made data set (or any folder with those), else
    DATA itself (any ImageFolder: DATA/CLASS/IMAGE)."""
    for sub in (["val", "train"] if recipe == "val" else ["train"]):
        if os.path.isdir(os.path.join(data, sub)):
            return os.path.join(data, sub)
    return data


def prepare_data(tsrun, data, images, explicit):
    """Use the ImageFolder at data when one is there (explicit --data: any
    ImageFolder, never modified); otherwise make it with make-dataset."""
    if explicit and os.path.isdir(data):
        if not image_files(data):
            sys.exit(f"--data {data}: no .jpg, .jpeg or .png files under it")
        return
    make_dataset(tsrun, data, images, max(images // 10, 10))


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
    """A pipeline file for the data set: examples/imagenet.ts (train),
    examples/imagenet-randaug.ts (randaug), examples/dino.ts (dino) or
    examples/imagenet-val.ts (val) with the folder, batch, epochs, threads
    and socket replaced; "decode" is folder | decode only (no batch)."""
    split = split_dir(data, recipe)
    if recipe == "decode":
        # No serve block: a pipeline without a fixed sample size cannot be
        # served, only benched.
        return f'pipeline decode =\n    folder("{split}")\n    | decode(rgb)\n'

    else:
        src = os.path.join(ROOT, "examples", {"train": "imagenet.ts",
                                               "randaug": "imagenet-randaug.ts",
                                               "dino": "dino.ts"}.get(
                                                   recipe, "imagenet-val.ts"))
        with open(src) as fh:
            text = fh.read()
        text = re.sub(r'folder\("[^"]*"', f'folder("{split}"', text, count=1)
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


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_busy(cpus):
    """Busy seconds so far (user, nice, system, irq, softirq, steal) of the
    given cores and of the whole machine, from /proc/stat."""
    ours = total = 0.0
    want = {f"cpu{c}" for c in cpus}
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                w = line.split()
                if not w or not w[0].startswith("cpu"):
                    continue
                busy = sum(int(x) for x in (w[1], w[2], w[3], w[6], w[7], w[8])) / CLK_TCK
                if w[0] == "cpu":
                    total = busy
                elif w[0] in want:
                    ours += busy
    except (OSError, IndexError, ValueError):
        return None
    return ours, total


VMSTAT_KEYS = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall", "pgmajfault")


def vmstat():
    """The whole machine's /proc/vmstat counters of VMSTAT_KEYS (huge pages
    faulted in or refused, direct compactions, major faults): what can make
    the kernel's share of first-touch page faults swing; {} without it."""
    out = {}
    try:
        with open("/proc/vmstat") as fh:
            for line in fh:
                k, _, v = line.partition(" ")
                if k in VMSTAT_KEYS:
                    out[k] = int(v)
    except (OSError, ValueError):
        return {}
    return out


class LoadMeter:
    """What else ran on some cores over an interval: started now, read by
    stop(own_cpu) with the CPU seconds of what was measured (and its
    reaped children)."""

    def __init__(self, cpus=None):
        self.cpus = cpus if cpus is not None else sorted(os.sched_getaffinity(0))
        self.busy0 = cpu_busy(self.cpus)
        self.t0 = time.monotonic()

    def stop(self, own_cpu):
        """other_cpu (seconds of CPU on the cores that were not own_cpu),
        other_load (that over the wall time, in cores) and other_load_all
        (the same on the whole machine); NaN without /proc/stat."""
        busy1 = cpu_busy(self.cpus)
        if self.busy0 is None or busy1 is None:
            return {"other_cpu": float("nan"), "other_load": float("nan"),
                    "other_load_all": float("nan")}
        wall = max(time.monotonic() - self.t0, 1e-9)
        ours = max(0.0, busy1[0] - self.busy0[0] - own_cpu)
        total = max(0.0, busy1[1] - self.busy0[1] - own_cpu)
        return {"other_cpu": ours, "other_load": ours / wall, "other_load_all": total / wall}


class Proc:
    """A started process whose output is drained by threads and which is
    reaped with os.wait4, so its own CPU time and peak RSS are known (not
    the whole session's). Several may run at once."""

    def __init__(self, cmd, env=None, cpus=None):
        import threading
        self.cmd = cmd
        self.load = LoadMeter(cpus)
        self.vm0 = vmstat()
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
        (user+sys of it and its reaped children), ext_user and ext_sys
        (the two apart: ru_utime, ru_stime), ext_max_rss (MiB, the largest
        single process), vmstat (the machine's VMSTAT_KEYS counters over
        the run), stdout and stderr."""
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = False
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                timed_out = True
                self.p.kill()
                t.join()
        _, status, ru = os.wait4(self.p.pid, 0)
        load = self.load.stop(ru.ru_utime + ru.ru_stime)
        vm1 = vmstat()
        self.p.returncode = os.waitstatus_to_exitcode(status)
        out, err = "".join(self._bufs["out"]), "".join(self._bufs["err"])
        res = parse_kv(out)
        res.update({
            "rc": self.p.returncode,
            "timed_out": timed_out,
            "ext_wall": time.monotonic() - self.t0,
            "ext_cpu": ru.ru_utime + ru.ru_stime,
            "ext_user": ru.ru_utime,
            "ext_sys": ru.ru_stime,
            "ext_max_rss": ru.ru_maxrss / 1024.0,
            # the whole machine's, over the run (VMSTAT_KEYS)
            "vmstat": {k: vm1[k] - self.vm0[k] for k in vm1 if k in self.vm0},
            # Processes measured at the same time count as each other's
            # load: a group is measured with its own LoadMeter.
            **load,
            "stdout": out,
            "stderr": err,
        })
        return res

    def stop(self):
        """Ask it to end (SIGINT, as a terminal would)."""
        import signal
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)


def run_measured(cmd, timeout=None, cpus=None):
    """Run cmd to the end; see Proc.finish for the result (other_load over
    cpus, default this process' affinity)."""
    return Proc(cmd, cpus=cpus).finish(timeout)


def summary(values):
    """(median, min, max) of a list of numbers."""
    return statistics.median(values), min(values), max(values)


def fmt_range(values, digits=2):
    med, lo, hi = summary(values)
    return f"{med:.{digits}f} (range {lo:.{digits}f}-{hi:.{digits}f}, n={len(values)})"
