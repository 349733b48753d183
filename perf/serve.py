#!/usr/bin/python3
"""One DataLoader shared by N trainers through tsrun.serve, against N DataLoaders.

    perf/serve.py [--n 4] [--pairs 3] [--data DIR] [--images 2000]
                  [--epochs 1] [--batch 64] [--workers 2] [--recipe train]
                  [--cpus 0-15] [--no-lone] [--json FILE]

Run with /usr/bin/python3 (Debian's torch and torchvision). In each pair,
in turn, on the same cores (taskset) after the same cache warming:

  A  N DataLoaders: N `perf/dataloader.py` processes at once, each with
     --workers workers, as N jobs of a sweep each configured alone;
  B  tsrun.serve: one process runs the same DataLoader (dataloader.py's
     build_loader, --workers workers) into tsrun.serve(..., wait=N) and N
     tsrun.Loader trainers read it (each pass one epoch);
  L  (unless --no-lone) one DataLoader alone: the reference of the goal
     "per trainer >= 0.9x a lone DataLoader".

Per side it records each trainer's images/s (a DataLoader from its first
batch request, a tsrun.Loader from its connection, to the last batch), the
CPU of the epoch loop as each process measures it (getrusage self +
reaped workers) and of the whole processes (os.wait4, interpreter start
and torch import included), CPU per delivered sample (all processes of
the side over N x images), and the machine's other load during the side:
the busy CPU of /proc/stat less the side's own, in cores, with the load
average before it. Then the medians and ranges over the pairs of: B per
trainer / A per trainer, B per trainer / L, and B's CPU per delivered
sample / A's (goals: >= 0.9 against L, <= 1/3 against A).

The figures are only meaningful on a quiet machine: compare the "other
load" column before believing a pair.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

HERE = os.path.abspath(__file__)


# ---- the processes of side B ---------------------------------------------------

def _loop_cpu():
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def producer_main(args):
    """Serve the DataLoader of dataloader.py for --epochs to --n trainers."""
    import torch
    import tsrun
    import dataloader
    torch.set_num_threads(1)
    torch.manual_seed(42)
    loader, root = dataloader.build_loader(args.data, args.recipe, args.batch, args.workers)
    if loader is None:
        sys.exit(f"serve.py: no images under {root}")
    c0, t0 = _loop_cpu(), time.monotonic()
    batches = tsrun.serve(loader, socket=args.socket, epochs=args.epochs, wait=args.n,
                          quiet=True)
    del loader
    print(f"batches: {batches}")
    print(f"wall: {time.monotonic() - t0:.3f} s")
    print(f"cpu: {_loop_cpu() - c0:.3f} s")
    return 0


def trainer_main(args):
    """Read the stream to its end; print images, images/s and the loop's CPU."""
    import tsrun
    deadline = time.monotonic() + 120
    while not os.path.exists(args.socket):
        if time.monotonic() > deadline:
            sys.exit(f"serve.py: no socket {args.socket} after 120 s")
        time.sleep(0.02)
    loader = tsrun.Loader(args.socket, batch_size=args.batch)
    # From the connection, as dataloader.py times from its first request:
    # waiting for the producer's first batch counts.
    images, checksum, t0, c0 = 0, 0.0, time.monotonic(), _loop_cpu()
    while True:     # one pass per epoch; an empty pass is the end
        n = 0
        for x, y in loader:
            images += x.shape[0]
            n += 1
            checksum += float(x[0].reshape(-1)[0]) + int(y[0])   # touch the batch
        if n == 0:
            break
    wall = time.monotonic() - t0
    loader.close()
    print(f"images: {images}")
    print(f"images/s: {images / wall if wall > 0 else 0.0:.1f}")
    print(f"cpu: {_loop_cpu() - c0:.3f} s")
    print(f"checksum: {checksum:.4f}")
    return 0


# ---- measuring ---------------------------------------------------------------------

def busy_seconds():
    """CPU seconds the whole machine spent busy so far (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def side(name, procs, n, timeout):
    """Start procs (bl.Proc factories) together; the side's figures."""
    load, b0, t0 = loadavg(), busy_seconds(), time.monotonic()
    started = [make() for make in procs]
    results = [p.finish(timeout) for p in started]
    wall, busy = time.monotonic() - t0, busy_seconds() - b0
    for r in results:
        if r["rc"] != 0:
            sys.exit(f"{name}: {' '.join(r.get('cmd', []))} failed (exit {r['rc']}):\n"
                     f"{r['stderr'][-3000:]}")
    return results, wall, busy, load


def figures(name, trainers, all_procs, wall, busy, load):
    rates = [r["images/s"] for r in trainers]
    images = sum(r["images"] for r in trainers)
    loop_cpu = sum(r["cpu"] for r in all_procs)
    ext_cpu = sum(r["ext_cpu"] for r in all_procs)
    other = max(0.0, busy - ext_cpu) / wall if wall > 0 else 0.0
    return {"side": name, "per_trainer": statistics.mean(rates), "min": min(rates),
            "images": images, "loop_cpu": loop_cpu, "ext_cpu": ext_cpu,
            "ms_per_sample": loop_cpu / max(images, 1) * 1e3,
            "ext_ms_per_sample": ext_cpu / max(images, 1) * 1e3,
            "wall": wall, "other_cores": other, "load_before": load}


def show(f):
    print(f"  {f['side']:11s} per trainer {f['per_trainer']:7.1f} img/s (min {f['min']:.1f}), "
          f"CPU per delivered sample {f['ms_per_sample']:.2f} ms (whole processes "
          f"{f['ext_ms_per_sample']:.2f}), wall {f['wall']:.1f} s, other load "
          f"{f['other_cores']:.2f} cores (loadavg before {f['load_before']:.2f})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--data")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers, each side")
    ap.add_argument("--recipe", choices=["train", "val"], default="train")
    ap.add_argument("--cpus")
    ap.add_argument("--no-lone", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json")
    ap.add_argument("--role", choices=["producer", "trainer"], help=argparse.SUPPRESS)
    ap.add_argument("--socket", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "producer":
        return producer_main(args)
    if args.role == "trainer":
        return trainer_main(args)
    if args.pairs < 1 or args.n < 1:
        sys.exit("serve.py: --pairs and --n must be 1 or more")

    tsrun = bl.find_build_file("src/tsrun", "TSRUN")
    cpus = bl.cpu_list(args.cpus)
    data = args.data or os.path.join(tempfile.gettempdir(), f"tsrun-bench-data-{args.images}")
    bl.make_dataset(tsrun, data, args.images, max(args.images // 10, 10))
    files = bl.image_files(os.path.join(data, "train"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(bl.ROOT, "src", "python"), bl.PERF] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    print(f"{len(files)} files, cores {cpus}, N = {args.n}, {args.pairs} pair(s), recipe "
          f"{args.recipe}, batch {args.batch}, {args.workers} DataLoader workers, "
          f"{args.epochs} epoch(s)", flush=True)

    common = ["--data", data, "--recipe", args.recipe, "--batch", str(args.batch),
              "--workers", str(args.workers), "--epochs", str(args.epochs), "--n", str(args.n)]
    dl_cmd = bl.pin([bl.TORCH_PYTHON, os.path.join(bl.PERF, "dataloader.py"), data,
                     "--recipe", args.recipe, "--batch", str(args.batch),
                     "--workers", str(args.workers), "--epochs", str(args.epochs)], cpus)

    def proc(cmd):
        return lambda: bl.Proc(cmd, env=env)

    res = []
    with tempfile.TemporaryDirectory(prefix="tsrun-serve-") as tmp:
        for pair in range(args.pairs):
            print(f"pair {pair + 1}:", flush=True)
            row = {}
            bl.warm_cache(files)
            out, wall, busy, load = side("A", [proc(dl_cmd)] * args.n, args.n, args.timeout)
            row["A"] = figures("A N loaders", out, out, wall, busy, load)
            show(row["A"])

            bl.warm_cache(files)
            sock = os.path.join(tmp, f"serve-{pair}.sock")
            prod = bl.pin([bl.TORCH_PYTHON, HERE, "--role", "producer", "--socket", sock]
                          + common, cpus)
            tr = bl.pin([bl.TORCH_PYTHON, HERE, "--role", "trainer", "--socket", sock]
                        + common, cpus)
            out, wall, busy, load = side("B", [proc(prod)] + [proc(tr)] * args.n, args.n,
                                         args.timeout)
            row["B"] = figures("B tsrun.serve", out[1:], out, wall, busy, load)
            show(row["B"])

            if not args.no_lone:
                bl.warm_cache(files)
                out, wall, busy, load = side("L", [proc(dl_cmd)], 1, args.timeout)
                row["L"] = figures("L 1 loader", out, out, wall, busy, load)
                show(row["L"])
            res.append(row)

    def ratio(key, a, b):
        return [r[a][key] / r[b][key] for r in res if r[b][key] > 0]

    print()
    print(f"over {len(res)} pair(s), median (range):")
    print(f"  per trainer, tsrun.serve / N DataLoaders: "
          f"{bl.fmt_range(ratio('per_trainer', 'B', 'A'))}")
    if not args.no_lone:
        print(f"  per trainer, tsrun.serve / a lone DataLoader: "
              f"{bl.fmt_range(ratio('per_trainer', 'B', 'L'))} (goal >= 0.9)")
    print(f"  CPU per delivered sample, tsrun.serve / N DataLoaders: "
          f"{bl.fmt_range(ratio('ms_per_sample', 'B', 'A'))} (goal <= 0.33)")
    print(f"  other load on the machine: "
          f"{bl.fmt_range([r[s]['other_cores'] for r in res for s in r])} cores")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpus": cpus, "data": data, "args": vars(args), "pairs": res}, fh,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
