"""device-loader.py - the device ring end to end on a GPU host.

`tsrun run` serves a pipeline ending in device(cuda); in one process a
tsrun.Loader(device="cuda"), one with raw_views=True and a plain CPU
Loader consume the same samples. The default device Loader copies each
batch out of the producer's device ring on the GPU (its own tensors:
source "device-ring (device copy)"); the raw_views one views the ring in
place on the producer's GPU ("device-ring (zero-copy)"). Both must equal
torch's own finishing of the host ring's uint8 NHWC samples:
(x / 255 - mean) / std, NCHW; float32 and float16, at 40x40 (slots
packed) and at 33x33 (an odd sample size: the device ring pads each slot
to a multiple of 16 bytes, so the zero-copy batch is [n, 3, 33, 33] with
a sample stride of its own, and the copied one is contiguous). The
device ring must
really be used: the loaders' sources are checked after the first batch
(a loader falls back with a RuntimeWarning, and says so in ``source``
only once it tried), and every RuntimeWarning is an error.

The source strings expected here are first checked against the Loader's
own code, so a renamed source fails on any host, not first on a GPU.
Without a CUDA build of torch (tests/gpu/run --fake, against the stand-in
runtime) the producer's side still runs: tsrun must serve the device ring
and the CPU Loader get every sample; then exit 77 for the device part.
On a GPU also: pin_memory=True without a device gives pinned copies and
leaves the ring unlocked; with raw_views it locks the ring.
Exit 77 (skip) without torch.
"""
import os
import subprocess
import sys
import tempfile
import time
import warnings

SKIP = 77


# what Loader.source reads for each device path (tensorsocket(7))
SOURCES = {"copy": "device-ring (device copy)", "raw": "device-ring (zero-copy)"}


def sources_known():
    """Each expected source string is one the Loader can report."""
    import tsrun.loader
    with open(tsrun.loader.__file__, encoding="utf-8") as f:
        text = f.read()
    bad = 0
    for kind, want in SOURCES.items():
        # the Loader builds the raw one as "device-ring (%s)" % "zero-copy"
        parts = [want] if kind == "copy" else ['"device-ring (%s)"', '"zero-copy"']
        if not all(p.strip('"') in text for p in parts):
            print(f"FAIL: the Loader never reports {want!r} (expected for {kind})")
            bad += 1
    return bad


def strides_known():
    """The zero-copy view's strides for padded and packed slots, on any
    host: slots of an odd sample size are its bytes rounded up to 16."""
    from tsrun import _lib, loader
    bad = 0
    for h, w, dt, es in ((33, 33, 3, 4), (33, 33, 2, 2), (7, 5, 3, 4), (40, 40, 3, 4)):
        sb = h * w * 3 * es
        slot = (sb + 15) // 16 * 16
        info = _lib.DevInfo(height=h, width=w, channels=3, dtype=dt, layout=1,
                            sample_bytes=sb, sample_stride=slot)
        want = None if slot == sb else (slot, h * w * es, w * es, es)
        got = loader._device_strides(info)
        if got != want:
            print(f"FAIL: a {h}x{w}x3 device view (slots of {slot} bytes): strides "
                  f"{got}, expected {want}")
            bad += 1
    return bad


def passes(torch, cuda, loaders, n):
    """n passes of the loaders in step (as zip), each next() under
    torch's sync debug mode "error" on a GPU; a string says which one
    synchronised."""
    for _ in range(n):
        its = [iter(l) for l in loaders]
        while True:
            if cuda:
                torch.cuda.set_sync_debug_mode("error")
            try:
                got = [next(it) for it in its]
            except StopIteration:
                break
            except RuntimeError as e:
                if "synchroniz" not in str(e):
                    raise
                yield f"next() synchronised the host with the GPU: {e}"
                return
            finally:
                if cuda:
                    torch.cuda.set_sync_debug_mode(0)
            yield got


def serve(tsrun_bin, tmp, stages, epochs, trainers, stderr):
    """`tsrun run` of `pipeline train = stages` (its socket in tmp) for
    trainers trainers: (process, socket path) once the socket is there."""
    sock = os.path.join(tmp, "s.sock")
    with open(os.path.join(tmp, "p.ts"), "w") as f:
        f.write(f"pipeline train =\n    {stages}\n"
                f"serve train {{\n    socket = \"{sock}\"\n    epochs = {epochs}\n}}\n")
    proc = subprocess.Popen([tsrun_bin, "run", os.path.join(tmp, "p.ts"),
                             "--wait", str(trainers)], stderr=stderr)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return proc, sock


def reap(proc):
    """Wait a minute for proc's end, then kill it."""
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def pinned_host_batches(torch, tsrun, tsrun_bin):
    """pin_memory=True without a device on a host ring: each batch is a
    pinned copy and the ring is not page-locked; with raw_views the ring
    is (ts_client_pin_mapping, once). Failures counted."""
    bad = 0
    with tempfile.TemporaryDirectory(prefix="tsrun-pin-") as tmp:
        proc, sock = serve(tsrun_bin, tmp, "synthetic(32, count = 256, classes = 10) "
                           "| to(uint8, nhwc) | batch(32)", 1, 2, subprocess.DEVNULL)
        try:
            copy = tsrun.Loader(sock, batch_size=32, pin_memory=True, timeout=60)
            raw = tsrun.Loader(sock, batch_size=32, pin_memory=True, raw_views=True, timeout=60)
            n = 0
            for (ci, _), (ri, _) in zip(copy, raw):
                if not ci.is_pinned() or not torch.equal(ci, ri):
                    print(f"FAIL: pin_memory batch at {copy.index}: pinned {ci.is_pinned()}, "
                          f"equal to the raw view {torch.equal(ci, ri)}")
                    bad += 1
                n += ci.shape[0]
            if copy._pinned is not None or not raw._pinned:
                print(f"FAIL: pin_memory without a device locked the ring ({copy._pinned!r}) "
                      f"or raw_views did not ({raw._pinned!r})")
                bad += 1
            copy.close()
            raw.close()
            print(f"pin_memory host batches: {n} samples, pinned copies; ring locked only "
                  "for raw views")
            if n != 256:
                print(f"FAIL: pin_memory: {n} samples, expected 256")
                bad += 1
        finally:
            reap(proc)
    return bad


def main():
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch is missing ({e})")
        return SKIP
    if os.environ.get("TS_LIBTSCLIENT"):
        os.environ["TSRUN_LIBTSCLIENT"] = os.environ["TS_LIBTSCLIENT"]
    import tsrun
    failures = sources_known() + strides_known()
    cuda = torch.cuda.is_available()
    if not cuda:
        print("torch.cuda.is_available() is false (a CPU-only torch, or no GPU): "
              "the producer's side only")

    tsrun_bin = os.environ["TSRUN"]
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    for dtype, tol, size in (("float32", 1e-5, 40), ("float16", 2e-3, 40),
                             ("float32", 1e-5, 33), ("float16", 2e-3, 33)):
        es = 4 if dtype == "float32" else 2
        # slot to slot on the device: the sample's bytes up to 16
        slot = (size * size * 3 * es + 15) // 16 * 16
        with tempfile.TemporaryDirectory(prefix="tsrun-gpu-") as tmp:
            log = open(os.path.join(tmp, "run.err"), "w+")
            kinds = ("copy", "raw") if cuda else ()
            proc, sock = serve(tsrun_bin, tmp,
                               f"synthetic(48, count = 600, classes = 10) "
                               f"| random_crop({size}) | flip(p = 0.5) | to(uint8, nhwc) "
                               f"| device(cuda, dtype = {dtype}, mean = {mean}, std = {std}) "
                               f"| batch(32)", 2, 1 + len(kinds), log)
            try:
                # a fallback of the loader warns: here that is a failure
                warnings.simplefilter("error", RuntimeWarning)
                devs = [tsrun.Loader(sock, batch_size=32, join="next_epoch", device="cuda:0",
                                     raw_views=(k == "raw"), timeout=60) for k in kinds]
                host = tsrun.Loader(sock, batch_size=32, join="next_epoch", timeout=60)
                m = torch.tensor(mean).view(1, 3, 1, 1)
                s = torch.tensor(std).view(1, 3, 1, 1)
                n = worst = 0
                # two epochs: one pass of every loader each; on a GPU no
                # next() may synchronise the host with the GPU (a label
                # copy from pageable memory would, every batch)
                for batches in passes(torch, cuda, [host] + devs, 2):
                    if isinstance(batches, str):
                        print(f"FAIL: {dtype} {size}x{size}: {batches}")
                        failures += 1
                        break
                    (hi, hl), rest = batches[0], batches[1:]
                    assert hi.dtype == torch.uint8 and hi.shape[1:] == (size, size, 3), hi.shape
                    if n == 0:
                        # what the loaders settled on, once they have a batch
                        for k, dev in zip(kinds, devs):
                            print(f"{dtype}: device loader ({k}) source: {dev.source}")
                            if dev.source != SOURCES[k]:
                                print(f"FAIL: {dtype} {size}x{size}: tsrun runs on cuda:0, the loader "
                                      f"({k}) too, but it reads {dev.source!r}, not "
                                      f"{SOURCES[k]!r}")
                                failures += 1
                    ref = (hi.permute(0, 3, 1, 2).float() / 255 - m) / s
                    for k, (di, dl) in zip(kinds, rest):
                        assert di.is_cuda and di.dtype == getattr(torch, dtype), di.dtype
                        assert di.shape == (hi.shape[0], 3, size, size), di.shape
                        # raw: the ring's layout; copy: the trainer's own,
                        # contiguous
                        want = (slot // es if k == "raw" else 3 * size * size,
                                size * size, size, 1)
                        if di.stride() != want or (k == "raw" and
                                                   di.data_ptr() % 16 != 0):
                            print(f"FAIL: {dtype} {size}x{size}: {k}: strides "
                                  f"{di.stride()} at {di.data_ptr():#x}, expected "
                                  f"{want}, 16-byte aligned")
                            failures += 1
                        diff = float((di.float().cpu() - ref).abs().max())
                        worst = max(worst, diff)
                        if diff > tol or not torch.equal(dl.cpu(), hl):
                            print(f"FAIL: {dtype} {size}x{size}: {k}: batch at {host.index}: max diff {diff}")
                            failures += 1
                    n += hi.shape[0]
                for dev in devs:
                    dev.close()
                host.close()
                print(f"{dtype} {size}x{size}: {n} samples, max |device - torch| = {worst:.2e}")
                if n != 1200:
                    print(f"FAIL: {dtype} {size}x{size}: {n} samples, expected 1200")
                    failures += 1
            finally:
                reap(proc)
                log.seek(0)
                text = log.read()
                if "finishing on GPU" not in text:
                    print(f"FAIL: {dtype} {size}x{size}: tsrun did not serve a device ring:\n{text}")
                    failures += 1
                if proc.returncode != 0:
                    print(f"FAIL: {dtype} {size}x{size}: tsrun exited {proc.returncode}:\n{text}")
                    failures += 1
    if cuda:
        failures += pinned_host_batches(torch, tsrun, tsrun_bin)
    if failures:
        print(f"{failures} failure(s)")
        return 1
    if not cuda:
        print("SKIP: the producer's side passed; the device Loaders need a CUDA build of torch")
        return SKIP
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
