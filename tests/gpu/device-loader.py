"""device-loader.py - the device ring end to end on a GPU host.

`tsrun run` serves a pipeline ending in device(cuda); in one process a
tsrun.Loader(device="cuda") and a plain CPU Loader consume the same
samples. The device batches must view the producer's device ring without
a copy (same GPU) and equal torch's own finishing of the host ring's
uint8 NHWC samples: (x / 255 - mean) / std, NCHW. float32 and float16.
The device ring must really be used: the loader's source is checked
after the first batch (a loader falls back to copying host batches, or
to copying device batches, with a RuntimeWarning, and says so in
``source`` only once it tried), every RuntimeWarning is an error, and on
the producer's own GPU nothing but "device-ring (zero-copy)" passes.
Exit 77 (skip) without torch, without CUDA or without a GPU.
"""
import os
import subprocess
import sys
import tempfile
import time
import warnings

SKIP = 77


def main():
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch is missing ({e})")
        return SKIP
    if not torch.cuda.is_available():
        print("SKIP: torch.cuda.is_available() is false (no GPU or a CPU-only torch)")
        return SKIP
    if os.environ.get("TS_LIBTSCLIENT"):
        os.environ["TSRUN_LIBTSCLIENT"] = os.environ["TS_LIBTSCLIENT"]
    import tsrun

    tsrun_bin = os.environ["TSRUN"]
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    failures = 0
    for dtype, tol in (("float32", 1e-5), ("float16", 2e-3)):
        with tempfile.TemporaryDirectory(prefix="tsrun-gpu-") as tmp:
            sock = os.path.join(tmp, "s.sock")
            with open(os.path.join(tmp, "p.ts"), "w") as f:
                f.write(f"""pipeline train =
    synthetic(48, count = 600, classes = 10)
    | random_crop(40)
    | flip(p = 0.5)
    | to(uint8, nhwc)
    | device(cuda, dtype = {dtype}, mean = {mean}, std = {std})
    | batch(32)
serve train {{
    socket = "{sock}"
    epochs = 2
}}
""")
            log = open(os.path.join(tmp, "run.err"), "w+")
            proc = subprocess.Popen([tsrun_bin, "run", os.path.join(tmp, "p.ts"),
                                     "--wait", "2"], stderr=log)
            try:
                for _ in range(200):
                    if os.path.exists(sock):
                        break
                    time.sleep(0.05)
                # a fallback of the loader warns: here that is a failure
                warnings.simplefilter("error", RuntimeWarning)
                dev = tsrun.Loader(sock, batch_size=32, join="next_epoch",
                                   device="cuda:0", timeout=60)
                host = tsrun.Loader(sock, batch_size=32, join="next_epoch", timeout=60)
                m = torch.tensor(mean).view(1, 3, 1, 1)
                s = torch.tensor(std).view(1, 3, 1, 1)
                n = worst = 0
                # two epochs: one pass of both loaders each
                for (di, dl), (hi, hl) in (p for _ in range(2) for p in zip(dev, host)):
                    if n == 0:
                        # what the loader settled on, once it has a batch
                        print(f"{dtype}: device loader source: {dev.source}")
                        if dev.source != "device-ring (zero-copy)":
                            print(f"FAIL: {dtype}: tsrun runs on cuda:0, the loader too, "
                                  f"but it reads {dev.source!r}, not the device ring "
                                  f"in place")
                            failures += 1
                            break
                    assert di.is_cuda and di.dtype == getattr(torch, dtype), di.dtype
                    assert di.shape == (hi.shape[0], 3, 40, 40), di.shape
                    ref = (hi.permute(0, 3, 1, 2).float() / 255 - m) / s
                    diff = float((di.float().cpu() - ref).abs().max())
                    worst = max(worst, diff)
                    if diff > tol or not torch.equal(dl.cpu(), hl):
                        print(f"FAIL: {dtype}: batch at {dev.index}: max diff {diff}")
                        failures += 1
                        break
                    n += di.shape[0]
                dev.close()
                host.close()
                print(f"{dtype}: {n} samples, max |device - torch| = {worst:.2e}")
                if n != 1200:
                    print(f"FAIL: {dtype}: {n} samples, expected 1200")
                    failures += 1
            finally:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                log.seek(0)
                text = log.read()
                if "finishing on GPU" not in text:
                    print(f"FAIL: {dtype}: tsrun did not serve a device ring:\n{text}")
                    failures += 1
                if proc.returncode != 0:
                    print(f"FAIL: {dtype}: tsrun exited {proc.returncode}:\n{text}")
                    failures += 1
    print("ok" if failures == 0 else f"{failures} failure(s)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
