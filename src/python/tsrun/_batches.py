"""Batches that are ordinary tensors: each CPU batch gets its own private,
copy-on-write mapping of its samples in the ring (ts_client_span_map), so
reading is zero-copy, an in-place op copies only the pages it writes and
never reaches the ring, and the mapping lives exactly as long as a tensor
views it. Its slots stay held until the tensor dies; a batch still alive
when the loader waits for a new one (beyond the one just handed out) or
when the loader closes is first made the process's own
(ts_client_span_own: the pages not copied yet are copied), then released,
so a kept batch keeps its values. See tensorsocket(7), "Python batches"."""

import collections
import ctypes
import threading
import weakref

from . import _lib
from . import _tensors as _shapes
from .errors import TsrunError

_NONE_HELD = (1 << 64) - 1
_owner_types = {}


def _owner_del(self):
    """The last tensor viewing the span is gone: keep the mapping for the
    next batch of the same ring range when none of its pages was written
    (setting up and tearing down page tables costs about a copy), else
    unmap it; and hand the slots back (at once when this is the loader's
    thread and the loader is not in the middle of its own bookkeeping,
    else at its next call)."""
    try:
        lib = _lib.load_library()
        keeper = self._keeper
        span = ctypes.byref(self._span)
        if (keeper is not None and keeper.client is not None
                and len(keeper.cache) < keeper.cache_max
                and self._range not in keeper.cache
                and lib.ts_client_span_clean(span) == 1):
            keeper.cache[self._range] = self._span
        else:
            lib.ts_client_span_unmap(span)
        if keeper is not None:
            keeper.freed.append(self._key)
            if keeper.thread == threading.get_ident() and not keeper.busy:
                keeper.settle()
    except Exception:  # interpreter shutdown: modules may be gone
        pass


def _owner_type(nbytes):
    """A ctypes byte array type of nbytes whose instances own a span: the
    buffer torch.frombuffer views, kept alive by every tensor on it."""
    t = _owner_types.get(nbytes)
    if t is None:
        t = type("_SpanOwner", (ctypes.c_uint8 * nbytes,), {"__del__": _owner_del})
        _owner_types[nbytes] = t
    return t


class Keeper:
    """The batches of one loader still viewed by a tensor, oldest first,
    and the ring release that follows from them."""

    def __init__(self, lib, client, capacity, batch):
        self.lib = lib
        self.client = client
        self.capacity = capacity
        # Clean spans by ring range (first slot, samples): a ring's worth.
        self.cache = {}
        self.cache_max = max(2, 2 * capacity // max(batch, 1))
        self.reused = 0      # batches served by a cached span
        self.thread = threading.get_ident()
        self.busy = 0        # > 0 while the loader itself works on held
        self.freed = collections.deque()   # keys of dead spans (any thread)
        self.held = collections.OrderedDict()  # key -> (weakref, seq)
        self.next_key = 0
        self.copied = 0      # batches made our own (kept past the bound)

    def view(self, b, torch_dtype, shape):
        """A tensor of b's samples in a private mapping; None when the
        kernel refuses one (the caller copies instead)."""
        import torch
        where = (b.seq % self.capacity, b.n)
        span = self.cache.pop(where, None)
        if span is not None:
            self.reused += 1  # same range, every page still the ring's
        else:
            span, err = _lib.Span(), _lib.Error()
            if self.lib.ts_client_span_map(self.client, ctypes.byref(b), ctypes.byref(span),
                                           ctypes.byref(err)) < 0:
                return None, err.msg.decode("utf-8", "replace")
        owner = _owner_type(_shapes.span_bytes(b)).from_address(span.data)
        owner._span = span
        owner._range = where
        owner._key = self.next_key
        owner._keeper = self
        self.held[self.next_key] = (weakref.ref(owner), b.seq)
        self.next_key += 1
        return _shapes.batch_view(torch.frombuffer(owner, dtype=torch_dtype), b, shape), None

    def settle(self, keep=None):
        """Forget dead spans; make all but the newest `keep` live ones our
        own (None: keep all); release the ring below the oldest held."""
        self.busy += 1
        try:
            while self.freed:
                self.held.pop(self.freed.popleft(), None)
            while keep is not None and len(self.held) > keep:
                self.own_oldest()
            self.release()
        finally:
            self.busy -= 1

    def own_oldest(self):
        """Copy the oldest held batch's remaining pages into this process
        and stop holding its slots. False when none is held."""
        if not self.held:
            return False
        key, (ref, seq) = self.held.popitem(last=False)
        owner = ref()  # a strong reference while its pages are copied
        if owner is not None:
            err = _lib.Error()
            rc = self.lib.ts_client_span_own(ctypes.byref(owner._span), ctypes.byref(err))
            if rc < 0:
                self.held[key] = (ref, seq)  # still the ring's: keep holding
                self.held.move_to_end(key, last=False)
                raise TsrunError(rc, "tsrun.Loader: cannot copy a kept batch out of the "
                                 "ring: %s" % err.msg.decode("utf-8", "replace"))
            owner._keeper = None
            self.copied += 1
        return True

    def release(self):
        if self.client is None:
            return
        floor = min((seq for _, seq in self.held.values()), default=_NONE_HELD)
        self.lib.ts_client_release_below(self.client, floor)

    def close(self):
        """Before the client goes: every live batch becomes our own."""
        self.busy += 1
        try:
            while self.freed:
                self.held.pop(self.freed.popleft(), None)
            while self.own_oldest():
                pass
            self.client = None
            while self.cache:
                self.lib.ts_client_span_unmap(ctypes.byref(self.cache.popitem()[1]))
        finally:
            self.busy -= 1
