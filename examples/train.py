#!/usr/bin/python3
"""train.py - train a small CNN on the CPU from a tsrun producer's batches.

    tsrun run examples/quickstart.ts &
    /usr/bin/python3 examples/train.py --socket /tmp/tsrun-quickstart.sock

Run from a source tree it needs no setup: the tsrun package comes from
src/python and libtsclient from the newest build*/src of the tree (or
TSRUN_LIBTSCLIENT, or an installed tsrun; see tsrun.load_library).

Batches come from tsrun.Loader, one pass per epoch: float32 NCHW images
read from the shared ring without a copy (ordinary tensors: an in-place
op copies only what it writes) and int64 labels. The model is three conv blocks, global
average pooling and a linear classifier, so it takes any input size.

It prints the loss every --log-every steps and, at the end,

    loss: first 2.31 last 0.85

where first and last are means over the first and the last --window
steps. It exits 0 when training ran and the loss stayed finite (and, with
--min-drop F, when last <= first * (1 - F)); 1 when training failed; 2
for a usage error or a missing dependency (torch, or libtsclient when it
is neither built nor installed nor named by TSRUN_LIBTSCLIENT); 3 when
the producer cannot be reached.

By default it reads to the end of the stream (every epoch the producer
serves), so that tsrun ends by itself; --steps N stops after N steps.
"""

import argparse
import math
import os
import sys
import time


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Train a small CNN on the CPU from tsrun batches.")
    ap.add_argument("--socket", default="/tmp/tsrun-quickstart.sock",
                    help="the producer's Unix socket (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=0,
                    help="stop after N steps; 0: read to the end of the "
                         "stream (default)")
    ap.add_argument("--batch-size", type=int, default=32,
                    help="samples per step (default: %(default)s)")
    ap.add_argument("--lr", type=float, default=0.05,
                    help="SGD learning rate (default: %(default)s)")
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--classes", type=int, default=10,
                    help="output classes (default: %(default)s, as "
                         "`tsrun make-dataset` makes)")
    ap.add_argument("--log-every", type=int, default=25, metavar="N",
                    help="print the loss every N steps (default: %(default)s)")
    ap.add_argument("--window", type=int, default=20, metavar="N",
                    help="steps averaged for the first and last loss "
                         "(default: %(default)s)")
    ap.add_argument("--min-drop", type=float, default=None, metavar="F",
                    help="fail unless last <= first * (1 - F)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default: %(default)s, to share "
                         "the cores with tsrun)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None, metavar="DEV",
                    help="train on a CUDA device (cuda, cuda:1): batches come "
                         "from the producer's device ring when its pipeline "
                         "ends in device(cuda), else copied from the ring")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds to wait for one batch (default: %(default)s)")
    a = ap.parse_args(argv)
    if a.steps < 0 or a.batch_size < 1 or a.lr <= 0 or a.classes < 2 \
            or a.log_every < 1 or a.window < 1 or a.threads < 1:
        ap.error("--steps >= 0, --batch-size >= 1, --lr > 0, --classes >= 2, "
                 "--log-every, --window and --threads >= 1")
    return a


def make_model(nn, channels, classes):
    """A 4x4 stride-4 "patchify" stem, two 3x3 stride-2 conv blocks,
    global average pooling and a linear classifier: cheap enough on one
    CPU thread for 128x128 inputs, and any input size works."""
    def block(cin, cout, k=3, stride=2, pad=1):
        return nn.Sequential(
            nn.Conv2d(cin, cout, k, stride=stride, padding=pad, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
    return nn.Sequential(
        block(channels, 32, 4, 4, 0), block(32, 64), block(64, 128),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes))


def main(argv):
    a = parse_args(argv)
    try:
        import torch
        from torch import nn
    except ImportError as e:
        print(f"train.py: torch is missing ({e}); run it with /usr/bin/python3",
              file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "src", "python"))
    import tsrun

    try:
        tsrun.load_library()
    except tsrun.LibraryNotFound as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 2

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    try:
        loader = tsrun.Loader(a.socket, batch_size=a.batch_size,
                              timeout=a.timeout, device=a.device)
    except (OSError, tsrun.TsrunError, ValueError) as e:
        msg = str(e)
        if a.socket not in msg:
            msg = f"cannot connect to {a.socket}: {msg}"
        print(f"train.py: {msg}", file=sys.stderr)
        return 3
    info = loader.info
    if loader.views:
        # a list of tensors a batch, one per view (tsrun-pipeline(5), VIEWS)
        print(f"train.py: the pipeline makes {len(loader.views)} views of each image "
              "(views(...)); this trainer takes one tensor a batch: use "
              "examples/train_dino.py, or a pipeline without views", file=sys.stderr)
        loader.close()
        return 2
    on_device_ring = loader.source.startswith("device-ring")
    if not on_device_ring and (info.layout != 1 or info.dtype != 3):
        print("train.py: the pipeline must end with to(float32, nchw), or with "
              "device(cuda) for --device", file=sys.stderr)
        loader.close()
        return 2
    print(f"train.py: {a.socket}: {info.channels}x{info.height}x{info.width}, "
          f"batch {loader.batch_size}, "
          f"{info.samples_per_epoch} samples/epoch, "
          f"{info.epochs or 'endless'} epochs, batches from {loader.source}",
          flush=True)

    model = make_model(nn, info.channels, a.classes)
    device = torch.device(a.device) if a.device and torch.cuda.is_available() else None
    if device is not None:
        model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum,
                          weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    losses = []
    images_seen = 0
    correct = seen = 0
    t0 = time.monotonic()
    failed = None
    try:
        for images, labels in every_epoch(loader):
            # images are zero-copy from the ring; nothing here keeps
            # them, so their slots go back at the next batch.
            if int(labels.max()) >= a.classes or int(labels.min()) < 0:
                failed = (f"label {int(labels.max())} outside 0..{a.classes - 1}"
                          f" (use --classes)")
                break
            if images.dtype != torch.float32:
                images = images.float()   # a float16 device ring
            out = model(images)
            loss = loss_fn(out, labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            v = float(loss)
            if not math.isfinite(v):
                failed = f"loss is {v} at step {len(losses) + 1}"
                break
            losses.append(v)
            images_seen += labels.shape[0]
            correct += int((out.argmax(1) == labels).sum())
            seen += labels.shape[0]
            step = len(losses)
            if step % a.log_every == 0:
                dt = time.monotonic() - t0
                print(f"step {step:4d}  epoch {loader.epoch}  loss "
                      f"{sum(losses[-a.log_every:]) / a.log_every:.3f}  "
                      f"acc {correct / seen:.2f}  "
                      f"{images_seen / dt:.0f} images/s", flush=True)
                correct = seen = 0
            if a.steps and step >= a.steps:
                break
    except tsrun.TsrunError as e:
        failed = f"{a.socket}: {e}"
    # Report before closing: tsrun prints its summary once every trainer
    # has gone, so the summary comes last.
    rc = report(a, failed, losses, images_seen, time.monotonic() - t0)
    loader.close()
    return rc


def every_epoch(loader):
    """The whole stream: one pass of the loader per epoch, until a pass
    yields nothing (the stream has ended)."""
    while True:
        n = 0
        for batch in loader:
            n += 1
            yield batch
        if n == 0:
            return


def report(a, failed, losses, images_seen, dt):
    if failed:
        print(f"train.py: training failed: {failed}", file=sys.stderr)
        return 1
    if not losses:
        print("train.py: training failed: no batches", file=sys.stderr)
        return 1
    dt = max(dt, 1e-6)
    w = min(a.window, max(1, len(losses) // 2))
    first = sum(losses[:w]) / w
    last = sum(losses[-w:]) / w
    print(f"steps: {len(losses)}  images: {images_seen}  seconds: {dt:.1f}  "
          f"images/s: {images_seen / dt:.0f}")
    print(f"loss: first {first:.2f} last {last:.2f}", flush=True)
    if a.min_drop is not None and last > first * (1.0 - a.min_drop):
        print(f"train.py: training failed: the loss fell from {first:.3f} to "
              f"{last:.3f}, less than {a.min_drop:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
