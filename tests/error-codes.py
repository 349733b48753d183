#!/usr/bin/python3
"""error-codes.py: the Python package's codes and its MAX_DIMS (tsrun.errors) are the C
header's (include/tsrun/error.h, enum ts_code), value for value, and the
header keeps its rule: -errno where the OS has a code (TS_E_NOMEM is
-ENOMEM), the domain's own codes below -4095. Reads the header as text, so
a code added or renumbered on one side only fails here."""
import errno
import os
import re
import sys

SRC = os.environ.get("TS_SRCDIR", os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SRC, "src", "python"))
import tsrun.errors as E  # noqa: E402

def header_codes():
    text = open(os.path.join(SRC, "include", "tsrun", "error.h")).read()
    body = re.search(r"enum ts_code \{(.*?)\};", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    codes = {}
    for name, val in re.findall(r"\b(TS_[A-Z_]+)\s*=\s*(-?\d+)", body):
        codes[name] = int(val)
    return codes


def main():
    fails = []
    codes = header_codes()
    if len(codes) < 15:
        fails.append(f"read only {len(codes)} codes from error.h")
    if codes.get("TS_E_NOMEM") != -errno.ENOMEM:
        fails.append(f"TS_E_NOMEM is {codes.get('TS_E_NOMEM')}, not -ENOMEM ({-errno.ENOMEM})")
    for name, val in codes.items():
        if name in ("TS_OK", "TS_E_NOMEM"):
            continue
        if val > -4096:
            fails.append(f"{name} = {val} collides with -errno (the domain's codes are below -4095)")
    if len(set(codes.values())) != len(codes):
        fails.append("two codes of error.h share a value")
    py = {n: v for n, v in vars(E).items() if re.fullmatch(r"E_[A-Z]+", n)}
    for n, v in sorted(py.items()):
        if n in ("E_TIMEDOUT", "E_AGAIN"):
            want = -getattr(errno, "E" + n[2:])
            if v != want:
                fails.append(f"tsrun.errors.{n} = {v}, not -errno.E{n[2:]} ({want})")
            continue
        c = "TS_" + n
        if c not in codes:
            fails.append(f"tsrun.errors.{n} has no {c} in error.h")
        elif codes[c] != v:
            fails.append(f"tsrun.errors.{n} = {v}, but error.h says {c} = {codes[c]}")
    # one maximum of tensor dimensions, C and Python
    import tsrun._lib as L
    for hdr, name in (("tsclient.h", "TS_CLIENT_MAX_DIMS"), ("tsrun_producer.h", "TS_PRODUCER_MAX_DIMS")):
        text = open(os.path.join(SRC, "include", "tsrun", hdr)).read()
        m = re.search(r"#define %s (\d+)" % name, text)
        if not m:
            fails.append(f"{hdr} defines no {name}")
        elif int(m.group(1)) != L.MAX_DIMS:
            fails.append(f"{hdr}'s {name} is {m.group(1)}, tsrun._lib.MAX_DIMS {L.MAX_DIMS}")
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print(f"ok: {len(py)} Python codes equal error.h's; {len(codes)} codes in the header")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
