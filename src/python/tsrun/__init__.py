"""tsrun - consume batches from a tsrun producer in PyTorch.

    import tsrun
    loader = tsrun.Loader("/tmp/tsrun-train.sock", batch_size=64)
    for epoch in range(3):
        for images, labels in loader:   # one pass: one epoch
            ...

Pure Python over libtsclient (ctypes). ``images`` is a torch tensor of
the batch's samples, ``labels`` a small int64 tensor. Each pass of
``for ... in loader`` is one epoch; ``len(loader)`` is the batches of the
current pass (see tsrun.Loader and tensorsocket(7)).

With ``device="cuda"`` the batches are CUDA tensors. When the producer's
pipeline ends in ``device(cuda)`` they view its device ring (finished
float NCHW samples, shared over CUDA IPC) without a copy on the producer's
GPU, or are copied peer to peer onto another one; otherwise the host
batches are copied from the pinned ring.

libtsclient is found by itself, the first that loads of:

1. the file named by the environment variable TSRUN_LIBTSCLIENT;
2. libtsclient.so.0 next to this package (a pip or meson install puts it
   there);
3. the dynamic loader's libtsclient.so.0 (an installed tsrun, or
   LD_LIBRARY_PATH), or what ctypes.util.find_library("tsclient") finds;
4. when this package is imported from a tsrun source tree
   (src/python/tsrun), the newest build*/src/libtsclient.so* of that
   tree, so a trainer runs straight after ``meson compile``.

``tsrun.Mixup(...)`` mixes batches (Mixup, CutMix, label smoothing) as
timm.data.Mixup does, keyed by (seed, epoch, index); ``Loader(...,
mixup=tsrun.Mixup(...))`` applies it to every batch.

When none loads, ``load_library()`` (and so ``Loader``) raises
``LibraryNotFound``, an ``OSError`` that says what to do. tsrun.serve's
libtsrun is found by the same search (TSRUN_LIBTSRUN, next to this package,
the loader path, the source tree's build*/src/libtsrun.so*).

From a source tree, import it with ``PYTHONPATH=src/python``. A pip
install (``pip install --no-build-isolation .``) also puts the ``tsrun``
command in the environment's bin (the tsrun binary the package carries,
tsrun/bin/tsrun; ``python3 -m tsrun`` runs it too). ``tsrun.__version__``
is the project's version (meson.build's).
"""

from ._lib import load_library
from ._version import version as _version
from .errors import (Detached, JobFailed, LibraryNotFound, ProducerGone, Timeout,
                     TsrunError)
from .loader import Loader
from .mixup import Mixup
from .serve import Producer, serve

__version__ = _version()   # meson.build's project version

__all__ = ["Loader", "TsrunError", "ProducerGone", "Timeout", "JobFailed", "Detached",
           "LibraryNotFound", "load_library", "serve", "Producer", "Mixup"]
