#!/usr/bin/env python3
"""The decoded cache, side by side, in rounds of every side in turn.

    perf/cache.py [--data DIR] [--images 2000] [--pairs 3] [--epochs 3,10]
                  [--batch 256] [--cpus 0-1] [--cache 8GiB] [--noisy 0.1]
                  [--timeout 900] [--json FILE]

One round (a "pair" of the A B A B rule, with more than two sides) runs,
in this order, each after the page cache is warmed alike, on the same
cores (taskset) and the same files (the ImageNet train recipe,
examples/imagenet.ts, --threads = cores, --no-digest):

  for each epoch count E of --epochs (a comma-separated list; the first
  epoch has to decode every image, so the cache pays more the more epochs
  there are, and each count is measured, not extrapolated):
  dataloader   PyTorch DataLoader + torchvision, E epochs
               (perf/dataloader.py under /usr/bin/python3)
  nocache      tsrun bench, E epochs, --cache off (today)
  cache        tsrun bench, E epochs, --cache (the whole set)
  half         tsrun bench, E epochs, a cache of half the bytes the
               whole set took (measured in a first, untimed run)
  and once a round:
  first        tsrun bench, 1 epoch, with the cache (the first epoch's cost:
               admissions decode whole frames)
  first-off    tsrun bench, 1 epoch, --cache off
  decode-ref   perf/decode-limit --threads = cores, 1 round: libjpeg-turbo's
               full decode of every file, the CPU yardstick
  first-touch  perf/first_touch.py at the whole set's cache bytes: the
               kernel's system time for the first touch of that much fresh
               anonymous memory (what the cached first epoch's sys is)

Reported per round and as medians with their range over the quiet rounds,
for each epoch count:
  - the later epochs' CPU per image (the epochs after the first), user and
    sys apart, for the whole set cached, the half cache and no cache, two
    ways: from one run, the workers' own CPU after each one's first sample
    of the second epoch (tsrun bench's worker_cpu line: the first epoch's
    admissions and the kernel's zeroing of the cache pages they touch
    first stay out of it; the I/O thread and the consumer are not in it),
    over ((E - 1) * images); and from two runs, the process's
    (wait4: ru_utime, ru_stime) of the E-epoch run less the 1-epoch one
    (first, or first-off for no cache), which carries the difference of
    two first epochs' page faults. Each over decode-ref's CPU per image
    (issue 31's goal, whole set cached: at most 0.4);
  - images/s of the E-epoch run, cache / dataloader (issue 31's goal: at
    least 10 at 3 epochs), and nocache / dataloader and half / dataloader
    beside it; and the ceiling a CPU-bound run sits under, E x the
    DataLoader's CPU per image over (decode-ref + E x a cached epoch's
    workers' CPU per image): a run that did nothing but decode each image
    once and serve E epochs from the cache;
  - the hit rate of the whole cache and of the half one: hits over all
    lookups (the first epoch's admissions among them) and over the later
    epochs' samples (1.0 when every later sample is served from it);
  - the first epoch: first against first-off, CPU per image user and sys
    apart, their ratio and that of images/s; the first epoch's workers'
    CPU in the E-epoch runs beside it, user and sys apart; what the
    cached first epoch's workers' user CPU costs beyond a full decode
    (decode-ref) and a cached epoch's work (the later epochs' per image):
    the admission's own cost, which the rest of the first epoch's excess
    over the uncached one is not (the excess is a full decode instead of
    a windowed one, and the kernel's zeroing of fresh pages, sys); the
    machine's huge-page faults and direct compactions over the first run
    (/proc/vmstat) and whether the kernel hands free memory back to a
    hypervisor (page_reporting on its command line: the host then backs
    each fresh page again when it is first touched, the sys time that
    swings from run to run); first-touch's system time per image beside
    the cached first epoch's workers' sys, and the first epoch's sys less
    it (near the uncached epoch's sys when the excess is all fresh pages);
  - the break-even: the epochs after which the cached run has spent less
    CPU than the uncached one, (F - L) / (U - L) with F the cached first
    epoch's workers' CPU per image, L a cached later epoch's and U an
    uncached epoch's (the E-epoch runs' worker_cpu lines); and the same
    with F less first-touch's figure (a host whose fresh pages were free);
    inf ("never") when L is not below U (an ASan build's copies, a noisy
    run);
  - the other load of every run of the round, beside its figures.
Before the rounds, one untimed run (the first epoch count) with the
digest on each of nocache and cache (and half) checks the streams are
the same; a difference ends the
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


NAN = float("nan")
NEVER = float("inf")  # a break-even that never comes: a cached epoch costs no less


def page_reporting():
    """The kernel's page_reporting setting (free memory handed back to a
    hypervisor), from its command line, or None."""
    try:
        with open("/proc/cmdline") as fh:
            m = re.search(r"page_reporting\.\S+", fh.read())
        return m.group(0) if m else None
    except OSError:
        return None


def epoch_figures(rr, e, n, ref):
    """One epoch count's figures of a round (ms per image unless a ratio);
    rr maps side -> run, its E-epoch sides named side@E."""
    later_n = (e - 1) * n
    rec = {}
    for side, base in (("nocache", "first-off"), ("cache", "first"), ("half", "first")):
        pre = "" if side == "cache" else side + "_"
        run_ = rr[f"{side}@{e}"]
        wc = worker_cpu(run_)
        if wc:
            rec[f"later_{pre}w_user_ms"] = wc[2] / later_n * 1e3
            rec[f"later_{pre}w_sys_ms"] = wc[3] / later_n * 1e3
            rec[f"later_{pre}w_vs_decode"] = (wc[2] + wc[3]) / later_n * 1e3 / ref
            rec[f"first_{pre}w_user_ms"] = wc[0] / n * 1e3
            rec[f"first_{pre}w_sys_ms"] = wc[1] / n * 1e3
        # Two runs: the E-epoch run less the 1-epoch one (the half cache's
        # first epoch admits half the items its base does: biased low).
        u = (run_["ext_user"] - rr[base]["ext_user"]) / later_n * 1e3
        sy = (run_["ext_sys"] - rr[base]["ext_sys"]) / later_n * 1e3
        rec[f"later_{pre}user_ms"], rec[f"later_{pre}sys_ms"] = u, sy
        rec[f"later_{pre}vs_decode"] = (u + sy) / ref
        rec[f"{side}_vs_dataloader"] = run_["images/s"] / rr[f"dataloader@{e}"]["images/s"]
        cf = cache_figures(run_)
        if side != "nocache":
            rec[f"{side}_hit_rate"] = cf[2] / cf[3] if cf and cf[3] else NAN
            rec[f"{side}_later_hit_rate"] = cf[2] / later_n if cf else NAN
            rec[f"{side}_items"] = cf[1] if cf else 0
    # The cached first epoch's workers' user CPU against a full decode and
    # a cached epoch's work: what is left is the admission's own cost.
    dl = rr[f"dataloader@{e}"]
    rec["dataloader_cpu_ms"] = dl["cpu"] / dl["n_images"] * 1e3 if "cpu" in dl else NAN
    if "first_w_user_ms" in rec and "later_w_user_ms" in rec:
        rec["admission_ms"] = rec["first_w_user_ms"] - ref - rec["later_w_user_ms"]
        # What a CPU-bound E-epoch run could reach over the DataLoader if
        # it did nothing but one full decode and E cached epochs' work per
        # image (no admission, no fresh pages, no I/O thread or consumer):
        # the ceiling the measured ratio sits under.
        later = rec["later_w_user_ms"] + rec["later_w_sys_ms"]
        rec["cache_bound_vs_dataloader"] = e * rec["dataloader_cpu_ms"] / (ref + e * later)
        if "first_nocache_w_user_ms" in rec:
            rec["first_w_excess_ms"] = rec["first_w_user_ms"] - rec["first_nocache_w_user_ms"]
    # Break-even: the cached run spends less, F + (E - 1) L < E U, once
    # E > (F - L) / (U - L) (per image: F its first epoch, L a later one,
    # U an uncached epoch, all the workers' CPU); never when L >= U (an
    # instrumented build's copies, a noisy run).
    if all(k in rec for k in ("first_w_user_ms", "later_w_user_ms", "later_nocache_w_user_ms")):
        f_ = rec["first_w_user_ms"] + rec["first_w_sys_ms"]
        l_ = rec["later_w_user_ms"] + rec["later_w_sys_ms"]
        u_ = rec["later_nocache_w_user_ms"] + rec["later_nocache_w_sys_ms"]
        rec["break_even_epochs"] = (f_ - l_) / (u_ - l_) if u_ > l_ else NEVER
        touch = first_touch_ms(rr, n)
        rec["first_w_sys_less_touch_ms"] = rec["first_w_sys_ms"] - touch
        rec["break_even_no_touch_epochs"] = (f_ - touch - l_) / (u_ - l_) if u_ > l_ else NEVER
    return rec


def first_touch_ms(rr, n):
    """The first touch of the whole set's bytes, system ms per image."""
    return rr["first-touch"].get("first_touch_sys_s", NAN) / n * 1e3


def round_figures(i, rr, n, epochs, noisy):
    """One round's figures (ms per image unless a ratio)."""
    ref = rr["decode-ref"]["cpu"] / rr["decode-ref"]["n_images"] * 1e3
    rec = {"round": i, "decode_ref_cpu_ms": ref,
           "other_load": {k: rr[k]["other_load"] for k in rr},
           "other_load_max": max(r["other_load"] for r in rr.values())}
    rec["noisy"] = not rec["other_load_max"] <= noisy
    rec["by_epochs"] = {e: epoch_figures(rr, e, n, ref) for e in epochs}
    for side, key in (("first", "first"), ("first-off", "first_off")):
        rec[f"{key}_user_ms"] = rr[side]["ext_user"] / rr[side]["n_images"] * 1e3
        rec[f"{key}_sys_ms"] = rr[side]["ext_sys"] / rr[side]["n_images"] * 1e3
    rec["first_cpu_vs_off"] = ((rec["first_user_ms"] + rec["first_sys_ms"]) /
                               (rec["first_off_user_ms"] + rec["first_off_sys_ms"]))
    rec["first_ips_vs_off"] = rr["first"]["images/s"] / rr["first-off"]["images/s"]
    ft = rr["first-touch"]
    rec["first_touch_ms"] = first_touch_ms(rr, n)
    touch_s = ft.get("first_touch_sys_s", NAN)
    # rusage's system time is sampled at the tick: a small set's touch may read 0 s.
    rec["first_touch_gib_s"] = ft.get("bytes", NAN) / 2**30 / touch_s if touch_s > 0 else NAN
    rec["second_touch_ms"] = ft.get("second_touch_sys_s", NAN) / n * 1e3
    rec["vmstat"] = {k: rr[k].get("vmstat", {}) for k in rr}
    rec["runs"] = {k: {kk: vv for kk, vv in v.items() if kk not in ("stdout", "stderr")}
                   for k, v in rr.items()}
    return rec


def print_round(rec, epochs):
    print(f"round {rec['round']}{': NOISY' if rec['noisy'] else ''}: other load (cores) " +
          ", ".join(f"{k} {v:.2f}" for k, v in rec["other_load"].items()))
    vm = rec["vmstat"].get("first", {})
    print(f"  first epoch (1-epoch runs), ms/image user + sys: cache "
          f"{rec['first_user_ms']:.3f} + {rec['first_sys_ms']:.3f}, off "
          f"{rec['first_off_user_ms']:.3f} + {rec['first_off_sys_ms']:.3f}: "
          f"{rec['first_cpu_vs_off']:.2f}x CPU, {rec['first_ips_vs_off']:.2f}x images/s; "
          "machine during it: "
          + (", ".join(f"{k} {v}" for k, v in vm.items()) or "no /proc/vmstat"))
    rate = (f"{rec['first_touch_gib_s']:.2f} GiB/s" if rec["first_touch_gib_s"] > 0
            else "under the clock's tick: no rate")
    print(f"  first touch of the whole set's bytes (first-touch): sys {rec['first_touch_ms']:.3f} "
          f"ms/image ({rate}), second touch "
          f"{rec['second_touch_ms']:.3f}")
    for e in epochs:
        f = rec["by_epochs"][e]
        g = f.get
        print(f"  {e} epochs: later epochs, ms/image user + sys (one run, workers | two runs, "
              f"process), decode-ref {rec['decode_ref_cpu_ms']:.3f}:")
        for side, pre in (("cache", ""), ("half", "half_"), ("nocache", "nocache_")):
            print(f"    {side:8s} {g(f'later_{pre}w_user_ms', NAN):.3f} + "
                  f"{g(f'later_{pre}w_sys_ms', NAN):.3f} = "
                  f"{g(f'later_{pre}w_vs_decode', NAN):.2f}x | {g(f'later_{pre}user_ms'):.3f} + "
                  f"{g(f'later_{pre}sys_ms'):.3f} = {g(f'later_{pre}vs_decode'):.2f}x decode-ref")
        print(f"    hit rate: whole cache {g('cache_hit_rate', NAN):.3f} of all lookups, "
              f"{g('cache_later_hit_rate', NAN):.3f} of the later epochs' samples "
              f"({g('cache_items', 0)} items); half {g('half_hit_rate', NAN):.3f}, "
              f"{g('half_later_hit_rate', NAN):.3f} ({g('half_items', 0)} items)")
        print(f"    first epoch's workers, ms/image user + sys: cache "
              f"{g('first_w_user_ms', NAN):.3f} + {g('first_w_sys_ms', NAN):.3f}, off "
              f"{g('first_nocache_w_user_ms', NAN):.3f} + {g('first_nocache_w_sys_ms', NAN):.3f}; "
              f"cache user less decode-ref less a later epoch's user (the admission) "
              f"{g('admission_ms', NAN):.3f}; its sys less first-touch "
              f"{g('first_w_sys_less_touch_ms', NAN):.3f}")
        print(f"    break-even (cached CPU below uncached after): "
              f"{g('break_even_epochs', NAN):.2f} epochs; with fresh pages free "
              f"{g('break_even_no_touch_epochs', NAN):.2f}")
        print(f"    images/s vs DataLoader: cache {f['cache_vs_dataloader']:.2f} (ceiling "
              f"{g('cache_bound_vs_dataloader', NAN):.2f}: DataLoader CPU "
              f"{g('dataloader_cpu_ms', NAN):.3f} ms/image), half "
              f"{f['half_vs_dataloader']:.2f}, none {f['nocache_vs_dataloader']:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="data set folder (default: made in $TMPDIR)")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=3, help="rounds of every side")
    ap.add_argument("--epochs", default="3,10",
                    help="epoch counts, comma-separated: each runs the E-epoch sides")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--cpus", help="cores for every side, e.g. 0-1 (default: all of ours)")
    ap.add_argument("--cache", default="8GiB", help="the whole set's cache (tsrun bench --cache)")
    ap.add_argument("--noisy", type=float, default=0.1,
                    help="other load (cores, on our cores) above which a run is noisy")
    ap.add_argument("--timeout", type=float, default=900, help="per run, seconds")
    ap.add_argument("--json", help="write every run's figures here")
    args = ap.parse_args()
    try:
        epochs = sorted({int(x) for x in args.epochs.split(",") if x.strip()})
    except ValueError:
        ap.error(f"--epochs {args.epochs!r}: give epoch counts separated by commas, e.g. 3,10")
    if not epochs or epochs[0] < 2:
        ap.error("--epochs: every count must be at least 2: the later epochs are what the "
                 "cache serves")
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
          f"epochs {','.join(map(str, epochs))}, cache {args.cache}; kernel: "
          f"{page_reporting() or 'no page_reporting on its command line'}", flush=True)

    with tempfile.TemporaryDirectory(prefix="tsrun-cache-") as tmp:
        pipeline = os.path.join(tmp, "train.ts")
        with open(pipeline, "w") as fh:
            fh.write(bl.pipeline_text(data, "train", args.batch, epochs[0], len(cpus)))

        # Untimed: the streams agree, and how much the whole set takes.
        digests = {}
        whole = None
        for name, cache in (("nocache", "off"), ("cache", args.cache)):
            r = run(bench(tsrun, pipeline, cpus, epochs[0], cache, digest=True), files,
                    args.timeout, cpus)
            digests[name] = r.get("digest")
            if name == "cache":
                whole = cache_figures(r)
        if not whole or whole[1] < len(files):
            sys.exit(f"--cache {args.cache} holds {whole[1] if whole else 0} of {len(files)} "
                     "items: give a larger one")
        half = f"{max(int(whole[0] / 2), 1)}MiB"
        r = run(bench(tsrun, pipeline, cpus, epochs[0], half, digest=True), files,
                args.timeout, cpus)
        digests["half"] = r.get("digest")
        print(f"whole set: {whole[1]} items in {whole[0]:.1f} MiB; half cache: {half}; "
              f"digests {digests}", flush=True)
        if len(set(digests.values())) != 1:
            sys.exit("FAIL: the streams differ with and without the cache")

        sides = []
        for e in epochs:
            sides += [
                (f"dataloader@{e}",
                 bl.pin([bl.TORCH_PYTHON, os.path.join(bl.PERF, "dataloader.py"), data,
                         "--recipe", "train", "--batch", str(args.batch),
                         "--workers", str(len(cpus)), "--epochs", str(e)], cpus)),
                (f"nocache@{e}", bench(tsrun, pipeline, cpus, e, "off")),
                (f"cache@{e}", bench(tsrun, pipeline, cpus, e, args.cache)),
                (f"half@{e}", bench(tsrun, pipeline, cpus, e, half)),
            ]
        sides += [
            ("first", bench(tsrun, pipeline, cpus, 1, args.cache)),
            ("first-off", bench(tsrun, pipeline, cpus, 1, "off")),
            ("decode-ref", bl.pin([dlimit, split, "--rounds", "1", "--threads", str(len(cpus))],
                                  cpus)),
            ("first-touch", bl.pin([sys.executable, os.path.join(bl.PERF, "first_touch.py"),
                                    str(int(whole[0] * 2**20))], cpus[:1])),
        ]
        rounds = []
        for i in range(args.pairs):
            rr = {}
            for name, cmd in sides:
                if name == "first-touch":
                    r = bl.run_measured(cmd, timeout=args.timeout, cpus=cpus)
                    if r["rc"] != 0 or "first_touch_sys_s" not in r:
                        sys.exit(f"{' '.join(cmd)} failed (exit {r['rc']}):\n"
                                 f"{r['stderr'][-3000:]}")
                    rr[name] = r
                    print(f"  round {i + 1} {name:13s} sys {r['first_touch_sys_s']:.3f} s for "
                          f"{r['bytes'] / 2**20:.0f} MiB, second touch "
                          f"{r['second_touch_sys_s']:.3f} s  other load "
                          f"{r['other_load']:.2f} cores", flush=True)
                    continue
                r = run(cmd, files, args.timeout, cpus)
                rr[name] = r
                print(f"  round {i + 1} {name:13s} {r['images/s']:9.1f} img/s  cpu "
                      f"{r['ext_user']:7.2f} s user {r['ext_sys']:6.2f} s sys  n "
                      f"{r['n_images']:.0f}  other load {r['other_load']:.2f} cores", flush=True)
            rec = round_figures(i + 1, rr, len(files), epochs, args.noisy)
            print_round(rec, epochs)
            rounds.append(rec)

    quiet = [r for r in rounds if not r["noisy"]] or rounds
    note = "" if any(not r["noisy"] for r in rounds) else " (every round NOISY: not a result)"
    print(f"\nresult over {len(quiet)} round(s) of {len(rounds)}{note}:")
    def show(key, what, recs):
        vals = [r[key] for r in recs if r.get(key) == r.get(key)]  # NaN left out
        if vals:
            never = sum(v == NEVER for v in vals)
            print(f"  {what}: {bl.fmt_range(vals, 3)}" +
                  (f"; never in {never} of {len(vals)} (a cached epoch's CPU no lower than an "
                   "uncached one's)" if never else ""))

    for e in epochs:
        print(f" {e} epochs:")
        by_e = [r["by_epochs"][e] for r in quiet]
        for key, what in (
                ("later_vs_decode", "later epochs' CPU per image / full decode (<= 0.4), whole "
                                    "set cached, two runs (process user+sys)"),
                ("later_user_ms", "  its user ms/image"), ("later_sys_ms", "  its sys ms/image"),
                ("later_w_vs_decode", "  the same from one run (workers' user+sys, worker_cpu)"),
                ("later_w_user_ms", "  its user ms/image"), ("later_w_sys_ms", "  its sys ms/image"),
                ("later_half_w_vs_decode", "  half cache, one run (workers)"),
                ("later_nocache_w_vs_decode", "  no cache, one run (workers)"),
                ("cache_vs_dataloader", f"{e}-epoch images/s / DataLoader"
                                        + (" (>= 10)" if e == 3 else "")),
                ("cache_bound_vs_dataloader", "  its ceiling: E x DataLoader CPU / (full decode "
                                              "+ E x a cached epoch's CPU), per image"),
                ("dataloader_cpu_ms", "  DataLoader CPU ms/image"),
                ("half_vs_dataloader", "  half cache"),
                ("nocache_vs_dataloader", "  no cache"),
                ("cache_hit_rate", "whole cache's hit rate, all lookups"),
                ("cache_later_hit_rate", "  of the later epochs' samples"),
                ("half_hit_rate", "half cache's hit rate, all lookups"),
                ("half_later_hit_rate", "  of the later epochs' samples"),
                ("first_w_user_ms", "first epoch's workers, cached, user ms/image"),
                ("first_w_sys_ms", "  sys ms/image (fresh cache pages)"),
                ("first_nocache_w_user_ms", "  uncached, user ms/image"),
                ("first_nocache_w_sys_ms", "  uncached, sys ms/image"),
                ("first_w_sys_less_touch_ms", "  its sys less first-touch's (the whole set's "
                                              "fresh pages), ms/image"),
                ("first_w_excess_ms", "  cached less uncached, user ms/image"),
                ("admission_ms", "  cached user less decode-ref less a later epoch's user "
                                 "(the admission's own cost)"),
                ("break_even_epochs", "break-even, epochs: (F - L) / (U - L), workers' CPU"),
                ("break_even_no_touch_epochs", "  with F less first-touch's (fresh pages free)")):
            show(key, what, by_e)
    print(" once a round:")
    for key, what in (
            ("decode_ref_cpu_ms", "decode-ref (libjpeg-turbo's full decode) CPU ms/image"),
            ("first_cpu_vs_off", "first epoch CPU per image / uncached (two 1-epoch runs)"),
            ("first_user_ms", "  its user ms/image"), ("first_sys_ms", "  its sys ms/image"),
            ("first_off_user_ms", "  uncached user ms/image"),
            ("first_off_sys_ms", "  uncached sys ms/image"),
            ("first_ips_vs_off", "first epoch images/s / uncached"),
            ("first_touch_ms", "first touch of the whole set's bytes, sys ms/image"),
            ("first_touch_gib_s", "  GiB/s"),
            ("second_touch_ms", "  second touch, sys ms/image"),
            ("other_load_max", "other load, the round's largest (cores)")):
        show(key, what, quiet)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "epochs": epochs, "page_reporting": page_reporting(),
                       "digests": digests, "rounds": rounds}, fh, indent=1)


if __name__ == "__main__":
    main()
