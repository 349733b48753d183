#!/usr/bin/python3
"""python-libfind.py - the Python client finds libtsclient by itself:
TSRUN_LIBTSCLIENT first (and only it when set), then the loader path, then
the newest build*/src/libtsclient.so* of the source tree it is imported
from (skipping files that do not load or need a sanitizer this process
lacks); none found is LibraryNotFound, an OSError saying what to do, and
examples/train.py exits 2 for it. Loader(batch_size=-1) is refused in
Python with a clear message.

Each case runs in a fresh interpreter on a copy of the package in a fake
source tree, so the library search starts from scratch."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

LIB = os.environ.get("TS_LIBTSCLIENT")
SRC = os.environ.get("TS_SRCDIR")
TOOL = os.environ.get("TS_TOOL_PRODUCER_TOOL")
if not LIB or not SRC:
    print("TS_LIBTSCLIENT / TS_SRCDIR not set: skip")
    sys.exit(77)
try:
    ctypes.CDLL(LIB)
except OSError as e:
    print(f"this interpreter cannot load {LIB} ({e}): skip")
    sys.exit(77)
try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def clean_env(**extra):
    """The test's environment without a library hint of any kind."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TSRUN_LIBTSCLIENT", "LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(extra)
    return env


def python(tree, code, **env):
    """Run code in a fresh interpreter importing tsrun from tree."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env=clean_env(PYTHONPATH=os.path.join(tree, "src", "python"), **env))


def make_tree(tmp, name):
    """A fake tsrun source tree: meson.build, the package, train.py."""
    tree = os.path.join(tmp, name)
    pkg = os.path.join(tree, "src", "python", "tsrun")
    os.makedirs(pkg)
    os.makedirs(os.path.join(tree, "examples"))
    open(os.path.join(tree, "meson.build"), "w").close()
    for name in os.listdir(os.path.join(SRC, "src", "python", "tsrun")):
        if name.endswith(".py"):
            shutil.copy(os.path.join(SRC, "src", "python", "tsrun", name), pkg)
    shutil.copy(os.path.join(SRC, "examples", "train.py"),
                os.path.join(tree, "examples"))
    return tree


def put(tree, build, name, data, age):
    """Write tree/build/src/name, age seconds old; return its path."""
    d = os.path.join(tree, build, "src")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    t = time.time() - age
    os.utime(path, (t, t))
    return path


LOAD = "import tsrun; print(tsrun.load_library()._name)"

with open(LIB, "rb") as f:
    LIB_BYTES = f.read()

tmp = tempfile.mkdtemp(prefix="tsrun-libfind.")
prod = None
try:
    # Is libtsclient on this machine's loader path? Then it wins over a
    # source tree, and the source-tree cases cannot be told apart.
    bare = make_tree(tmp, "bare")
    probe = python(bare, "import ctypes, ctypes.util\n"
                         "try:\n    ctypes.CDLL('libtsclient.so.0'); print('yes')\n"
                         "except OSError:\n"
                         "    print('yes' if ctypes.util.find_library('tsclient') else 'no')")
    installed = probe.stdout.strip() == "yes"
    if installed:
        print("note: libtsclient is installed on the loader path; "
              "source-tree cases skipped")

    # 1. Nothing anywhere: LibraryNotFound, an OSError that says what to do.
    if not installed:
        r = python(bare, "import tsrun\ntry:\n    tsrun.load_library()\n"
                         "except tsrun.LibraryNotFound as e:\n"
                         "    print('OSError' if isinstance(e, OSError) else 'other')\n"
                         "    print(e)\n")
        check(r.returncode == 0 and r.stdout.startswith("OSError\n"),
              f"no library: not a LibraryNotFound OSError: {r.stdout} {r.stderr}")
        for want in ("TSRUN_LIBTSCLIENT=", "meson compile",
                     "no build*/src/libtsclient.so* in the source tree"):
            check(want in r.stdout, f"no library: message lacks '{want}': {r.stdout}")
        if HAVE_TORCH:
            r = subprocess.run([sys.executable, os.path.join(bare, "examples", "train.py"),
                                "--socket", os.path.join(tmp, "none.sock")],
                               capture_output=True, text=True, timeout=120,
                               env=clean_env())
            check(r.returncode == 2, f"train.py without libtsclient exited "
                                     f"{r.returncode}, want 2: {r.stderr}")
            check("TSRUN_LIBTSCLIENT=" in r.stderr and "cannot connect" not in r.stderr,
                  f"train.py without libtsclient: {r.stderr}")

    # 2. A source tree with builds: the newest that loads. build-z is the
    # newest but garbage, build-asan needs a sanitizer runtime (unless this
    # process has it), the .p folder and symlinks are not libraries.
    tree = make_tree(tmp, "tree")
    put(tree, "build-old", "libtsclient.so.0", LIB_BYTES, 300)
    new = put(tree, "build-new", "libtsclient.so.0.1.0", LIB_BYTES, 200)
    os.symlink("libtsclient.so.0.1.0", os.path.join(tree, "build-new", "src", "libtsclient.so"))
    os.makedirs(os.path.join(tree, "build-new", "src", "libtsclient.so.0.1.0.p"))
    put(tree, "build-z", "libtsclient.so", b"not a library", 100)
    san = put(tree, "build-san", "libtsclient.so.0", LIB_BYTES + b"\0__asan_init\0", 50)
    has_asan = hasattr(ctypes.CDLL(None), "__asan_init")
    want = san if has_asan else new
    if not installed:
        r = python(tree, LOAD)
        check(r.returncode == 0 and r.stdout.strip() == want,
              f"source tree: loaded {r.stdout.strip()!r}, want {want!r}: {r.stderr}")

    # 3. TSRUN_LIBTSCLIENT wins over everything; a bad one is an error,
    # never silently replaced by another library.
    r = python(tree, LOAD, TSRUN_LIBTSCLIENT=LIB)
    check(r.returncode == 0 and r.stdout.strip() == LIB,
          f"TSRUN_LIBTSCLIENT={LIB}: loaded {r.stdout.strip()!r}: {r.stderr}")
    missing = os.path.join(tmp, "no-such-libtsclient.so")
    r = python(tree, "import tsrun\ntry:\n    tsrun.load_library()\n"
                     "except tsrun.LibraryNotFound as e:\n    print(e)\n",
               TSRUN_LIBTSCLIENT=missing)
    check(r.returncode == 0 and f"TSRUN_LIBTSCLIENT={missing}" in r.stdout,
          f"bad TSRUN_LIBTSCLIENT not reported: {r.stdout} {r.stderr}")

    # 4. The user's case: train.py from a source tree, nothing set, finds
    # the library and gets as far as the (absent) producer: exit 3.
    if HAVE_TORCH and not installed:
        r = subprocess.run([sys.executable, os.path.join(tree, "examples", "train.py"),
                            "--socket", os.path.join(tmp, "none.sock")],
                           capture_output=True, text=True, timeout=120, env=clean_env())
        check(r.returncode == 3 and "libtsclient" not in r.stderr,
              f"train.py in a built tree exited {r.returncode}, want 3: {r.stderr}")
    # ... and the same from this very source tree, when its build is a build*.
    build = os.environ.get("TS_BUILDDIR", "")
    if (HAVE_TORCH and not installed and os.path.basename(build).startswith("build")
            and os.path.samefile(os.path.dirname(os.path.abspath(build)), SRC)):
        r = subprocess.run([sys.executable, os.path.join(SRC, "examples", "train.py"),
                            "--socket", os.path.join(tmp, "none.sock")],
                           capture_output=True, text=True, timeout=120, env=clean_env())
        check(r.returncode == 3 and "libtsclient" not in r.stderr,
              f"{SRC}/examples/train.py exited {r.returncode}, want 3: {r.stderr}")

    # 5. The library found by itself serves real batches.
    if HAVE_TORCH and TOOL and not installed:
        sock = os.path.join(tmp, "p.sock")
        prod = subprocess.Popen([TOOL, sock, "--samples-per-epoch", "40", "--epochs", "1",
                                 "--shape", "4x4x3", "--min-consumers", "1"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        check(prod.stdout.readline().startswith("ready"), "producer-tool not ready")
        r = python(tree, "import tsrun\n"
                         f"with tsrun.Loader({sock!r}, batch_size=8, timeout=30) as ld:\n"
                         "    n = sum(int(lab.shape[0]) for _, lab in ld)\n"
                         "print(tsrun.load_library()._name, n)\n")
        check(r.returncode == 0 and r.stdout.split() == [want, "40"],
              f"Loader with a found library: {r.stdout!r} {r.stderr}")

    # 5b. tsrun.serve's libtsrun is found by the same search: the newest
    # build*/src/libtsrun.so* of the source tree that loads and has the
    # producer API (an older or garbage one passed over); TSRUN_LIBTSRUN
    # first, a bad one an error naming it.
    LIBTSRUN = os.environ.get("TS_LIBTSRUN")
    probe = python(bare, "import ctypes\ntry:\n    ctypes.CDLL('libtsrun.so.0'); print('yes')\n"
                         "except OSError:\n    print('no')")
    if LIBTSRUN and probe.stdout.strip() == "no":
        with open(LIBTSRUN, "rb") as f:
            run_bytes = f.read()
        put(tree, "build-old", "libtsrun.so.0", run_bytes, 300)
        newrun = put(tree, "build-new", "libtsrun.so.0.1.0", run_bytes, 200)
        put(tree, "build-z", "libtsrun.so", b"not a library", 100)
        if not has_asan:
            put(tree, "build-san", "libtsrun.so.0", run_bytes + b"\0__asan_init\0", 50)
        SERVE = ("import importlib, tsrun\n"
                 "print(importlib.import_module('tsrun.serve')._load()._name)\n")
        r = python(tree, SERVE)
        check(r.returncode == 0 and r.stdout.strip() == newrun,
              f"tsrun.serve in a source tree: loaded {r.stdout.strip()!r}, want {newrun!r}: "
              f"{r.stderr[-800:]}")
        r = python(tree, SERVE, TSRUN_LIBTSRUN=LIBTSRUN)
        check(r.returncode == 0 and r.stdout.strip() == LIBTSRUN,
              f"TSRUN_LIBTSRUN={LIBTSRUN}: loaded {r.stdout.strip()!r}: {r.stderr[-800:]}")
        r = python(tree, SERVE, TSRUN_LIBTSRUN=missing)
        check(r.returncode != 0 and f"TSRUN_LIBTSRUN={missing}" in r.stderr
              and "libtsrun for tsrun.serve" in r.stderr,
              f"bad TSRUN_LIBTSRUN not reported: {r.stderr[-800:]}")
        r = python(bare, SERVE)
        check(r.returncode != 0 and "no build*/src/libtsrun.so* in the source tree" in r.stderr
              and "TSRUN_LIBTSRUN=" in r.stderr,
              f"no libtsrun: the message says what to do: {r.stderr[-800:]}")

    # 6. batch_size is checked in Python, before any library or producer.
    if HAVE_TORCH:
        r = python(tree, "import tsrun\n"
                         "for v in (-1, 2**32, 1.5, True):\n"
                         "    try:\n        tsrun.Loader('/nonexistent.sock', batch_size=v)\n"
                         "    except (TypeError, ValueError) as e:\n"
                         "        print(type(e).__name__, e)\n",
                   TSRUN_LIBTSCLIENT=missing)
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and len(lines) == 4, f"batch_size checks: {r.stdout} {r.stderr}")
        for line, kind, val in zip(lines, ("ValueError", "ValueError", "TypeError", "TypeError"),
                                   ("-1", "4294967296", "1.5", "True")):
            check(line == f"{kind} batch_size must be a positive integer (or 0 for the "
                          f"pipeline's batch(n)), got {val}", f"batch_size={val}: {line!r}")
        check("4294967295" not in r.stdout, "batch_size=-1 still wraps to 4294967295")
finally:
    if prod is not None:
        prod.kill()
        prod.wait()
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok: python-libfind")
