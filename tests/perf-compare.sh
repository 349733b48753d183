#!/bin/sh
# perf-compare.sh - perf/compare.py, the ratio driver, on a tiny size (one
# pair, one epoch, 24 images): train runs the DataLoader, tsrun without
# the digest, tsrun with it and the decode reference (perf/decode-limit on
# as many threads as cores), prints each ratio and agrees on the digest;
# decode runs decode-limit against tsrun on one thread. No figures: they
# are noise here; the lead measures on a quiet machine (perf/README.md).
# Skipped (77) without Debian's torch under "$PY" or without
# perf/decode-limit.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup perf-compare
[ -n "${DECODE_LIMIT:-}" ] && [ -x "$DECODE_LIMIT" ] ||
	skip "perf/decode-limit not built (DECODE_LIMIT)"
need_python torch torchvision
dir=$T

# An ImageFolder that make-dataset did not make (--data takes any): the
# photos of a made set, moved under other class names.
make_dataset "$dir/made" --images 24
mkdir -p "$dir/set/cats" "$dir/set/dogs"
i=0
for f in $(find "$dir/made/train" -name '*.jpg' | sort); do
	i=$((i + 1))
	[ $((i % 2)) -eq 0 ] && mv "$f" "$dir/set/cats/$i.jpg" || mv "$f" "$dir/set/dogs/$i.jpg"
done
[ "$i" -ge 8 ] || fail "make-dataset made $i train photos"

export TSRUN DECODE_LIMIT
out="$dir/train.txt"
timeout 240 "$PY" "$TS_SRCDIR/perf/compare.py" --mode train --pairs 1 --epochs 1 \
	--batch 8 --data "$dir/set" --noisy 100 --json "$dir/train.json" > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { fail "compare.py --mode train exited $rc"; cat "$out"; }
for want in '^  baseline ' '^  tsrun ' '^  tsrun+digest ' '^  decode-ref ' \
	'^  ratio tsrun/baseline: [0-9.]*$' '^  with the digest: [0-9.]*$' \
	'^  CPU per image tsrun/decode-ref: [0-9.]* / [0-9.]* ms = [0-9.]*$' \
	'^result (train): tsrun/baseline images/s = [0-9.]* (range' \
	'^  CPU per image tsrun/decode-ref (libjpeg-turbo.s full decode on [0-9]* thread(s)): ' \
	'^  tsrun digest identical in every run: [0-9a-f]\{16\}$'; do
	grep -q "$want" "$out" || fail "train: no line matching '$want'"
done
# The measured tsrun run hashes nothing; the digest run does; the decode
# reference decodes every file on as many threads as cores.
"$PY" - "$dir/train.json" <<'PY' || fail "train.json"
import json, os, sys
j = json.load(open(sys.argv[1]))
r = j["runs"][0]
assert "digest" not in r["tsrun"] or r["tsrun"]["digest"].startswith("off"), r["tsrun"]
assert len(r["tsrun+digest"]["digest"]) == 16, r["tsrun+digest"]
d = r["decode-ref"]
assert d["threads"] == float(len(j["cpus"])), d
assert d["failed"] == 0 and d["images"] == float(sum(len(f) for _, _, f in os.walk(j["data"]))), d
assert j["cpu_ratios"] and j["cpu_ratios"][0] > 0, j["cpu_ratios"]
PY

out="$dir/decode.txt"
timeout 120 "$PY" "$TS_SRCDIR/perf/compare.py" --mode decode --pairs 1 --epochs 1 \
	--data "$dir/set" --noisy 100 > "$out" 2>&1 || { fail "compare.py --mode decode failed"; cat "$out"; }
grep -q '^result (decode): tsrun/baseline images/s = ' "$out" || fail "decode: no result line"
grep -q 'decode-ref\|tsrun+digest' "$out" && fail "decode: runs only the two sides"

# --batches in decode mode would stop tsrun early but not decode-limit:
# refused, before anything runs.
"$PY" "$TS_SRCDIR/perf/compare.py" --mode decode --batches 2 --data "$dir/set" \
	> "$dir/b.out" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "batches is for train, val and randaug" "$dir/b.out" ||
	fail "compare.py --mode decode --batches 2: exit $rc: $(tail -2 "$dir/b.out")"

# decode-limit's own checks: --threads 0 is a usage error.
"$DECODE_LIMIT" "$dir/set" --threads 0 2>/dev/null
[ $? -eq 2 ] || fail "decode-limit --threads 0 did not exit 2"
grep -h "^result\|^  CPU per image\|^  with the digest (" "$dir/train.txt" "$dir/decode.txt"
finish
