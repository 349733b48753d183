"""tsrun.serve - share any PyTorch DataLoader with every trainer on the host.

    import tsrun
    tsrun.serve(loader, socket="/tmp/tsrun-train.sock", epochs=90)

publishes the batches of ``loader`` (a DataLoader, a generator: any
iterable of ``(images, labels)``) sample by sample into a tsrun ring, served
on a Unix socket exactly as ``tsrun run`` serves a pipeline: trainers read
it with ``tsrun.Loader`` or the C client, each at its own batch size and
zero-copy, and get joins, the end of each epoch, crash handling, ``tsrun
stat``, a status line and a summary as with ``tsrun run``. The loader runs
once; each batch is copied once into the ring (never once per trainer).

For a producer that drives its own loop, the object form:

    with tsrun.Producer("/tmp/tsrun-train.sock", epochs=2) as p:
        for epoch in range(2):
            for images, labels in loader:
                p.put(images, labels)
            p.end_epoch()

The first batch fixes the sample's shape and dtype (uint8, int16, float16
or float32) and the kind of label: an integer class per sample (a 1-D
integer tensor or a list of ints, stored as int32) or a tensor per sample
of a fixed shape (a one-hot, a mask, a regression target). Every later
batch is checked against it; one that differs raises ``ValueError`` naming
the batch, and the trainers are told the producer failed. The ring and the
socket are created at the first batch (the socket appears then).

The ring and server are libtsrun's C code (tsrun_producer.h), reached by
ctypes; libtsrun is found as libtsclient is (see the package docstring):
TSRUN_LIBTSRUN, next to this package, the loader path, or the newest
build*/src/libtsrun.so* of the source tree this package is in.
"""

import ctypes
import os
import sys
import weakref

from . import _lib as _libfind
from .errors import E_ARG as _E_ARG
from .errors import E_SOURCE as _E_SOURCE
from .errors import E_STATE as _E_STATE
from .errors import E_STOPPED as _E_STOPPED
from .errors import E_TIMEDOUT as _ETIMEDOUT
from .errors import TsrunError

__all__ = ["serve", "Producer"]

_MAX_DIMS = _libfind.MAX_DIMS
_WAIT_SLICE_MS = 100     # between slices Python sees signals (Ctrl-C)
_DRAIN_MS = 30000        # as tsrun run: trainers finish reading first


# The C structures, mirrored once (_lib.py).
_Loc = _libfind.Loc
_Error = _libfind.Error
_Tensor = _libfind.ProducerTensor
_Opts = _libfind.ProducerOpts


_lib = None


def _load():
    """libtsrun with its producer API declared, or OSError (LibraryNotFound)
    saying what to do. Found by the package's one search (_lib.find_library:
    TSRUN_LIBTSRUN, next to this package, the loader path, the newest
    build*/src/libtsrun.so* of the source tree), as libtsclient is."""
    global _lib
    if _lib is not None:
        return _lib
    lib = _libfind.find_library(
        "tsrun", "TSRUN_LIBTSRUN",
        "build tsrun (meson setup build && meson compile -C build) or set "
        "TSRUN_LIBTSRUN=/path/to/libtsrun.so.0", symbol="ts_producer_create",
        what="libtsrun for tsrun.serve")
    E = ctypes.POINTER(_Error)
    vp = ctypes.c_void_p
    lib.ts_producer_opts_init_size.argtypes = [ctypes.POINTER(_Opts), ctypes.c_size_t]
    lib.ts_producer_opts_init_size.restype = None
    lib.ts_producer_create.argtypes = [ctypes.POINTER(_Opts), ctypes.POINTER(vp), E]
    lib.ts_producer_create.restype = ctypes.c_int
    lib.ts_producer_socket.argtypes = [vp]
    lib.ts_producer_socket.restype = ctypes.c_char_p
    lib.ts_producer_capacity.argtypes = [vp]
    lib.ts_producer_capacity.restype = ctypes.c_uint64
    lib.ts_producer_consumers.argtypes = [vp]
    lib.ts_producer_consumers.restype = ctypes.c_uint
    lib.ts_producer_wait.argtypes = [vp, ctypes.c_size_t, ctypes.c_int, E]
    lib.ts_producer_wait.restype = ctypes.c_int
    lib.ts_producer_put.argtypes = [vp, vp, vp, vp, ctypes.c_size_t, E]
    lib.ts_producer_put.restype = ctypes.c_int
    lib.ts_producer_end_epoch.argtypes = [vp, E]
    lib.ts_producer_end_epoch.restype = ctypes.c_int
    lib.ts_producer_finish.argtypes = [vp, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.ts_producer_finish.restype = None
    lib.ts_producer_forked.argtypes = [vp]
    lib.ts_producer_forked.restype = None
    lib.ts_producer_destroy.argtypes = [vp]
    lib.ts_producer_destroy.restype = None
    _lib = lib
    return lib


def _dtypes(torch):
    # the ring's element types (enum ts_dtype); uint16 travels as
    # int16 bits, which is what tsrun.Loader hands back
    return {torch.uint8: 0, torch.int16: 1, torch.float16: 2, torch.float32: 3}


_INT_DTYPES = ("torch.int8", "torch.int16", "torch.int32", "torch.int64",
               "torch.uint8")


def _spec(shape, dtype):
    return "%s %s" % (tuple(shape), str(dtype).replace("torch.", ""))


class Producer:
    """Publish batches into a tsrun ring served on ``socket``.

    socket      the Unix socket trainers connect to
    epochs      how many epochs will be published (0: not known; trainers
                see an open-ended stream)
    ring        ring size in batches of the first batch's size (how far
                the fastest trainer may run ahead of the slowest); a
                trainer's batch may be up to half the ring
    wait        trainers to wait for before the first sample is published
                (as ``tsrun run --wait``); the first batch is loaded
                meanwhile
    samples_per_epoch   what trainers' ``len()`` uses (0: unknown)
    batch_size  what a trainer asking for batch 0 gets (default: the
                first batch's size)
    name        shown by the status line, the summary and ``tsrun stat``
    quiet       no status line and no summary (the status file for ``tsrun
                stat`` is still written)
    stall_timeout   seconds a trainer may hold the ring without releasing
                while another waits on it; then it is detached (it gets
                tsrun.Detached, the others go on); 0: wait forever; as the
                serve setting of tsrun-pipeline(5)
    consumers   trainers served at once, 1 to 64

    ``put(images, labels)`` publishes one batch (blocking while the ring
    is full), ``end_epoch()`` ends an epoch (trainers get its short last
    batch now), ``close()`` ends the stream and waits for connected
    trainers to read it (up to 30 s, as ``tsrun run``). Used as a context
    manager, an exception inside the block ends the stream with an error
    instead (trainers get ``ProducerGone``), Ctrl-C with "stopped".
    """

    def __init__(self, socket, epochs=0, ring=8, wait=1, samples_per_epoch=0,
                 batch_size=None, name=None, quiet=False, stall_timeout=120, consumers=64):
        import torch
        self._torch = torch
        self.socket = os.fspath(socket)
        for what, v, lo in (("epochs", epochs, 0), ("ring", ring, 2), ("wait", wait, 0),
                            ("samples_per_epoch", samples_per_epoch or 0, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError("tsrun.Producer: %s must be an integer >= %d, got %r"
                                 % (what, lo, v))
        self.epochs = epochs
        self._ring_batches = ring
        self._wait = wait
        self._spe = samples_per_epoch or 0
        self._batch_size = batch_size
        self._name = name or "loader"
        self._quiet = quiet
        if isinstance(stall_timeout, bool) or not isinstance(stall_timeout, (int, float)) \
                or not 0 <= stall_timeout <= 86400:
            raise ValueError("tsrun.Producer: stall_timeout must be 0 (never) to 86400 "
                             "seconds, got %r" % (stall_timeout,))
        if isinstance(consumers, bool) or not isinstance(consumers, int) \
                or not 1 <= consumers <= 64:
            raise ValueError("tsrun.Producer: consumers must be an integer 1..64, got %r"
                             % (consumers,))
        self._stall_timeout = float(stall_timeout)
        self._consumers = consumers
        self._p = None
        self._sample = None     # (shape, dtype) fixed by the first batch
        self._label = None      # None: int classes; else (shape, dtype)
        self._chunk = None
        self.batches = 0        # put so far, over all epochs
        self.epoch = 0
        self._epoch_batches = 0
        self._closed = False
        self._lib = _load()

    # -- the first batch fixes the shapes -----------------------------------

    def _open(self, images, labels, label_tensor):
        lib = self._lib
        o = _Opts()
        lib.ts_producer_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        o.socket_path = os.fsencode(self.socket)
        o.name = self._name.encode()
        o.file = ("tsrun.serve (%s)" % os.path.basename(sys.argv[0] or "python")).encode()
        shape, dtype = self._sample
        o.sample.ndim = len(shape)
        o.sample.dtype = _dtypes(self._torch)[dtype]
        for i, d in enumerate(shape):
            o.sample.dims[i] = d
        if label_tensor:
            lshape, ldtype = self._label
            o.label_tensor = 1
            o.label.ndim = len(lshape)
            o.label.dtype = _dtypes(self._torch)[ldtype]
            for i, d in enumerate(lshape):
                o.label.dims[i] = d
        bs = self._batch_size or images.shape[0]
        o.batch = bs
        o.ring = self._ring_batches
        o.epochs = self.epochs
        o.samples_per_epoch = self._spe
        o.wait = self._wait
        o.quiet = 1 if self._quiet else 0
        o.stall_timeout = self._stall_timeout
        o.consumers = self._consumers
        try:
            o.status_fd = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            o.status_fd = -1
        p, err = ctypes.c_void_p(), _Error()
        rc = lib.ts_producer_create(ctypes.byref(o), ctypes.byref(p), ctypes.byref(err))
        if rc < 0:
            raise TsrunError(rc, "tsrun.serve: %s" % err.msg.decode("utf-8", "replace"))
        self._p = p
        # A DataLoader forks its workers after this (each epoch): they
        # must not keep the socket open, or a dead producer would not
        # hang up on its trainers, nor refuse new ones, until they exit.
        me = weakref.ref(self)

        def forked():
            prod = me()
            if prod is not None and prod._p is not None:
                prod._lib.ts_producer_forked(prod._p)
                prod._p = None        # the child never finishes the stream
                prod._closed = True
        os.register_at_fork(after_in_child=forked)
        cap = lib.ts_producer_capacity(p)
        # Never wait for more than half the ring at once: a trainer may
        # hold up to half of it while it waits for its next batch.
        self._chunk = max(1, cap // 2)
        if not self._quiet:
            sys.stderr.write("tsrun.serve: serving %s samples (labels: %s) on %s, ring %d "
                             "samples (%d batches of %d); waiting for %d trainer%s\n"
                             % (_spec(shape, dtype),
                                "int class" if not label_tensor else _spec(*self._label),
                                lib.ts_producer_socket(p).decode(), cap,
                                self._ring_batches, bs, self._wait,
                                "" if self._wait == 1 else "s"))
            sys.stderr.flush()

    def _where(self):
        return "batch %d of epoch %d" % (self._epoch_batches, self.epoch)

    def _check(self, images, labels):
        """The batch as (contiguous images, int32 labels or None, label
        tensors or None), checked against the first batch."""
        torch = self._torch
        if not isinstance(images, torch.Tensor):
            raise TypeError("tsrun.serve: %s: images are a %s, not a torch.Tensor; the loader "
                            "must yield (tensor, labels) batches"
                            % (self._where(), type(images).__name__))
        if images.dim() < 1 or images.shape[0] < 1:
            raise ValueError("tsrun.serve: %s: images of shape %s have no batch dimension "
                             "(or an empty batch)" % (self._where(), tuple(images.shape)))
        n = images.shape[0]
        shape, dtype = tuple(images.shape[1:]), images.dtype
        if dtype not in _dtypes(torch):
            raise ValueError("tsrun.serve: %s: images are %s; the ring carries uint8, int16, "
                             "float16 or float32 (convert in the Dataset's transform, e.g. "
                             ".float())" % (self._where(), str(dtype).replace("torch.", "")))
        if len(shape) > _MAX_DIMS:
            raise ValueError("tsrun.serve: %s: samples of %d dimensions; the ring takes up "
                             "to %d" % (self._where(), len(shape), _MAX_DIMS))
        if self._sample is not None and (shape, dtype) != self._sample:
            raise ValueError("tsrun.serve: %s has samples of %s, but the first batch fixed "
                             "%s: every batch must have the same sample shape and dtype "
                             "(resize or crop in the Dataset's transform, or pad in a "
                             "collate_fn)" % (self._where(), _spec(shape, dtype),
                                              _spec(*self._sample)))
        if not isinstance(labels, torch.Tensor):
            try:
                labels = torch.as_tensor(labels)
            except (TypeError, ValueError, RuntimeError) as e:
                raise TypeError("tsrun.serve: %s: labels must be a tensor or a list of "
                                "ints (%s)" % (self._where(), e)) from None
        if labels.dim() < 1 or labels.shape[0] != n:
            raise ValueError("tsrun.serve: %s: %d images but labels of shape %s: one label "
                             "per sample" % (self._where(), n, tuple(labels.shape)))
        is_class = labels.dim() == 1 and str(labels.dtype) in _INT_DTYPES
        label_kind = None if is_class else (tuple(labels.shape[1:]), labels.dtype)
        if self._sample is not None and label_kind != self._label:
            first = "int class" if self._label is None else _spec(*self._label)
            now = "int class" if label_kind is None else _spec(*label_kind)
            raise ValueError("tsrun.serve: %s has labels of %s per sample, but the first "
                             "batch fixed %s: every batch must have the same kind of label"
                             % (self._where(), now, first))
        if label_kind is not None and labels.dtype not in _dtypes(torch):
            raise ValueError("tsrun.serve: %s: label tensors are %s; the ring carries uint8, "
                             "int16, float16 or float32 (or give one integer class per "
                             "sample, a 1-D integer tensor)"
                             % (self._where(), str(labels.dtype).replace("torch.", "")))
        if label_kind is not None and len(label_kind[0]) > _MAX_DIMS:
            raise ValueError("tsrun.serve: %s: label tensors of %d dimensions; the ring "
                             "takes up to %d" % (self._where(), len(label_kind[0]), _MAX_DIMS))
        if images.device.type != "cpu":
            images = images.cpu()        # a copy: the ring is host memory
        images = images.contiguous()     # a copy only when it is not already
        if is_class:
            if n and (int(labels.min()) < -2**31 or int(labels.max()) >= 2**31):
                raise ValueError("tsrun.serve: %s: a class label outside int32 (%d..%d)"
                                 % (self._where(), int(labels.min()), int(labels.max())))
            return images, labels.to(device="cpu", dtype=torch.int32).contiguous(), None, \
                (shape, dtype), None
        return images, None, labels.cpu().contiguous(), (shape, dtype), label_kind

    # -- publishing -----------------------------------------------------------

    def put(self, images, labels):
        """Publish one batch: images [B, ...] and B labels. Blocks while the
        ring is full (the slowest trainer holds it), in slices so that
        Ctrl-C gets through."""
        if self._closed:
            raise TsrunError(_E_STATE, "tsrun.serve: put() after close()")
        images, classes, ltensors, sample, label_kind = self._check(images, labels)
        if self._p is None:
            self._sample, self._label = sample, label_kind
            self._open(images, labels, label_kind is not None)
        lib, p, err = self._lib, self._p, _Error()
        n = images.shape[0]
        sb = images.element_size() * images[0].numel()
        lb = 0 if ltensors is None else ltensors.element_size() * ltensors[0].numel()
        base = images.data_ptr()
        cbase = classes.data_ptr() if classes is not None else None
        lbase = ltensors.data_ptr() if ltensors is not None else None
        done = 0
        while done < n:
            k = min(self._chunk, n - done)
            while True:
                rc = lib.ts_producer_wait(p, k, _WAIT_SLICE_MS, ctypes.byref(err))
                if rc != _ETIMEDOUT:
                    break
            if rc < 0:
                raise TsrunError(rc, "tsrun.serve: %s" % err.msg.decode("utf-8", "replace"))
            rc = lib.ts_producer_put(p, base + done * sb,
                                     None if cbase is None else cbase + done * 4,
                                     None if lbase is None else lbase + done * lb,
                                     k, ctypes.byref(err))
            if rc < 0:
                raise TsrunError(rc, "tsrun.serve: %s" % err.msg.decode("utf-8", "replace"))
            done += k
        self.batches += 1
        self._epoch_batches += 1

    def end_epoch(self):
        """End the current epoch: trainers get its short last batch now and
        the next put() starts the next epoch at index 0."""
        if self._p is not None:
            err = _Error()
            rc = self._lib.ts_producer_end_epoch(self._p, ctypes.byref(err))
            if rc < 0:
                raise TsrunError(rc, "tsrun.serve: %s" % err.msg.decode("utf-8", "replace"))
        if self._epoch_batches:
            self.epoch += 1
        self._epoch_batches = 0

    def __repr__(self):
        sample = ("%s %s" % ("x".join(str(d) for d in self._sample[0]),
                             str(self._sample[1]).replace("torch.", ""))
                  if self._sample else "not fixed yet (no batch)")
        return ("<tsrun.Producer socket=%r sample=%s epochs=%s epoch=%d batches=%d "
                "consumers=%d%s>" % (self.socket, sample, self.epochs or "until the end",
                                     self.epoch, self.batches, self.consumers,
                                     " closed" if self._closed else ""))

    @property
    def consumers(self):
        """Trainers connected now."""
        return self._lib.ts_producer_consumers(self._p) if self._p is not None else 0

    def close(self, status=0, drain=True, reason=None):
        """End the stream (status 0) or fail it (a negative tsrun code:
        trainers get ProducerGone, with reason in its message), wait for
        trainers to read what is published (up to 30 s), print the
        summary, close the socket."""
        if self._closed:
            return
        self._closed = True
        if self._p is not None:
            why = reason.encode("utf-8", "replace")[:255] if reason else None
            self._lib.ts_producer_finish(self._p, status, why, _DRAIN_MS if drain else 0)
            self._lib.ts_producer_destroy(self._p)
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        elif issubclass(kind, (KeyboardInterrupt, SystemExit)):
            self.close(_E_STOPPED, drain=False)
        else:
            text = str(value) or kind.__name__
            if not text.startswith("tsrun.serve"):
                text = "tsrun.serve: the loader raised %s: %s" % (kind.__name__, text)
            self.close(_E_SOURCE, drain=False, reason=text)
        return False

    def __del__(self):
        try:
            self.close(_E_STOPPED, drain=False)
        except Exception:
            pass


def _samples_per_epoch(loader):
    """A DataLoader's samples per epoch when it knows them, else 0."""
    try:
        sampler = getattr(loader, "sampler", None)
        bs = getattr(loader, "batch_size", None)
        if sampler is None or not bs or getattr(loader, "batch_sampler", None) is None:
            return 0
        if type(loader.batch_sampler).__name__ != "BatchSampler":
            return 0
        n = len(sampler)
        return (n // bs) * bs if loader.drop_last else n
    except (TypeError, AttributeError, NotImplementedError):
        return 0


def serve(loader, socket, epochs=1, ring=8, wait=1, samples_per_epoch=None,
          batch_size=None, name=None, quiet=False, stall_timeout=120, consumers=64):
    """Publish ``epochs`` passes of ``loader`` (0: until it is exhausted
    for good, one pass per epoch, forever for a re-iterable loader) into a
    tsrun ring on ``socket``, then end the stream and wait for the
    trainers to read it. Each pass is one epoch; a generator (one pass
    only) is one epoch. Returns the number of batches published.

    ``ring``, ``wait``, ``batch_size``, ``name``, ``quiet``,
    ``stall_timeout`` and ``consumers`` are as for ``Producer``; ``samples_per_epoch`` defaults to what a DataLoader
    knows (its sampler's length, less drop_last's tail), else unknown.
    A loader that raises, or a batch of another shape, fails the stream
    for the trainers (ProducerGone) and raises here.
    """
    once = hasattr(loader, "__next__")   # a generator or iterator: one pass
    if once and epochs not in (0, 1):
        raise ValueError("tsrun.serve: a %s can be iterated once, so epochs must be 1 (or "
                         "0), got %r; pass a re-iterable loader (a DataLoader) or drive a "
                         "tsrun.Producer" % (type(loader).__name__, epochs))
    if samples_per_epoch is None:
        samples_per_epoch = _samples_per_epoch(loader)
    p = Producer(socket, epochs=epochs if not once else 1, ring=ring, wait=wait,
                 samples_per_epoch=samples_per_epoch, batch_size=batch_size,
                 name=name or type(loader).__name__, quiet=quiet,
                 stall_timeout=stall_timeout, consumers=consumers)
    with p:
        e = 0
        while epochs == 0 or e < epochs:
            before = p.batches
            for batch in loader:
                if not isinstance(batch, (tuple, list)) or len(batch) != 2:
                    raise TypeError("tsrun.serve: %s is a %s; the loader must yield "
                                    "(images, labels) pairs"
                                    % (p._where(), type(batch).__name__))
                p.put(batch[0], batch[1])
            p.end_epoch()
            e += 1
            if once or p.batches == before:
                break   # one pass only, or a pass that yielded nothing
    return p.batches
