"""tsrun.Loader: batches of a tsrun producer as PyTorch tensors, with the
iteration contract of torch.utils.data.DataLoader (one pass = one epoch,
len(), drop_last, timeout, state_dict)."""

import ctypes
import errno
import math
import operator
import re
import os
import time
import warnings

from . import _lib
from . import _tensors as _shapes
from . import mixup as _mixup
from ._batches import Keeper
from . import errors as _lib_errors
from .errors import (E_AGAIN, E_EOS, E_STATE, E_TIMEDOUT, TsrunError, Timeout,
                     raise_for)

# The longest libtsclient wait: between two waits Python runs its signal
# handlers, so Ctrl-C raises KeyboardInterrupt within this (and the
# loader's own timeout is kept to this precision).
_SLICE_MS = 50

_DTYPES = {0: "uint8", 1: "int16", 2: "float16", 3: "float32"}


def _pinned_labels(torch, b):
    """b's labels as int64 in pinned memory, so that their copy to the GPU
    is queued on the current stream (non_blocking) rather than a copy from
    pageable memory that waits on the host for the GPU (every batch would
    then drain the pipeline). PyTorch's caching host allocator keeps the
    pinned block until that copy has run."""
    return torch.tensor(b.labels[:b.n], dtype=torch.int64).pin_memory()


def _fallback_convert(fb):
    """uint8 NHWC -> the dtype and normalization device(cuda) promised,
    NCHW: y = (x / 255 - mean[c]) / std[c] (x / 255 without mean/std),
    where the batch is (the trainer's GPU when it has one)."""
    import torch
    dtype = {2: torch.float16, 3: torch.float32}[fb.dtype]
    mean, std = list(fb.mean), list(fb.std)

    def convert(images):
        x = images.permute(0, 3, 1, 2).to(torch.float32).div_(255)
        if fb.normalize:
            c = x.shape[1]
            m = torch.tensor(mean[:c], device=x.device).view(1, c, 1, 1)
            s = torch.tensor(std[:c], device=x.device).view(1, c, 1, 1)
            x = x.sub_(m).div_(s)
        return x.to(dtype).contiguous()
    return convert


class _CudaView:
    """A device span in __cuda_array_interface__ form (for torch.as_tensor,
    which then views it without a copy, and keeps this object while a
    tensor views it): a hold on the device ring's mapping for as long."""

    def __init__(self, lib, dev, ptr, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {
            # read-only by contract (raw_views); torch refuses the flag
            "shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
            "strides": strides, "version": 2}
        self._lib, self._dev = lib, dev
        lib.ts_client_device_hold(dev)

    def __del__(self):
        try:
            self._lib.ts_client_device_unhold(self._dev)
        except Exception:  # interpreter shutdown
            pass


def _device_strides(info):
    """The byte strides of a [n, C, H, W] view of the device ring (a
    _lib.DevInfo): samples sample_stride apart (slots padded to 16 bytes,
    tensorsocket(7)), each sample contiguous; None (contiguous) where the
    slots are packed."""
    es = 2 if info.dtype == 2 else 4
    ss = info.sample_stride or info.sample_bytes
    if ss == info.sample_bytes:
        return None
    return (ss, info.height * info.width * es, info.width * es, es)


def _node_share(lib, client):
    """(node, count) of the producer's shard() (ts_client_node); (0, 0)
    without one or from a library older than the call."""
    if not hasattr(lib, "ts_client_node"):
        return 0, 0
    lib.ts_client_node.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32),
                                   ctypes.POINTER(ctypes.c_uint32)]
    lib.ts_client_node.restype = None
    index, count = ctypes.c_uint32(), ctypes.c_uint32()
    lib.ts_client_node(client, ctypes.byref(index), ctypes.byref(count))
    return index.value, count.value


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


def _timeout(value):
    if value is None:
        return None
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise TypeError("timeout must be a number of seconds or None, got %r"
                        % (value,)) from None
    if not t > 0 or math.isinf(t):
        raise ValueError("timeout must be a positive number of seconds (or None "
                         "for no limit), got %r" % (value,))
    return t


def _connect(lib, socket, opts, client, err, connect_timeout):
    """ts_client_connect, tried again every 50 ms while there is no socket
    at the path, or nobody serves it, for up to connect_timeout seconds
    (Loader's connect_timeout). Returns its code; err says, after a wait,
    how long it waited."""
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)) \
            or not 0 <= connect_timeout < math.inf:
        raise ValueError("connect_timeout must be a number of seconds >= 0 (0: try "
                         "once), got %r" % (connect_timeout,))
    deadline = time.monotonic() + connect_timeout
    waiting = (-errno.ENOENT, -errno.ECONNREFUSED)
    while True:
        rc = lib.ts_client_connect(os.fsencode(socket), ctypes.byref(opts),
                                   ctypes.byref(client), ctypes.byref(err))
        if rc == -errno.ENOTSOCK:
            _not_a_socket(socket, rc)
        if rc >= 0 or rc not in waiting or not connect_timeout:
            return rc
        if time.monotonic() >= deadline:
            msg = err.msg.decode("utf-8", "replace")
            err.msg = ("%s, after waiting %g s for it (connect_timeout=%g)"
                       % (msg, connect_timeout, connect_timeout)).encode()[:255]
            return rc
        time.sleep(0.05)


def _not_a_socket(path, rc):
    """Raise TsrunError for a Loader pointed at a file that is not a
    socket: a pipeline file names the socket its serve block serves."""
    where = ""
    try:
        with open(path, "rb") as f:
            m = re.search(rb'\bsocket\s*=\s*"([^"\n]+)"', f.read(1 << 20))
        if m:
            where = ' = "%s"' % m.group(1).decode("utf-8", "replace")
    except OSError:
        pass
    raise TsrunError(rc, "cannot connect to %s: it is not a socket (a pipeline file? start "
                         "`tsrun run %s` and point the Loader at its socket%s)"
                     % (path, path, where or ", the serve block's socket = ..."))


def _job_args(job, rank, world_size):
    """(job, rank, world_size) of a Loader, the torchrun defaults filled
    in; ValueError saying what is missing."""
    if job is None:
        if rank is not None or world_size is not None:
            raise ValueError("rank and world_size are for a job: give job= too")
        return None, None, None
    if not isinstance(job, str) or not job:
        raise ValueError("job must be a non-empty string, got %r" % (job,))
    for name, value, env in (("rank", rank, "LOCAL_RANK"),
                             ("world_size", world_size, "LOCAL_WORLD_SIZE")):
        if value is None:
            text = os.environ.get(env)
            if text is None or not text.strip().isdigit():
                raise ValueError(
                    "job=%r needs %s: pass %s=, or start the trainer with "
                    "torchrun, which sets %s (%s is %s)"
                    % (job, name, name, env, env,
                       "not set" if text is None else repr(text)))
            value = int(text)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("%s must be a non-negative integer, got %r" % (name, value))
        if name == "rank":
            rank = value
        else:
            world_size = value
    return job, rank, world_size


class Loader:
    """Batches from a tsrun producer, as (images, labels) torch tensors.

    socket      the producer's Unix socket path
    batch_size  samples per batch, a positive integer; 0 = the pipeline's
                batch(n) (ValueError for a negative one, TypeError for
                one that is not an integer)
    join        "next_epoch" (the default: start at a whole epoch, the
                current one when its start is still in the ring, else
                the next) or "now" (start at the producer's head, at the
                next batch boundary of the epoch)
    drop_last   drop each epoch's short last batch
    pin_memory  batches in pinned memory, so ``.cuda(non_blocking=True)``
                is an asynchronous DMA: a copy into pinned memory; with
                raw_views, the shared ring itself is page-locked
                (cudaHostRegister, once) and the slots of a batch go back
                only once the work queued on the current CUDA stream (the
                trainer's copies) is done; without CUDA a warning and
                the plain CPU path
    timeout     seconds to wait for one batch (None: no limit); Timeout
                (a TsrunError and a TimeoutError) when none came
    device      None (CPU tensors) or a CUDA device ("cuda", "cuda:1", a
                torch.device): CUDA tensors, the trainer's own: copied on
                the GPU from the producer's device ring when it serves one
                (``loader.source`` "device-ring (device copy)"), else
                from the pinned host ring ("host-ring (copy)"); without
                CUDA a warning and CPU tensors
    outstanding  with a device ring: how many batches (1 to 8, default 2)
                may be out at once, so that the host takes the next batch
                while the GPU still copies or reads the last one; each
                goes back once the work recorded on it has finished
    device_fallback  "raise" (the default) or "convert": when the
                producer's pipeline ends in device(cuda) but it serves the
                CPU ring's uint8 NHWC samples instead (no usable GPU
                there; the welcome says why), Loader(device=...) raises
                TsrunError with the producer's reason, or with "convert"
                warns and finishes each batch here as device(cuda)
                promised (float NCHW, normalized; ``source``
                "host-ring (converted: device fallback)"). Without device
                the uint8 batches are handed out as they are.
    raw_views   False (the default): every batch is an ordinary tensor
                (below). True: read-only zero-copy views of the shared
                ring, valid only until the next batch is asked for; a
                write to one ends the process with SIGSEGV, a read after
                that returns other samples or, after close(), ends it too.
                With device, raw views of the device ring
                ("device-ring (zero-copy)" or "(peer copy)"): a write
                there changes every trainer's batch. Such a view has the
                ring's sample stride (device slots are padded to 16
                bytes, tensorsocket(7)): for a sample size that is not
                a multiple of 16 bytes it is not contiguous (call
                .contiguous() where a kernel needs it); the default
                device batches are contiguous.
    job         None (a lone trainer: the whole stream) or the name of a
                data-parallel job whose ranks split every epoch
                (tensorsocket(7)): this trainer is rank ``rank`` of
                ``world_size``; each rank reads a disjoint share, the
                shares equal in length (``ceil(M / world_size)`` samples,
                padded by repeating a few at the epoch's end, or
                ``floor(M / world_size)`` with ``job_drop_last=True``, as
                DistributedSampler's drop_last) and together the epoch.
                rank and world_size default to LOCAL_RANK and
                LOCAL_WORLD_SIZE as torchrun sets them (the ranks on this
                node, which read this node's tsrun). Every rank must give
                the same batch_size, join, drop_last and job_drop_last.
                len(loader) counts this rank's batches. When another rank leaves before the end, iteration raises
                JobFailed
    mixup       None, or a tsrun.Mixup: every batch is mixed (Mixup,
                CutMix, label smoothing) as it is handed out, its draws
                keyed by the Mixup's seed and the batch's (epoch, index),
                the index its position in the whole epoch under shard()
                (node + count * index: the nodes do not mix alike),
                so a rerun mixes alike; labels are then the soft targets,
                float32 (n, num_classes). The mix is written into the
                batch the loader hands out (the trainer's own copy-on-write
                pages, or its copy), never into the ring; with raw_views
                the batch is first copied. Needs float32 image samples
                (any float on a device ring) and integer labels
    connect_timeout  seconds to wait for the producer's socket to appear
                (or, for a stale socket file, to be served again) before
                giving up; 0 (the default) tries once. A trainer started
                before ``tsrun run`` needs no polling loop of its own. A
                path that is not a socket (the pipeline file) fails at
                once, saying so

    A batch (the default) is safe like any tensor: in-place ops work and
    never reach the ring or another trainer (CPU batches are private
    copy-on-write mappings of the ring: reading them is zero-copy, a
    write copies only the pages it touches), a batch kept longer keeps
    its values (one the trainer still holds when the loader waits for the
    next one but one, or at close(), is copied out of the ring once), and
    no tensor op can crash, also after close() or the producer's death.
    With pin_memory and no device, each batch is a copy in pinned memory
    (as DataLoader's pin_memory makes), and its slots go back at once.

    A views(...) pipeline (tsrun-pipeline(5), VIEWS) yields ``(views,
    labels)`` instead: a list of one tensor per view, in view order, each
    [B, C, h, w] (nchw views) as DINO's and SwAV's multi-crop loops take
    them; ``loader.views`` lists their (shape, dtype). mixup= is refused
    for them.

    Each ``for images, labels in loader`` is one epoch of the stream (the
    first one from where this trainer joined); the stream's end ends the
    last one, and later passes yield nothing. ``len(loader)`` is the
    number of batches the current (or next) pass yields. ``loader.epoch``
    is the epoch of the current pass; ``state_dict()`` the position to
    resume from. Ctrl-C while waiting raises KeyboardInterrupt within
    about 50 ms.

    Raises LibraryNotFound when libtsclient cannot be loaded, TsrunError
    when the producer refuses or cannot be reached, ProducerGone (with
    the producer's reason) when it fails or dies mid-stream, Detached
    when the producer detached this trainer for holding the ring past its
    serve setting stall_timeout while others waited (a new Loader joins
    again, as a late trainer).
    """

    def __init__(self, socket, batch_size=0, join="next_epoch", drop_last=False,
                 pin_memory=False, timeout=None, device=None, raw_views=False,
                 job=None, rank=None, world_size=None, job_drop_last=False,
                 mixup=None, connect_timeout=0, device_fallback="raise", outstanding=2):
        self._client = None
        # what load_state_dict connects with again, a resume added
        self._args = dict(socket=socket, batch_size=batch_size, join=join,
                          drop_last=drop_last, pin_memory=pin_memory, timeout=timeout,
                          device=device, raw_views=raw_views, job=job, rank=rank,
                          world_size=world_size, job_drop_last=job_drop_last,
                          mixup=mixup, connect_timeout=connect_timeout,
                          device_fallback=device_fallback, outstanding=outstanding)
        self._setup(None, **self._args)

    def _setup(self, _resume, socket, batch_size, join, drop_last, pin_memory, timeout,
               device, raw_views, job, rank, world_size, job_drop_last, mixup,
               connect_timeout, device_fallback, outstanding):
        """__init__, with _resume (epoch, index, epochs_left or None) for
        load_state_dict's connection, which the hello then carries."""
        import torch  # noqa: F401 (fail early when torch is missing)
        if join not in ("now", "next_epoch"):
            raise ValueError("join must be 'now' or 'next_epoch', got %r" % (join,))
        batch_size = _batch_size(batch_size)
        job, rank, world_size = _job_args(job, rank, world_size)
        self._timeout = _timeout(timeout)
        self._lib = _lib.load_library()
        opts = _lib.Opts()
        self._lib.ts_client_opts_init_size(ctypes.byref(opts), ctypes.sizeof(opts))
        opts.batch_size = batch_size
        opts.join = 1 if join == "next_epoch" else 0
        self._join = join
        opts.drop_last = 1 if drop_last else 0
        opts.timeout_ms = _SLICE_MS
        self.job, self.rank, self.world_size = job, rank, world_size
        if job is not None:
            self._job_name = os.fsencode(job)  # kept alive for the call
            opts.job = self._job_name
            opts.rank = rank
            opts.world_size = world_size
            opts.job_drop_last = 1 if job_drop_last else 0
        self._job_drop = bool(job_drop_last)
        if _resume is not None:
            # load_state_dict: begin at the saved position, or at its
            # index of a later epoch when the ring has moved past it
            opts.resume = 1
            opts.resume_epoch, opts.resume_index, left = _resume
            if left is not None:
                opts.has_resume_epochs = 1
                opts.resume_epochs = left
        self.socket = os.fspath(socket)
        client = ctypes.c_void_p()
        err = _lib.Error()
        rc = _connect(self._lib, socket, opts, client, err, connect_timeout)
        if rc < 0:
            raise_for(rc, err)
        self._client = client
        self.info = _lib.Info()
        self._lib.ts_client_info(self._client, ctypes.byref(self.info))
        self._node = _node_share(self._lib, self._client)
        self.batch_size = self.info.batch_size
        self.drop_last = bool(drop_last)
        self.epoch = None      # epoch of the current (or last) pass
        self.index = None      # index in its epoch of the last batch's first
        self._pending = None   # a batch read but not yielded yet
        self._done = False     # the stream ended
        self._pass_index = None  # first index of the pass in progress
        self._next_pos = None    # (epoch, index) of the next sample unread
        self._resume = None      # (epoch, index) load_state_dict asked for
        self._pin = False
        self._pinned = None  # Pinned once the ring is registered
        self._device = None  # torch.device of CUDA batches
        self._dev = None     # ts_client_device handle (device ring)
        self._dev_info = None
        self._dev_copy = False  # torch cannot wrap the pointer: copy on the GPU
        self._raw = bool(raw_views)
        self._keeper = None  # the held batches of the safe CPU path
        self._event = None   # our last copy out of the pinned ring (CUDA)
        self._warned_copy = False
        self.source = "host-ring"
        # any rank, and label tensors, for tsrun.serve producers
        self._dims, self._label = _shapes.describe(self._lib, self._client)
        # views(...): a list of one tensor per view instead of one tensor
        self._views = _shapes.views(self._lib, self._client)
        self.mixup = None
        self._convert = None  # device_fallback="convert": the promised finish
        if device is not None:
            self._check_fallback(device, device_fallback)
            self._open_device(torch, device)
            self._set_outstanding(outstanding)
            if self._device is not None and self._dev is None:
                pin_memory = True  # host batches: copy from the pinned ring
        if pin_memory:
            if torch.cuda.is_available():
                self._pin = True
            else:
                warnings.warn("tsrun.Loader: pin_memory=True needs CUDA, but "
                              "torch.cuda.is_available() is false; batches stay "
                              "in pageable CPU memory", RuntimeWarning, stacklevel=2)
        if mixup is not None and self._views:
            self.close()
            raise ValueError("tsrun.Loader: mixup= with a views(...) pipeline: mix each "
                             "view of loader's batches with tsrun.Mixup yourself")
        if mixup is not None:
            _mixup.check_loader(mixup, self._label, self.shape, self.info.dtype,
                                self._dev is not None)
            self.mixup = mixup
        if not self._raw and self._device is None and not self._pin:
            self._keeper = Keeper(self._lib, self._client, self.info.capacity,
                                  self.batch_size)

    # ---- the iteration contract ------------------------------------------

    def _epoch_batches(self, index):
        """Batches a pass yields when it starts at sample index of an epoch
        (a batch boundary: the reader aligns joiners to one)."""
        spe = self.info.samples_per_epoch
        if self.job is not None:
            return self._job_batches(index)
        left = max(spe - index, 0)
        if self.drop_last:
            return left // self.batch_size
        return -(-left // self.batch_size)

    def _job_batches(self, index):
        """A rank's batches from index of an epoch: its spans (the rule of
        runtime/share/share.h) that start there or later. Full round j
        (j < R) gives rank r the batch at (j * w + r) * B; the rest m of
        the epoch gives each rank one span of q = m // w (job_drop_last)
        or ceil(m / w) samples at min(R * w * B + r * q, M - q), which
        drop_last drops when it is short."""
        spe, b = self.info.samples_per_epoch, self.batch_size
        w, r = self.world_size, self.rank
        rounds = spe // (w * b)
        m = spe - rounds * w * b
        q = m // w if self._job_drop else -(-m // w)
        first = max(-(-(index - r * b) // (w * b)), 0)  # first round at or after index
        n = max(rounds - first, 0)
        if q and not (self.drop_last and q < b) and \
                min(rounds * w * b + r * q, spe - q) >= index:
            n += 1
        return n

    def __len__(self):
        """Batches of the current pass (or of the next one, between
        passes: that needs its first batch, so it may wait for it); 0
        once the stream has ended. TypeError when the producer does not
        know its epoch size (tile and filter pipelines)."""
        if not self.info.samples_per_epoch:
            raise TypeError("len(): the producer does not know its epoch size "
                            "(its pipeline tiles or filters samples)")
        if self._client is None:
            raise TsrunError(E_STATE, "tsrun.Loader: the loader is closed")
        if self._pass_index is not None:
            return self._epoch_batches(self._pass_index)
        b = self._peek()
        if b is None:
            return 0
        return self._epoch_batches(b.index)

    def __iter__(self):
        if self._client is None:
            raise TsrunError(E_STATE, "tsrun.Loader: the loader is closed")
        return self._one_pass()

    def _one_pass(self):
        """One epoch: batches until the first of another epoch (kept for
        the next pass) or the end of the stream."""
        first = self._peek()
        if first is None:
            return
        epoch = first.epoch
        self.epoch = epoch
        self._pass_index = first.index
        first = None  # this frame keeps no batch alive: the trainer decides
        try:
            while True:
                b = self._peek()
                if b is None or b.epoch != epoch:
                    return
                self._pending = None
                out, b.tensors = b.tensors, None
                if self.mixup is not None:
                    out = self._mix(b, out)
                self.index = b.index
                end = b.index + b.n
                spe = self.info.samples_per_epoch
                self._next_pos = (b.epoch + 1, 0) if spe and end >= spe else (b.epoch, end)
                b = None
                yield out
                out = None
        finally:
            self._pass_index = None

    def state_dict(self):
        """Where to resume: the epoch and index of the first sample not
        yet yielded, the epochs this trainer still owes (``epochs_left``:
        that epoch's rest counted as one; None for an endless stream or a
        job's rank), with the batch size and epoch size for a check.
        Before the first batch, epoch and index are None (resume from
        wherever the producer is)."""
        e, i = self._next_pos if self._next_pos else (None, None)
        left = None
        end = self._end_epoch()
        if e is not None and end:
            left = max(end - e, 0)
        return {"epoch": e, "index": i, "epochs_left": left,
                "batch_size": self.batch_size,
                "samples_per_epoch": self.info.samples_per_epoch}

    def _end_epoch(self):
        """The epoch this trainer's stream ends before (its epochs,
        counted per trainer); 0 when endless, None for a job's rank or a
        libtsclient without the call."""
        if self.job is not None or self._client is None or \
                not hasattr(self._lib, "ts_client_end_epoch"):
            return None
        return self._lib.ts_client_end_epoch(self._client)

    def load_state_dict(self, state):
        """Resume from state (a state_dict() of an earlier loader), before
        the first pass. The loader connects again, its hello carrying the
        saved position (epoch E, index I) and the epochs it owes
        (tensorsocket(7), Join policies):

        - when sample I of epoch E is still in the producer's ring, or
          not published yet (a producer restarted with ``tsrun run
          --start E:I``, or at an earlier position), the first pass yields
          exactly the samples the earlier loader had not yielded: the
          exact resume;
        - when the ring has moved past it (a shared producer that ran
          on), the first pass yields indices I to the end of a later
          epoch, the current one when the ring has not passed index I
          yet, else the next: as many samples as were owed (spe - I),
          but other samples, drawn by that epoch's shuffle and
          augmentation, since the missed ones are overwritten; it warns,
          naming that epoch;

        then ``epochs_left`` - 1 whole epochs and the end of the stream
        (an older state without epochs_left: the stream's epochs less E).
        ``loader.epoch`` says the epoch the samples are from. A job's
        ranks skip to the saved position on their own (exact only with
        run --start; a producer past it: from the next whole epoch, with
        a warning)."""
        if self._next_pos is not None or self._pending is not None:
            raise TsrunError(E_STATE, "tsrun.Loader.load_state_dict: call it before "
                             "the first batch")
        try:
            e, i = state["epoch"], state["index"]
        except (TypeError, KeyError):
            raise ValueError("load_state_dict: not a tsrun.Loader state_dict "
                             "(wants 'epoch' and 'index'), got %r" % (state,)) from None
        if e is None:
            return
        if not isinstance(e, int) or not isinstance(i, int) or e < 0 or i < 0 or \
                isinstance(e, bool) or isinstance(i, bool) or e > 0xFFFFFFFF or \
                i > 0xFFFFFFFFFFFFFFFF:
            raise ValueError("load_state_dict: epoch and index must be integers "
                             ">= 0, got %r, %r" % (e, i))
        left = state.get("epochs_left")
        if left is not None and (isinstance(left, bool) or not isinstance(left, int) or
                                 not 0 <= left <= 0xFFFFFFFF):
            raise ValueError("load_state_dict: epochs_left must be None or an integer "
                             ">= 0, got %r" % (left,))
        spe = state.get("samples_per_epoch")
        if spe and self.info.samples_per_epoch and spe != self.info.samples_per_epoch:
            warnings.warn("tsrun.Loader.load_state_dict: the state was saved with "
                          "%d samples per epoch, the producer has %d"
                          % (spe, self.info.samples_per_epoch), RuntimeWarning,
                          stacklevel=2)
        if self.job is not None or not hasattr(self._lib, "ts_client_end_epoch"):
            self._resume = (e, i)  # skipped to here by _fetch_raw
            return
        # Connect again with the resume in the hello, then leave the
        # first connection (in this order: a loader alone on a stream
        # grown for it must not let it end between the two).
        again = Loader.__new__(Loader)
        again._client = None
        again._args = self._args
        again._setup((e, i, left), **self._args)
        moved = again.__dict__
        again.__dict__ = {}
        self.close()
        self.__dict__.update(moved)
        got = self.info.start_epoch
        if got != e:
            spe = self.info.samples_per_epoch
            warnings.warn("tsrun.Loader: the producer is past the saved position (epoch %d "
                          "index %d): this loader resumes at index %d of epoch %d (%s "
                          "samples owed, other ones than those missed, which the ring "
                          "no longer holds); only a producer restarted with tsrun run "
                          "--start %d:%d resumes with the same samples"
                          % (e, i, i, got, max(spe - i, 0) if spe else "the",
                             e, i), RuntimeWarning, stacklevel=2)

    def _peek(self):
        """The next batch, read (and kept pending) when not read yet;
        None at the end of the stream."""
        if self._pending is None and not self._done:
            self._pending = self._fetch()
        return self._pending

    def _fetch(self):
        """The next batch of the stream, past a resume position, with its
        tensors (made at once: a batch read is one the trainer owns)."""
        keeper = self._keeper
        if keeper is not None:
            # From libtsclient's hand-out until the batch is in the keeper,
            # a span dying meanwhile must not release below it.
            keeper.busy += 1
        try:
            b = self._fetch_raw()
            if b is not None:
                b.tensors = self._tensors(b)
            return b
        finally:
            if keeper is not None:
                keeper.busy -= 1

    def _fetch_raw(self):
        while True:
            b = self._next_raw()
            if b is None and self._resume is not None:
                # A producer restarted mid-epoch with --start has no whole
                # epoch to join until the next: without one the stream
                # ends having yielded nothing, which must not go unsaid.
                e, i = self._resume
                self._resume = None
                warnings.warn("tsrun.Loader: the stream ended before the saved position "
                              "(epoch %d index %d)%s" % (e, i, self._join_note()),
                              RuntimeWarning, stacklevel=4)
            if b is None or self._resume is None:
                return b
            e, i = self._resume
            if (b.epoch, b.index + b.n) <= (e, i):
                self._unused(b.n)
                continue  # wholly before the saved position
            if b.epoch == e and b.index <= i:
                if b.index < i:
                    self._trim(b, i - b.index)  # another batch size then
                self._resume = None
                return b
            # The producer has moved on: start at the next whole epoch.
            if b.index == 0 and b.epoch == e + 1 and self._tail_dropped(e, i):
                self._resume = None
                return b
            if b.index == 0:
                target = b.epoch
            else:
                target = b.epoch + 1
            warnings.warn("tsrun.Loader: the producer is past the saved position "
                          "(epoch %d index %d; its stream is at epoch %d index %d): "
                          "resuming at the start of epoch %d%s"
                          % (e, i, b.epoch, b.index, target, self._join_note()),
                          RuntimeWarning, stacklevel=4)
            if target == b.epoch:
                self._resume = None
                return b
            self._resume = (target, 0)

    def _join_note(self):
        """What a resume warning adds for a loader that joined at a whole
        epoch (it may be why it missed the saved position)."""
        if self._join != "next_epoch":
            return ""
        return ("; this loader joined at a whole epoch (join=\"next_epoch\", the default): "
                "to resume mid-epoch, connect with join=\"now\"")

    def _tail_dropped(self, e, i):
        """Was only a short last batch of epoch e left at index i, which
        drop_last drops anyway?"""
        spe = self.info.samples_per_epoch
        return bool(spe) and self.drop_last and spe - i < self.batch_size

    def _trim(self, b, k):
        """Drop the first k samples of b (resuming inside it)."""
        self._unused(k)
        b.data += k * _shapes.stride(b)
        b.labels = ctypes.cast(ctypes.addressof(b.labels.contents) + 4 * k,
                               ctypes.POINTER(ctypes.c_int32))
        b.index += k
        b.seq += k
        b.n -= k

    def _next_raw(self):
        """libtsclient's next batch, waiting in slices of _SLICE_MS so that
        signal handlers run (Ctrl-C) and the timeout holds; None at the
        end of the stream."""
        self._before_next()
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        b, err = _lib.Batch(), _lib.Error()
        lib, ref, e = self._lib, ctypes.byref(b), ctypes.byref(err)
        while True:
            if self._dev is not None:
                rc = lib.ts_client_device_next(self._dev, ref, e)
            elif self._keeper is not None:
                rc = lib.ts_client_next_held(self._client, ref, e)
            else:
                rc = lib.ts_client_next(self._client, ref, e)
            if rc == 0:
                return b
            if rc == E_EOS:
                self._done = True
                return None
            if rc == E_AGAIN and self._keeper is not None and self._keeper.held:
                # The batch the trainer still holds keeps the producer
                # from publishing the next one: make it the trainer's own.
                self._keeper.settle(keep=len(self._keeper.held) - 1)
                continue
            if rc != E_TIMEDOUT:
                raise_for(rc, err)
            if deadline is not None and time.monotonic() >= deadline:
                raise Timeout(rc, "tsrun.Loader: no batch from %s within %g s "
                              "(timeout=%g)" % (self.socket, self._timeout,
                                                self._timeout))

    def __repr__(self):
        """What it reads and where it is: socket, batch size, sample, the
        position of the last batch, and whether it is closed."""
        if self._client is None and not hasattr(self, "info"):
            return "<tsrun.Loader (not connected)>"
        try:
            shape = "x".join(str(d) for d in self.shape)
            dtype = _DTYPES.get(self.info.dtype, self.info.dtype)
        except Exception:  # views, a half-made object: keep the repr total
            shape, dtype = "?", "?"
        job = (" job=%r rank=%s/%s" % (self.job, self.rank, self.world_size)
               if getattr(self, "job", None) is not None else "")
        return ("<tsrun.Loader socket=%r batch_size=%d sample=%s %s source=%s%s "
                "epoch=%s index=%s%s>" % (self.socket, self.batch_size, shape, dtype,
                                          self.source, job, self.epoch, self.index,
                                          " closed" if self._client is None else ""))

    @property
    def views(self):
        """views(...) pipelines: one (shape, dtype name) per view, in the
        order the batches' lists hold them; [] otherwise."""
        return [(s, _DTYPES[d]) for s, d, _, _, _ in self._views]

    @property
    def shape(self):
        if self._views:  # a sample's bytes, split by _tensors
            return (self.info.sample_bytes,)
        if self._dims is not None:
            return self._dims
        i = self.info
        if i.layout == 1:
            return (i.channels, i.height, i.width)
        return (i.height, i.width, i.channels)

    # ---- tensors ---------------------------------------------------------

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
        info, err = _lib.DevInfo(), _lib.Error()
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
        if not self._raw:
            self.source = "device-ring (device copy)"  # the trainer's own
        else:
            self.source = "device-ring (%s)" % ("zero-copy" if zero else "peer copy")

    def _before_next(self):
        """Before the slots of earlier batches go back: batches the
        trainer still holds are made its own (all but the newest, which
        stays zero-copy), and the GPU work that reads the ring has
        finished (events recorded after that work, not a device-wide
        synchronize)."""
        if self._keeper is not None:
            self._keeper.settle(keep=1)
        if self._event is not None:
            self._event.synchronize()  # our copy out of the pinned ring
            self._event = None
        if not self._raw or self._device is None and not self._pin:
            return
        import torch
        if self._dev is not None:
            # The trainer's kernels queued so far on the current stream
            # read the batch: ts_client_device_next waits for them.
            stream = torch.cuda.current_stream(self._device).cuda_stream
            err = _lib.Error()
            rc = self._lib.ts_client_device_record_use(self._dev, stream, ctypes.byref(err))
            if rc < 0:
                # no use recorded: the slots would go back under the
                # trainer's kernels
                raise_for(rc, err)
        elif self._device is None and self._pinned:
            # Raw views of the pinned ring: the trainer's non_blocking
            # copies, queued on the current stream, must be done.
            ev = torch.cuda.Event()
            ev.record()
            ev.synchronize()

    def _device_tensors(self, b):
        import torch
        info = self._dev_info
        shape = (b.n, info.channels, info.height, info.width)
        dtype = {2: torch.float16, 3: torch.float32}[info.dtype]
        err = _lib.Error()
        images = None
        if self._raw and not self._dev_copy:
            ptr = ctypes.c_void_p()
            rc = self._lib.ts_client_device_batch(self._dev, ctypes.byref(b),
                                                  ctypes.byref(ptr), ctypes.byref(err))
            if rc < 0:
                raise_for(rc, err)
            typestr = {2: "<f2", 3: "<f4"}[info.dtype]
            try:
                images = torch.as_tensor(_CudaView(self._lib, self._dev, ptr.value, shape,
                                                   typestr, _device_strides(info)),
                                         device=self._device)
            except (TypeError, RuntimeError, ValueError) as e:
                warnings.warn("tsrun.Loader: torch cannot view the device ring (%s); "
                              "copying each batch on the GPU instead" % e,
                              RuntimeWarning, stacklevel=5)
                self._dev_copy = True
                self.source = "device-ring (device copy)"
        if images is None:
            # The safe default: the trainer's own copy, made on its
            # current stream; the slots go back once that copy is done.
            images = torch.empty(shape, device=self._device, dtype=dtype)
            stream = torch.cuda.current_stream(self._device).cuda_stream
            rc = self._lib.ts_client_device_copy_async(self._dev, ctypes.byref(b),
                                                       images.data_ptr(), stream,
                                                       ctypes.byref(err))
            if rc == 0:
                rc = self._lib.ts_client_device_record_use(self._dev, stream,
                                                           ctypes.byref(err))
            if rc < 0:
                raise_for(rc, err)
        labels = _pinned_labels(torch, b).to(self._device, non_blocking=True)
        return images, labels

    def _ring_view(self, b, dtype):
        """A read-only view of b in the shared ring, valid until the slots
        go back (the raw_views path, and the source of our own copies)."""
        import torch
        buf = (ctypes.c_uint8 * _shapes.span_bytes(b)).from_address(b.data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only memory: documented
            return _shapes.batch_view(torch.frombuffer(buf, dtype=dtype), b, self.shape)

    def _check_fallback(self, device, mode):
        """The producer's pipeline ends in device(cuda) but it serves the
        host ring's uint8 NHWC samples: never hand them out as if they
        were the promised float NCHW batches. Raise, or with
        device_fallback="convert" finish each batch here as device(cuda)
        would have (on the trainer's device when it has CUDA)."""
        if mode not in ("raise", "convert"):
            self.close()
            raise ValueError("device_fallback must be 'raise' or 'convert', got %r"
                             % (mode,))
        fb = _lib.Fallback()
        if not hasattr(self._lib, "ts_client_device_fallback") or \
                not self._lib.ts_client_device_fallback(self._client, ctypes.byref(fb)):
            return
        why = fb.why.decode("utf-8", "replace")
        if mode == "raise":
            self.close()
            raise TsrunError(_lib_errors.E_NODEV,
                             "tsrun.Loader(device=%r): the producer's pipeline ends in "
                             "device(cuda), but it serves uint8 NHWC batches from the CPU "
                             "ring instead (%s); pass device_fallback='convert' to finish "
                             "them here as %s NCHW, or fix the producer's GPU"
                             % (device, why, _DTYPES[fb.dtype]))
        self.source = "host-ring (converted: device fallback)"
        self._convert = _fallback_convert(fb)
        warnings.warn("tsrun.Loader: the producer serves the CPU ring instead of its "
                      "device ring (%s); converting each batch to %s NCHW here"
                      % (why, _DTYPES[fb.dtype]), RuntimeWarning, stacklevel=3)

    def _set_outstanding(self, k):
        """More than one batch out on the device ring
        (ts_client_device_set_outstanding): the host runs ahead of the GPU
        instead of waiting for each batch's copy before the next."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8:
            self.close()
            raise ValueError("outstanding must be an integer from 1 to 8, got %r" % (k,))
        if self._dev is None or k == 1 or \
                not hasattr(self._lib, "ts_client_device_set_outstanding"):
            return
        err = _lib.Error()
        rc = self._lib.ts_client_device_set_outstanding(self._dev, k, ctypes.byref(err))
        if rc < 0:
            self.close()
            raise_for(rc, err)

    def _tensors(self, b):
        images, labels = self._tensors_one(b)
        if self._convert is not None:
            images = self._convert(images)
        if self._views:  # views(...): [n, *shape] per view
            images = _shapes.split_views(images, self._views)
        return images, labels

    def _tensors_one(self, b):
        import torch
        if self._dev is not None:
            return self._device_tensors(b)
        if b.dtype == 1 and not self._views:
            warnings.warn("uint16 samples are returned as int16 bits",
                          RuntimeWarning, stacklevel=4)
        dtype = torch.uint8 if self._views else getattr(torch, _DTYPES[b.dtype])
        if self._label is None:
            labels = torch.tensor(b.labels[:b.n], dtype=torch.int64)
        else:
            labels = _shapes.labels(self._lib, self._client, b, b.n, self._label)
        if self._keeper is not None:
            images, why = self._keeper.view(b, dtype, self.shape)
            if images is not None:
                return images, labels
            if not self._warned_copy:
                self._warned_copy = True
                warnings.warn("tsrun.Loader: no private mapping of the ring (%s); "
                              "copying each batch instead" % why, RuntimeWarning,
                              stacklevel=4)
            return self._ring_view(b, dtype).clone(), labels
        images = self._ring_view(b, dtype)
        if self._pin:
            if self._pinned is None and (self._device is not None or self._raw):
                # The ring is page-locked only where it is read by DMA: a
                # device copy or the trainer's own copies of raw views. A
                # pinned copy per batch reads it with the CPU, and locking
                # every page of the ring first would only delay batch 1.
                self._pin_ring(b.data)
            if self._device is None and (not self._raw or not self._pinned):
                # Our own pinned copy (what DataLoader's pin_memory does):
                # the slots go back at once, torch keeps the pinned block
                # until the trainer's copies out of it are done.
                images = _shapes.pinned(images)
        if self._device is not None:
            import torch.cuda
            images = _shapes.to_device(images, self._device)
            if not labels.is_pinned():
                labels = labels.pin_memory()  # else .to() waits on the host
            labels = labels.to(self._device, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record()
        return images, labels

    def _mix(self, b, tensors):
        """The batch b as handed out, mixed by self.mixup now (so that a
        change to it between batches, such as mixup_enabled, holds from the
        next batch on): in place, in the trainer's own pages, or in a copy
        of a raw view."""
        images, labels = tensors
        if self._raw:
            images = images.clone()  # a raw view is the read-only ring
        layout = "nchw" if self._dev is not None or self.info.layout == 1 else "nhwc"
        # keyed by the batch's position in the whole epoch, so that the
        # nodes of a shard() pipeline do not mix alike (ts_client_node)
        node, count = self._node
        index = node + count * b.index if count else b.index
        return self.mixup(images, labels, epoch=b.epoch, index=index, layout=layout)

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
        pinned, err = _lib.Pinned(), _lib.Error()
        rc = lib.ts_client_pin_mapping(addr, ctypes.byref(pinned), ctypes.byref(err))
        if rc < 0:
            warnings.warn("tsrun.Loader: pin_memory: %s; copying each batch into "
                          "pinned memory instead" % err.msg.decode("utf-8", "replace"),
                          RuntimeWarning, stacklevel=4)
            return
        self._pinned = pinned

    # ---- this trainer's own figures ---------------------------------------

    def _unused(self, n):
        """n samples libtsclient handed out never reach the trainer (a
        resume passes over them): its counts leave them out."""
        if n > 0 and hasattr(self._lib, "ts_client_unused"):
            self._lib.ts_client_unused(self._client, n)

    def stats(self):
        """This trainer's figures, as libtsclient measures them (and
        publishes them to the producer's status, ``tsrun stat`` and
        summary): a dict of ``connected_s`` (seconds since it connected),
        ``wait_s`` and ``wait_fraction`` (time spent waiting for batches,
        and its share of connected_s), ``window_s``,
        ``window_wait_fraction`` and ``window_samples_per_s`` (the same
        over the last 5 to 10 s), ``samples`` and ``batches`` (handed to
        this trainer; a batch read ahead and never yielded is counted
        out at close()). A trainer that waits most of its time is held
        by its input: the pipeline, or another trainer on the ring
        (``tsrun stat`` says which)."""
        if self._client is None:
            raise TsrunError(E_STATE, "tsrun.Loader: the loader is closed")
        if not hasattr(self._lib, "ts_client_stats"):
            raise TsrunError(E_STATE, "tsrun.Loader.stats: this libtsclient is older "
                             "than the wait figures (0.3)")
        st = _lib.Stats()
        self._lib.ts_client_stats(self._client, ctypes.byref(st))
        out = {name: getattr(st, name) for name, _ in _lib.Stats._fields_}
        if self._pending is not None:
            # read ahead, not yielded yet
            out["samples"] = max(out["samples"] - self._pending.n, 0)
            out["batches"] = max(out["batches"] - 1, 0)
        return out

    # ---- lifetime ---------------------------------------------------------

    def close(self):
        """Disconnect; the producer stops waiting for this trainer at once.
        Batches still alive stay valid: they are first made this
        process's own (raw views excepted)."""
        if getattr(self, "_keeper", None) is not None:
            self._keeper.close()
            self._keeper = None
        if getattr(self, "_event", None) is not None:
            self._event.synchronize()
            self._event = None
        if getattr(self, "_dev", None):
            self._lib.ts_client_device_close(self._dev)
            self._dev = None
        if getattr(self, "_pinned", None):
            # unregister before the ring is unmapped
            self._lib.ts_client_unpin(ctypes.byref(self._pinned), None)
            self._pinned = None
        if getattr(self, "_client", None) is not None:
            if self._pending is not None:
                # read ahead (to end a pass, or for len()) and never
                # yielded: not this trainer's, in its figures and the
                # producer's summary
                self._unused(self._pending.n)
            self._pending = None
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
