#!/usr/bin/env python3
"""The decoded cache, side by side, in rounds of every side in turn.

    perf/cache.py [--data DIR] [--images 2000] [--pairs 3] [--epochs 3]
                  [--batch 256] [--cpus 0-1] [--cache 8GiB] [--noisy 0.1]
                  [--timeout 900] [--json FILE]

One round (a "pair" of the A B A B rule, with more than two sides) runs,
in this order, each after the page cache is warmed alike, on the same
cores (taskset) and the same files (the ImageNet train recipe,
examples/imagenet.ts, --threads = cores, --no-digest):

  dataloader   PyTorch DataLoader + torchvision, --epochs epochs
               (perf/dataloader.py under /usr/bin/python3)
  nocache      tsrun bench, --epochs epochs, --cache off (today)
  cache        tsrun bench, --epochs epochs, --cache (the whole set)
  half         tsrun bench, --epochs epochs, a cache of half the bytes the
               whole set took (measured in a first, untimed run)
  first        tsrun bench, 1 epoch, with the cache (the first epoch's cost:
               admissions decode whole frames)
  first-off    tsrun bench, 1 epoch, --cache off
  decode-ref   perf/decode-limit --threads = cores, 1 round: libjpeg-turbo's
               full decode of every file, the CPU yardstick

Reported per round and as medians with their range over the quiet rounds:
  - CPU per image of the epochs after the first with the whole set cached:
    (cpu(cache) - cpu(first)) / ((epochs - 1) * images), over decode-ref's
    CPU per image (issue 31's goal: at most 0.4);
  - images/s of the --epochs run, cache / dataloader (goal: at least 10),
    and nocache / dataloader and half / dataloader beside it;
  - the half cache's hit rate, and its later epochs' CPU per image;
  - the first epoch: first / first-off in CPU per image (the cost of full
    instead of windowed decodes), and in images/s.
Before the rounds, one untimed run with the digest on each of nocache and
cache (and half) checks the streams are the same; a difference ends the
script with exit status 1.

The machine's other load is recorded for every run (/proc/stat, as
perf/compare.py does): a round where a run saw more than --noisy cores of
it is flagged NOISY and left out of the medians (they say how many rounds
they rest on). --data is any ImageFolder; without it a data set of
--images photos is made in $TMPDIR (`tsrun make-dataset`).
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def bench(tsrun, pipeline, cpus, epochs, cache, digest=False):
    cmd = [tsrun, "bench", pipeline, "--epochs", str(epochs), "--threads", str(len(cpus)),
           "--cache", cache]
    if not digest:
        cmd.append("--no-digest")
    return bl.pin(cmd, cpus)


def run(cmd, files, timeout, cpus):
    bl.warm_cache(files)
    r = bl.run_measured(cmd, timeout=timeout, cpus=cpus)
    if r["rc"] != 0 or "images/s" not in r:
        sys.exit(f"{' '.join(cmd)} failed (exit {r['rc']}):\n{r['stderr'][-3000:]}")
    r["n_images"] = float(r.get("images", float("nan"))) * r.get("rounds", 1.0)
    return r


def cache_figures(r):
    """(MiB used, items, hits, lookups) from tsrun bench's cache lines."""
    out = r.get("stdout", "")
    m = re.search(r"^cache: [\d.]+ MiB, ([\d.]+) MiB used, (\d+) items", out, re.M)
    h = re.search(r"^cache_hits: (\d+) of (\d+)", out, re.M)
    if not m or not h:
        return None
    return float(m.group(1)), int(m.group(2)), int(h.group(1)), int(h.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="data set folder (default: made in $TMPDIR)")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=3, help="rounds of every side")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--cpus", help="cores for every side, e.g. 0-1 (default: all of ours)")
    ap.add_argument("--cache", default="8GiB", help="the whole set's cache (tsrun bench --cache)")
    ap.add_argument("--noisy", type=float, default=0.1,
                    help="other load (cores, on our cores) above which a run is noisy")
    ap.add_argument("--timeout", type=float, default=900, help="per run, seconds")
    ap.add_argument("--json", help="write every run's figures here")
    args = ap.parse_args()
    if args.epochs < 2:
        ap.error("--epochs must be at least 2: the later epochs are what the cache serves")
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")

    tsrun = bl.find_build_file("src/tsrun", "TSRUN")
    dlimit = bl.find_build_file("perf/decode-limit", "DECODE_LIMIT")
    cpus = bl.cpu_list(args.cpus)
    data = args.data or os.path.join(tempfile.gettempdir(), f"tsrun-bench-data-{args.images}")
    bl.prepare_data(tsrun, data, args.images, args.data is not None)
    split = bl.split_dir(data, "train")
    files = bl.image_files(split)
    print(f"tsrun: {tsrun}\n{len(files)} files in {split}, cores {cpus}, {args.pairs} rounds, "
          f"{args.epochs} epochs, cache {args.cache}", flush=True)

    with tempfile.TemporaryDirectory(prefix="tsrun-cache-") as tmp:
        pipeline = os.path.join(tmp, "train.ts")
        with open(pipeline, "w") as fh:
            fh.write(bl.pipeline_text(data, "train", args.batch, args.epochs, len(cpus)))

        # Untimed: the streams agree, and how much the whole set takes.
        digests = {}
        whole = None
        for name, cache in (("nocache", "off"), ("cache", args.cache)):
            r = run(bench(tsrun, pipeline, cpus, args.epochs, cache, digest=True), files,
                    args.timeout, cpus)
            digests[name] = r.get("digest")
            if name == "cache":
                whole = cache_figures(r)
        if not whole or whole[1] < len(files):
            sys.exit(f"--cache {args.cache} holds {whole[1] if whole else 0} of {len(files)} "
                     "items: give a larger one")
        half = f"{max(int(whole[0] / 2), 1)}MiB"
        r = run(bench(tsrun, pipeline, cpus, args.epochs, half, digest=True), files,
                args.timeout, cpus)
        digests["half"] = r.get("digest")
        print(f"whole set: {whole[1]} items in {whole[0]:.1f} MiB; half cache: {half}; "
              f"digests {digests}", flush=True)
        if len(set(digests.values())) != 1:
            sys.exit("FAIL: the streams differ with and without the cache")

        sides = [
            ("dataloader", bl.pin([bl.TORCH_PYTHON, os.path.join(bl.PERF, "dataloader.py"), data,
                                   "--recipe", "train", "--batch", str(args.batch),
                                   "--workers", str(len(cpus)), "--epochs", str(args.epochs)],
                                  cpus)),
            ("nocache", bench(tsrun, pipeline, cpus, args.epochs, "off")),
            ("cache", bench(tsrun, pipeline, cpus, args.epochs, args.cache)),
            ("half", bench(tsrun, pipeline, cpus, args.epochs, half)),
            ("first", bench(tsrun, pipeline, cpus, 1, args.cache)),
            ("first-off", bench(tsrun, pipeline, cpus, 1, "off")),
            ("decode-ref", bl.pin([dlimit, split, "--rounds", "1", "--threads", str(len(cpus))],
                                  cpus)),
        ]
        rounds = []
        for i in range(args.pairs):
            rr = {}
            for name, cmd in sides:
                r = run(cmd, files, args.timeout, cpus)
                rr[name] = r
                print(f"  round {i + 1} {name:10s} {r['images/s']:9.1f} img/s  cpu "
                      f"{r.get('cpu', float('nan')):7.2f} s  n {r['n_images']:.0f}  other load "
                      f"{r['other_load']:.2f} cores", flush=True)
            n = len(files)
            cpi = {k: rr[k]["cpu"] / rr[k]["n_images"] * 1e3 for k in rr if "cpu" in rr[k]}
            later = (rr["cache"]["cpu"] - rr["first"]["cpu"]) / ((args.epochs - 1) * n) * 1e3
            later_half = (rr["half"]["cpu"] - rr["first"]["cpu"]) / ((args.epochs - 1) * n) * 1e3
            hf = cache_figures(rr["half"])
            rec = {
                "round": i + 1,
                "noisy": not max(r["other_load"] for r in rr.values()) <= args.noisy,
                "later_cpu_ms": later,
                "decode_ref_cpu_ms": cpi["decode-ref"],
                "later_vs_decode": later / cpi["decode-ref"],
                "later_half_vs_decode": later_half / cpi["decode-ref"],
                "cache_vs_dataloader": rr["cache"]["images/s"] / rr["dataloader"]["images/s"],
                "nocache_vs_dataloader": rr["nocache"]["images/s"] / rr["dataloader"]["images/s"],
                "half_vs_dataloader": rr["half"]["images/s"] / rr["dataloader"]["images/s"],
                "half_hit_rate": hf[2] / hf[3] if hf else float("nan"),
                "first_cpu_vs_off": cpi["first"] / cpi["first-off"],
                "first_ips_vs_off": rr["first"]["images/s"] / rr["first-off"]["images/s"],
                "runs": {k: {kk: vv for kk, vv in v.items() if kk not in ("stdout", "stderr")}
                         for k, v in rr.items()},
            }
            print(f"round {i + 1}{': NOISY' if rec['noisy'] else ''}: later epochs "
                  f"{later:.3f} ms/image = {rec['later_vs_decode']:.2f}x decode-ref "
                  f"({cpi['decode-ref']:.3f}); images/s vs DataLoader: cache "
                  f"{rec['cache_vs_dataloader']:.2f}, half {rec['half_vs_dataloader']:.2f} "
                  f"(hit rate {rec['half_hit_rate']:.2f}), none {rec['nocache_vs_dataloader']:.2f}; "
                  f"first epoch CPU {rec['first_cpu_vs_off']:.2f}x, images/s "
                  f"{rec['first_ips_vs_off']:.2f}x of uncached", flush=True)
            rounds.append(rec)

    quiet = [r for r in rounds if not r["noisy"]] or rounds
    note = "" if any(not r["noisy"] for r in rounds) else " (every round NOISY: not a result)"
    print(f"\nresult over {len(quiet)} round(s) of {len(rounds)}{note}:")
    for key, what in (("later_vs_decode", "later epochs' CPU per image / full decode (<= 0.4)"),
                      ("later_half_vs_decode", "  half cache"),
                      ("cache_vs_dataloader", f"{args.epochs}-epoch images/s / DataLoader (>= 10)"),
                      ("half_vs_dataloader", "  half cache"),
                      ("nocache_vs_dataloader", "  no cache"),
                      ("half_hit_rate", "half cache's hit rate"),
                      ("first_cpu_vs_off", "first epoch CPU per image / uncached"),
                      ("first_ips_vs_off", "first epoch images/s / uncached")):
        print(f"  {what}: {bl.fmt_range([r[key] for r in quiet])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "digests": digests, "rounds": rounds}, fh, indent=1)


if __name__ == "__main__":
    main()
