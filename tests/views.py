#!/usr/bin/python3
"""views.py - views(...) end to end, against a real `tsrun run` of real
JPEGs (tsrun make-dataset):

- a DINO-style PyTorch trainer (examples/train_dino.py: teacher on the 2
  global views, student on all 6, EMA teacher) reads 2 epochs: its
  batches per epoch, samples, views per batch and their shapes, and a
  finite loss;
- a Loader beside it: loader.views (libtsclient's ts_client_views and
  ts_client_view_info), a list of [B, C, h, w] tensors per batch in view
  order, dtypes as the groups end (float32 nchw, uint8 nhwc), labels
  [B] of the class folders, epochs in order; the views of one image
  differ; in-place ops on a view never reach the ring (the next reader
  of the same batch, a raw view, still has the producer's bytes);
- the C client (`tsrun consume`, ts_client_views / ts_client_view_info)
  on the same stream: the same view table, and per view the same sum of
  bytes over both epochs as the Loader's tensors (a view read at another
  offset, or with another's size, differs);
- a Loader with mixup= refuses a views pipeline with a clear error, and
  examples/train.py (one tensor a batch) exits 2 naming train_dino.py;
- views at offsets that do not fit their dtype (uint8 first) read as
  copies with the bytes `tsrun consume` sums, a last batch of one
  sample included."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytrainer  # noqa: E402

pytrainer.need_torch()
import torch  # noqa: E402
import tsrun  # noqa: E402

check = pytrainer.Checks()
N, BATCH = 48, 8

with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "data")
    r = subprocess.run([pytrainer.TSRUN, "make-dataset", data, "--images", str(N),
                        "--classes", "4"], capture_output=True, text=True)
    if r.returncode == 2 or "no photos" in r.stderr:
        print("no photos for the data set: skip", r.stderr)
        sys.exit(77)
    check(r.returncode == 0, f"make-dataset: {r.stderr}")
    sock = os.path.join(tmp, "dino.sock")
    ts = os.path.join(tmp, "dino.ts")
    with open(ts, "w") as f:
        f.write(f"""
let mean = [0.485, 0.456, 0.406]
let std  = [0.229, 0.224, 0.225]
pipeline dino =
    folder("{data}/train")
    | shuffle(seed = 3)
    | decode(rgb)
    | views(2 = random_resized_crop(64, scale = 0.4..1) | flip(horizontal)
              | random_apply(color_jitter(0.4, 0.4, 0.2, 0.1), p = 0.8)
              | normalize(mean, std) | to(float32, nchw),
            4 = random_resized_crop(32, scale = 0.05..0.4) | flip(horizontal)
              | normalize(mean, std) | to(float32, nchw),
            1 = center_crop(24) | to(uint8))
    | batch({BATCH})
serve dino {{ socket = "{sock}"  epochs = 2  ring = 4 batches }}
""")
    p = pytrainer.run(ts, "--wait", "3")
    consume = subprocess.Popen([pytrainer.TSRUN, "consume", sock, "--batch", str(BATCH)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dino = subprocess.Popen([sys.executable, os.path.join(pytrainer.SRC, "examples", "train_dino.py"),
                             "--socket", sock, "--batch", str(BATCH)],
                            env=dict(os.environ, PYTHONPATH=os.path.join(pytrainer.SRC, "src", "python"),
                                     TSRUN_LIBTSCLIENT=pytrainer.LIB),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    loader = tsrun.Loader(sock, batch_size=BATCH)
    want = [((3, 64, 64), "float32")] * 2 + [((3, 32, 32), "float32")] * 4 + [((24, 24, 3), "uint8")]
    check(loader.views == want, f"loader.views: {loader.views}")
    epochs = []
    differ = same = 0
    sums = [0] * 7
    for e in range(2):
        n = 0
        for views, labels in loader:
            check(isinstance(views, list) and len(views) == 7, f"{type(views)} of {len(views)}")
            b = labels.shape[0]
            for v, (shape, dt) in zip(views, want):
                check(tuple(v.shape) == (b, *shape) and str(v.dtype) == "torch." + dt,
                      f"view {tuple(v.shape)} {v.dtype}, expected {(b, *shape)} {dt}")
            check(labels.dtype == torch.int64 and int(labels.min()) >= 0 and int(labels.max()) < 4,
                  f"labels {labels}")
            for k, v in enumerate(views):
                sums[k] += int(v.contiguous().view(torch.uint8).sum())
            if torch.equal(views[0], views[1]):
                same += 1
            else:
                differ += 1
            check(all(float(v.abs().sum()) > 0 for v in views[:6]), "an all-zero view")
            before = views[2].clone()
            views[2].mul_(0).add_(7)   # the trainer's own pages, never the ring
            check(float(views[2][0, 0, 0, 0]) == 7.0, "in-place op on a view")
            check(not torch.equal(before, views[2]), "in-place op had no effect")
            n += b
        epochs.append((loader.epoch, n))
    loader.close()
    check(epochs == [(0, N), (1, N)], f"epochs {epochs}")
    check(same == 0 and differ == 2 * ((N + BATCH - 1) // BATCH), f"global views equal in {same}")
    cout, cerr = consume.communicate(timeout=240)
    check(consume.returncode == 0, f"tsrun consume exited {consume.returncode}: {cerr}")
    check("views: 7\n" in cout, f"consume: {cout}")
    off = 0
    for k, (shape, dt) in enumerate(want):
        nbytes = shape[0] * shape[1] * shape[2] * (4 if dt == "float32" else 1)
        dims = "x".join(str(d) for d in shape)
        layout = "nchw" if dt == "float32" else "nhwc"
        group = 0 if k < 2 else 1 if k < 6 else 2
        line = (f"view {k}: {dims} {dt} {layout}, group {group}, offset {off}, "
                f"bytes {nbytes}, byte sum {sums[k]}")
        check(line in cout.splitlines(), f"consume lacks {line!r}: {cout}")
        off += nbytes
    out, err = dino.communicate(timeout=240)
    check(dino.returncode == 0, f"train_dino.py exited {dino.returncode}: {err}")
    lines = [ln for ln in out.splitlines() if ln.startswith("epoch ")]
    check(len(lines) == 2, f"train_dino.py epochs: {out}")
    for i, ln in enumerate(lines):
        m = re.match(r"epoch (\d+): (\d+) batches, (\d+) samples, views (.*), loss ([0-9.]+)$", ln)
        check(m is not None, f"line {ln!r}")
        if m:
            check(int(m.group(1)) == i and int(m.group(2)) == N // BATCH and int(m.group(3)) == N,
                  f"epoch line {ln!r}")
            check(m.group(4) == "2 x 64x64 + 4 x 32x32 + 1 x 24x24", f"views {m.group(4)!r}")
            check(float(m.group(5)) > 0, f"loss {m.group(5)}")
    pytrainer.stop(p)

    # Mixup is per view: the loader says so instead of mixing bytes.
    p = pytrainer.run(ts)
    try:
        tsrun.Loader(sock, batch_size=BATCH, mixup=tsrun.Mixup(mixup_alpha=0.8, num_classes=4))
        check(False, "mixup= with views was accepted")
    except ValueError as e:
        check("views" in str(e), f"mixup refusal: {e}")
    pytrainer.stop(p)
    p = pytrainer.run(ts)
    # examples/train.py takes one tensor a batch: it says so and exits 2
    # (it failed on the list with AttributeError).
    r = subprocess.run([sys.executable, os.path.join(pytrainer.SRC, "examples", "train.py"),
                        "--socket", sock, "--batch-size", str(BATCH)],
                       env=dict(os.environ, PYTHONPATH=os.path.join(pytrainer.SRC, "src", "python"),
                                TSRUN_LIBTSCLIENT=pytrainer.LIB),
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 2 and "train_dino.py" in r.stderr and "Traceback" not in r.stderr,
          f"train.py on views: exit {r.returncode}: {r.stderr}")
    pytrainer.stop(p)

    # Views at offsets that do not fit their element size (a uint8 view of
    # 75 bytes first, a sample of 7359 bytes) are copies, in every batch:
    # the last one of a single sample too (a one-row slice is contiguous to
    # torch, so contiguous() kept the misaligned offset and view() raised).
    ts2 = os.path.join(tmp, "odd.ts")
    with open(ts2, "w") as f:
        f.write(f"""
pipeline odd =
    folder("{data}/train")
    | decode(rgb)
    | views(1 = center_crop(5),
            2 = random_resized_crop(16) | normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
            1 = random_resized_crop(8) | to(float16, nchw),
            3 = resize([7, 9]) | grayscale(1) | to(float32, nchw))
    | batch({BATCH})
serve odd {{ socket = "{sock}"  epochs = 1  ring = 128 samples }}
""")
    p = pytrainer.run(ts2, "--wait", "2")
    consume = subprocess.Popen([pytrainer.TSRUN, "consume", sock, "--batch", str(BATCH)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    loader = tsrun.Loader(sock, batch_size=N - 1)
    sums, sizes = [0] * 7, []
    try:
        for views, labels in loader:
            sizes.append(labels.shape[0])
            for k, v in enumerate(views):
                check(tuple(v.shape[1:]) == tuple(loader.views[k][0]), f"odd view {k}: {v.shape}")
                sums[k] += int(torch.frombuffer(bytearray(v.contiguous().numpy().tobytes()),
                                                dtype=torch.uint8).sum())
    except RuntimeError as e:
        check(False, f"odd offsets: {e}")
    loader.close()
    check(sizes == [N - 1, 1], f"odd batches {sizes}")
    cout, cerr = consume.communicate(timeout=240)
    check(consume.returncode == 0, f"odd: tsrun consume exited {consume.returncode}: {cerr}")
    for k in range(7):
        check(re.search(rf"^view {k}: .* byte sum {sums[k]}$", cout, re.M) is not None,
              f"odd view {k}: byte sum {sums[k]} not in {cout}")
    pytrainer.stop(p)

sys.exit(check.exit())
