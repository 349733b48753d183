"""libtsrun's embedding API (include/tsrun/tsrun.h) over ctypes, for the
tests that drive a pipeline in process (pipeline-torch.py, torch-edges.py,
torch-trace.py, torch-trace-ops.py): the C structures mirrored once, so
that a field added to one of them (ts_stream_opts.cache) cannot be missed
in one test's copy; the library's signatures, one epoch's samples and
`tsrun bench --trace`'s records, which the trace tests share."""
import ctypes
import json
import os
import subprocess

import numpy as np


class Loc(ctypes.Structure):
    _fields_ = [("first_line", ctypes.c_int), ("first_column", ctypes.c_int),
                ("last_line", ctypes.c_int), ("last_column", ctypes.c_int)]


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("loc", Loc), ("msg", ctypes.c_char * 256)]


class StreamOpts(ctypes.Structure):
    """struct ts_stream_opts, its size set as a C caller sets it"""
    _fields_ = [("size", ctypes.c_size_t), ("threads", ctypes.c_int), ("epochs", ctypes.c_int),
                ("start_epoch", ctypes.c_uint64), ("start_index", ctypes.c_uint64),
                ("memory_budget", ctypes.c_uint64), ("batch", ctypes.c_size_t),
                ("drop_last", ctypes.c_int), ("cache", ctypes.c_uint64)]

    def __init__(self, **kw):
        super().__init__(**kw)
        if "size" not in kw:
            self.size = ctypes.sizeof(self)


class Batch(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("labels", ctypes.POINTER(ctypes.c_int32)),
                ("n", ctypes.c_size_t), ("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int), ("layout", ctypes.c_int),
                ("sample_bytes", ctypes.c_size_t), ("epoch", ctypes.c_uint64),
                ("index", ctypes.c_uint64), ("sample_stride", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 4)]


TS_E_EOS = -5009
DTYPES = {0: np.uint8, 1: np.uint16, 2: np.float16, 3: np.float32}


def open_lib(path):
    """libtsrun at path, with the signatures of the calls the tests make."""
    lib = ctypes.CDLL(path)
    lib.ts_pipeline_compile.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                        ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(Error)]
    lib.ts_pipeline_open.argtypes = [ctypes.c_void_p, ctypes.POINTER(StreamOpts),
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Error)]
    lib.ts_stream_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch), ctypes.POINTER(Error)]
    lib.ts_stream_close.argtypes = [ctypes.c_void_p]
    lib.ts_pipeline_destroy.argtypes = [ctypes.c_void_p]
    return lib


def epoch_samples(lib, text, base_dir, batch, threads=2):
    """{(epoch, index): raw bytes of the sample} of one epoch of the
    pipeline text, compiled with base_dir as its folder."""
    err = Error()
    p = ctypes.c_void_p()
    src = text.encode()
    if lib.ts_pipeline_compile(src, len(src), b"trace.ts", None, base_dir.encode(),
                               ctypes.byref(p), None, ctypes.byref(err)):
        raise RuntimeError("compile: " + err.msg.decode())
    s = ctypes.c_void_p()
    opts = StreamOpts(threads=threads, epochs=1, batch=batch)
    if lib.ts_pipeline_open(p, ctypes.byref(opts), ctypes.byref(s), ctypes.byref(err)):
        lib.ts_pipeline_destroy(p)
        raise RuntimeError("open: " + err.msg.decode())
    out = {}
    b = Batch()
    try:
        while True:
            rc = lib.ts_stream_next(s, ctypes.byref(b), ctypes.byref(err))
            if rc == TS_E_EOS:
                break
            if rc:
                raise RuntimeError("next: " + err.msg.decode())
            for k in range(b.n):
                out[(b.epoch, b.index + k)] = ctypes.string_at(
                    b.data + k * b.sample_stride, b.sample_bytes)
    finally:
        lib.ts_stream_close(s)
        lib.ts_pipeline_destroy(p)
    return out


def bench_trace(tsrun, path, base_dir, threads=2):
    """{(epoch, index): trace record} from `tsrun bench --trace` (tsrun(1))."""
    out = os.path.join(base_dir, "trace.jsonl")
    r = subprocess.run([tsrun, "bench", path, "--trace", out, "--threads", str(threads)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise RuntimeError("bench --trace: " + r.stderr)
    lines = {}
    with open(out) as f:
        for line in f:
            d = json.loads(line)
            lines[(d["epoch"], d["index"])] = d
    return lines
