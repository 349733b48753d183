#!/usr/bin/python3
"""PyTorch DataLoader + torchvision ImageFolder with the ImageNet recipes:
the baseline side of perf/compare.py and perf/sharing.py.

Run with /usr/bin/python3 (Debian's python3-torch and python3-torchvision).

    dataloader.py ROOT [--recipe train|val|randaug] [--batch 256] [--workers N]
                       [--epochs 1] [--batches N] [--threads-per-worker 1]

ROOT is a data set folder (tsrun make-dataset) or a class folder tree
itself; ROOT/train (or ROOT/val for --recipe val, falling back to
ROOT/train) is used when present.

Prints "key: value" lines like `tsrun bench`:
  images, images/s (from the first batch request to the last batch of the
  last epoch: worker start-up included, as a training loop pays it),
  wall, cpu (getrusage self + reaped children over the epoch loop: the
  main process and every worker), peak_rss (the main process), peak_rss_worker (the largest
  worker), peak_rss_sum (main + workers x largest worker: an upper
  bound on the total, shared pages counted per process).
"""
import argparse
import os
import resource
import sys
import time


def build_loader(root, recipe, batch, workers):
    """The DataLoader of a recipe over ROOT (as described above), and the
    class folder tree it reads; (None, folder) when it has no image. Also
    what perf/serve.py shares through tsrun.serve."""
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    for sub in ([recipe, "train"] if recipe == "val" else ["train"]):
        if os.path.isdir(os.path.join(root, sub)):
            root = os.path.join(root, sub)
            break

    norm = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if recipe == "train":
        tf = transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            norm,
        ])
    elif recipe == "randaug":
        # examples/imagenet-randaug.ts: RandAugment on the PIL image, as
        # torchvision's classification references place it
        tf = transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.RandAugment(num_ops=2, magnitude=9),
            transforms.ToTensor(),
            norm,
            transforms.RandomErasing(p=0.25),
        ])
    elif recipe == "dino":
        # examples/dino.ts: DINO's multi-crop, each view its own crop, flip,
        # jitter (p 0.8) and grayscale (p 0.2), as DINO's
        # DataAugmentationDINO without its blur and solarize (which the
        # example leaves out too); a sample is the list of its 8 views
        bicubic = transforms.InterpolationMode.BICUBIC

        def view(size, scale):
            return transforms.Compose([
                transforms.RandomResizedCrop(size, scale=scale, interpolation=bicubic),
                transforms.RandomHorizontalFlip(),
                transforms.RandomApply([transforms.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                transforms.RandomGrayscale(p=0.2),
                transforms.ToTensor(),
                norm,
            ])
        views = [view(224, (0.4, 1.0))] * 2 + [view(96, (0.05, 0.4))] * 6

        def tf(img):
            return [v(img) for v in views]
    else:
        tf = transforms.Compose([
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            norm,
        ])
    ds = datasets.ImageFolder(root, transform=tf)
    if len(ds) == 0:
        return None, root
    return DataLoader(ds, batch_size=batch, shuffle=(recipe != "val"),
                      num_workers=workers, drop_last=False,
                      persistent_workers=False), root


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--recipe", choices=["train", "val", "randaug", "dino"], default="train")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=0,
                    help="stop after this many batches in all (0 = whole epochs)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    import torch
    # One intra-op thread per process: the workers are the parallelism, as
    # in the torchvision reference scripts' data loading.
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    loader, root = build_loader(args.root, args.recipe, args.batch, args.workers)
    if loader is None:
        print(f"dataloader.py: no images under {root}", file=sys.stderr)
        return 1

    images = 0
    batches = 0
    checksum = 0.0
    me0 = resource.getrusage(resource.RUSAGE_SELF)
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = False
    for _ in range(args.epochs):
        for x, y in loader:
            # dino: x is the list of the batch's views, each [B, C, h, w]
            first = x[0] if isinstance(x, list) else x
            images += first.shape[0]
            batches += 1
            # Touch the batch so nothing is lazily skipped.
            checksum += float(first[0, 0, 0, 0]) + int(y[0])
            if args.batches and batches >= args.batches:
                done = True
                break
        if done:
            break
    wall = time.monotonic() - t0
    del loader  # workers are joined (and reaped) here at the latest

    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The epoch loop's CPU only: not the interpreter's start or torch's import.
    cpu = (me.ru_utime + me.ru_stime - me0.ru_utime - me0.ru_stime
           + ch.ru_utime + ch.ru_stime - ch0.ru_utime - ch0.ru_stime)
    rss = me.ru_maxrss / 1024.0
    rss_w = ch.ru_maxrss / 1024.0
    print(f"recipe: {args.recipe}")
    print(f"workers: {args.workers}")
    print(f"batch: {args.batch}")
    print(f"images: {images}")
    print(f"images/s: {images / wall:.1f}")
    print(f"wall: {wall:.3f} s")
    print(f"cpu: {cpu:.3f} s")
    print(f"cpu/image: {cpu / max(images, 1) * 1e3:.3f} ms")
    print(f"peak_rss: {rss:.1f} MiB")
    print(f"peak_rss_worker: {rss_w:.1f} MiB")
    print(f"peak_rss_sum: {rss + rss_w * args.workers:.1f} MiB")
    print(f"checksum: {checksum:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
