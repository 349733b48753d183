#!/usr/bin/env python3
"""N trainers on one tsrun against N independent PyTorch DataLoaders.

    perf/sharing.py [--n 1,2,4,8] [--rounds 1] [--data DIR] [--images 2000]
                    [--epochs 1] [--batch 64] [--cpus 0-1] [--dl-workers N]
                    [--noisy 0.1] [--json FILE]

For each N, in turn (tsrun, then DataLoaders, repeated --rounds times):
  tsrun:       `tsrun run PIPELINE` (examples/imagenet.ts on the data set,
               serving a socket in a temp dir, threads = cores), then N
               `tsrun consume SOCKET --batch B` started together; each
               consumer's images/s is one trainer's figure.
  DataLoader:  N `dataloader.py --recipe train` started together, each with
               num_workers = --dl-workers (default: the cores, as each job
               would be configured alone); they split the cores.
Everything runs on the same cores (taskset) after the same cache warming.

The machine's other load (CPU on these cores not spent by the measured
processes, /proc/stat) is printed per round and side; a round above
--noisy cores is flagged NOISY. --data is any ImageFolder; binaries come
from the release build (see compare.py).

Prints per N the mean per-trainer images/s of both, each relative to its
own N = 1 figure (goal for tsrun: >= 0.9 up to N = 8), the tsrun/DataLoader
ratio, and the producer's CPU time per extra consumer relative to N = 1
(goal: < 1 %).

Needs `tsrun run` and `tsrun consume` (src/cmd_run.c, src/cmd_consume.c).
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


def trainer_rate(r):
    """A trainer's images/s: its own figure, else images over wall time."""
    if isinstance(r.get("images/s"), float):
        return r["images/s"]
    if isinstance(r.get("images"), float) and r["ext_wall"] > 0:
        return r["images"] / r["ext_wall"]
    return float("nan")


def run_tsrun(args, tsrun, cpus, data, n, tmp):
    sock = os.path.join(tmp, f"share-{n}.sock")
    pipeline = os.path.join(tmp, f"share-{n}.ts")
    with open(pipeline, "w") as fh:
        fh.write(bl.pipeline_text(data, "train", args.batch, args.epochs, len(cpus), socket=sock))
    meter = bl.LoadMeter(cpus)
    producer = bl.Proc(bl.pin([tsrun, "run", pipeline], cpus))
    deadline = time.monotonic() + 30
    while not os.path.exists(sock):
        if producer.p.poll() is not None or time.monotonic() > deadline:
            producer.stop()
            r = producer.finish(10)
            sys.exit(f"tsrun run did not open {sock} (exit {r['rc']}):\n{r['stderr'][-3000:]}")
        time.sleep(0.05)
    consumers = [bl.Proc(bl.pin([tsrun, "consume", sock, "--batch", str(args.batch)], cpus))
                 for _ in range(n)]
    results = [c.finish(args.timeout) for c in consumers]
    producer.stop()
    prod = producer.finish(30)
    for r in results:
        if r["rc"] != 0:
            sys.exit(f"tsrun consume failed (exit {r['rc']}):\n{r['stderr'][-3000:]}")
    prod.update(meter.stop(prod["ext_cpu"] + sum(r["ext_cpu"] for r in results)))
    return [trainer_rate(r) for r in results], prod


def run_dataloaders(args, cpus, data, n):
    workers = args.dl_workers or len(cpus)
    cmd = bl.pin([bl.TORCH_PYTHON, os.path.join(bl.PERF, "dataloader.py"), data,
                  "--recipe", "train", "--batch", str(args.batch), "--workers", str(workers),
                  "--epochs", str(args.epochs)], cpus)
    meter = bl.LoadMeter(cpus)
    procs = [bl.Proc(cmd) for _ in range(n)]
    results = [p.finish(args.timeout) for p in procs]
    for r in results:
        if r["rc"] != 0:
            sys.exit(f"dataloader.py failed (exit {r['rc']}):\n{r['stderr'][-3000:]}")
    return [trainer_rate(r) for r in results], meter.stop(sum(r["ext_cpu"] for r in results))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1,2,4,8", help="trainer counts (1 is always added)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--data")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--cpus")
    ap.add_argument("--dl-workers", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--noisy", type=float, default=0.1,
                    help="other load (cores) above which a round is flagged NOISY")
    ap.add_argument("--json")
    args = ap.parse_args()

    tsrun = bl.find_build_file("src/tsrun", "TSRUN")
    print(f"tsrun: {tsrun}", flush=True)
    cpus = bl.cpu_list(args.cpus)
    ns = sorted({1} | {int(x) for x in args.n.split(",")})
    data = args.data or os.path.join(tempfile.gettempdir(), f"tsrun-bench-data-{args.images}")
    bl.prepare_data(tsrun, data, args.images, args.data is not None)
    files = bl.image_files(bl.split_dir(data, "train"))
    print(f"{len(files)} files, cores {cpus}, N in {ns}, {args.rounds} round(s)", flush=True)

    res = {n: {"tsrun": [], "dl": [], "prod_cpu": []} for n in ns}
    with tempfile.TemporaryDirectory(prefix="tsrun-share-") as tmp:
        for rnd in range(args.rounds):
            for n in ns:
                bl.warm_cache(files)
                rates, prod = run_tsrun(args, tsrun, cpus, data, n, tmp)
                res[n]["tsrun"].append(statistics.mean(rates))
                res[n]["prod_cpu"].append(prod["ext_cpu"])
                bl.warm_cache(files)
                dl, dl_load = run_dataloaders(args, cpus, data, n)
                res[n]["dl"].append(statistics.mean(dl))
                res[n].setdefault("other_load", []).append(
                    max(prod["other_load"], dl_load["other_load"]))
                print(f"round {rnd + 1} N={n}: tsrun per-trainer {res[n]['tsrun'][-1]:.1f} img/s "
                      f"(min {min(rates):.1f}), producer cpu {prod['ext_cpu']:.2f} s; "
                      f"DataLoader per-trainer {res[n]['dl'][-1]:.1f} img/s (min {min(dl):.1f}); "
                      f"other load {prod['other_load']:.2f} / {dl_load['other_load']:.2f} cores"
                      + ("  NOISY" if not res[n]["other_load"][-1] <= args.noisy else ""),
                      flush=True)

    med = {n: {k: statistics.median(v) for k, v in d.items()} for n, d in res.items()}
    one = med[1]
    print()
    print(" N  tsrun/trainer  vs N=1  DataLoader/trainer  vs N=1  tsrun/DL  producer cpu/extra consumer")
    for n in ns:
        m = med[n]
        extra = (f"{(m['prod_cpu'] - one['prod_cpu']) / (n - 1) / one['prod_cpu'] * 100:+.1f} %"
                 if n > 1 and one["prod_cpu"] > 0 else "-")
        print(f"{n:2d}  {m['tsrun']:13.1f}  {m['tsrun'] / one['tsrun']:6.2f}  "
              f"{m['dl']:18.1f}  {m['dl'] / one['dl']:6.2f}  {m['tsrun'] / m['dl']:8.2f}  {extra}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpus": cpus, "data": data, "results": res}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
