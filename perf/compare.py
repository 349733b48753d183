#!/usr/bin/env python3
"""tsrun against its baseline, side by side, A B A B ..., as ratios.

    perf/compare.py [--mode train|val|randaug|dino|decode] [--pairs 3] [--data DIR]
                    [--images 2000] [--epochs 1] [--batch N] [--batches N]
                    [--cpus 0-1] [--noisy 0.1] [--retries 2] [--profile]
                    [--no-decode-ref] [--json FILE]

Modes (side A = the baseline, side B = `tsrun bench`):
  train   A: PyTorch DataLoader + torchvision, ImageNet train recipe
             (perf/dataloader.py, num_workers = cores, under /usr/bin/python3)
          B: examples/imagenet.ts on the data set, --threads = cores
  val     the same with the val recipe (examples/imagenet-val.ts)
  randaug the same with the RandAugment recipe (RandomResizedCrop +
             flip + RandAugment(2, 9) + Normalize + RandomErasing(0.25);
             examples/imagenet-randaug.ts; perf/randaug.sh runs it)
  dino    the same with DINO's multi-crop (examples/dino.ts: 2 global
             views of 224 and 6 local of 96, each with its own crop, flip,
             jitter and grayscale; perf/dataloader.py --recipe dino);
             images/s counts images, not views; --batch defaults to 64
  decode  A: perf/decode-limit (libjpeg-turbo's TurboJPEG decode, 1 thread,
             files preloaded)  B: folder | decode(rgb), --threads 1

Both sides get the same files, the same cores (taskset) and a page cache
warmed alike (every file read just before each run). The ratio per pair is
B's images/s over A's; the result is the median with its range. CPU time and
peak RSS are printed beside, both as each side reports them and as measured
from outside (wait4). Goals (issue 11): train >= 5 (3 epochs) and >= 4 (1
epoch), val >= 5, decode >= 0.95, the train recipe's CPU per image <= 1.0x
the full decode's.

Side B runs with --no-digest: the stream's digest is bench-only hashing
(about 0.05 ms/image) done by the consumer thread on the same cores, and a
trainer does not do it; the DataLoader side only reads one value per
batch. So that the old figures stay comparable and the stream is still
checked, every pair of train, val and randaug also runs B with the digest
("tsrun+digest", its ratio printed as "with the digest", not the result),
and the digests of those runs must agree.

Every such pair also runs perf/decode-limit with --threads = cores on the
same files ("decode-ref"): libjpeg-turbo's full decode of every image on
as many cores as the recipe uses, its CPU per image the yardstick of the
goal "CPU per image <= 1.0x a full decode". The pair prints tsrun's CPU per
image (without the digest) over it; --no-decode-ref leaves it out, and so
does --batches (decode-limit decodes whole rounds). Digests that differ
between runs (a stream that depends on timing) end the driver with exit
status 1 after the figures.

--data is any ImageFolder (DIR/CLASS/IMAGE, or DIR/train and DIR/val
of one); without it a data set of --images photos is made in $TMPDIR.

The machine's other load is recorded for every run, from /proc/stat: the
CPU time its cores spent on anything but the run (other_load, in cores).
A pair where either run saw more than --noisy cores of it is noisy: it is
run again (up to --retries times), and one still noisy is flagged and
left out of the result, which also says how many pairs it rests on.

--profile adds one more tsrun run after the pairs (not in the ratios),
with `tsrun bench --profile`, and prints its per-stage CPU per image.

The binaries come from the release build (build/, or the newest release
build*/ without sanitizers, never an ASan or debug one); TSRUN_BUILD
names the folder, TSRUN and DECODE_LIMIT the binaries themselves.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def side_a(args, cpus, data):
    if args.mode == "decode":
        exe = bl.find_build_file("perf/decode-limit", "DECODE_LIMIT")
        cmd = [exe, bl.split_dir(data, "train"), "--rounds", str(args.epochs)]
    else:
        cmd = [bl.TORCH_PYTHON, os.path.join(bl.PERF, "dataloader.py"), data,
               "--recipe", args.mode, "--batch", str(args.batch),
               "--workers", str(len(cpus)), "--epochs", str(args.epochs)]
        if args.batches:
            cmd += ["--batches", str(args.batches)]
    return bl.pin(cmd, cpus)


def side_b(args, cpus, tsrun, pipeline, digest=False):
    threads = 1 if args.mode == "decode" else len(cpus)
    cmd = [tsrun, "bench", pipeline, "--epochs", str(args.epochs), "--threads", str(threads)]
    if not digest:
        # The measured side hashes nothing (decode-limit and the
        # DataLoader do not): see the module's doc.
        cmd.append("--no-digest")
    if args.batches:
        cmd += ["--batches", str(args.batches)]
    return bl.pin(cmd, cpus)


def decode_ref(args, cpus, data):
    """libjpeg-turbo's full decode of the recipe's files on len(cpus)
    threads: the CPU-per-image yardstick."""
    exe = bl.find_build_file("perf/decode-limit", "DECODE_LIMIT")
    return bl.pin([exe, bl.split_dir(data, args.mode), "--rounds", str(args.epochs),
                   "--threads", str(len(cpus))], cpus)


def show(name, r):
    ips = r.get("images/s", float("nan"))
    cpu = r.get("cpu", float("nan"))
    rss = r["rss"]
    print(f"  {name:12s} {ips:9.1f} img/s  cpu {cpu:7.2f} s (ext {r['ext_cpu']:7.2f})  "
          f"peak_rss {rss:7.1f} MiB (ext max {r['ext_max_rss']:7.1f})  wall {r['ext_wall']:6.2f} s  "
          f"other load {r['other_load']:.2f} cores (machine {r['other_load_all']:.2f})",
          flush=True)


def pair_sides(args, cpus, data, tsrun, pipeline):
    """(name, command) of one pair's runs, in order."""
    sides = [("baseline", side_a(args, cpus, data)),
             ("tsrun", side_b(args, cpus, tsrun, pipeline))]
    if args.mode != "decode":
        sides.append(("tsrun+digest", side_b(args, cpus, tsrun, pipeline, digest=True)))
        # decode-limit decodes whole rounds: no yardstick for --batches.
        if not args.no_decode_ref and not args.batches:
            sides.append(("decode-ref", decode_ref(args, cpus, data)))
    return sides


def run_pair(args, cpus, data, tsrun, pipeline, files):
    """One pair (A B, and B with the digest and the decode reference where
    the mode has them), each run after the page cache is warmed alike."""
    pair = {}
    for name, cmd in pair_sides(args, cpus, data, tsrun, pipeline):
        bl.warm_cache(files)
        r = bl.run_measured(cmd, timeout=args.timeout, cpus=cpus)
        if r["rc"] != 0 or "images/s" not in r:
            sys.exit(f"{' '.join(cmd)} failed (exit {r['rc']}):\n{r['stderr'][-3000:]}")
        # Images processed, and the memory figure to compare: the
        # DataLoader's sum over its processes, tsrun's one process.
        r["n_images"] = float(r.get("images", float("nan"))) * r.get("rounds", 1.0)
        r["rss"] = r.get("peak_rss_sum", r.get("peak_rss", float("nan")))
        pair[name] = r
    return pair


def cpu_per_image(r):
    """CPU ms per image of a run, from its own cpu figure."""
    return r.get("cpu", float("nan")) / r["n_images"] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["train", "val", "randaug", "dino", "decode"],
                    default="train")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--data", help="data set folder (default: made in $TMPDIR)")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=0,
                    help="batch size (default 256; 64 for dino, as examples/dino.ts)")
    ap.add_argument("--batches", type=int, default=0,
                    help="stop both sides after this many batches (0 = whole epochs)")
    ap.add_argument("--cpus", help="cores for both sides, e.g. 0-3 (default: all of ours)")
    ap.add_argument("--timeout", type=float, default=600, help="per run, seconds")
    ap.add_argument("--noisy", type=float, default=0.1,
                    help="other load (cores, on our cores) above which a run is noisy")
    ap.add_argument("--retries", type=int, default=2,
                    help="times a noisy pair is run again")
    ap.add_argument("--profile", action="store_true",
                    help="after the pairs, one tsrun run with --profile: CPU ms/image per stage")
    ap.add_argument("--no-decode-ref", action="store_true",
                    help="leave perf/decode-limit --threads N (the CPU yardstick) out of the pairs")
    ap.add_argument("--json", help="write every run's figures here")
    args = ap.parse_args()
    if args.batch <= 0:
        args.batch = 64 if args.mode == "dino" else 256
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    if args.retries < 0:
        ap.error("--retries must be at least 0")
    if args.batches and args.mode == "decode":
        # decode-limit decodes whole rounds; tsrun bench would stop after
        # --batches images: the two sides would not do the same work.
        ap.error("--batches is for train, val and randaug: decode mode runs whole epochs "
                 "on both sides (use --epochs)")

    tsrun = bl.find_build_file("src/tsrun", "TSRUN")
    print(f"tsrun: {tsrun}", flush=True)
    cpus = bl.cpu_list(args.cpus)
    data = args.data or os.path.join(tempfile.gettempdir(), f"tsrun-bench-data-{args.images}")
    bl.prepare_data(tsrun, data, args.images, args.data is not None)
    files = bl.image_files(bl.split_dir(data, args.mode))

    with tempfile.TemporaryDirectory(prefix="tsrun-compare-") as tmp:
        pipeline = os.path.join(tmp, f"{args.mode}.ts")
        with open(pipeline, "w") as fh:
            fh.write(bl.pipeline_text(data, args.mode, args.batch, args.epochs, len(cpus)))
        print(f"mode {args.mode}: {len(files)} files in {data}, cores {cpus}, "
              f"{args.pairs} pairs, {args.epochs} epoch(s)", flush=True)
        runs = []
        ratios = []
        noisy_ratios = []
        digests = set()
        for i in range(args.pairs):
            for attempt in range(args.retries + 1):
                pair = run_pair(args, cpus, data, tsrun, pipeline, files)
                load = max(r["other_load"] for r in pair.values())
                noisy = not load <= args.noisy   # NaN (no /proc/stat) counts as noisy
                print(f"pair {i + 1}" + (f" (retry {attempt})" if attempt else "") +
                      (f": NOISY, other load {load:.2f} > {args.noisy} cores" if noisy else ":"),
                      flush=True)
                for name, r in pair.items():
                    show(name, r)
                base = pair["baseline"]["images/s"]
                ratio = pair["tsrun"]["images/s"] / base
                print(f"  ratio tsrun/baseline: {ratio:.2f}", flush=True)
                rec = {k: {kk: vv for kk, vv in v.items() if kk not in ("stdout", "stderr")}
                       for k, v in pair.items()}
                extra = {}
                if "tsrun+digest" in pair:
                    extra["digest_ratio"] = pair["tsrun+digest"]["images/s"] / base
                    print(f"  with the digest: {extra['digest_ratio']:.2f}", flush=True)
                    digests.add(pair["tsrun+digest"].get("digest"))
                if "decode-ref" in pair:
                    t, d = cpu_per_image(pair["tsrun"]), cpu_per_image(pair["decode-ref"])
                    extra["cpu_ratio"] = t / d
                    print(f"  CPU per image tsrun/decode-ref: {t:.3f} / {d:.3f} ms = "
                          f"{extra['cpu_ratio']:.2f}", flush=True)
                rec.update({"pair": i + 1, "attempt": attempt, "ratio": ratio, "noisy": noisy,
                            **extra})
                runs.append(rec)
                if not noisy:
                    ratios.append(ratio)
                    break
            else:
                noisy_ratios.append(ratio)

    # The figures below come from the quiet runs, or from all of them
    # (and say so) when none was quiet.
    quiet = [r for r in runs if not r["noisy"]]
    digest_ratios = [r["digest_ratio"] for r in quiet if "digest_ratio" in r]
    cpu_ratios = [r["cpu_ratio"] for r in quiet if "cpu_ratio" in r]
    if not quiet:
        quiet = runs

    prof = None
    if args.profile:
        with tempfile.TemporaryDirectory(prefix="tsrun-compare-") as tmp:
            pipeline = os.path.join(tmp, f"{args.mode}.ts")
            with open(pipeline, "w") as fh:
                fh.write(bl.pipeline_text(data, args.mode, args.batch, args.epochs, len(cpus)))
            bl.warm_cache(files)
            cmd = side_b(args, cpus, tsrun, pipeline) + ["--profile"]
            prof = bl.run_measured(cmd, timeout=args.timeout, cpus=cpus)
            if prof["rc"] != 0:
                sys.exit(f"{' '.join(cmd)} failed (exit {prof['rc']}):\n{prof['stderr'][-3000:]}")

    def med(side, key):
        vals = [r[side][key] for r in quiet
                if side in r and isinstance(r[side].get(key), float)]
        return bl.summary(vals)[0] if vals else float("nan")

    print()
    if ratios:
        print(f"result ({args.mode}): tsrun/baseline images/s = {bl.fmt_range(ratios)}"
              f" over {len(ratios)} quiet pair(s) of {args.pairs}")
    else:
        print(f"result ({args.mode}): NONE: every pair was noisy "
              f"(other load above {args.noisy} cores); ratios "
              f"{', '.join(f'{x:.2f}' for x in noisy_ratios)}")
    if digest_ratios:
        print(f"  with the digest (bench-only hashing on the consumer thread, as measured "
              f"before session 7): {bl.fmt_range(digest_ratios)}")
    if cpu_ratios:
        print(f"  CPU per image tsrun/decode-ref (libjpeg-turbo's full decode on "
              f"{len(cpus)} thread(s)): {bl.fmt_range(cpu_ratios)}")
    if noisy_ratios:
        print(f"  WARNING: {len(noisy_ratios)} pair(s) still noisy after {args.retries} "
              f"retries, left out: ratios {', '.join(f'{x:.2f}' for x in noisy_ratios)}")
    if not ratios:
        print("  (the medians below are of noisy runs: not a result)")
    for side in [k for k in ("baseline", "tsrun", "tsrun+digest", "decode-ref")
                 if any(k in r for r in quiet)]:
        # The side's own CPU figure covers its loading loop only (not the
        # interpreter start or torch's import); ext_cpu covers everything.
        n_img, cpu = med(side, "n_images"), med(side, "cpu")
        print(f"  {side:12s} images/s median {med(side, 'images/s'):.1f}, "
              f"cpu {cpu:.2f} s ({cpu / n_img * 1e3:.3f} ms/image; whole process "
              f"{med(side, 'ext_cpu'):.2f} s), "
              f"peak_rss {med(side, 'rss'):.1f} MiB, wall {med(side, 'ext_wall'):.2f} s, "
              f"other load {med(side, 'other_load'):.2f} cores")
    if prof is not None:
        rows = [(k[len("profile "):], v) for k, v in prof.items()
                if k.startswith("profile ") and isinstance(v, float)]
        print(f"  tsrun --profile (one more run, other load {prof['other_load']:.2f} cores): "
              "CPU ms/image per stage")
        for name, v in rows:
            print(f"    {name:15s} {v:7.3f}")
    digests.discard(None)
    digests_differ = len(digests) > 1
    if digests_differ:
        print(f"  ERROR: tsrun digests differ between runs: {sorted(digests)}")
    elif digests:
        print(f"  tsrun digest identical in every run: {digests.pop()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"mode": args.mode, "cpus": cpus, "data": data, "tsrun": tsrun,
                       "ratios": ratios, "noisy_ratios": noisy_ratios, "noisy": args.noisy,
                       "digest_ratios": digest_ratios, "cpu_ratios": cpu_ratios,
                       "profile": ({k: v for k, v in prof.items() if k.startswith("profile ")}
                                   if prof else None),
                       "runs": runs}, fh, indent=1)
    return 1 if digests_differ else 0


if __name__ == "__main__":
    sys.exit(main())
