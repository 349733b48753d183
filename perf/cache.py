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
  - the later epochs' CPU per image (the epochs after the first), user and
    sys apart, for the whole set cached, the half cache and no cache, two
    ways: from one run, the workers' own CPU after each one's first sample
    of the second epoch (tsrun bench's worker_cpu line: the first epoch's
    admissions and the kernel's zeroing of the cache pages they touch
    first stay out of it; the I/O thread and the consumer are not in it),
    over ((epochs - 1) * images); and from two runs, the process's
    (wait4: ru_utime, ru_stime) of the --epochs run less the 1-epoch one
    (first, or first-off for no cache), which carries the difference of
    two first epochs' page faults. Each over decode-ref's CPU per image
    (issue 31's goal, whole set cached: at most 0.4);
  - images/s of the --epochs run, cache / dataloader (goal: at least 10),
    and nocache / dataloader and half / dataloader beside it;
  - the hit rate of the whole cache and of the half one: hits over all
    lookups (the first epoch's admissions among them) and over the later
    epochs' samples (1.0 when every later sample is served from it);
  - the first epoch: first against first-off, CPU per image user and sys
    apart, their ratio and that of images/s; the first epoch's workers'
    CPU in the --epochs runs beside it; the machine's huge-page faults
    and direct compactions over the first run (/proc/vmstat: what makes
    the first touch's sys time swing);
  - the other load of every run of the round, beside its figures.
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


def worker_cpu(r):
    """(first user, first sys, later user, later sys) seconds from tsrun
    bench's worker_cpu line: the workers' CPU split at each one's first
    sample of the second epoch, in one run."""
    m = re.search(r"^worker_cpu: first epoch ([\d.]+) s user ([\d.]+) s sys, later epochs "
                  r"([\d.]+) s user ([\d.]+) s sys", r.get("stdout", ""), re.M)
    return tuple(float(g) for g in m.groups()) if m else None


SIDES = ("dataloader", "nocache", "cache", "half", "first", "first-off", "decode-ref")
NAN = float("nan")


def round_figures(i, rr, n, epochs, noisy):
    """One round's figures (ms per image unless a ratio)."""
    later_n = (epochs - 1) * n
    ref = rr["decode-ref"]["cpu"] / rr["decode-ref"]["n_images"] * 1e3
    rec = {"round": i, "decode_ref_cpu_ms": ref,
           "other_load": {k: rr[k]["other_load"] for k in rr},
           "other_load_max": max(r["other_load"] for r in rr.values())}
    rec["noisy"] = not rec["other_load_max"] <= noisy
    for side, base in (("nocache", "first-off"), ("cache", "first"), ("half", "first")):
        pre = "" if side == "cache" else side + "_"
        wc = worker_cpu(rr[side])
        if wc:
            rec[f"later_{pre}w_user_ms"] = wc[2] / later_n * 1e3
            rec[f"later_{pre}w_sys_ms"] = wc[3] / later_n * 1e3
            rec[f"later_{pre}w_vs_decode"] = (wc[2] + wc[3]) / later_n * 1e3 / ref
            rec[f"first_{pre}w_ms"] = (wc[0] + wc[1]) / n * 1e3
        # Two runs: the --epochs run less the 1-epoch one (the half cache's
        # first epoch admits half the items its base does: biased low).
        u = (rr[side]["ext_user"] - rr[base]["ext_user"]) / later_n * 1e3
        sy = (rr[side]["ext_sys"] - rr[base]["ext_sys"]) / later_n * 1e3
        rec[f"later_{pre}user_ms"], rec[f"later_{pre}sys_ms"] = u, sy
        rec[f"later_{pre}vs_decode"] = (u + sy) / ref
        rec[f"{side}_vs_dataloader"] = rr[side]["images/s"] / rr["dataloader"]["images/s"]
        cf = cache_figures(rr[side])
        if side != "nocache":
            rec[f"{side}_hit_rate"] = cf[2] / cf[3] if cf and cf[3] else NAN
            rec[f"{side}_later_hit_rate"] = cf[2] / later_n if cf else NAN
            rec[f"{side}_items"] = cf[1] if cf else 0
    for side, key in (("first", "first"), ("first-off", "first_off")):
        rec[f"{key}_user_ms"] = rr[side]["ext_user"] / rr[side]["n_images"] * 1e3
        rec[f"{key}_sys_ms"] = rr[side]["ext_sys"] / rr[side]["n_images"] * 1e3
    rec["first_cpu_vs_off"] = ((rec["first_user_ms"] + rec["first_sys_ms"]) /
                               (rec["first_off_user_ms"] + rec["first_off_sys_ms"]))
    rec["first_ips_vs_off"] = rr["first"]["images/s"] / rr["first-off"]["images/s"]
    rec["vmstat"] = {k: rr[k].get("vmstat", {}) for k in rr}
    rec["runs"] = {k: {kk: vv for kk, vv in v.items() if kk not in ("stdout", "stderr")}
                   for k, v in rr.items()}
    return rec


def print_round(rec, epochs):
    g = rec.get
    print(f"round {rec['round']}{': NOISY' if rec['noisy'] else ''}: other load (cores) " +
          ", ".join(f"{k} {v:.2f}" for k, v in rec["other_load"].items()))
    print(f"  later epochs, ms/image user + sys (one run, workers | two runs, process), "
          f"decode-ref {rec['decode_ref_cpu_ms']:.3f}:")
    for side, pre in (("cache", ""), ("half", "half_"), ("nocache", "nocache_")):
        print(f"    {side:8s} {g(f'later_{pre}w_user_ms', NAN):.3f} + "
              f"{g(f'later_{pre}w_sys_ms', NAN):.3f} = "
              f"{g(f'later_{pre}w_vs_decode', NAN):.2f}x | {g(f'later_{pre}user_ms'):.3f} + "
              f"{g(f'later_{pre}sys_ms'):.3f} = {g(f'later_{pre}vs_decode'):.2f}x decode-ref")
    print(f"  hit rate: whole cache {g('cache_hit_rate', NAN):.3f} of all lookups, "
          f"{g('cache_later_hit_rate', NAN):.3f} of the later epochs' samples "
          f"({g('cache_items', 0)} items); half {g('half_hit_rate', NAN):.3f}, "
          f"{g('half_later_hit_rate', NAN):.3f} ({g('half_items', 0)} items)")
    vm = rec["vmstat"].get("first", {})
    print(f"  first epoch (1-epoch runs), ms/image user + sys: cache "
          f"{rec['first_user_ms']:.3f} + {rec['first_sys_ms']:.3f}, off "
          f"{rec['first_off_user_ms']:.3f} + {rec['first_off_sys_ms']:.3f}: "
          f"{rec['first_cpu_vs_off']:.2f}x CPU, {rec['first_ips_vs_off']:.2f}x images/s; "
          f"its workers in the {epochs}-epoch runs: cache {g('first_w_ms', NAN):.3f}, off "
          f"{g('first_nocache_w_ms', NAN):.3f}; machine during it: "
          + (", ".join(f"{k} {v}" for k, v in vm.items()) or "no /proc/vmstat"))
    print(f"  {epochs}-epoch images/s vs DataLoader: cache {rec['cache_vs_dataloader']:.2f}, half "
          f"{rec['half_vs_dataloader']:.2f}, none {rec['nocache_vs_dataloader']:.2f}", flush=True)


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
                      f"{r['ext_user']:7.2f} s user {r['ext_sys']:6.2f} s sys  n "
                      f"{r['n_images']:.0f}  other load {r['other_load']:.2f} cores", flush=True)
            rec = round_figures(i + 1, rr, len(files), args.epochs, args.noisy)
            print_round(rec, args.epochs)
            rounds.append(rec)

    quiet = [r for r in rounds if not r["noisy"]] or rounds
    note = "" if any(not r["noisy"] for r in rounds) else " (every round NOISY: not a result)"
    print(f"\nresult over {len(quiet)} round(s) of {len(rounds)}{note}:")
    for key, what in (
            ("later_vs_decode", "later epochs' CPU per image / full decode (<= 0.4), whole set cached, "
                                "two runs (process user+sys)"),
            ("later_user_ms", "  its user ms/image"), ("later_sys_ms", "  its sys ms/image"),
            ("later_w_vs_decode", "  the same from one run (workers' user+sys, worker_cpu)"),
            ("later_w_user_ms", "  its user ms/image"), ("later_w_sys_ms", "  its sys ms/image"),
            ("later_half_w_vs_decode", "  half cache, one run (workers)"),
            ("later_nocache_w_vs_decode", "  no cache, one run (workers)"),
            ("cache_vs_dataloader", f"{args.epochs}-epoch images/s / DataLoader (>= 10)"),
            ("half_vs_dataloader", "  half cache"),
            ("nocache_vs_dataloader", "  no cache"),
            ("cache_hit_rate", "whole cache's hit rate, all lookups"),
            ("cache_later_hit_rate", "  of the later epochs' samples"),
            ("half_hit_rate", "half cache's hit rate, all lookups"),
            ("half_later_hit_rate", "  of the later epochs' samples"),
            ("first_cpu_vs_off", "first epoch CPU per image / uncached (two 1-epoch runs)"),
            ("first_user_ms", "  its user ms/image"), ("first_sys_ms", "  its sys ms/image"),
            ("first_off_user_ms", "  uncached user ms/image"),
            ("first_off_sys_ms", "  uncached sys ms/image"),
            ("first_ips_vs_off", "first epoch images/s / uncached"),
            ("other_load_max", "other load, the round's largest (cores)")):
        vals = [r[key] for r in quiet if r.get(key) == r.get(key)]  # NaN left out
        if vals:
            print(f"  {what}: {bl.fmt_range(vals, 3)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "digests": digests, "rounds": rounds}, fh, indent=1)


if __name__ == "__main__":
    main()
