#!/usr/bin/python3
"""python-install.py - the Python client installs like a Python package.

1. `pip install --no-build-isolation --no-index .` from a copy of the
   repository into a `python3 -m venv --system-site-packages` venv
   (meson-python, offline); then, from /tmp with no PYTHONPATH,
   TSRUN_LIBTSCLIENT or LD_LIBRARY_PATH, `import tsrun` loads the
   libtsclient inside the installed package, and the README's trainer
   snippet, as written (only its socket path changed), trains from a real
   `tsrun run`.
   The venv's bin has a `tsrun` command that runs (--version names the
   project's version, `check` and `graph` of a pipeline work from /tmp),
   and tsrun.__version__ is meson's project version (meson introspect).
2. `meson install` of this build (into a DESTDIR) puts the package with
   its own libtsclient where the system interpreter finds it, and its
   tsrun.__version__ is the project's version too.
Skips (77) when meson-python, venv or torch is missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

TSRUN = os.environ.get("TSRUN")
SRC = os.environ.get("TS_SRCDIR")
BUILD = os.environ.get("TS_BUILDDIR")
if not TSRUN or not SRC or not BUILD:
    print("TSRUN / TS_SRCDIR / TS_BUILDDIR not set: skip")
    sys.exit(77)
PY = "/usr/bin/python3"
for mod in ("mesonpy", "venv", "torch"):
    if subprocess.run([PY, "-c", "import " + mod], capture_output=True).returncode:
        print(f"{PY} has no {mod} (Debian: python3-mesonpy, python3-venv, "
              "python3-torch): skip")
        sys.exit(77)
failures = []
import json  # noqa: E402
VERSION = json.loads(subprocess.run(["meson", "introspect", "--projectinfo", BUILD],
                                    capture_output=True, text=True,
                                    check=True).stdout)["version"]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TSRUN_LIBTSCLIENT", "LD_LIBRARY_PATH",
                        "LD_PRELOAD", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def readme_snippet():
    """The README's first Python block that uses tsrun.Loader."""
    text = open(os.path.join(SRC, "README.md")).read()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if "tsrun.Loader" in block:
            return block
    raise SystemExit("README.md has no Python snippet with tsrun.Loader")


def serve(tmp, sock, epochs=1):
    ts = os.path.join(tmp, "p.ts")
    with open(ts, "w") as f:
        f.write('pipeline p = synthetic(8, count = 128) | to(float32, nchw) | batch(64)\n'
                'serve p { socket = "%s"\n epochs = %d\n ring = 4 batches }\n' % (sock, epochs))
    return subprocess.Popen([TSRUN, "run", ts, "--quiet", "--wait", "1"],
                            stderr=subprocess.PIPE, text=True)


def run_snippet(tmp, python, label):
    """The README snippet under python, from /tmp, against a real run."""
    sock = os.path.join(tmp, f"{label}.sock")
    code = readme_snippet().replace("/tmp/tsrun-train.sock", sock)
    # "..." is the trainer's body: count what it sees instead.
    code = code.replace("    ...", "    n = globals().get('n', 0) + images.shape[0]")
    code += "print('images:', n, tuple(images.shape[1:]), images.dtype)\n"
    prod = serve(tmp, sock)
    try:
        r = subprocess.run([python, "-c", code], cwd="/tmp", capture_output=True,
                           text=True, timeout=120, env=clean_env())
    finally:
        try:
            prod.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prod.kill()
            prod.wait()
    check(r.returncode == 0 and "images: 128 (3, 8, 8) torch.float32" in r.stdout,
          f"{label}: README snippet: rc {r.returncode}: {r.stdout[-500:]} {r.stderr[-1500:]}")


def where_tsrun(python, **env):
    r = subprocess.run([python, "-c", "import tsrun; print(tsrun.__file__); "
                        "print(tsrun.load_library()._name)"], cwd="/tmp",
                       capture_output=True, text=True, timeout=60, env=clean_env(**env))
    return r


def venv_install(tmp):
    # A copy of the tracked tree: pip builds in it, never in the checkout.
    repo = os.path.join(tmp, "repo")
    files = subprocess.run(["git", "-C", SRC, "ls-files", "-co", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for name in files:
        if not name or not os.path.isfile(os.path.join(SRC, name)):
            continue
        os.makedirs(os.path.dirname(os.path.join(repo, name)), exist_ok=True)
        shutil.copy2(os.path.join(SRC, name), os.path.join(repo, name))
    venv = os.path.join(tmp, "venv")
    subprocess.run([PY, "-m", "venv", "--system-site-packages", venv], check=True)
    vpy = os.path.join(venv, "bin", "python")
    r = subprocess.run([vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", "."], cwd=repo,
                       capture_output=True, text=True, timeout=900, env=clean_env())
    check(r.returncode == 0, f"pip install: rc {r.returncode}: {r.stdout[-2000:]} "
                             f"{r.stderr[-2000:]}")
    if r.returncode:
        return
    r = where_tsrun(vpy)
    site = os.path.join(venv, "lib")
    check(r.returncode == 0 and r.stdout.startswith(site)
          and "/tsrun/libtsclient.so.0" in r.stdout,
          f"venv import tsrun from /tmp: rc {r.returncode}: {r.stdout} {r.stderr[-1500:]}")
    print("venv: " + " ".join(r.stdout.split()))
    run_snippet(tmp, vpy, "venv")
    r = subprocess.run([vpy, "-c", "import tsrun; print(tsrun.__version__)"], cwd="/tmp",
                       capture_output=True, text=True, timeout=60, env=clean_env())
    check(r.stdout.strip() == VERSION,
          f"venv tsrun.__version__ {r.stdout.strip()!r}, meson's version {VERSION!r}")
    # The command: in the venv's bin, on no PATH but the venv's.
    cmd = os.path.join(venv, "bin", "tsrun")
    check(os.access(cmd, os.X_OK), f"pip install put no tsrun command in {venv}/bin")
    if not os.access(cmd, os.X_OK):
        return
    r = subprocess.run([cmd, "--version"], cwd="/tmp", capture_output=True, text=True,
                       timeout=60, env=clean_env(PATH="/usr/bin:/bin"))
    check(r.returncode == 0 and r.stdout.strip() == "tsrun " + VERSION,
          f"venv tsrun --version: rc {r.returncode}: {r.stdout!r} {r.stderr[-500:]}")
    ts = os.path.join(tmp, "cmd.ts")
    with open(ts, "w") as f:
        f.write('pipeline p = synthetic(8, count = 16) | to(float32, nchw) | batch(4)\n')
    for sub in ("check", "graph", "bench"):
        r = subprocess.run([cmd, sub, ts], cwd="/tmp", capture_output=True, text=True,
                           timeout=120, env=clean_env(PATH="/usr/bin:/bin"))
        check(r.returncode == 0 and (sub != "graph" or "sample: 3x8x8 float32" in r.stdout)
              and (sub != "bench" or "images: 16" in r.stdout),
              f"venv tsrun {sub}: rc {r.returncode}: {r.stdout[-500:]} {r.stderr[-500:]}")
    print(f"venv: {cmd} --version: tsrun {VERSION}; check, graph and bench ran")


def meson_install(tmp):
    dest = os.path.join(tmp, "dest")
    r = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest,
                        "--quiet"], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"meson install: {r.stdout[-1000:]} {r.stderr[-1000:]}")
    found = [os.path.join(d, "tsrun") for d, dirs, _ in os.walk(dest)
             if "tsrun" in dirs and os.path.isfile(os.path.join(d, "tsrun", "__init__.py"))]
    check(len(found) == 1, f"meson install: the package is at {found}")
    if len(found) != 1:
        return
    pkg = found[0]
    check(os.path.isfile(os.path.join(pkg, "libtsclient.so.0")),
          f"meson install: no libtsclient.so.0 in {pkg}")
    # The system interpreter's own site directory, under the DESTDIR.
    site = subprocess.run([PY, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                          capture_output=True, text=True).stdout.strip()
    syspath = subprocess.run([PY, "-c", "import sys; print(chr(10).join(sys.path))"],
                             capture_output=True, text=True).stdout.split("\n")
    installed = os.path.dirname(pkg)[len(dest):]
    check(installed in syspath, f"meson install: {installed} is not on {PY}'s sys.path "
                                f"{syspath}")
    print(f"meson install: {pkg} (system platlib {site})")
    # A sanitizer build's libtsclient needs its runtime preloaded (py_env).
    r = where_tsrun(PY, PYTHONPATH=os.path.dirname(pkg),
                    LD_PRELOAD=os.environ.get("LD_PRELOAD", ""))
    check(r.returncode == 0 and r.stdout.split("\n")[1].startswith(pkg),
          f"meson-installed tsrun from /tmp: {r.stdout} {r.stderr[-1500:]}")
    r = subprocess.run([PY, "-c", "import tsrun; print(tsrun.__version__)"], cwd="/tmp",
                       capture_output=True, text=True, timeout=60,
                       env=clean_env(PYTHONPATH=os.path.dirname(pkg),
                                     LD_PRELOAD=os.environ.get("LD_PRELOAD", "")))
    check(r.stdout.strip() == VERSION,
          f"meson-installed tsrun.__version__ {r.stdout.strip()!r}, meson's {VERSION!r}")


def main():
    with tempfile.TemporaryDirectory(prefix="ts-pyinst-") as tmp:
        meson_install(tmp)
        venv_install(tmp)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
