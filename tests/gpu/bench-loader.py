"""bench-loader.py - images/s of `tsrun run` with device(cuda) feeding N
PyTorch trainer processes (default 4), for tests/gpu/run on a GPU host.

Each trainer is a separate process with a tsrun.Loader(device="cuda:0")
(the default: its own copy of each batch, made on the GPU from the device
ring, source "device-ring (device copy)"); it touches every batch on the
GPU (a reduction, so the batch is really read), synchronises, and reports
its sample count and the CLOCK_MONOTONIC times of its first and last
batch. Every trainer gets every image, so two figures: the producer's
rate (the images of the stream, each once, over the span from the first
trainer's first batch to the last trainer's last one) and each trainer's
own (its images over its own span; slowest, median, fastest). Prints
"key: value" lines; exit 77 without torch, CUDA or a GPU (the expected
source string is checked against the Loader first), 1 when a trainer is
not on the device ring.

    python3 bench-loader.py [TRAINERS] [IMAGES]
"""
import os
import subprocess
import sys
import tempfile
import time

SKIP = 77
SOURCE = "device-ring (device copy)"   # Loader(device=...).source

TRAINER = r"""
import os, sys, time, warnings
import torch
import tsrun
warnings.simplefilter("error", RuntimeWarning)   # no silent fallback
loader = tsrun.Loader(sys.argv[1], batch_size=int(sys.argv[2]), device="cuda:0", timeout=120)
n, first, acc = 0, None, torch.zeros((), device="cuda:0")
for images, labels in loader:
    if first is None:
        torch.cuda.synchronize()
        first = time.monotonic()
        source = loader.source
    acc += images.float().sum()
    n += images.shape[0]
torch.cuda.synchronize()
last = time.monotonic()
loader.close()
print(n, first, last, source.replace(" ", "_"))
"""


def main():
    trainers = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    images = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch is missing ({e})")
        return SKIP
    import tsrun.loader
    with open(tsrun.loader.__file__, encoding="utf-8") as f:
        if f'"{SOURCE}"' not in f.read():
            print(f"FAIL: the Loader never reports {SOURCE!r}")
            return 1
    if not torch.cuda.is_available():
        print("SKIP: torch.cuda.is_available() is false")
        return SKIP
    if os.environ.get("TS_LIBTSCLIENT"):
        os.environ["TSRUN_LIBTSCLIENT"] = os.environ["TS_LIBTSCLIENT"]
    tsrun_bin = os.environ["TSRUN"]
    batch = 128
    with tempfile.TemporaryDirectory(prefix="tsrun-bench-") as tmp:
        sock = os.path.join(tmp, "s.sock")
        with open(os.path.join(tmp, "p.ts"), "w") as f:
            f.write(f"""pipeline train =
    synthetic(256, count = {images}, classes = 1000)
    | random_crop(224)
    | flip(p = 0.5)
    | to(uint8, nhwc)
    | device(cuda, dtype = float16, mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225])
    | batch({batch})
serve train {{
    socket = "{sock}"
    epochs = 1
}}
""")
        log = open(os.path.join(tmp, "run.err"), "w+")
        proc = subprocess.Popen([tsrun_bin, "run", os.path.join(tmp, "p.ts"),
                                 "--wait", str(trainers)], stderr=log)
        for _ in range(400):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        kids = [subprocess.Popen([sys.executable, "-c", TRAINER, sock, str(batch)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(trainers)]
        rows, bad = [], 0
        for k in kids:
            out, err = k.communicate(timeout=240)
            if k.returncode != 0 or not out.strip():
                print(f"FAIL: trainer exited {k.returncode}: {err.strip()[-600:]}")
                bad += 1
                continue
            n, t0, t1, source = out.split()
            rows.append((int(n), float(t0), float(t1)))
            if source != SOURCE.replace(" ", "_"):
                print(f"FAIL: a trainer read {source}, not {SOURCE!r}")
                bad += 1
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.seek(0)
        text = log.read()
        if "finishing on GPU" not in text:
            print(f"FAIL: tsrun did not serve a device ring:\n{text}")
            bad += 1
        if rows:
            span = max(r[2] for r in rows) - min(r[1] for r in rows)
            each = sorted(r[0] / (r[2] - r[1]) for r in rows)
            print(f"loader_trainers: {len(rows)}")
            print(f"loader_images_per_trainer: {rows[0][0]}")
            if any(r[0] != rows[0][0] for r in rows):
                print(f"FAIL: the trainers got {sorted(r[0] for r in rows)} images, "
                      f"not each the whole stream")
                bad += 1
            # every trainer gets every image: the producer made each once
            print(f"loader_producer_images_per_s: {rows[0][0] / span:.0f}")
            print(f"loader_per_trainer_images_per_s_min: {each[0]:.0f}")
            print(f"loader_per_trainer_images_per_s_median: {each[len(each) // 2]:.0f}")
            print(f"loader_per_trainer_images_per_s_max: {each[-1]:.0f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
