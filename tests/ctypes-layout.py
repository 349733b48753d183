"""ctypes-layout.py CC - every ctypes mirror of a C structure, the Python
client's (src/python/tsrun/_lib.py, _tensors.py, serve.py) and the tests'
(tests/tsrun_embed.py, libtsrun's embedding API), matches the C layouts of
tsclient.h, tsclient_cuda.h, src/client/tsclient_private.h, tsrun.h and
tsrun_producer.h: for every structure,
its size, and for every field the ctypes class names, its offset and size
as the C compiler lays them out. The fields are copied by hand into the
package; this is what catches a header
that changed without it. Exit 77 without a C compiler."""

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import types

SRC = os.environ["TS_SRCDIR"]
PKG = os.path.join(SRC, "src", "python", "tsrun")

# "module.class" of the client package -> the C type it mirrors
MIRRORS = {
    "_lib.Loc": "struct ts_loc",
    "_lib.Error": "struct ts_error",
    "_lib.Opts": "struct ts_client_opts",
    "_lib.Batch": "struct ts_batch",
    "_lib.Info": "struct ts_client_info",
    "_lib.Stats": "struct ts_client_stats",
    "_lib.DevInfo": "struct ts_client_device_info",
    "_lib.Fallback": "struct ts_client_fallback",
    "_lib.Span": "struct ts_client_span",
    "_lib.Pinned": "struct ts_client_pinned",
    "_lib.Mix": "struct ts_client_mix",
    "_lib.Tensor": "struct ts_client_tensor",
    "_lib.ProducerTensor": "struct ts_producer_tensor",
    "_lib.ProducerOpts": "struct ts_producer_opts",
    "_lib.MixSample": "struct ts_client_mix_sample",
    "_tensors._Tensor": "struct ts_client_tensor",
    "_tensors._Error": "struct ts_error",
    "_tensors._View": "struct ts_client_view",
    "serve._Loc": "struct ts_loc",
    "serve._Error": "struct ts_error",
    "serve._Tensor": "struct ts_producer_tensor",
    "serve._Opts": "struct ts_producer_opts",
    "tsrun_embed.Loc": "struct ts_loc",
    "tsrun_embed.Error": "struct ts_error",
    "tsrun_embed.StreamOpts": "struct ts_stream_opts",
    "tsrun_embed.Batch": "struct ts_stream_batch",
}
# Every ctypes.Structure of these modules must be in MIRRORS (a mirror
# added without its entry here would go unchecked).
MODULES = ("_lib", "_tensors", "serve", "tsrun_embed")


def load_lib():
    """tsrun._lib, tsrun._tensors and tsrun.errors alone, without the package's __init__
    (which needs torch): the structures are plain ctypes."""
    pkg = types.ModuleType("tsrun")
    pkg.__path__ = [PKG]
    sys.modules["tsrun"] = pkg
    for name in ("errors", "_lib", "_tensors", "serve"):
        spec = importlib.util.spec_from_file_location(
            "tsrun." + name, os.path.join(PKG, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules["tsrun." + name] = mod
        spec.loader.exec_module(mod)
    # the tests' mirrors of libtsrun's embedding API
    spec = importlib.util.spec_from_file_location(
        "tsrun.tsrun_embed", os.path.join(SRC, "tests", "tsrun_embed.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tsrun.tsrun_embed"] = mod
    spec.loader.exec_module(mod)
    return sys.modules


def mirror(mods, cls):
    """The ctypes class named "module.class"."""
    mod, name = cls.split(".")
    return getattr(mods["tsrun." + mod], name)


def c_layouts(cc, lib, tmp):
    """{(ctype, field or None): (offset, size)} from the C compiler."""
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             '#include "tsclient_private.h"',
             '#include "tsrun_producer.h"', '#include "tsrun.h"',
             "int main(void) {"]
    for cls, ctype in MIRRORS.items():
        lines.append(f'printf("{cls} - 0 %zu\\n", sizeof({ctype}));')
        for f in mirror(lib, cls)._fields_:
            name = f[0]
            lines.append(f'printf("{cls} {name} %zu %zu\\n", offsetof({ctype}, {name}), '
                         f'sizeof((({ctype} *)0)->{name}));')
    lines += ["return 0;", "}"]
    c = os.path.join(tmp, "layout.c")
    exe = os.path.join(tmp, "layout")
    with open(c, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    r = subprocess.run([cc, "-std=c99", "-I", os.path.join(SRC, "include", "tsrun"),
                        "-I", os.path.join(SRC, "src", "client"),
                        c, "-o", exe], capture_output=True, text=True)
    if r.returncode != 0:
        # a field the header does not have fails here, by name
        print("FAIL: the ctypes fields do not compile against the headers:\n" + r.stderr)
        sys.exit(1)
    out = {}
    for line in subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines():
        cls, name, off, size = line.split()
        out[(cls, None if name == "-" else name)] = (int(off), int(size))
    return out


def main():
    cc = sys.argv[1] if len(sys.argv) > 1 else "cc"
    if not shutil.which(cc):
        print(f"no C compiler ({cc}): skipped")
        return 77
    lib = load_lib()
    failed = 0
    # a Structure class defined in one of the modules and not listed
    listed = {id(mirror(lib, cls)) for cls in MIRRORS}
    for m in MODULES:
        mod = lib["tsrun." + m]
        for name, k in vars(mod).items():
            if (isinstance(k, type) and issubclass(k, ctypes.Structure)
                    and k.__module__ == mod.__name__ and id(k) not in listed):
                print(f"FAIL: {m}.{name} mirrors a C structure that MIRRORS does not "
                      "name: add it, so that its layout is checked")
                failed += 1
    with tempfile.TemporaryDirectory(prefix="tsrun-ctypes.") as tmp:
        c = c_layouts(cc, lib, tmp)
    for cls, ctype in MIRRORS.items():
        k = mirror(lib, cls)
        want = c[(cls, None)][1]
        if ctypes.sizeof(k) != want:
            print(f"FAIL: {cls}: ctypes size {ctypes.sizeof(k)}, {ctype} is {want} bytes "
                  "(a field added or removed in the header?)")
            failed += 1
        for f in k._fields_:
            name = f[0]
            d = getattr(k, name)
            off, size = c[(cls, name)]
            if (d.offset, d.size) != (off, size):
                print(f"FAIL: {cls}.{name}: ctypes offset {d.offset} size {d.size}, "
                      f"{ctype}.{name} offset {off} size {size}")
                failed += 1
        if not failed:
            print(f"ok   {cls} = {ctype}: {len(k._fields_)} fields, {want} bytes")
    if failed:
        print(f"ctypes-layout: {failed} failed")
        return 1
    print("ctypes-layout: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
