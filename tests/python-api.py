#!/usr/bin/python3
"""python-api.py - tensorsocket(7)'s "Python API" is the package's API,
as ctypes-layout.py holds the structs to tsclient.h:

1. each signature in the section's literal block is the one
   inspect.signature gives for tsrun.Loader, tsrun.serve, tsrun.Producer
   and tsrun.Mixup, character for character;
2. each "NAME parameters:" list names exactly that object's parameters;
3. each "NAME attributes and methods:" list names exactly the public
   attributes of a live object (a Loader connected to a real `tsrun run`,
   a Producer, a Mixup; the Mixup's list adds its parameters);
4. tsrun.__version__ (imported from the source tree, PYTHONPATH=src/python
   as the README says) is meson's project version (meson introspect) and
   `tsrun --version`'s;
5. the reprs say what the objects are, not "<... object at 0x...>".
Skips (77) without torch or when this interpreter cannot load the build's
libtsclient (a sanitizer build)."""
import ctypes
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ.get("TS_SRCDIR")
BUILD = os.environ.get("TS_BUILDDIR")
TSRUN = os.environ.get("TSRUN")
LIB = os.environ.get("TS_LIBTSCLIENT")
if not SRC or not BUILD or not TSRUN or not LIB:
    print("TS_SRCDIR / TS_BUILDDIR / TSRUN / TS_LIBTSCLIENT not set: skip")
    sys.exit(77)
try:
    import torch  # noqa: F401
except ImportError:
    print("no torch under this interpreter: skip")
    sys.exit(77)
try:
    ctypes.CDLL(LIB)
except OSError as e:
    print(f"this interpreter cannot load {LIB} ({e}): skip")
    sys.exit(77)
sys.path.insert(0, os.path.join(SRC, "src", "python"))
import tsrun  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def section(page):
    """The lines of the "Python API" subsection of page."""
    lines = open(page).read().split("\n")
    start = lines.index(".Ss Python API")
    end = next(i for i in range(start + 1, len(lines))
               if lines[i].startswith((".Ss ", ".Sh ")))
    return lines[start + 1:end]


def unescape(s):
    return s.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


def documented_signatures(lines):
    """{name: signature text} from the literal block, continuation lines
    joined (a signature ends where its parentheses close)."""
    b = lines.index(".Bd -literal -offset indent")
    e = lines.index(".Ed", b)
    sigs, cur = {}, ""
    for line in lines[b + 1:e]:
        cur = (cur + " " + line.strip()) if cur else line.strip()
        if cur.count("(") == cur.count(")"):
            name, rest = cur.split("(", 1)
            sigs[name] = "(" + unescape(rest)
            cur = ""
    return sigs


def documented_lists(lines):
    """{(object, "parameters" | "attributes and methods"): [names]}: a
    ".Li tsrun.X" line, then a line starting with the kind, then the
    .It Cm NAME items of the .Bl list that follows, up to its .El."""
    lists = {}
    i = 0
    while i < len(lines):
        m = re.match(r"\.Li (tsrun\.\w+)$", lines[i])
        kind = None
        if m and i + 1 < len(lines):
            for k in ("parameters", "attributes and methods"):
                if lines[i + 1].startswith(k):
                    kind = k
        if not kind:
            i += 1
            continue
        j = next(k for k in range(i, len(lines)) if lines[k].startswith(".Bl "))
        names, depth = [], 0
        for k in range(j, len(lines)):
            if lines[k].startswith(".Bl "):
                depth += 1
            elif lines[k] == ".El":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1:
                m2 = re.match(r"\.It Cm (\w+)$", lines[k])
                if m2:
                    names.append(m2.group(1))
        lists[(m.group(1), kind)] = names
        i = k + 1
    return lists


def public(obj):
    return sorted(n for n in set(vars(obj)) | set(dir(type(obj))) if not n.startswith("_"))


def main():
    lines = section(os.path.join(SRC, "man", "tensorsocket.7"))
    sigs = documented_signatures(lines)
    lists = documented_lists(lines)
    objs = {"tsrun.Loader": tsrun.Loader, "tsrun.serve": tsrun.serve,
            "tsrun.Producer": tsrun.Producer, "tsrun.Mixup": tsrun.Mixup}
    check(sorted(sigs) == sorted(objs), f"signatures documented for {sorted(sigs)}")
    for name, obj in objs.items():
        real = str(inspect.signature(obj))
        check(sigs.get(name) == real,
              f"{name}{real} is the page's {name}{sigs.get(name)}")
        params = list(inspect.signature(obj).parameters)
        got = lists.get((name, "parameters"))
        check(got == params, f"{name}'s parameter list {got} is its parameters {params}")

    tmp = tempfile.mkdtemp(prefix="ts-pyapi.", dir="/tmp")
    sock = os.path.join(tmp, "api.sock")
    ts = os.path.join(tmp, "api.ts")
    with open(ts, "w") as f:
        f.write('pipeline p = synthetic(8, count = 32) | to(float32, nchw) | batch(8)\n'
                'serve p { socket = "%s"\n epochs = 1\n ring = 4 batches }\n' % sock)
    prod = subprocess.Popen([TSRUN, "run", ts, "--quiet"], stderr=subprocess.PIPE, text=True)
    try:
        # connect_timeout: the Loader waits for the socket tsrun makes
        loader = tsrun.Loader(sock, connect_timeout=30)
        r = repr(loader)
        check(r.startswith("<tsrun.Loader socket=%r batch_size=8 sample=3x8x8 float32 "
                           "source=host-ring" % sock), f"repr(loader): {r}")
        r = repr(loader.info)
        check(r.startswith("Info(height=8, width=8, channels=3, dtype=float32, layout=nchw,"),
              f"repr(loader.info): {r}")
        got = lists.get(("tsrun.Loader", "attributes and methods"))
        check(sorted(got or []) == public(loader),
              f"Loader's attribute list {got} is a live Loader's {public(loader)}")
        n = sum(x.shape[0] for x, _ in loader)
        check(n == 32 and (loader.epoch, loader.index) == (0, 24),
              f"the pass read 32 samples, ending at (0, 24): {n}, "
              f"({loader.epoch}, {loader.index})")
        loader.close()
    finally:
        try:
            prod.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prod.kill()
            prod.wait()
    p = tsrun.Producer(os.path.join(tmp, "p.sock"), epochs=1, wait=0)
    r = repr(p)
    check(r.startswith("<tsrun.Producer socket=") and "epochs=1" in r, f"repr(producer): {r}")
    got = lists.get(("tsrun.Producer", "attributes and methods"))
    check(sorted(got or []) == public(p),
          f"Producer's attribute list {got} is a Producer's {public(p)}")
    p.close()
    m = tsrun.Mixup(num_classes=10)
    got = lists.get(("tsrun.Mixup", "attributes and methods"))
    want = sorted(set(public(m)) - set(inspect.signature(tsrun.Mixup).parameters))
    check(sorted(got or []) == want, f"Mixup's attribute list {got} is a Mixup's {want}")
    check(repr(m).startswith("tsrun.Mixup(mixup_alpha=1, "), f"repr(mixup): {repr(m)}")

    version = json.loads(subprocess.run(["meson", "introspect", "--projectinfo", BUILD],
                                        capture_output=True, text=True,
                                        check=True).stdout)["version"]
    check(tsrun.__version__ == version,
          f"tsrun.__version__ {tsrun.__version__!r} is meson's project version {version!r}")
    out = subprocess.run([TSRUN, "--version"], capture_output=True, text=True).stdout.strip()
    check(out == "tsrun " + version, f"tsrun --version says {out!r}")
    # a path that is not a socket, as a newcomer points the Loader at the .ts
    try:
        tsrun.Loader(ts, connect_timeout=5)
        check(False, "a Loader on the pipeline file was refused")
    except tsrun.TsrunError as e:
        check("is not a socket (a pipeline file? start `tsrun run %s` and point the Loader "
              "at its socket = \"%s\")" % (ts, sock) in str(e),
              f"a Loader on the pipeline file: {e}")
    # nothing serves: connect_timeout waits, then says how long it did
    try:
        tsrun.Loader(os.path.join(tmp, "none.sock"), connect_timeout=0.3)
        check(False, "a Loader on no socket was refused")
    except tsrun.TsrunError as e:
        check("after waiting 0.3 s for it (connect_timeout=0.3)" in str(e),
              f"a Loader on no socket, connect_timeout=0.3: {e}")
    for bad in (-1, "5", float("inf")):
        try:
            tsrun.Loader(sock, connect_timeout=bad)
            check(False, f"connect_timeout={bad!r} accepted")
        except ValueError:
            pass
    if failures:
        print(f"{len(failures)} failed")
        return 1
    print("python-api: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
