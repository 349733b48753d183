"""tsrun - consume batches from a tsrun producer in PyTorch.

    import tsrun
    for images, labels in tsrun.Loader("/tmp/tsrun-train.sock", batch_size=64):
        ...

Pure Python over libtsclient (ctypes). ``images`` is a torch tensor that
views the producer's shared ring without a copy; it is READ-ONLY memory
and valid only until the next iteration (or ``close()``): keep it longer
with ``images.clone()``. ``labels`` is a small int64 tensor (a copy).

The library is found through the environment variable TSRUN_LIBTSCLIENT,
else next to this package, else the system's libtsclient.so.0.
"""

import ctypes
import math
import os
import warnings

__all__ = ["Loader", "TsrunError", "ProducerGone", "load_library"]

_E_REFUSED = -5007
_E_PRODUCER = -5008
_E_EOS = -5009


class TsrunError(RuntimeError):
    """A libtsclient call failed; ``code`` is the negative return code."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class ProducerGone(TsrunError):
    """The producer died, stopped or failed before the end of the stream."""


class _Loc(ctypes.Structure):
    _fields_ = [("first_line", ctypes.c_int), ("first_column", ctypes.c_int),
                ("last_line", ctypes.c_int), ("last_column", ctypes.c_int)]


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("loc", _Loc),
                ("msg", ctypes.c_char * 256)]


class _Opts(ctypes.Structure):
    _fields_ = [("batch_size", ctypes.c_uint32), ("join", ctypes.c_int),
                ("drop_last", ctypes.c_int), ("timeout_ms", ctypes.c_int),
                ("connect_timeout_ms", ctypes.c_int)]


class _Batch(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_size_t),
                ("labels", ctypes.POINTER(ctypes.c_int32)),
                ("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("epoch", ctypes.c_uint32), ("index", ctypes.c_uint64),
                ("seq", ctypes.c_uint64)]


class _Info(ctypes.Structure):
    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("batch_size", ctypes.c_uint32), ("capacity", ctypes.c_uint64),
                ("samples_per_epoch", ctypes.c_uint64),
                ("epochs", ctypes.c_uint32), ("start", ctypes.c_uint64),
                ("start_epoch", ctypes.c_uint32),
                ("producer_pid", ctypes.c_int)]


_lib = None


def load_library():
    """Load libtsclient once (TSRUN_LIBTSCLIENT, next to the package, the
    system) and declare its functions."""
    global _lib
    if _lib is not None:
        return _lib
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("TSRUN_LIBTSCLIENT"),
                  os.path.join(here, "libtsclient.so.0"),
                  os.path.join(here, "libtsclient.so"),
                  "libtsclient.so.0"]
    errors = []
    for path in candidates:
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("cannot load libtsclient (set TSRUN_LIBTSCLIENT): "
                      + "; ".join(errors))
    lib.ts_client_opts_init.argtypes = [ctypes.POINTER(_Opts)]
    lib.ts_client_opts_init.restype = None
    lib.ts_client_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Opts),
                                      ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(_Error)]
    lib.ts_client_connect.restype = ctypes.c_int
    lib.ts_client_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Info)]
    lib.ts_client_info.restype = None
    lib.ts_client_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Batch),
                                   ctypes.POINTER(_Error)]
    lib.ts_client_next.restype = ctypes.c_int
    lib.ts_client_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Batch)]
    lib.ts_client_release.restype = None
    lib.ts_client_close.argtypes = [ctypes.c_void_p]
    lib.ts_client_close.restype = None
    lib.ts_client_strerror.argtypes = [ctypes.c_int]
    lib.ts_client_strerror.restype = ctypes.c_char_p
    _lib = lib
    return lib


def _raise(code, err):
    msg = err.msg.decode("utf-8", "replace")
    if code == _E_PRODUCER:
        raise ProducerGone(code, msg)
    raise TsrunError(code, msg)


class _Pinned(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Loader:
    """Batches from a tsrun producer, as (images, labels) torch tensors.

    socket      the producer's Unix socket path
    batch_size  samples per batch; 0 = the pipeline's batch(n)
    join        "now" (start at the producer's head) or "next_epoch"
                (start at a whole epoch)
    drop_last   drop each epoch's short last batch
    per_epoch   False: one iteration runs to the end of the stream;
                True: each iteration is one epoch (like DataLoader)
    pin_memory  page-lock the shared ring with cudaHostRegister (once), so
                batches stay zero-copy views and ``.cuda(non_blocking=True)``
                is an asynchronous DMA; when registration fails, a warning
                and a copy into pinned memory per batch; without CUDA
                (``torch.cuda.is_available()`` false) a warning and the
                plain CPU path
    timeout     seconds to wait for one batch (None: no limit)

    Images are read-only views of shared memory, valid until the next
    iteration; ``loader.epoch`` is the epoch of the last batch.
    """

    def __init__(self, socket, batch_size=0, join="now", drop_last=False,
                 per_epoch=False, pin_memory=False, timeout=None):
        import torch  # noqa: F401 (fail early when torch is missing)
        if join not in ("now", "next_epoch"):
            raise ValueError("join must be 'now' or 'next_epoch'")
        self._lib = load_library()
        opts = _Opts()
        self._lib.ts_client_opts_init(ctypes.byref(opts))
        opts.batch_size = int(batch_size)
        opts.join = 1 if join == "next_epoch" else 0
        opts.drop_last = 1 if drop_last else 0
        if timeout is not None:
            opts.timeout_ms = int(timeout * 1000)
        self._client = ctypes.c_void_p()
        err = _Error()
        rc = self._lib.ts_client_connect(os.fsencode(socket), ctypes.byref(opts),
                                         ctypes.byref(self._client),
                                         ctypes.byref(err))
        if rc < 0:
            self._client = None
            _raise(rc, err)
        self.info = _Info()
        self._lib.ts_client_info(self._client, ctypes.byref(self.info))
        self.batch_size = self.info.batch_size
        self.drop_last = bool(drop_last)
        self.per_epoch = per_epoch
        self.epoch = None
        self.index = None
        self._batch = _Batch()
        self._pending = False
        self._done = False
        self._pin = False
        self._pinned = None  # _Pinned once the ring is registered
        if pin_memory:
            if torch.cuda.is_available():
                self._pin = True
            else:
                warnings.warn("tsrun.Loader: pin_memory=True needs CUDA, but "
                              "torch.cuda.is_available() is false; batches stay "
                              "in pageable CPU memory", RuntimeWarning, stacklevel=2)

    def __len__(self):
        """Batches per epoch (needs a known epoch size)."""
        spe = self.info.samples_per_epoch
        if not spe:
            raise TypeError("the producer does not know its epoch size")
        if self.drop_last:
            return spe // self.batch_size
        return math.ceil(spe / self.batch_size)

    @property
    def shape(self):
        i = self.info
        if i.layout == 1:
            return (i.channels, i.height, i.width)
        return (i.height, i.width, i.channels)

    def _next_raw(self):
        err = _Error()
        rc = self._lib.ts_client_next(self._client, ctypes.byref(self._batch),
                                      ctypes.byref(err))
        if rc == _E_EOS:
            self._done = True
            return False
        if rc < 0:
            _raise(rc, err)
        return True

    def _tensors(self):
        import torch
        b = self._batch
        dtypes = {0: torch.uint8, 1: torch.int16, 2: torch.float16,
                  3: torch.float32}
        nbytes = b.n * b.sample_bytes
        buf = (ctypes.c_uint8 * nbytes).from_address(b.data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only memory: documented
            images = torch.frombuffer(buf, dtype=dtypes[b.dtype])
        images = images.view(b.n, *self.shape)
        if b.dtype == 1:
            warnings.warn("uint16 samples are returned as int16 bits",
                          RuntimeWarning, stacklevel=3)
        labels = torch.tensor(b.labels[:b.n], dtype=torch.int64)
        if self._pin:
            if self._pinned is None:
                self._pin_ring(b.data)
            if not self._pinned:
                images = images.pin_memory()  # fallback: a pinned copy
        self.epoch = b.epoch
        self.index = b.index
        return images, labels

    def __iter__(self):
        if self._client is None:
            raise TsrunError(-5012, "loader is closed")
        first = None
        while not self._done:
            if not self._pending and not self._next_raw():
                break
            self._pending = False
            if self.per_epoch:
                if first is None:
                    first = self._batch.epoch
                elif self._batch.epoch != first:
                    self._pending = True  # belongs to the next iteration
                    return
            yield self._tensors()

    def _pin_ring(self, addr):
        """Register the ring mapping holding addr (libtsclient,
        tsclient_cuda.h); on failure warn once and copy per batch."""
        lib = self._lib
        self._pinned = False
        if not hasattr(lib, "ts_client_pin_mapping"):
            warnings.warn("tsrun.Loader: this libtsclient cannot pin the ring; "
                          "copying each batch into pinned memory instead",
                          RuntimeWarning, stacklevel=4)
            return
        lib.ts_client_pin_mapping.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Pinned),
                                              ctypes.POINTER(_Error)]
        lib.ts_client_pin_mapping.restype = ctypes.c_int
        lib.ts_client_unpin.argtypes = [ctypes.POINTER(_Pinned), ctypes.POINTER(_Error)]
        lib.ts_client_unpin.restype = ctypes.c_int
        pinned, err = _Pinned(), _Error()
        rc = lib.ts_client_pin_mapping(addr, ctypes.byref(pinned), ctypes.byref(err))
        if rc < 0:
            warnings.warn("tsrun.Loader: pin_memory: %s; copying each batch into "
                          "pinned memory instead" % err.msg.decode("utf-8", "replace"),
                          RuntimeWarning, stacklevel=4)
            return
        self._pinned = pinned

    def close(self):
        """Disconnect; tensors from this loader must not be used after."""
        if getattr(self, "_pinned", None):
            # unregister before the ring is unmapped
            self._lib.ts_client_unpin(ctypes.byref(self._pinned), None)
            self._pinned = None
        if self._client is not None:
            self._lib.ts_client_close(self._client)
            self._client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
