#!/bin/sh
# stat-rate.sh - a consumer's images_per_s in its first half second, against
# a live `tsrun run` (--wait 1: nothing is produced before the trainer comes)
# and a `tsrun consume` trainer started 0.7 s after a rewrite of the status
# file, so that the next rewrite comes in its first half second:
#   - the first status (`tsrun stat --json`) and the first --stats-json
#     object that list the trainer with samples received give it a rate
#     above 0.0 (and no more than those samples over the 0.1 s between
#     two looks of tsrun at the ring), and the run's own images_per_s
#     above 0.0 too;
#   - the fields keep their names and JSON number types.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup stat-rate
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3 to read JSON"

cat >"$T/p.ts" <<EOF
pipeline rate_test =
    synthetic(64, count = 4000, classes = 5)
    | random_resized_crop(32)
    | to(uint8, nhwc)
    | batch(16)
serve rate_test { epochs = 1  ring = 8 batches  threads = 1 }
EOF
S="$T/s.sock"

"$TSRUN" run "$T/p.ts" --socket "$S" --wait 1 --stats-json "$T/stats.json" \
	2>"$T/run.err" &
run=$!; pids="$pids $run"
watchdog 60 "$run"
wait_for 10 test -f "$S.status.json" || { cat "$T/run.err"; fail "no status file"; exit 1; }

# The status file's time: it is rewritten once a second.
stamp() { "$TSRUN" stat --json "$S" 2>/dev/null | sed -n 's/^{"time":\([0-9.]*\),.*/\1/p'; }
rewritten() { now=$(stamp); [ -n "$now" ] && [ "$now" != "$t1" ]; }
t1=$(stamp)
wait_for 5 rewritten || fail "the status file was not rewritten within 5 s"
sleep 0.7

# 4000 samples at 16 a batch, 10 ms a batch: reads for 2.5 s or more.
"$TSRUN" consume "$S" --batch 16 --delay-ms 10 >"$T/c.out" 2>&1 &
c=$!; pids="$pids $c"
kill "$watchdog" 2>/dev/null
watchdog 60 "$run" "$c"

# Every status until the one that lists the trainer with samples received.
n=0
got=""
while [ "$n" -lt 100 ]; do
	"$TSRUN" stat --json "$S" >"$T/st.$n" 2>/dev/null
	if grep -Eq "\"pid\":$c,\"batch\":16,\"position\":[1-9]" "$T/st.$n"; then
		got="$T/st.$n"
		break
	fi
	n=$((n + 1))
	sleep 0.05
done
[ -n "$got" ] || fail "no status listed consumer $c with samples within 5 s"

wait "$c"; rc=$?; [ "$rc" -eq 0 ] || fail "the consumer exited $rc: $(cat "$T/c.out")"
wait "$run"; rc=$?; [ "$rc" -eq 0 ] || fail "tsrun run exited $rc: $(cat "$T/run.err")"
pids=""
kill "$watchdog" 2>/dev/null

# check.py FILE CONSUMER WHAT: the first object in FILE (one a line) that
# lists CONSUMER with samples received.
cat >"$T/check.py" <<'EOF'
import json, sys
path, pid, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for line in open(path):
    o = json.loads(line)
    c = [c for c in o["consumers"] if c["pid"] == pid and c["position"] > 0]
    if c:
        break
else:
    sys.exit(f"{what}: no object lists consumer {pid} with samples")
c = c[0]
for k in ("images_per_s", "time", "samples"):
    assert type(o[k]) in (int, float), (what, k, o[k])
assert type(c["images_per_s"]) in (int, float), (what, c)
assert c["images_per_s"] > 0, f"{what}: consumer at position {c['position']} reads 0.0: {line}"
# its window is one status look (0.1 s) or more: not its samples over
# less than that
assert c["images_per_s"] <= c["position"] / 0.1 + 0.05, (what, c)
assert o["samples"] > 0 and o["images_per_s"] > 0, f"{what}: the run reads 0.0: {line}"
print(f"ok   {what}: at {o['time']:.3f} s, consumer {c['position']} samples, "
      f"{c['images_per_s']} img/s; run {o['samples']} samples, {o['images_per_s']} img/s")
EOF
if [ -n "$got" ]; then
	"$PY" "$T/check.py" "$got" "$c" "tsrun stat --json" || fail "tsrun stat --json right after the consumer came"
fi
"$PY" "$T/check.py" "$T/stats.json" "$c" "--stats-json" || fail "--stats-json right after the consumer came"
finish
