#!/usr/bin/python3
"""python-client.py - tsrun.Loader (torch, zero-copy) beside a C trainer
on one producer: same bytes, labels, epochs; len(); per-epoch iteration;
pin_memory without CUDA, and with it (stood in for) the ring locked only
for raw views; refusal and producer death as exceptions; an
odd-sized sample (299x299x3 uint8) in a ring of padded slots."""
import os
import signal
import subprocess
import sys
import tempfile
import warnings

TOOL = os.environ.get("TS_TOOL_PRODUCER_TOOL")
LIB = os.environ.get("TS_LIBTSCLIENT")
if not TOOL or not LIB:
    print("TS_TOOL_PRODUCER_TOOL / TS_LIBTSCLIENT not set: skip")
    sys.exit(77)
try:
    import torch
except ImportError:
    print("no torch: skip")
    sys.exit(77)
os.environ["TSRUN_LIBTSCLIENT"] = LIB
sys.path.insert(0, os.path.join(os.environ.get("TS_SRCDIR", ".."), "src", "python"))
import tsrun  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def fnv(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def expected(e, i, h, w, c):
    j = torch.arange(h * w * c, dtype=torch.int64)
    return ((e * 131 + i * 31 + j * 7 + (j >> 8) * 3) & 255).to(torch.uint8).view(h, w, c)


def start_producer(sock, *args):
    p = subprocess.Popen([TOOL, sock, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    assert p.stdout.readline().startswith("ready")
    return p


def side_by_side(tmp):
    sock = os.path.join(tmp, "py.sock")
    spe, epochs = 500, 2
    prod = start_producer(sock, "--samples-per-epoch", str(spe), "--epochs",
                          str(epochs), "--shape", "8x8x3", "--min-consumers", "2",
                          "--capacity", "512")
    out = os.path.join(tmp, "c.txt")
    c = subprocess.Popen([TOOL, "consume", sock, "--batch", "100", "--out", out])
    with warnings.catch_warnings(record=True) as wrn:
        warnings.simplefilter("always")
        loader = tsrun.Loader(sock, batch_size=64, pin_memory=True, timeout=30)
    if not torch.cuda.is_available():
        check(any("pin_memory" in str(x.message) for x in wrn),
              "no warning for pin_memory without CUDA")
    check(len(loader) == 8, f"len(loader) = {len(loader)}")
    h = 0xcbf29ce484222325
    n_total, epochs_seen = 0, set()
    for _ in range(epochs):  # one pass per epoch
        for images, labels in loader:
            check(images.dtype == torch.uint8 and tuple(images.shape[1:]) == (8, 8, 3),
                  f"batch shape {tuple(images.shape)}")
            e, i0 = loader.epoch, loader.index
            epochs_seen.add(e)
            for k in (0, images.shape[0] - 1):
                check(torch.equal(images[k], expected(e, i0 + k, 8, 8, 3)),
                      f"sample {e}/{i0 + k} differs")
                check(int(labels[k]) == ((i0 + k) * 7 + e) % 1000, "label")
            check(labels.dtype == torch.int64, "labels dtype")
            h = fnv(images.numpy().tobytes(), h)
            n_total += images.shape[0]
    loader.close()
    check(c.wait(timeout=60) == 0, "C consumer failed")
    prod.wait(timeout=30)
    c_digest = [line.split()[1] for line in open(out) if line.startswith("stream-digest")]
    check(c_digest == [f"{h:016x}"], f"digests: python {h:016x}, C {c_digest}")
    check(n_total == spe * epochs and epochs_seen == {0, 1}, f"saw {n_total} {epochs_seen}")
    print(f"python and C consumers agree: digest {h:016x}")


def per_epoch_and_zero_copy(tmp):
    sock = os.path.join(tmp, "ep.sock")
    prod = start_producer(sock, "--samples-per-epoch", "300", "--epochs", "3",
                          "--shape", "4x4x1", "--min-consumers", "1",
                          "--capacity", "512")
    loader = tsrun.Loader(sock, batch_size=64, drop_last=True)
    counts = []
    for _ in range(3):
        batches = list(loader)
        counts.append(len(batches))
    check(counts == [4, 4, 4], f"per-epoch batches {counts}")
    loader.close()
    prod.wait(timeout=30)
    sock = os.path.join(tmp, "zc.sock")
    prod = start_producer(sock, "--samples-per-epoch", "300", "--epochs", "1",
                          "--shape", "4x4x1", "--min-consumers", "1")
    loader = tsrun.Loader(sock, batch_size=32, raw_views=True)
    it = iter(loader)
    a, _ = next(it)
    ptr_a = a.data_ptr()
    b, _ = next(it)
    # Raw views into the ring: consecutive batches are consecutive memory.
    check(b.data_ptr() - ptr_a == 32 * 16, "raw_views batches are not views of the ring")
    loader.close()
    prod.wait(timeout=30)
    print("per-epoch iteration and zero-copy views ok")


def ring_file_bytes(pid):
    """The size of producer pid's ring memfd."""
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, fd)).startswith("/memfd:tsrun-ring"):
                return os.stat(os.path.join(fd_dir, fd)).st_size
        except OSError:
            pass
    return None


def padded_slots(tmp):
    """299x299x3 uint8 is 268,203 bytes: unpadded, a ring of it rounds up
    to 4,096 samples (1 GiB); its slots are padded to 268,224 bytes so a
    ring of 64 is 17 MiB. Every batch, kept, copied or written in place,
    must still hold each sample's own bytes, beside a C trainer."""
    sock = os.path.join(tmp, "pad.sock")
    spe, epochs, h = 100, 2, 299
    prod = subprocess.Popen([TOOL, sock, "--samples-per-epoch", str(spe), "--epochs",
                             str(epochs), "--shape", f"{h}x{h}x3", "--min-consumers", "2",
                             "--capacity", "64"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    ready = prod.stdout.readline()
    check("capacity=64 " in ready and "sample_bytes=268203" in ready, f"producer: {ready}")
    size = ring_file_bytes(prod.pid)
    check(size is not None and size < 64 * 268224 + (1 << 20),
          f"ring memfd is {size} bytes for 64 samples of 268,203")
    out = os.path.join(tmp, "pad.txt")
    c = subprocess.Popen([TOOL, "consume", sock, "--batch", "16", "--out", out])
    loader = tsrun.Loader(sock, batch_size=16, timeout=30)
    kept, n_total = [], 0
    for e in range(epochs):
        for images, labels in loader:
            i0 = loader.index
            check(images.dtype == torch.uint8 and tuple(images.shape[1:]) == (h, h, 3),
                  f"batch shape {tuple(images.shape)}")
            for k in range(images.shape[0]):
                check(torch.equal(images[k], expected(e, i0 + k, h, h, 3)),
                      f"padded sample {e}/{i0 + k} differs")
                check(int(labels[k]) == ((i0 + k) * 7 + e) % 1000, "padded label")
            if e == 0:
                check(not images.is_contiguous(), "a padded batch is a strided view")
                kept.append((i0, images, images.clone()))
                # the Loader's copy to a device: the span, packed there
                moved = tsrun._tensors.to_device(images, "cpu")
                check(moved.is_contiguous() and torch.equal(moved, images),
                      "to_device of a padded batch")
            else:
                images.add_(1)  # in place, on the trainer's side only
                check(torch.equal(images[0], expected(e, i0, h, h, 3) + 1), "in-place add")
            n_total += images.shape[0]
    # batches kept across the epoch (more than the ring holds) are intact
    for i0, images, copy in kept:
        check(torch.equal(images, copy), f"kept padded batch at {i0} changed")
    loader.close()
    check(c.wait(timeout=60) == 0, "C consumer of padded slots failed (mismatch)")
    prod.wait(timeout=30)
    check(n_total == spe * epochs, f"padded: saw {n_total}")
    print(f"padded slots: ring of 64 x 268,203 bytes is {size} bytes; samples intact")


def errors(tmp):
    sock = os.path.join(tmp, "err.sock")
    prod = start_producer(sock, "--epochs", "0", "--rate", "2000",
                          "--capacity", "256")
    try:
        tsrun.Loader(sock, batch_size=1000)
        check(False, "oversized batch accepted")
    except tsrun.TsrunError as e:
        check(e.code == -5007 and "half the ring" in str(e)
              and "serve setting ring = " in str(e) and "ring = 2000 samples" in str(e), str(e))
    loader = tsrun.Loader(sock, batch_size=16)
    it = iter(loader)
    next(it)
    prod.send_signal(signal.SIGKILL)
    prod.wait()
    try:
        for _ in it:
            pass
        check(False, "no error after the producer died")
    except tsrun.ProducerGone:
        pass
    loader.close()
    try:
        tsrun.Loader(os.path.join(tmp, "none.sock"))
        check(False, "connected to nothing")
    except tsrun.TsrunError as e:
        check(e.code == -2, f"missing socket code {e.code}")
    print("errors surface as exceptions")


def pin_ring_only_for_dma(tmp):
    """pin_memory=True with CUDA: without a device, each batch is a pinned
    copy and the ring is never page-locked (that would fill and lock every
    page of it before the first batch, for a copy the CPU makes); with
    raw_views it is locked once. No CUDA torch here, so CUDA's part is
    stood in for: is_available() says yes, the pinned copy is a clone, and
    the ring's registration only counts its calls."""
    import tsrun.loader as tl
    calls = {"register": 0, "copy": 0}

    def register(self, addr):
        calls["register"] += 1
        self._pinned = False  # as a refused registration: copies follow

    def copy(images):
        calls["copy"] += 1
        return images.clone()

    saved = (torch.cuda.is_available, tl._shapes.pinned, tl.Loader._pin_ring)
    torch.cuda.is_available = lambda: True
    tl._shapes.pinned, tl.Loader._pin_ring = copy, register
    try:
        for raw, want in ((False, 0), (True, 1)):
            calls.update(register=0, copy=0)
            sock = os.path.join(tmp, f"pin{int(raw)}.sock")
            prod = start_producer(sock, "--samples-per-epoch", "200", "--epochs", "1",
                                  "--shape", "4x4x3", "--min-consumers", "1")
            loader = tsrun.Loader(sock, batch_size=50, pin_memory=True, raw_views=raw,
                                  timeout=30)
            n = 0
            for images, labels in loader:
                e, i0 = loader.epoch, loader.index
                check(torch.equal(images[0], expected(e, i0, 4, 4, 3)),
                      f"pin raw={raw}: sample {e}/{i0} differs")
                n += images.shape[0]
            loader.close()
            prod.wait(timeout=30)
            check(n == 200, f"pin raw={raw}: {n} samples")
            check(calls["register"] == want,
                  f"pin_memory raw_views={raw} without a device registered the ring "
                  f"{calls['register']} times, want {want}")
            check(calls["copy"] == 4, f"pin raw={raw}: {calls['copy']} pinned copies, want 4")
    finally:
        torch.cuda.is_available, tl._shapes.pinned, tl.Loader._pin_ring = saved


def main():
    with tempfile.TemporaryDirectory(prefix="ts-py-") as tmp:
        side_by_side(tmp)
        pin_ring_only_for_dma(tmp)
        per_epoch_and_zero_copy(tmp)
        errors(tmp)
        padded_slots(tmp)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
