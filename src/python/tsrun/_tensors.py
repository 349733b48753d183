"""The tensor shapes of a producer, for tsrun.Loader: a sample of any rank
and a label tensor per sample, which tsrun.serve producers can have
(libtsclient's ts_client_sample_tensor / ts_client_label_tensor)."""

import ctypes

_MAX_DIMS = 8


class _Tensor(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int), ("dtype", ctypes.c_int),
                ("dims", ctypes.c_int64 * _MAX_DIMS), ("bytes", ctypes.c_size_t)]


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("loc", ctypes.c_int * 4),
                ("msg", ctypes.c_char * 256)]


def describe(lib, client):
    """(sample shape, label tensor (shape, dtype code, bytes) or None); the
    sample shape is None with a libtsclient that cannot say."""
    if not hasattr(lib, "ts_client_sample_tensor"):
        return None, None
    lib.ts_client_sample_tensor.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor)]
    lib.ts_client_sample_tensor.restype = None
    lib.ts_client_label_tensor.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor),
                                           ctypes.POINTER(_Error)]
    lib.ts_client_label_tensor.restype = ctypes.c_int
    lib.ts_client_batch_label_data.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.ts_client_batch_label_data.restype = ctypes.c_void_p
    t = _Tensor()
    lib.ts_client_sample_tensor(client, ctypes.byref(t))
    shape = tuple(t.dims[i] for i in range(t.ndim))
    lt, err = _Tensor(), _Error()
    if lib.ts_client_label_tensor(client, ctypes.byref(lt), ctypes.byref(err)) < 0:
        return shape, None
    return shape, (tuple(lt.dims[i] for i in range(lt.ndim)), lt.dtype, lt.bytes)


def labels(lib, client, batch, n, label):
    """The batch's label tensors as a torch tensor [n, *shape] (a copy)."""
    import torch
    shape, dtype, nbytes = label
    ptr = lib.ts_client_batch_label_data(client, ctypes.byref(batch))
    dt = {0: torch.uint8, 1: torch.int16, 2: torch.float16, 3: torch.float32}[dtype]
    buf = (ctypes.c_uint8 * (n * nbytes)).from_address(ptr)
    return torch.frombuffer(bytearray(buf), dtype=dt).view(n, *shape)
