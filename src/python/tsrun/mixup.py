"""tsrun.Mixup: Mixup, CutMix and label smoothing on a trainer's batches,
with timm.data.Mixup's parameters and semantics, drawn from (seed, epoch,
index) by libtsclient (ts_client_mix_*, tsclient.h) so that a rerun and a C
trainer with the same seed mix alike, byte for byte."""

import ctypes
import json
import numbers
import os

from . import _lib
from .errors import raise_for

_MODES = {"batch": 0, "pair": 1, "elem": 2}
_OPS = {0: "none", 1: "blend", 2: "box"}


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("tsrun.Mixup: %s must be a number, got %r" % (name, value))
    return float(value)


class Mixup:
    """Mix each batch a trainer reads, as timm.data.Mixup does.

    mixup_alpha      Beta(alpha, alpha) of Mixup's lam; > 0 turns Mixup on
                     (default 1.0, as timm)
    cutmix_alpha     Beta(alpha, alpha) of CutMix's lam; > 0 turns it on
    cutmix_minmax    None, or (min, max): CutMix box sides uniform in
                     [min, max) of the image's (CutMix on, alpha 1)
    prob             probability of mixing a batch, pair or sample
    switch_prob      probability of CutMix rather than Mixup, both on
    mode             "batch" (one draw per batch, sample i with n-1-i),
                     "pair" (one per pair, both ways) or "elem" (one per
                     sample)
    correct_lam      lam from the CutMix box's area once clipped
    label_smoothing  targets 1-s+s/K on the class, s/K elsewhere (default
                     0.1, as timm)
    num_classes      K, the targets' width (default 1000, as timm)
    seed             the draws' key, with each batch's (epoch, index)
    trace            None, a path (created or truncated) or a writable
                     text file: one JSON line per batch mixed, its draws
                     (tsrun(1)'s trace section), for a replay

    Every parameter but seed and trace (tsrun's own) is timm.data.Mixup's, with its
    default (tests/torch-names.py compares the signatures).

    ``mixup(images, labels)`` mixes images (N, C, H, W) in place and
    returns (images, targets), targets float32 (N, num_classes), as timm's
    ``mixup_fn(x, target)``; with ``epoch=`` and ``index=`` (the batch's
    first sample's position in its epoch) the draws are those of that
    batch, else of (epoch 0, the samples this object mixed so far).
    ``layout="nhwc"`` takes (N, H, W, C). CPU float32 batches whose
    samples are each contiguous (the Loader's, padded ring slots included)
    are mixed by libtsclient's ts_client_mix_batch; others (CUDA, float16,
    other strides) by torch operations on its draws (``params``), rounded
    alike.
    Both alphas 0, or ``mixup_enabled = False`` (settable between batches,
    as timm's), is label smoothing alone: the images stay as they are. The
    middle sample of an odd batch stays as it is (timm refuses odd
    batches).

    ``tsrun.Loader(..., mixup=tsrun.Mixup(...))`` applies it to every
    batch it hands out, keyed by the batch's position: labels then are
    the soft targets.
    """

    def __init__(self, mixup_alpha=1.0, cutmix_alpha=0.0, cutmix_minmax=None, prob=1.0,
                 switch_prob=0.5, mode="batch", correct_lam=True, label_smoothing=0.1,
                 num_classes=1000, seed=0, trace=None):
        self.mixup_alpha = _number("mixup_alpha", mixup_alpha)
        self.cutmix_alpha = _number("cutmix_alpha", cutmix_alpha)
        if cutmix_minmax is not None:
            try:
                lo, hi = cutmix_minmax
            except (TypeError, ValueError):
                raise TypeError("tsrun.Mixup: cutmix_minmax must be None or (min, max), "
                                "got %r" % (cutmix_minmax,)) from None
            cutmix_minmax = (_number("cutmix_minmax[0]", lo), _number("cutmix_minmax[1]", hi))
            if cutmix_minmax[1] == 0:
                raise ValueError("tsrun.Mixup: cutmix_minmax = %r: want 0 <= min < max "
                                 "<= 1" % (cutmix_minmax,))
        self.cutmix_minmax = cutmix_minmax
        self.prob = _number("prob", prob)
        self.switch_prob = _number("switch_prob", switch_prob)
        if mode not in _MODES:
            raise ValueError("tsrun.Mixup: mode must be 'batch', 'pair' or 'elem', got %r"
                             % (mode,))
        self.mode = mode
        self.correct_lam = bool(correct_lam)
        self.label_smoothing = _number("label_smoothing", label_smoothing)
        if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
            raise TypeError("tsrun.Mixup: num_classes must be an integer, got %r"
                            % (num_classes,))
        if not 1 <= num_classes <= 0xFFFFFFFF:
            raise ValueError("tsrun.Mixup: num_classes must be set (>= 1), the width of "
                             "the soft targets; got %r" % (num_classes,))
        self.num_classes = int(num_classes)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0 \
                or seed >= 1 << 64:
            raise ValueError("tsrun.Mixup: seed must be an integer in 0 .. 2**64-1, got %r"
                             % (seed,))
        self.seed = int(seed)
        self.trace = trace
        if trace is None or hasattr(trace, "write"):
            self._trace_file = trace
        elif isinstance(trace, (str, bytes, os.PathLike)):
            try:
                self._trace_file = open(trace, "w", buffering=1)
            except OSError as e:
                raise ValueError("tsrun.Mixup: cannot write the trace %r: %s"
                                 % (trace, e.strerror)) from None
        else:
            raise TypeError("tsrun.Mixup: trace must be None, a path or a writable text "
                            "file, got %r" % (trace,))
        self.mixup_enabled = True
        self._next = 0
        self._lib = _lib.load_library()
        if not hasattr(self._lib, "ts_client_mix_batch"):
            raise _lib.LibraryNotFound("tsrun.Mixup: this libtsclient has no "
                                       "ts_client_mix_batch: rebuild tsrun")
        self._opts()  # the ranges, checked by libtsclient

    def __repr__(self):
        return ("tsrun.Mixup(mixup_alpha=%g, cutmix_alpha=%g, cutmix_minmax=%r, prob=%g, "
                "switch_prob=%g, mode=%r, correct_lam=%r, label_smoothing=%g, "
                "num_classes=%d, seed=%d%s)"
                % (self.mixup_alpha, self.cutmix_alpha, self.cutmix_minmax, self.prob,
                   self.switch_prob, self.mode, self.correct_lam, self.label_smoothing,
                   self.num_classes, self.seed,
                   "" if self.trace is None else ", trace=%r" % (self.trace,)))

    def _opts(self):
        """The C parameters from the attributes as they are now (a trainer
        may change them between batches), checked."""
        m = _lib.Mix()
        self._lib.ts_client_mix_init(ctypes.byref(m))
        m.mixup_alpha = self.mixup_alpha
        m.cutmix_alpha = self.cutmix_alpha
        if self.cutmix_minmax is not None:
            m.cutmix_min, m.cutmix_max = self.cutmix_minmax
        m.prob = self.prob
        m.switch_prob = self.switch_prob
        m.mode = _MODES[self.mode]
        m.correct_lam = 1 if self.correct_lam else 0
        m.label_smoothing = self.label_smoothing
        m.num_classes = self.num_classes
        m.seed = self.seed
        m.enabled = 1 if self.mixup_enabled else 0
        err = _lib.Error()
        if self._lib.ts_client_mix_check(ctypes.byref(m), ctypes.byref(err)) < 0:
            raise ValueError("tsrun.Mixup: " + err.msg.decode("utf-8", "replace")
                             .replace("mix: ", "", 1))
        return m

    @staticmethod
    def _hwc(shape, layout):
        if layout == "nchw":
            return shape[2], shape[3], shape[1]
        if layout == "nhwc":
            return shape[1], shape[2], shape[3]
        raise ValueError("tsrun.Mixup: layout must be 'nchw' or 'nhwc', got %r" % (layout,))

    def _batch(self, n, height, width, channels, epoch, index):
        b = _lib.Batch()
        b.n, b.height, b.width, b.channels = n, height, width, channels
        b.epoch, b.index = epoch, index
        b.dtype = 3
        b.sample_bytes = 4 * height * width * channels
        return b

    def params(self, n, height, width, epoch=0, index=0):
        """The draws for a batch of n samples of height x width at (epoch,
        index): one dict per sample, with its partner, op ("none",
        "blend", "box"), box (y0, y1, x0, x1), lam and lam_partner (the
        weights applied, float32) and lam_drawn (lam before its rounding
        to float32)."""
        m = self._opts()
        b = self._batch(n, height, width, 1, epoch, index)
        out = (_lib.MixSample * max(n, 1))()
        err = _lib.Error()
        rc = self._lib.ts_client_mix_params(ctypes.byref(m), ctypes.byref(b), out,
                                            ctypes.byref(err))
        if rc < 0:
            raise ValueError("tsrun.Mixup: " + err.msg.decode("utf-8", "replace"))
        return [{"partner": s.partner, "op": _OPS[s.op], "box": (s.y0, s.y1, s.x0, s.x1),
                 "lam": s.lam, "lam_partner": s.lam_partner, "lam_drawn": s.lam_drawn}
                for s in out[:n]]

    def __call__(self, images, labels, epoch=None, index=None, layout="nchw"):
        import torch
        if not isinstance(images, torch.Tensor) or images.dim() != 4:
            raise TypeError("tsrun.Mixup: images must be a 4-D tensor (N, C, H, W) or, "
                            "with layout='nhwc', (N, H, W, C); got %s"
                            % ((tuple(images.shape),) if isinstance(images, torch.Tensor)
                               else type(images).__name__))
        if not images.is_floating_point():
            raise TypeError("tsrun.Mixup: images must be floating point, got %s: end "
                            "the pipeline with to(float32, ...)" % images.dtype)
        n = images.shape[0]
        labels = torch.as_tensor(labels)
        if labels.dim() != 1 or labels.shape[0] != n or labels.is_floating_point():
            raise TypeError("tsrun.Mixup: labels must be %d integer classes, got %s %s"
                            % (n, labels.dtype, tuple(labels.shape)))
        h, w, c = self._hwc(images.shape, layout)
        if epoch is None:
            epoch, index = 0, self._next
        elif index is None:
            raise TypeError("tsrun.Mixup: give index= with epoch=")
        self._next = index + n
        if n == 0:
            return images, torch.empty((0, self.num_classes), dtype=torch.float32,
                                       device=images.device)
        m = self._opts()
        # Samples contiguous each, possibly apart (the Loader's batches of
        # an odd-sized sample, whose ring slots are padded): libtsclient.
        if (images.device.type == "cpu" and images.dtype == torch.float32
                and images[0].is_contiguous() and images.stride(0) >= images[0].numel()):
            out = self._mix_c(m, images, labels, epoch, index, layout, h, w, c)
        else:
            out = self._mix_torch(images, labels, epoch, index, layout, h, w)
        if self._trace_file is not None:
            self._write_trace(n, h, w, epoch, index)
        return out

    def _write_trace(self, n, h, w, epoch, index):
        """The batch's draws as one JSON line (tsrun(1), the trace)."""
        mixed = [{"partner": p["partner"], "op": p["op"], "box": list(p["box"]),
                  "lam": p["lam"], "lam_partner": p["lam_partner"],
                  "lam_drawn": p["lam_drawn"]}
                 for p in self.params(n, h, w, epoch, index)]
        self._trace_file.write(json.dumps({"epoch": epoch, "index": index, "n": n,
                                           "mode": self.mode, "mixed": mixed}) + "\n")

    def _mix_c(self, m, images, labels, epoch, index, layout, h, w, c):
        import torch
        n = images.shape[0]
        lab = labels.to(device="cpu", dtype=torch.int32).contiguous()
        targets = torch.empty((n, self.num_classes), dtype=torch.float32)
        b = self._batch(n, h, w, c, epoch, index)
        b.layout = 1 if layout == "nchw" else 0
        b.data = images.data_ptr()
        b.sample_stride = 4 * images.stride(0)
        b.labels = ctypes.cast(lab.data_ptr(), ctypes.POINTER(ctypes.c_int32))
        err = _lib.Error()
        rc = self._lib.ts_client_mix_batch(ctypes.byref(m), ctypes.byref(b), images.data_ptr(),
                                           targets.data_ptr(), ctypes.byref(err))
        if rc < 0:
            if rc == -5011:  # TS_E_ARG: a label out of range, said in err
                raise ValueError("tsrun.Mixup: " + err.msg.decode("utf-8", "replace")
                                 .replace("mix: ", "", 1))
            raise_for(rc, err)
        if labels.device.type != "cpu":
            targets = targets.to(labels.device)
        return images, targets

    def _mix_torch(self, images, labels, epoch, index, layout, h, w):
        """The same draws by torch operations, for tensors libtsclient does
        not take (CUDA, float16, samples not contiguous): per sample, x_i*lam +
        x_partner*lam_partner (two products and a sum, each rounded as the
        C path rounds them) or the partner's box."""
        import torch
        n = images.shape[0]
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= self.num_classes:
            bad = lo if lo < 0 else hi
            raise ValueError("tsrun.Mixup: a label %d is outside 0 .. %d: num_classes must "
                             "be the data set's class count" % (bad, self.num_classes - 1))
        ps = self.params(n, h, w, epoch, index)
        orig = images.clone()
        for i, p in enumerate(ps):
            j = p["partner"]
            if p["op"] == "blend":
                images[i] = orig[i] * p["lam"] + orig[j] * p["lam_partner"]
            elif p["op"] == "box":
                y0, y1, x0, x1 = p["box"]
                if layout == "nchw":
                    images[i, :, y0:y1, x0:x1] = orig[j, :, y0:y1, x0:x1]
                else:
                    images[i, y0:y1, x0:x1, :] = orig[j, y0:y1, x0:x1, :]
        off = self.label_smoothing / self.num_classes
        on = 1.0 - self.label_smoothing + off
        dev = images.device
        y1 = torch.full((n, self.num_classes), off, dtype=torch.float32, device=dev)
        y1.scatter_(1, labels.to(device=dev, dtype=torch.int64).view(-1, 1), on)
        partner = torch.tensor([p["partner"] for p in ps], dtype=torch.int64, device=dev)
        lam = torch.tensor([p["lam"] for p in ps], dtype=torch.float32, device=dev)
        lamp = torch.tensor([p["lam_partner"] for p in ps], dtype=torch.float32, device=dev)
        targets = y1 * lam.unsqueeze(1) + y1[partner] * lamp.unsqueeze(1)
        return images, targets


def check_loader(mixup, label, shape, dtype, device_ring):
    """A Loader's mixup= argument against the producer it serves: a
    tsrun.Mixup, integer labels, images with float samples."""
    if not isinstance(mixup, Mixup):
        raise TypeError("tsrun.Loader: mixup must be a tsrun.Mixup, got %r (apply other "
                        "callables to the batches in the training loop)" % (mixup,))
    if label is not None:
        raise ValueError("tsrun.Loader: mixup needs integer class labels; this producer "
                         "serves label tensors of shape %s" % (label[0],))
    if len(shape) != 3:
        raise ValueError("tsrun.Loader: mixup needs image samples (C, H, W) or (H, W, C); "
                         "this producer's are %s" % (tuple(shape),))
    if not device_ring and dtype != 3:
        raise ValueError("tsrun.Loader: mixup needs float32 samples; this producer serves "
                         "%s: end the pipeline with to(float32, ...)"
                         % {0: "uint8", 1: "uint16", 2: "float16"}.get(dtype, dtype))
