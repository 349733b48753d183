#!/bin/sh
# status.sh - what `tsrun run` shows while it serves, against a live run
# with two `tsrun consume` trainers (one slowed with --delay-ms):
#   - --stats-json FILE: one JSON object a second, every field, counts
#     that add up (samples = epochs x epoch_size = each trainer's images);
#   - `tsrun stat SOCKET` and `--json`: both consumers, pid and batch size;
#   - the summary at exit: one line per consumer, with its images;
#   - `tsrun stat` errors: no such socket, a killed run's stale files,
#     a truncated or garbage status file.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup status
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3 to read JSON"

EPOCHS=3
COUNT=200
cat >"$T/p.ts" <<EOF
pipeline stat_test =
    synthetic(64, count = $COUNT, classes = 5)
    | random_resized_crop(32)
    | to(uint8, nhwc)
    | batch(16)
serve stat_test { epochs = $EPOCHS  ring = 8 batches  threads = 1 }
EOF
S="$T/s.sock"

# --- a live run, two trainers -------------------------------------------
# No `timeout` in front: $! must be tsrun's own pid. A watchdog bounds them.
"$TSRUN" run "$T/p.ts" --socket "$S" --wait 2 --stats-json "$T/stats.json" \
	2>"$T/run.err" &
run=$!; pids="$pids $run"
wait_for 10 test -S "$S" || { cat "$T/run.err"; fail "no socket $S"; exit 1; }
"$TSRUN" consume "$S" --batch 16 >"$T/fast.out" 2>&1 &
fast=$!; pids="$pids $fast"
"$TSRUN" consume "$S" --batch 8 --delay-ms 25 >"$T/slow.out" 2>&1 &
slow=$!; pids="$pids $slow"
watchdog 40 "$run" "$fast" "$slow"

two_consumers() {
	[ -f "$S.status.json" ] &&
	grep -q "\"pid\":$fast," "$S.status.json" && grep -q "\"pid\":$slow," "$S.status.json"
}
wait_for 10 two_consumers || fail "status file never listed both consumers"

"$TSRUN" stat "$S" >"$T/stat.txt" 2>"$T/stat.err"; rc=$?
[ "$rc" -eq 0 ] || fail "tsrun stat exited $rc: $(cat "$T/stat.err")"
"$TSRUN" stat --json "$S" >"$T/stat.json" 2>"$T/stat.err"; rc=$?
[ "$rc" -eq 0 ] || fail "tsrun stat --json exited $rc: $(cat "$T/stat.err")"
grep -q "^pipeline: *stat_test (" "$T/stat.txt" || fail "stat: no pipeline line"
# stat counts epochs from 0, as the status file does (the same snapshot:
# taken again when the file was rewritten between the two reads)
for try in 1 2 3; do
	e_txt=$(sed -n 's/^position:  epoch \([0-9]*\).*/\1/p' "$T/stat.txt")
	e_json=$(sed -n 's/.*"epoch":\([0-9]*\),.*/\1/p' "$T/stat.json")
	[ -n "$e_txt" ] && [ "$e_txt" = "$e_json" ] && break
	"$TSRUN" stat "$S" >"$T/stat.txt" 2>/dev/null
	"$TSRUN" stat --json "$S" >"$T/stat.json" 2>/dev/null
done
[ -n "$e_txt" ] && [ "$e_txt" = "$e_json" ] ||
	fail "stat's epoch '$e_txt' is not the status file's '$e_json' (both count from 0)"
grep -q "^consumers: 2$" "$T/stat.txt" || fail "stat: not 2 consumers"
# each consumer row: pid, batch size, position, lag, rate
grep -Eq "^ +$fast +16 +[0-9]+ +[0-9]+ +[0-9.]+" "$T/stat.txt" || fail "stat: no row for fast consumer $fast (batch 16)"
grep -Eq "^ +$slow +8 +[0-9]+ +[0-9]+ +[0-9.]+" "$T/stat.txt" || fail "stat: no row for slow consumer $slow (batch 8)"
"$PY" - "$T/stat.json" "$run" "$fast" "$slow" <<'EOF' || fail "stat --json content"
import json, sys
path, run, fast, slow = sys.argv[1], *map(int, sys.argv[2:])
text = open(path).read()
assert text.count("\n") == 1, "one object, one line"
o = json.loads(text)
assert o["pid"] == run, o["pid"]
assert o["pipeline"] == "stat_test"
got = {c["pid"]: c["batch"] for c in o["consumers"]}
assert got == {fast: 16, slow: 8}, got
EOF

wait "$fast"; rc=$?; [ "$rc" -eq 0 ] || fail "fast consumer exited $rc: $(cat "$T/fast.out")"
wait "$slow"; rc=$?; [ "$rc" -eq 0 ] || fail "slow consumer exited $rc: $(cat "$T/slow.out")"
wait "$run"; rc=$?; [ "$rc" -eq 0 ] || fail "tsrun run exited $rc: $(cat "$T/run.err")"
pids=""
kill "$watchdog" 2>/dev/null
[ ! -e "$S" ] || fail "socket left behind after the run"
[ ! -e "$S.status.json" ] || fail "status file left behind after the run"

total=$((EPOCHS * COUNT))
for who in fast slow; do
	n=$(sed -n 's/^images: //p' "$T/$who.out")
	[ "$n" = "$total" ] || fail "$who consumer got '$n' images, want $total"
done

# The stats stream: every field, once a second, counts that add up.
"$PY" - "$T/stats.json" "$run" "$fast" "$slow" "$EPOCHS" "$COUNT" <<'EOF' || fail "--stats-json content"
import json, sys
path, run, fast, slow, epochs, count = sys.argv[1], *map(int, sys.argv[2:])
lines = open(path).read().splitlines()
assert len(lines) >= 2, f"{len(lines)} objects"
objs = [json.loads(l) for l in lines]
fields = ("time pipeline file socket pid state epoch epochs index epoch_size samples "
          "images_per_s ring_fill capacity skipped threads batch holding_back consumers").split()
seen = set()
prev = None
for o in objs:
    missing = [f for f in fields if f not in o]
    assert not missing, f"missing {missing}"
    assert o["pid"] == run and o["pipeline"] == "stat_test"
    assert o["epochs"] == epochs and o["epoch_size"] == count and o["batch"] == 16
    assert o["threads"] == 1 and o["skipped"] == 0
    assert 0 <= o["ring_fill"] <= o["capacity"], (o["ring_fill"], o["capacity"])
    assert o["samples"] <= epochs * count, o
    # the position is the samples produced
    assert o["epoch"] * count + o["index"] == o["samples"] or o["state"] == "done", o
    assert o["holding_back"] is None or o["holding_back"] in (fast, slow)
    for c in o["consumers"]:
        assert c["pid"] in (fast, slow), c
        assert c["batch"] == (16 if c["pid"] == fast else 8), c
        assert c["position"] <= o["samples"], (c, o["samples"])
        assert c["lag"] == o["samples"] - c["position"], (c, o["samples"])
        seen.add(c["pid"])
    if prev:
        assert o["samples"] >= prev["samples"], (prev, o)
        # (at the end of the stream two objects may share a millisecond)
        assert o["time"] >= prev["time"], (prev, o)
        # at most once a second, except the object at the end of the stream
        if prev["state"] == "running" and o["state"] == "running":
            assert o["time"] - prev["time"] >= 0.9, (prev["time"], o["time"])
    prev = o
assert seen == {fast, slow}, seen
last = objs[-1]
assert last["state"] == "done", last["state"]
assert last["samples"] == epochs * count, last["samples"]
EOF

# The summary: one line per consumer, batch size and images.
grep -q "^tsrun: summary: $total images served" "$T/run.err" || fail "summary: no total line of $total images"
for pair in "$fast 16" "$slow 8"; do
	set -- $pair
	line=$(grep "^tsrun: summary: consumer $1 (batch $2): " "$T/run.err")
	[ -n "$line" ] || { fail "summary: no line for consumer $1 (batch $2)"; continue; }
	n=$(echo "$line" | sed 's/.*: \([0-9]*\) images.*/\1/')
	# A consumer that leaves keeps its final release (the ring's departed
	# list), so the counts add up exactly.
	[ "$n" -eq "$total" ] || fail "summary: consumer $1 has $n images, want $total"
done
# The last status line shows the last epoch whole, not the next one's 0 %.
last=$(grep "epoch [0-9]*/[0-9]* \[" "$T/run.err" | tail -1)
case "$last" in
*"[####################] 100%"*) ;;
*) fail "last status line: $last" ;;
esac
# Epochs counted from 0, as loader.epoch, --start and the status file do:
# the last line is N/N (all N done).
n_ep=$(echo "$last" | sed -n 's/.*epoch [0-9]*\/\([0-9]*\) \[.*/\1/p')
case "$last" in
*"epoch $n_ep/$n_ep ["*) ;;
*) fail "last status line is not epoch N/N: $last" ;;
esac

# --- tsrun stat errors ----------------------------------------------------
"$TSRUN" stat "$T/nothing.sock" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "stat on a missing socket exited $rc, want 2"
grep -q "no such socket: $T/nothing.sock" "$T/err" || fail "stat missing socket message: $(cat "$T/err")"
"$TSRUN" stat >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "stat without SOCKET exited $rc, want 2"
"$TSRUN" stat "$T/p.ts" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "is not a socket" "$T/err" || fail "stat on a plain file: rc $rc, $(cat "$T/err")"

# A killed run leaves its socket and status file: stat says nobody serves.
S2="$T/k.sock"
"$TSRUN" run "$T/p.ts" --socket "$S2" --epochs 0 --quiet 2>"$T/run2.err" &
run2=$!; pids="$pids $run2"
wait_for 10 test -f "$S2.status.json" || fail "no status file for $S2"
"$TSRUN" stat "$S2" >"$T/stat2.txt" 2>&1 || fail "stat on a run with no consumers: $(cat "$T/stat2.txt")"
grep -q "^consumers: 0$" "$T/stat2.txt" || fail "stat with no consumers: $(cat "$T/stat2.txt")"
cp "$S2.status.json" "$T/good.json"
kill -KILL "$run2"; wait "$run2" 2>/dev/null; pids=""
"$TSRUN" stat "$S2" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 1 ] || fail "stat on a killed run exited $rc, want 1"
grep -q "no tsrun serving $S2: stale status file .* names pid $run2, which is gone" "$T/err" ||
	fail "stat on a killed run: $(cat "$T/err")"

# Truncated and garbage status files (the pid would be alive: ours).
sed "s/\"pid\":$run2,/\"pid\":$$,/" "$T/good.json" >"$T/live.json"
cp "$T/live.json" "$S2.status.json"
"$TSRUN" stat "$S2" >/dev/null 2>"$T/err" || fail "stat on a good file of a live pid: $(cat "$T/err")"
size=$(wc -c <"$T/live.json")
for cut in 1 10 60 $((size / 2)) $((size - 3)); do
	head -c "$cut" "$T/live.json" >"$S2.status.json"
	"$TSRUN" stat "$S2" >/dev/null 2>"$T/err"; rc=$?
	[ "$rc" -eq 1 ] && grep -q "is not a tsrun status file" "$T/err" ||
		fail "truncated to $cut bytes: rc $rc, $(cat "$T/err")"
done
for junk in '' '{}' '[1,2]' '{"pid":' '{"pid":"x","consumers":[]}' \
	'{"pid":1,"consumers":[{"pid":2,"batch":[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]}]}' \
	'{"pid":1e999,"consumers":[]}' '{"pid":1,"consumers":[]} trailing'; do
	printf '%s' "$junk" >"$S2.status.json"
	"$TSRUN" stat "$S2" >/dev/null 2>"$T/err"; rc=$?
	[ "$rc" -eq 1 ] && grep -q "is not a tsrun status file" "$T/err" ||
		fail "garbage '$junk': rc $rc, $(cat "$T/err")"
done
head -c 4096 /dev/urandom >"$S2.status.json"
"$TSRUN" stat "$S2" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "random bytes: rc $rc"
# Fresh content, old mtime, live pid: stale.
cp "$T/live.json" "$S2.status.json"
touch -d '1 minute ago' "$S2.status.json"
"$TSRUN" stat "$S2" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "stale status file" "$T/err" || fail "old status file: rc $rc, $(cat "$T/err")"
rm -f "$S2.status.json"
"$TSRUN" stat "$S2" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "no tsrun serving $S2: no status file" "$T/err" ||
	fail "socket without status file: rc $rc, $(cat "$T/err")"

finish
