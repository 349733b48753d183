#!/usr/bin/python3
"""train_ddp.py - one rank of a data-parallel (DDP) job whose ranks split
one tsrun stream: each rank reads a disjoint, equal share of every epoch
(tensorsocket(7), "Jobs"), gradients are all-reduced by DDP.

One host, two ranks (torchrun sets LOCAL_RANK and LOCAL_WORLD_SIZE, which
are the rank and world size within the job on this host's tsrun):

    tsrun run examples/quickstart.ts &
    torchrun --standalone --nproc_per_node 2 -r 1 -t 1 examples/train_ddp.py \\
        --socket /tmp/tsrun-quickstart.sock --job ddp

Under Slurm's srun (no torchrun) the rank on the node comes from
SLURM_LOCALID and SLURM_NTASKS_PER_NODE, the process group from
SLURM_PROCID and SLURM_NTASKS (MASTER_ADDR and MASTER_PORT from the batch
script); see examples/ddp-slurm.sbatch.

The model is the small CNN of train.py. Backend gloo on the CPU (the
default), nccl with --device cuda. --record FILE writes what this rank read
(epoch, index and labels of every batch) and whether the ranks' parameters
agree at the end, for tests. Exit 0 when training ran, 1 when it failed
(JobFailed when another rank of the job died: this rank stops rather than
hang in the all-reduce), 2 for a usage error.
"""

import argparse
import json
import os
import sys


def slurm_defaults():
    """torch.distributed's variables from Slurm's, when torchrun's are
    absent: returns (local rank, ranks on this node) or None."""
    if "LOCAL_RANK" in os.environ or "SLURM_PROCID" not in os.environ:
        return None
    os.environ.setdefault("RANK", os.environ["SLURM_PROCID"])
    os.environ.setdefault("WORLD_SIZE", os.environ["SLURM_NTASKS"])
    per_node = os.environ.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0]
    return int(os.environ["SLURM_LOCALID"]), int(per_node)


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


def main(argv):
    ap = argparse.ArgumentParser(description="One DDP rank reading its share "
                                             "of a tsrun stream.")
    ap.add_argument("--socket", default="/tmp/tsrun-quickstart.sock")
    ap.add_argument("--job", default="ddp", help="the job's name, the same "
                    "for all its ranks (default: %(default)s)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--job-drop-last", action="store_true",
                    help="equal shares by dropping an epoch's last samples "
                         "(default: by repeating a few)")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--device", default="cpu", help="cpu (gloo) or cuda (nccl)")
    ap.add_argument("--record", metavar="FILE", help="write what this rank read")
    args = ap.parse_args(argv)

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import tsrun

    local = slurm_defaults()
    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    kw = {}
    if local is not None:
        kw = {"rank": local[0], "world_size": local[1]}
    loader = tsrun.Loader(args.socket, batch_size=args.batch_size, job=args.job,
                          job_drop_last=args.job_drop_last, timeout=120, **kw)
    device = torch.device("cuda", loader.rank) if cuda else torch.device("cpu")
    c = loader.info.channels
    nhwc = loader.info.layout == 0
    torch.manual_seed(0)   # the same initial weights on every rank
    model = nn.Sequential(
        nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, args.classes)).to(device)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    read, failed, steps, loss = [], None, 0, None
    try:
        for images, labels in every_epoch(loader):
            x = images.to(device).float()
            if nhwc:   # a uint8 NHWC ring: to NCHW in [0, 1]
                x = x.permute(0, 3, 1, 2) / 255.0
            y = labels.to(device).long() % args.classes
            loss = nn.functional.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if args.record:
                read.append([loader.epoch, loader.index, [int(v) for v in labels]])
    except tsrun.JobFailed as e:
        failed = str(e)
    rec = {"rank": rank, "world": world, "job_rank": loader.rank,
           "job_world": loader.world_size, "steps": steps, "error": failed,
           "batches": read}
    if failed is None:
        p = torch.cat([t.detach().flatten() for t in model.parameters()])
        g = [torch.zeros_like(p) for _ in range(world)]
        dist.all_gather(g, p)
        rec["params_equal"] = all(torch.equal(g[0], t) for t in g)
        dist.destroy_process_group()
    print("rank %d/%d (job rank %d/%d): %d steps, last loss %s%s"
          % (rank, world, loader.rank, loader.world_size, steps,
             "%.3f" % loss.item() if loss is not None else "-",
             ", " + failed if failed else ""))
    if args.record:
        with open(args.record % loader.rank if "%d" in args.record else args.record,
                  "w") as f:
            json.dump(rec, f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
