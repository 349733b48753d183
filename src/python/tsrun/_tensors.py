"""The tensor shapes of a producer, for tsrun.Loader: a sample of any rank
and a label tensor per sample, which tsrun.serve producers can have
(libtsclient's ts_client_sample_tensor / ts_client_label_tensor)."""

import ctypes

from . import _lib

# The C structures, mirrored once (_lib.py).
_MAX_DIMS = _lib.MAX_DIMS
_Tensor = _lib.Tensor
_Error = _lib.Error


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


class _View(ctypes.Structure):
    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("group", ctypes.c_int),
                ("offset", ctypes.c_size_t), ("bytes", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 2)]


def views(lib, client):
    """views(...) pipelines (tsrun-pipeline(5), VIEWS): one (shape, dtype
    code, offset, bytes, group) per view of a sample, shape (C, H, W) in
    nchw else (H, W, C); [] when a sample is one tensor."""
    if not hasattr(lib, "ts_client_views"):
        return []
    lib.ts_client_views.argtypes = [ctypes.c_void_p]
    lib.ts_client_views.restype = ctypes.c_int
    lib.ts_client_view_info.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                        ctypes.POINTER(_View), ctypes.POINTER(_Error)]
    lib.ts_client_view_info.restype = ctypes.c_int
    out = []
    for i in range(lib.ts_client_views(client)):
        v, err = _View(), _Error()
        if lib.ts_client_view_info(client, i, ctypes.byref(v), ctypes.byref(err)) < 0:
            raise RuntimeError(err.msg.decode("utf-8", "replace"))
        shape = ((v.channels, v.height, v.width) if v.layout == 1
                 else (v.height, v.width, v.channels))
        out.append((shape, v.dtype, v.offset, v.bytes, v.group))
    return out


def stride(b):
    """Bytes from one sample of batch b to the next (tsclient.h):
    sample_bytes, or more where the ring pads the slots of an odd-sized
    sample; 0 (a batch built by hand) reads as packed."""
    return b.sample_stride or b.sample_bytes


def span_bytes(b):
    """Bytes from batch b's first sample to the end of its last."""
    return (b.n - 1) * stride(b) + b.sample_bytes if b.n else 0


def batch_view(flat, b, shape):
    """flat, a 1-D tensor over span_bytes(b) of the batch's memory, as
    [n, *shape] with the samples where the ring has them: a view, which is
    contiguous unless the slots are padded."""
    if stride(b) == b.sample_bytes:
        return flat.view(b.n, *shape)
    inner = [1]
    for d in reversed(shape[1:]):
        inner.insert(0, inner[0] * d)
    return flat.as_strided((b.n, *shape), (stride(b) // flat.element_size(), *inner))


def pinned(images):
    """A pinned copy of images, packed: pin_memory keeps a strided
    tensor's strides, and a strided CPU tensor goes to the GPU through one
    more, pageable, copy."""
    import torch
    if images.is_contiguous():
        return images.pin_memory()
    return torch.empty(images.shape, dtype=images.dtype, pin_memory=True).copy_(images)


def to_device(images, device):
    """images on device, packed. A strided batch (padded ring slots) goes
    as the span of memory it covers, in one copy (a DMA when the ring is
    pinned), and is packed there: torch would first pack it in pageable
    memory."""
    if images.is_contiguous():
        return images.to(device, non_blocking=True)
    n = images.shape[0]
    elems = (n - 1) * images.stride(0) + images[0].numel() if n else 0
    span = images.as_strided((elems,), (1,)).to(device, non_blocking=True)
    return span.as_strided(images.shape, images.stride()).contiguous()


def split_views(images, views):
    """A batch of views samples, images a uint8 [n, sample_bytes] tensor,
    as one tensor [n, *shape] per view, each a view of the batch's memory."""
    import torch
    out = []
    n = images.shape[0]
    for shape, dtype, off, nbytes, _ in views:
        dt = {0: torch.uint8, 1: torch.int16, 2: torch.float16, 3: torch.float32}[dtype]
        # Every view sits at a multiple of its element size and the sample
        # is a multiple of the largest (the ring refuses a header that
        # says otherwise), so the bytes view as dt in place.
        part = images[:, off:off + nbytes]
        out.append(part.view(dt).view(n, *shape))
    return out


def labels(lib, client, batch, n, label):
    """The batch's label tensors as a torch tensor [n, *shape] (a copy)."""
    import torch
    shape, dtype, nbytes = label
    ptr = lib.ts_client_batch_label_data(client, ctypes.byref(batch))
    dt = {0: torch.uint8, 1: torch.int16, 2: torch.float16, 3: torch.float32}[dtype]
    buf = (ctypes.c_uint8 * (n * nbytes)).from_address(ptr)
    return torch.frombuffer(bytearray(buf), dtype=dt).view(n, *shape)
