#!/usr/bin/env python3
"""Instructions per image, a measure that load does not move.

    perf/icount.py [--mode train|val|randaug|decode] [--data DIR] [--images 250]
                   [--epochs 1,3] [--batch 50] [--top 8] [--limit]
                   [--tsrun PATH] [--json FILE]
    perf/icount.py --op STAGES [--base STAGES] [--size 224] [--images 64] ...

Runs `tsrun bench PIPELINE --threads 1 --no-digest` under valgrind's
cachegrind (instruction counts only, --cache-sim=no) twice, over the two
epoch counts of --epochs, and prints the marginal user-space instructions
per image: (Ir(E2) - Ir(E1)) / ((E2 - E1) * images). Start-up, listing and
the ring's set-up are the same in both runs and drop out. The same for
the top functions (libjpeg-turbo and libxxhash are stripped: their code is
the "???" row). --limit does the same for perf/decode-limit (--rounds), the
reference a recipe's figure is read against (goal: CPU per image no more
than a full decode's).

Counts are exact and repeatable on a loaded machine (where CPU time is
not): use them to decide whether a change pays, and perf/compare.py on a
quiet machine for throughput. They miss what instructions do not show:
cache misses, divisions' latency, the kernel (page faults, reads), other
threads' waits. Under valgrind the CPU has no AVX-512, so glibc's string
functions take their AVX2 forms; tsrun's own kernels are AVX2 either way.

The pipeline is examples/imagenet.ts (train), examples/imagenet-val.ts
(val), examples/imagenet-randaug.ts (randaug) or `folder | decode(rgb)`
(decode) on the data set, with the batch
--batch (a small ring under valgrind). --data is any ImageFolder; without
it a set of --images photos (and as many val images) is made in $TMPDIR
(keep it small: valgrind runs some 50x slower than the CPU).

--op STAGES counts operators as perf/ops.sh times them: `synthetic([S, S],
count = --images) | STAGES | batch(32)` less the same pipeline with --base
STAGES instead (default: none), per image: e.g. --op 'adjust_hue(0.1)', or
--op 'flip(horizontal) | invert' --base invert for a flip that the output
stage does not fuse. TSRUN_SIMD=generic in the environment counts the
generic C path of the pixel kernels.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def cachegrind(cmd):
    """Total Ir and Ir per function of one run of cmd."""
    fd, out = tempfile.mkstemp(prefix="tsrun-icount-")
    os.close(fd)
    try:
        r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                            f"--cachegrind-out-file={out}"] + cmd,
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{' '.join(cmd)} under valgrind failed ({r.returncode}):\n"
                     + r.stderr[-2000:])
        ann = subprocess.run(["cg_annotate", "--threshold=0", out],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(out)
    total, per = 0, collections.Counter()
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(\([^)]*\)\s+)?(.*)$", line)
        if not m:
            continue
        n, name = int(m.group(1).replace(",", "")), m.group(3).strip()
        if name.startswith("PROGRAM TOTALS"):
            total = n
        elif ":" in name:
            f, fn = name.rsplit(":", 1)
            per[fn if fn != "???" else "??? (stripped: libjpeg-turbo, libxxhash)"] += n
    return total, per


def marginal(cmd_for, e1, e2, images):
    t1, p1 = cachegrind(cmd_for(e1))
    t2, p2 = cachegrind(cmd_for(e2))
    n = (e2 - e1) * images
    funcs = collections.Counter({k: (p2[k] - p1.get(k, 0)) / n for k in p2})
    return (t2 - t1) / n, funcs


def count_op(args, tsrun, e1, e2):
    """--op: the stage's own instructions per image on synthetic images."""
    images = args.images if args.images != 250 else 64
    with tempfile.TemporaryDirectory() as tmp:
        def side(stage):
            pipe = os.path.join(tmp, "with.ts" if stage == args.op else "base.ts")
            with open(pipe, "w") as fh:
                fh.write(f"pipeline p =\n    synthetic([{args.size}, {args.size}], "
                         f"count = {images})\n")
                if stage:
                    fh.write(f"    | {stage}\n")
                fh.write("    | batch(32)\n")
            return marginal(lambda e: [tsrun, "bench", pipe, "--threads", "1",
                                       "--no-digest", "--epochs", str(e)],
                            e1, e2, images)
        per, funcs = side(args.op)
        base, bfuncs = side(args.base)
    own = collections.Counter({k: v - bfuncs.get(k, 0) for k, v in funcs.items()})
    print(f"op {args.op}: {images} synthetic {args.size}x{args.size} images, "
          f"epochs {e1} and {e2}, simd {os.environ.get('TSRUN_SIMD', 'default')}")
    print(f"{args.op}: {per - base:,.0f} instructions/image "
          f"(pipeline {per:,.0f}, without it {base:,.0f})")
    for k, v in own.most_common(args.top):
        print(f"  {v:>12,.0f}  {k}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"op": args.op, "size": args.size, "images": images,
                       "instructions": per - base, "pipeline": per, "baseline": base,
                       "functions": dict(own.most_common(args.top))}, fh, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["train", "val", "randaug", "decode"], default="train")
    ap.add_argument("--data", help="data set folder (default: made in $TMPDIR)")
    ap.add_argument("--images", type=int, default=250)
    ap.add_argument("--epochs", default="1,3", help="the two epoch counts, E1,E2")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--limit", action="store_true", help="also perf/decode-limit")
    ap.add_argument("--tsrun", help="the tsrun binary (default: the release build's)")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--op", help="count this one stage on synthetic images instead")
    ap.add_argument("--base", help="--op: the stages of the baseline (default: none)")
    ap.add_argument("--size", type=int, default=224, help="--op: the images' side")
    args = ap.parse_args()
    try:
        e1, e2 = (int(x) for x in args.epochs.split(","))
    except ValueError:
        sys.exit(f"--epochs {args.epochs}: want two epoch counts, as 1,3")
    if not 0 < e1 < e2:
        sys.exit(f"--epochs {args.epochs}: want 0 < E1 < E2")
    if subprocess.run(["sh", "-c", "command -v valgrind cg_annotate"],
                      capture_output=True).returncode:
        sys.exit("valgrind and cg_annotate are needed (Debian: valgrind)")
    tsrun = args.tsrun or bl.find_build_file("src/tsrun", "TSRUN")
    if args.op:
        return count_op(args, tsrun, e1, e2)
    data = args.data or os.path.join(tempfile.gettempdir(), f"tsrun-icount-{args.images}")
    if not args.data:
        bl.make_dataset(tsrun, data, args.images, args.images)
    elif not os.path.isdir(data) or not bl.image_files(data):
        sys.exit(f"--data {data}: no .jpg, .jpeg or .png files under it")
    split = bl.split_dir(data, args.mode)
    images = len(bl.image_files(split))
    result = {"mode": args.mode, "data": split, "images": images, "epochs": [e1, e2]}
    with tempfile.TemporaryDirectory() as tmp:
        pipe = os.path.join(tmp, args.mode + ".ts")
        with open(pipe, "w") as fh:
            fh.write(bl.pipeline_text(data, args.mode, args.batch, e2, 1))

        def tsrun_cmd(e):
            cmd = [tsrun, "bench", pipe, "--threads", "1", "--no-digest", "--epochs", str(e)]
            return cmd + ([] if args.mode == "decode" else ["--batch", str(args.batch)])
        per, funcs = marginal(tsrun_cmd, e1, e2, images)
    print(f"mode {args.mode}: {images} images in {split}, epochs {e1} and {e2}")
    print(f"tsrun: {per:,.0f} instructions/image")
    for k, v in funcs.most_common(args.top):
        print(f"  {v:>12,.0f}  {k}")
    result["tsrun"] = per
    result["tsrun_functions"] = dict(funcs.most_common(args.top))
    if args.limit:
        exe = bl.find_build_file("perf/decode-limit", "DECODE_LIMIT")
        limit_dir = bl.split_dir(data, "train" if args.mode == "decode" else args.mode)
        n = len([f for f in bl.image_files(limit_dir)
                 if f.lower().endswith((".jpg", ".jpeg"))])
        lim, _ = marginal(lambda e: [exe, limit_dir, "--rounds", str(e)], e1, e2, n)
        print(f"decode-limit: {lim:,.0f} instructions/image ({n} JPEGs in {limit_dir}); "
              f"tsrun / decode-limit {per / lim:.3f}")
        result["decode_limit"] = lim
        result["ratio"] = per / lim
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
