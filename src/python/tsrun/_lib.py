"""libtsclient through ctypes: where the library is found, and the C
structures of tsclient.h, tsclient_cuda.h and src/client/tsclient_private.h
mirrored field for field (tests/ctypes-layout.py checks them)."""

import ctypes
import ctypes.util
import glob
import os

from .errors import LibraryNotFound

class Loc(ctypes.Structure):
    _fields_ = [("first_line", ctypes.c_int), ("first_column", ctypes.c_int),
                ("last_line", ctypes.c_int), ("last_column", ctypes.c_int)]


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("loc", Loc),
                ("msg", ctypes.c_char * 256)]


# The most dimensions of a sample or label tensor: TS_CLIENT_MAX_DIMS and
# TS_PRODUCER_MAX_DIMS (tests/error-codes.py compares).
MAX_DIMS = 8


class Tensor(ctypes.Structure):
    """struct ts_client_tensor (tsclient.h)"""
    _fields_ = [("ndim", ctypes.c_int), ("dtype", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_DIMS), ("bytes", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 2)]


class ProducerTensor(ctypes.Structure):
    """struct ts_producer_tensor (tsrun_producer.h)"""
    _fields_ = [("ndim", ctypes.c_int), ("dtype", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_DIMS)]


class ProducerOpts(ctypes.Structure):
    """struct ts_producer_opts (tsrun_producer.h); its size is set by
    ts_producer_opts_init_size"""
    _fields_ = [("size", ctypes.c_size_t), ("socket_path", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("file", ctypes.c_char_p), ("sample", ProducerTensor),
                ("label_tensor", ctypes.c_int), ("label", ProducerTensor),
                ("batch", ctypes.c_uint32), ("ring", ctypes.c_uint32),
                ("epochs", ctypes.c_uint32), ("samples_per_epoch", ctypes.c_uint64),
                ("wait", ctypes.c_uint), ("status_fd", ctypes.c_int),
                ("quiet", ctypes.c_int), ("stall_timeout", ctypes.c_double),
                ("consumers", ctypes.c_uint)]


class Opts(ctypes.Structure):
    """struct ts_client_opts; its size is set by ts_client_opts_init_size"""
    _fields_ = [("size", ctypes.c_size_t), ("batch_size", ctypes.c_uint32), ("join", ctypes.c_int),
                ("drop_last", ctypes.c_int), ("timeout_ms", ctypes.c_int),
                ("connect_timeout_ms", ctypes.c_int),
                # a rank of a job (tsclient.h): the name, rank, world size
                ("job", ctypes.c_char_p), ("rank", ctypes.c_uint32),
                ("world_size", ctypes.c_uint32), ("job_drop_last", ctypes.c_int),
                # a resume (tsclient.h): position and the epochs owed
                ("resume", ctypes.c_int), ("resume_epoch", ctypes.c_uint64),
                ("resume_index", ctypes.c_uint64), ("has_resume_epochs", ctypes.c_int),
                ("resume_epochs", ctypes.c_uint32)]


class Batch(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_size_t),
                ("labels", ctypes.POINTER(ctypes.c_int32)),
                ("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("epoch", ctypes.c_uint64), ("index", ctypes.c_uint64),
                ("seq", ctypes.c_uint64), ("sample_stride", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 4)]


# enum ts_dtype and enum ts_layout of types.h, for the reprs
_DTYPE_NAMES = {0: "uint8", 1: "int16", 2: "float16", 3: "float32"}
_LAYOUT_NAMES = {0: "nhwc", 1: "nchw"}


class _Repr:
    """A structure's repr: its type and every field by name (dtype and
    layout by their names), not <... object at 0x...>."""

    def __repr__(self):
        parts = []
        for name, _ in self._fields_:
            v = getattr(self, name)
            if name == "dtype" or name == "layout":
                names = _DTYPE_NAMES if name == "dtype" else _LAYOUT_NAMES
                parts.append("%s=%s" % (name, names.get(v, v)))
                continue
            if isinstance(v, bytes):
                v = v.decode(errors="replace")
            elif isinstance(v, ctypes.Array):
                continue  # the IPC handle: opaque bytes
            parts.append("%s=%s" % (name, v if isinstance(v, (int, float)) else repr(v)))
        return "%s(%s)" % (type(self).__name__, ", ".join(parts))


class Stats(ctypes.Structure):
    """struct ts_client_stats: this trainer's own figures."""
    _fields_ = [("connected_s", ctypes.c_double), ("wait_s", ctypes.c_double),
                ("wait_fraction", ctypes.c_double), ("window_s", ctypes.c_double),
                ("window_wait_fraction", ctypes.c_double),
                ("window_samples_per_s", ctypes.c_double),
                ("samples", ctypes.c_uint64), ("batches", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 4)]


class Info(_Repr, ctypes.Structure):

    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("batch_size", ctypes.c_uint32), ("capacity", ctypes.c_uint64),
                ("samples_per_epoch", ctypes.c_uint64),
                ("epochs", ctypes.c_uint32), ("start", ctypes.c_uint64),
                ("start_epoch", ctypes.c_uint64),
                ("producer_pid", ctypes.c_int), ("sample_stride", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 8)]


class DevInfo(_Repr, ctypes.Structure):
    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("capacity", ctypes.c_uint64), ("mirror", ctypes.c_uint64),
                ("producer_device", ctypes.c_int), ("producer_pid", ctypes.c_int),
                ("pci_bus_id", ctypes.c_char * 16),
                ("ipc", ctypes.c_ubyte * 64), ("sample_stride", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 4)]


class Fallback(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("normalize", ctypes.c_int),
                ("mean", ctypes.c_float * 4), ("std", ctypes.c_float * 4),
                ("why", ctypes.c_char * 128), ("reserved", ctypes.c_uint64 * 2)]


class Span(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


class Pinned(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Mix(ctypes.Structure):
    """struct ts_client_mix; its size is set by ts_client_mix_init_size"""
    _fields_ = [("size", ctypes.c_size_t), ("mixup_alpha", ctypes.c_double), ("cutmix_alpha", ctypes.c_double),
                ("cutmix_min", ctypes.c_double), ("cutmix_max", ctypes.c_double),
                ("prob", ctypes.c_double), ("switch_prob", ctypes.c_double),
                ("mode", ctypes.c_int), ("correct_lam", ctypes.c_int),
                ("label_smoothing", ctypes.c_double), ("num_classes", ctypes.c_uint32),
                ("seed", ctypes.c_uint64), ("enabled", ctypes.c_int)]


class MixSample(ctypes.Structure):
    _fields_ = [("partner", ctypes.c_uint64), ("op", ctypes.c_int),
                ("y0", ctypes.c_int), ("y1", ctypes.c_int), ("x0", ctypes.c_int),
                ("x1", ctypes.c_int), ("lam", ctypes.c_float),
                ("lam_partner", ctypes.c_float), ("lam_drawn", ctypes.c_double)]


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


def _source_root(here):
    """<root> when this package is <root>/src/python/tsrun of a tsrun
    source tree, else None."""
    python = os.path.dirname(here)
    src = os.path.dirname(python)
    root = os.path.dirname(src)
    if (os.path.basename(python) != "python" or os.path.basename(src) != "src"
            or not os.path.isfile(os.path.join(root, "meson.build"))):
        return None
    return root


def _source_tree_builds(here, name="libtsclient.so*"):
    """When this package is <root>/src/python/tsrun of a tsrun source
    tree: the files <root>/build*/src/<name> (a glob), newest first (one
    per file, not one per symlink); None when it is not one."""
    root = _source_root(here)
    if root is None:
        return None
    seen, found = set(), []
    for path in glob.glob(os.path.join(glob.escape(root), "build*", "src", name)):
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real):
            continue  # a symlink to one already listed, the .p folder
        seen.add(real)
        try:
            found.append((os.stat(real).st_mtime, path))
        except OSError:
            continue
    return [path for _, path in sorted(found, reverse=True)]


def find_library(stem, env_var, fix, symbol=None, what=None):
    """Load lib<stem> from the first place that has one, the one search of
    the package (see its docstring): the file env_var names (then only it),
    lib<stem>.so.0 next to this package, the dynamic loader's, ctypes.util's,
    the newest build*/src/lib<stem>.so* of the source tree this package is
    in. A file built with a sanitizer this process lacks is passed over, as
    is one without symbol (an older library). Raises LibraryNotFound naming
    what was tried and fix."""
    what = what or "lib" + stem
    soname = "lib%s.so.0" % stem
    env = os.environ.get(env_var)
    if env:
        # An explicit choice: never silently replaced by another library.
        bad = _sanitizer_missing(env)
        if bad:
            raise LibraryNotFound(
                "cannot load %s: %s=%s is built with %s, whose runtime this process "
                "lacks (preload it with LD_PRELOAD, or use a build without "
                "sanitizers)" % (what, env_var, env, bad))
        try:
            lib = ctypes.CDLL(env)
        except OSError as e:
            raise LibraryNotFound("cannot load %s: %s=%s: %s; point it at a built %s, "
                                  "or unset it to search the usual places"
                                  % (what, env_var, env, e, soname)) from None
        if symbol and not hasattr(lib, symbol):
            raise LibraryNotFound("cannot load %s: %s=%s has no %s (an older lib%s)"
                                  % (what, env_var, env, symbol, stem))
        return lib
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
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(str(e) if is_file else "%s: not on the loader path" % path)
            return None
        if symbol and not hasattr(lib, symbol):
            tried.append("%s: no %s (an older lib%s)" % (path, symbol, stem))
            return None
        return lib

    for path in (os.path.join(here, soname), os.path.join(here, "lib%s.so" % stem)):
        lib = attempt(path, True)
        if lib is not None:
            return lib
    lib = attempt(soname, False)
    if lib is not None:
        return lib
    name = ctypes.util.find_library(stem)
    if name and name != soname:
        lib = attempt(name, False)
        if lib is not None:
            return lib
    builds = _source_tree_builds(here, "lib%s.so*" % stem)
    for path in builds or ():
        lib = attempt(path, True)
        if lib is not None:
            return lib
    if builds == []:
        tried.append("no build*/src/lib%s.so* in the source tree" % stem)
    raise LibraryNotFound("cannot find %s: %s (tried: %s)" % (what, fix, "; ".join(tried)))


def find_program(name):
    """The path of the tsrun binary `name` (tsrun, tsrun-plugin-host) the
    package goes with, by the same search: bin/<name> inside this package
    (a pip install puts it there), else the newest build*/src/<name> of the
    source tree this package is in; None when neither has one."""
    here = os.path.dirname(os.path.abspath(__file__))
    inside = os.path.join(here, "bin", name)
    if os.access(inside, os.X_OK):
        return inside
    for path in _source_tree_builds(here, name) or ():
        if os.access(path, os.X_OK):
            return path
    return None


def _find_library():
    """libtsclient, from the first place that has one (find_library)."""
    return find_library("tsclient", "TSRUN_LIBTSCLIENT", _FIX,
                        what="libtsclient, the tsrun client library")


def load_library():
    """Find and load libtsclient once (see the tsrun package's docstring
    for where it looks) and declare its functions. Raises LibraryNotFound (an
    OSError) when there is none to load."""
    global _lib
    if _lib is not None:
        return _lib
    lib = _find_library()
    lib.ts_client_opts_init_size.argtypes = [ctypes.POINTER(Opts), ctypes.c_size_t]
    lib.ts_client_opts_init_size.restype = None
    lib.ts_client_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(Opts),
                                      ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(Error)]
    lib.ts_client_connect.restype = ctypes.c_int
    lib.ts_client_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(Info)]
    lib.ts_client_info.restype = None
    lib.ts_client_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                   ctypes.POINTER(Error)]
    lib.ts_client_next.restype = ctypes.c_int
    lib.ts_client_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch)]
    lib.ts_client_release.restype = None
    lib.ts_client_close.argtypes = [ctypes.c_void_p]
    lib.ts_client_close.restype = None
    lib.ts_client_strerror.argtypes = [ctypes.c_int]
    lib.ts_client_strerror.restype = ctypes.c_char_p
    if hasattr(lib, "ts_client_device_info"):
        lib.ts_client_device_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(DevInfo),
                                              ctypes.POINTER(Error)]
        lib.ts_client_device_info.restype = ctypes.c_int
    if hasattr(lib, "ts_client_device_fallback"):
        lib.ts_client_device_fallback.argtypes = [ctypes.c_void_p, ctypes.POINTER(Fallback)]
        lib.ts_client_device_fallback.restype = ctypes.c_int
    if hasattr(lib, "ts_client_device_open"):
        lib.ts_client_device_open.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_void_p),
                                              ctypes.POINTER(Error)]
        lib.ts_client_device_open.restype = ctypes.c_int
        lib.ts_client_device_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                               ctypes.POINTER(ctypes.c_void_p),
                                               ctypes.POINTER(Error)]
        lib.ts_client_device_batch.restype = ctypes.c_int
        lib.ts_client_device_zero_copy.argtypes = [ctypes.c_void_p]
        lib.ts_client_device_zero_copy.restype = ctypes.c_int
        lib.ts_client_device_copy.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                              ctypes.c_void_p, ctypes.POINTER(Error)]
        lib.ts_client_device_copy.restype = ctypes.c_int
        lib.ts_client_device_close.argtypes = [ctypes.c_void_p]
        lib.ts_client_device_close.restype = None
    if hasattr(lib, "ts_client_device_next"):
        lib.ts_client_device_copy_async.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                                    ctypes.c_void_p, ctypes.c_void_p,
                                                    ctypes.POINTER(Error)]
        lib.ts_client_device_copy_async.restype = ctypes.c_int
        lib.ts_client_device_record_use.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                    ctypes.POINTER(Error)]
        lib.ts_client_device_record_use.restype = ctypes.c_int
    if hasattr(lib, "ts_client_device_set_outstanding"):
        lib.ts_client_device_set_outstanding.argtypes = [ctypes.c_void_p, ctypes.c_uint,
                                                         ctypes.POINTER(Error)]
        lib.ts_client_device_set_outstanding.restype = ctypes.c_int
        lib.ts_client_device_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                              ctypes.POINTER(Error)]
        lib.ts_client_device_next.restype = ctypes.c_int
        lib.ts_client_device_hold.argtypes = [ctypes.c_void_p]
        lib.ts_client_device_hold.restype = None
        lib.ts_client_device_unhold.argtypes = [ctypes.c_void_p]
        lib.ts_client_device_unhold.restype = None
    lib.ts_client_next_held.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                        ctypes.POINTER(Error)]
    lib.ts_client_next_held.restype = ctypes.c_int
    lib.ts_client_release_below.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.ts_client_release_below.restype = None
    lib.ts_client_span_map.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch),
                                       ctypes.POINTER(Span), ctypes.POINTER(Error)]
    lib.ts_client_span_map.restype = ctypes.c_int
    lib.ts_client_span_own.argtypes = [ctypes.POINTER(Span), ctypes.POINTER(Error)]
    lib.ts_client_span_own.restype = ctypes.c_int
    lib.ts_client_span_unmap.argtypes = [ctypes.POINTER(Span)]
    lib.ts_client_span_unmap.restype = None
    lib.ts_client_span_clean.argtypes = [ctypes.POINTER(Span)]
    lib.ts_client_span_clean.restype = ctypes.c_int
    if hasattr(lib, "ts_client_pin_mapping"):
        lib.ts_client_pin_mapping.argtypes = [ctypes.c_void_p, ctypes.POINTER(Pinned),
                                              ctypes.POINTER(Error)]
        lib.ts_client_pin_mapping.restype = ctypes.c_int
        lib.ts_client_unpin.argtypes = [ctypes.POINTER(Pinned), ctypes.POINTER(Error)]
        lib.ts_client_unpin.restype = ctypes.c_int
    if hasattr(lib, "ts_client_end_epoch"):
        lib.ts_client_end_epoch.argtypes = [ctypes.c_void_p]
        lib.ts_client_end_epoch.restype = ctypes.c_uint64
    if hasattr(lib, "ts_client_stats"):
        lib.ts_client_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(Stats)]
        lib.ts_client_stats.restype = None
        lib.ts_client_unused.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.ts_client_unused.restype = None
    if hasattr(lib, "ts_client_mix_batch"):
        lib.ts_client_mix_init_size.argtypes = [ctypes.POINTER(Mix), ctypes.c_size_t]
        lib.ts_client_mix_init_size.restype = None
        lib.ts_client_mix_check.argtypes = [ctypes.POINTER(Mix), ctypes.POINTER(Error)]
        lib.ts_client_mix_check.restype = ctypes.c_int
        lib.ts_client_mix_params.argtypes = [ctypes.POINTER(Mix), ctypes.POINTER(Batch),
                                             ctypes.POINTER(MixSample), ctypes.POINTER(Error)]
        lib.ts_client_mix_params.restype = ctypes.c_int
        lib.ts_client_mix_batch.argtypes = [ctypes.POINTER(Mix), ctypes.POINTER(Batch),
                                            ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.POINTER(Error)]
        lib.ts_client_mix_batch.restype = ctypes.c_int
    _lib = lib
    return lib


