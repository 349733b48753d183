"""tsrun - consume batches from a tsrun producer in PyTorch.

    import tsrun
    for images, labels in tsrun.Loader("/tmp/tsrun-train.sock", batch_size=64):
        ...

Pure Python over libtsclient (ctypes). ``images`` is a torch tensor that
views the producer's shared ring without a copy; it is READ-ONLY memory
and valid only until the next iteration (or ``close()``): keep it longer
with ``images.clone()``. ``labels`` is a small int64 tensor (a copy).

With ``device="cuda"`` the batches are CUDA tensors. When the producer's
pipeline ends in ``device(cuda)`` they view its device ring (finished
float NCHW samples, shared over CUDA IPC) without a copy on the producer's
GPU, or are copied peer to peer onto another one; otherwise the host
batches are copied from the pinned ring. Either way the loader waits for
the GPU (``torch.cuda.synchronize``) before it hands the slots back at
the next iteration.

libtsclient is found by itself, the first that loads of:

1. the file named by the environment variable TSRUN_LIBTSCLIENT;
2. libtsclient.so.0 next to this package;
3. the dynamic loader's libtsclient.so.0 (an installed tsrun, or
   LD_LIBRARY_PATH), or what ctypes.util.find_library("tsclient") finds;
4. when this package is imported from a tsrun source tree
   (src/python/tsrun), the newest build*/src/libtsclient.so* of that
   tree, so a trainer runs straight after ``meson compile``.

When none loads, ``load_library()`` (and so ``Loader``) raises
``LibraryNotFound``, an ``OSError`` that says what to do.
"""

import ctypes
import ctypes.util
import glob
import math
import operator
import os
import warnings

__all__ = ["Loader", "TsrunError", "ProducerGone", "LibraryNotFound",
           "load_library"]

_E_REFUSED = -5007
_E_PRODUCER = -5008
_E_EOS = -5009
_E_NODEV = -5014


class TsrunError(RuntimeError):
    """A libtsclient call failed; ``code`` is the negative return code."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class ProducerGone(TsrunError):
    """The producer died, stopped or failed before the end of the stream."""


class LibraryNotFound(OSError):
    """libtsclient could not be found or loaded; the message says where it
    looked and how to fix it (build tsrun, or set TSRUN_LIBTSCLIENT)."""


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


class _DevInfo(ctypes.Structure):
    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("capacity", ctypes.c_uint64), ("mirror", ctypes.c_uint64),
                ("producer_device", ctypes.c_int), ("producer_pid", ctypes.c_int),
                ("pci_bus_id", ctypes.c_char * 16),
                ("ipc", ctypes.c_ubyte * 64)]


class _CudaView:
    """A device span in __cuda_array_interface__ form (for torch.as_tensor,
    which then views it without a copy)."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {
            # read-only by contract (documented); torch refuses the flag
            "shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
            "strides": None, "version": 2}


_lib = None

_FIX = ("build tsrun (meson setup build && meson compile -C build) or set "
        "TSRUN_LIBTSCLIENT=/path/to/libtsclient.so.0")

# Libraries built with a sanitizer need its runtime loaded first: a plain
# dlopen of an AddressSanitizer build ends the process, so such a file is
# skipped unless the runtime is already in (an LD_PRELOAD).
_SANITIZERS = ((b"__asan_init", "AddressSanitizer"),
               (b"__tsan_init", "ThreadSanitizer"),
               (b"__msan_init", "MemorySanitizer"))


def _sanitizer_missing(path):
    """The sanitizer that path needs and this process lacks, or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None  # CDLL says why
    here = ctypes.CDLL(None)
    for sym, name in _SANITIZERS:
        if sym in data and not hasattr(here, sym.decode()):
            return name
    return None


def _source_tree_builds(here):
    """When this package is <root>/src/python/tsrun of a tsrun source
    tree: the libtsclient files of <root>/build*/src, newest first (one
    per library, not one per symlink); None when it is not one."""
    python = os.path.dirname(here)
    src = os.path.dirname(python)
    root = os.path.dirname(src)
    if (os.path.basename(python) != "python" or os.path.basename(src) != "src"
            or not os.path.isfile(os.path.join(root, "meson.build"))):
        return None
    seen, found = set(), []
    for path in glob.glob(os.path.join(glob.escape(root), "build*", "src",
                                       "libtsclient.so*")):
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real):
            continue  # a symlink to one already listed, the .p folder
        seen.add(real)
        try:
            found.append((os.stat(real).st_mtime, path))
        except OSError:
            continue
    return [path for _, path in sorted(found, reverse=True)]


def _find_library():
    """Load libtsclient from the first place that has one (see the module
    docstring), or raise LibraryNotFound naming what was tried."""
    env = os.environ.get("TSRUN_LIBTSCLIENT")
    if env:
        # An explicit choice: never silently replaced by another library.
        bad = _sanitizer_missing(env)
        if bad:
            raise LibraryNotFound(
                "cannot load libtsclient: TSRUN_LIBTSCLIENT=%s is built with %s, "
                "whose runtime this process lacks (preload it with LD_PRELOAD, or "
                "use a build without sanitizers)" % (env, bad))
        try:
            return ctypes.CDLL(env)
        except OSError as e:
            raise LibraryNotFound("cannot load libtsclient: TSRUN_LIBTSCLIENT=%s: %s; "
                                  "point it at a built libtsclient.so.0, or unset it "
                                  "to search the usual places" % (env, e)) from None
    here = os.path.dirname(os.path.abspath(__file__))
    tried = []

    def attempt(path, is_file):
        if is_file:
            if not os.path.exists(path):
                return None
            bad = _sanitizer_missing(path)
            if bad:
                tried.append("%s (built with %s)" % (path, bad))
                return None
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(str(e) if is_file else "%s: not on the loader path" % path)
            return None

    for path in (os.path.join(here, "libtsclient.so.0"),
                 os.path.join(here, "libtsclient.so")):
        lib = attempt(path, True)
        if lib is not None:
            return lib
    lib = attempt("libtsclient.so.0", False)
    if lib is not None:
        return lib
    name = ctypes.util.find_library("tsclient")
    if name and name != "libtsclient.so.0":
        lib = attempt(name, False)
        if lib is not None:
            return lib
    builds = _source_tree_builds(here)
    for path in builds or ():
        lib = attempt(path, True)
        if lib is not None:
            return lib
    if builds == []:
        tried.append("no build*/src/libtsclient.so* in the source tree")
    raise LibraryNotFound("cannot find libtsclient, the tsrun client library: %s "
                          "(tried: %s)" % (_FIX, "; ".join(tried)))


def load_library():
    """Find and load libtsclient once (see the module docstring for where
    it looks) and declare its functions. Raises LibraryNotFound (an
    OSError) when there is none to load."""
    global _lib
    if _lib is not None:
        return _lib
    lib = _find_library()
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
    if hasattr(lib, "ts_client_device_info"):
        lib.ts_client_device_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DevInfo),
                                              ctypes.POINTER(_Error)]
        lib.ts_client_device_info.restype = ctypes.c_int
    if hasattr(lib, "ts_client_device_open"):
        lib.ts_client_device_open.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_void_p),
                                              ctypes.POINTER(_Error)]
        lib.ts_client_device_open.restype = ctypes.c_int
        lib.ts_client_device_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Batch),
                                               ctypes.POINTER(ctypes.c_void_p),
                                               ctypes.POINTER(_Error)]
        lib.ts_client_device_batch.restype = ctypes.c_int
        lib.ts_client_device_zero_copy.argtypes = [ctypes.c_void_p]
        lib.ts_client_device_zero_copy.restype = ctypes.c_int
        lib.ts_client_device_copy.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Batch),
                                              ctypes.c_void_p, ctypes.POINTER(_Error)]
        lib.ts_client_device_copy.restype = ctypes.c_int
        lib.ts_client_device_close.argtypes = [ctypes.c_void_p]
        lib.ts_client_device_close.restype = None
    _lib = lib
    return lib


def _raise(code, err):
    msg = err.msg.decode("utf-8", "replace")
    if code == _E_PRODUCER:
        raise ProducerGone(code, msg)
    raise TsrunError(code, msg)


class _Pinned(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _batch_size(value):
    """A Loader's batch_size as the uint32 libtsclient takes, checked here:
    ctypes would wrap -1 into 4294967295 and 2**32 into 0 without a word."""
    what = ("batch_size must be a positive integer (or 0 for the pipeline's "
            "batch(n)), got %r" % (value,))
    if isinstance(value, bool):
        raise TypeError(what)
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(what) from None
    if n < 0 or n > 0xFFFFFFFF:
        raise ValueError(what)
    return n


class Loader:
    """Batches from a tsrun producer, as (images, labels) torch tensors.

    socket      the producer's Unix socket path
    batch_size  samples per batch, a positive integer; 0 = the pipeline's
                batch(n) (ValueError for a negative one, TypeError for
                one that is not an integer)
    join        "now" (start at the producer's head, at the next batch
                boundary of the epoch) or "next_epoch"
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
    device      None (CPU tensors) or a CUDA device ("cuda", "cuda:1", a
                torch.device): CUDA tensors, from the producer's device
                ring when it serves one (``loader.source`` says
                "device-ring (zero-copy)", "device-ring (peer copy)" or
                "host-ring (copy)"); without CUDA a warning and CPU tensors

    Images are read-only views of shared memory, valid until the next
    iteration; ``loader.epoch`` is the epoch of the last batch.
    Raises LibraryNotFound when libtsclient cannot be loaded (see the
    module docstring), TsrunError when the producer refuses or cannot be
    reached.
    """

    def __init__(self, socket, batch_size=0, join="now", drop_last=False,
                 per_epoch=False, pin_memory=False, timeout=None, device=None):
        import torch  # noqa: F401 (fail early when torch is missing)
        if join not in ("now", "next_epoch"):
            raise ValueError("join must be 'now' or 'next_epoch'")
        batch_size = _batch_size(batch_size)
        self._lib = load_library()
        opts = _Opts()
        self._lib.ts_client_opts_init(ctypes.byref(opts))
        opts.batch_size = batch_size
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
        self._device = None  # torch.device of CUDA batches
        self._dev = None     # ts_client_device handle (device ring)
        self._dev_info = None
        self._dev_copy = False  # torch cannot wrap the pointer: copy on the GPU
        self.source = "host-ring"
        if device is not None:
            self._open_device(torch, device)
            if self._device is not None and self._dev is None:
                pin_memory = True  # host batches: copy from the pinned ring
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

    def _open_device(self, torch, device):
        dev = torch.device(device)
        if dev.type != "cuda":
            raise ValueError("device must be a CUDA device such as 'cuda' or 'cuda:0', "
                             "got %r" % (device,))
        if not torch.cuda.is_available():
            warnings.warn("tsrun.Loader: device=%r, but torch.cuda.is_available() is "
                          "false; batches stay CPU tensors" % (device,),
                          RuntimeWarning, stacklevel=3)
            return
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        self._device = torch.device("cuda", index)
        torch.cuda.init()
        torch.cuda.set_device(index)
        self.source = "host-ring (copy)"
        lib = self._lib
        if not hasattr(lib, "ts_client_device_open"):
            return
        info, err = _DevInfo(), _Error()
        if lib.ts_client_device_info(self._client, ctypes.byref(info), ctypes.byref(err)) < 0:
            return  # no device ring served: host batches, copied
        handle = ctypes.c_void_p()
        rc = lib.ts_client_device_open(self._client, index, ctypes.byref(handle),
                                       ctypes.byref(err))
        if rc < 0:
            warnings.warn("tsrun.Loader: cannot open the producer's device ring: %s; "
                          "copying host batches instead"
                          % err.msg.decode("utf-8", "replace"), RuntimeWarning, stacklevel=3)
            return
        self._dev = handle
        self._dev_info = info
        zero = lib.ts_client_device_zero_copy(handle)
        self.source = "device-ring (%s)" % ("zero-copy" if zero else "peer copy")

    def _device_tensors(self):
        import torch
        b, info = self._batch, self._dev_info
        ptr, err = ctypes.c_void_p(), _Error()
        rc = self._lib.ts_client_device_batch(self._dev, ctypes.byref(b), ctypes.byref(ptr),
                                              ctypes.byref(err))
        if rc < 0:
            _raise(rc, err)
        shape = (b.n, info.channels, info.height, info.width)
        images = None
        if not self._dev_copy:
            typestr = {2: "<f2", 3: "<f4"}[info.dtype]
            try:
                images = torch.as_tensor(_CudaView(ptr.value, shape, typestr),
                                         device=self._device)
            except (TypeError, RuntimeError, ValueError) as e:
                warnings.warn("tsrun.Loader: torch cannot view the device ring (%s); "
                              "copying each batch on the GPU instead" % e,
                              RuntimeWarning, stacklevel=4)
                self._dev_copy = True
                self.source = "device-ring (device copy)"
        if images is None:
            images = torch.empty(shape, device=self._device,
                                 dtype={2: torch.float16, 3: torch.float32}[info.dtype])
            rc = self._lib.ts_client_device_copy(self._dev, ctypes.byref(b),
                                                 images.data_ptr(), ctypes.byref(err))
            if rc < 0:
                _raise(rc, err)
        labels = torch.tensor(b.labels[:b.n], dtype=torch.int64).to(self._device)
        self.epoch = b.epoch
        self.index = b.index
        return images, labels

    def _tensors(self):
        import torch
        if self._dev is not None:
            return self._device_tensors()
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
        if self._device is not None:
            images = images.to(self._device, non_blocking=True)
            labels = labels.to(self._device)
        self.epoch = b.epoch
        self.index = b.index
        return images, labels

    def _gpu_done(self):
        """Before the slots go back: the GPU work queued on the batch
        (our copy, the trainer's kernels) has finished."""
        if self._device is not None:
            import torch
            torch.cuda.synchronize(self._device)

    def __iter__(self):
        if self._client is None:
            raise TsrunError(-5012, "loader is closed")
        first = None
        while not self._done:
            if not self._pending:
                self._gpu_done()
                if not self._next_raw():
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
        if getattr(self, "_dev", None):
            self._gpu_done()
            self._lib.ts_client_device_close(self._dev)
            self._dev = None
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
