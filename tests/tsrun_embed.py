"""libtsrun's embedding API (include/tsrun/tsrun.h) over ctypes, for the
tests that drive a pipeline in process (pipeline-torch.py, torch-edges.py,
torch-trace.py): the C structures mirrored once, so that a field added to
one of them (ts_stream_opts.cache) cannot be missed in one test's copy."""
import ctypes

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
