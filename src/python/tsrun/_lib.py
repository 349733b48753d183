"""libtsclient through ctypes: where the library is found, and the C
structures of tsclient.h and tsclient_cuda.h mirrored field for field."""

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


class Opts(ctypes.Structure):
    _fields_ = [("batch_size", ctypes.c_uint32), ("join", ctypes.c_int),
                ("drop_last", ctypes.c_int), ("timeout_ms", ctypes.c_int),
                ("connect_timeout_ms", ctypes.c_int),
                # a rank of a job (tsclient.h): the name, rank, world size
                ("job", ctypes.c_char_p), ("rank", ctypes.c_uint32),
                ("world_size", ctypes.c_uint32), ("job_drop_last", ctypes.c_int)]


class Batch(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_size_t),
                ("labels", ctypes.POINTER(ctypes.c_int32)),
                ("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("epoch", ctypes.c_uint32), ("index", ctypes.c_uint64),
                ("seq", ctypes.c_uint64), ("sample_stride", ctypes.c_size_t)]


class Info(ctypes.Structure):
    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("batch_size", ctypes.c_uint32), ("capacity", ctypes.c_uint64),
                ("samples_per_epoch", ctypes.c_uint64),
                ("epochs", ctypes.c_uint32), ("start", ctypes.c_uint64),
                ("start_epoch", ctypes.c_uint32),
                ("producer_pid", ctypes.c_int), ("sample_stride", ctypes.c_size_t)]


class DevInfo(ctypes.Structure):
    _fields_ = [("height", ctypes.c_int), ("width", ctypes.c_int),
                ("channels", ctypes.c_int), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int), ("sample_bytes", ctypes.c_size_t),
                ("capacity", ctypes.c_uint64), ("mirror", ctypes.c_uint64),
                ("producer_device", ctypes.c_int), ("producer_pid", ctypes.c_int),
                ("pci_bus_id", ctypes.c_char * 16),
                ("ipc", ctypes.c_ubyte * 64)]


class Fallback(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("normalize", ctypes.c_int),
                ("mean", ctypes.c_float * 4), ("std", ctypes.c_float * 4),
                ("why", ctypes.c_char * 128)]


class Span(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


class Pinned(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Mix(ctypes.Structure):
    _fields_ = [("mixup_alpha", ctypes.c_double), ("cutmix_alpha", ctypes.c_double),
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
    """Load libtsclient from the first place that has one (see the tsrun package's
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
    """Find and load libtsclient once (see the tsrun package's docstring
    for where it looks) and declare its functions. Raises LibraryNotFound (an
    OSError) when there is none to load."""
    global _lib
    if _lib is not None:
        return _lib
    lib = _find_library()
    lib.ts_client_opts_init.argtypes = [ctypes.POINTER(Opts)]
    lib.ts_client_opts_init.restype = None
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
    if hasattr(lib, "ts_client_mix_batch"):
        lib.ts_client_mix_init.argtypes = [ctypes.POINTER(Mix)]
        lib.ts_client_mix_init.restype = None
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


