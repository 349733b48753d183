#!/bin/sh
# perf-cache.sh - perf/cache.py, the decoded cache's driver, on a tiny size
# (one round, epoch counts 2 and 3, 24 photos, batch 8): every side runs
# (the DataLoader and tsrun with the whole, half and no cache at each
# count, the two 1-epoch runs and the decode reference), the streams agree
# with and without the cache, and every figure the issue asks for is
# printed for each epoch count, its JSON record too. No figures are
# checked: they are noise here (perf/README.md has the quiet ones).
# Skipped (77) without Debian's torch under "$PY" or without
# perf/decode-limit.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup perf-cache
[ -n "${DECODE_LIMIT:-}" ] && [ -x "$DECODE_LIMIT" ] ||
	skip "perf/decode-limit not built (DECODE_LIMIT)"
need_python torch torchvision
dir=$T
make_dataset "$dir/set" --images 24

export TSRUN DECODE_LIMIT
out="$dir/cache.txt"
timeout 240 "$PY" "$TS_SRCDIR/perf/cache.py" --data "$dir/set" --pairs 1 --epochs 3,2 \
	--batch 8 --cache 64MiB --noisy 100 --json "$dir/cache.json" > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { fail "cache.py exited $rc"; cat "$out"; }
for want in '^whole set: 24 items in ' 'digests {.nocache.: .[0-9a-f]\{16\}' \
	'^  round 1 dataloader@2 ' '^  round 1 half@3 ' '^  round 1 first-off ' \
	'^  round 1 decode-ref ' '^ 2 epochs:$' '^ 3 epochs:$' \
	'^  3-epoch images/s / DataLoader (>= 10): ' '^  2-epoch images/s / DataLoader: ' \
	'^    its ceiling: E x DataLoader CPU' \
	'^    cached user less decode-ref less a later epoch.s user (the admission' \
	'^  first epoch CPU per image / uncached (two 1-epoch runs): ' \
	'^  round 1 first-touch   sys [0-9.]* s for ' \
	'^  first touch of the whole set.s bytes (first-touch): sys ' \
	'^    break-even (cached CPU below uncached after): ' \
	'^  break-even, epochs: ' '^  first touch of the whole set.s bytes, sys ms/image: '; do
	grep -q "$want" "$out" || fail "no line matching '$want'"
done
"$PY" - "$dir/cache.json" <<'PY' || fail "cache.json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["epochs"] == [2, 3], j["epochs"]
assert len(set(j["digests"].values())) == 1, j["digests"]
r = j["rounds"][0]
for e in ("2", "3"):
    f = r["by_epochs"][e]
    assert f["cache_items"] == 24 and f["cache_later_hit_rate"] > 0.9, f
    assert 0 < f["half_items"] < 24, f
    assert f["cache_bound_vs_dataloader"] > 0 and f["dataloader_cpu_ms"] > 0, f
assert set(r["runs"]) == {"dataloader@2", "nocache@2", "cache@2", "half@2", "dataloader@3",
                          "nocache@3", "cache@3", "half@3", "first", "first-off", "decode-ref",
                          "first-touch"}
# A figure, not checked: on 24 photos (two huge pages) the tick-sampled
# rusage often charges the first touch 0 s.
assert r["first_touch_ms"] >= 0 and r["runs"]["first-touch"]["bytes"] > 0, r
for e in ("2", "3"):
    f = r["by_epochs"][e]
    assert "break_even_epochs" in f and "first_w_sys_less_touch_ms" in f, f
PY

# A count below 2 has no later epoch to serve: a usage error before anything runs.
"$PY" "$TS_SRCDIR/perf/cache.py" --data "$dir/set" --epochs 1,3 > "$dir/b.out" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "every count must be at least 2" "$dir/b.out" ||
	fail "cache.py --epochs 1,3: exit $rc: $(tail -2 "$dir/b.out")"
"$PY" "$TS_SRCDIR/perf/cache.py" --data "$dir/set" --epochs 3,x > "$dir/b.out" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "give epoch counts separated by commas" "$dir/b.out" ||
	fail "cache.py --epochs 3,x: exit $rc: $(tail -2 "$dir/b.out")"
grep -h "^  [23]-epoch images/s" "$out"
finish
