#!/bin/sh
# `tsrun run` stopped by a signal: trainers are told the producer was
# stopped, not that it failed, and tsrun exits 0 after its summary. A
# --start at or past the last epoch is a usage error (2), not a run that
# serves nothing. While it drains (all produced, a trainer still reading)
# `tsrun stat` still answers and a reload is refused at once.
set -eu
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup stop
dir=$T
sock="$dir/s.sock"
ts_fatal=1
ts_log="$dir/run.err"

cat > "$dir/p.ts" <<EOT
pipeline s = synthetic(size = 16, count = 100) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 0 ring = 4 batches }
EOT

st=0
"$TSRUN" run "$dir/p.ts" --epochs 2 --start 2:0 2> "$dir/start.err" || st=$?
[ "$st" -eq 2 ] || fail "--start past --epochs: exit $st, want 2"
grep -q "start epoch 2 is at or past the last epoch" "$dir/start.err" || fail "no reason: $(cat "$dir/start.err")"

"$TSRUN" run "$dir/p.ts" -q 2> "$dir/run.err" &
run_pid=$!
pids="$pids $run_pid"
i=0; while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$sock" ] || fail "socket never appeared"
"$TSRUN" consume "$sock" --delay-ms 5 > "$dir/consume.out" 2>&1 &
cons_pid=$!
pids="$pids $cons_pid"
sleep 1
kill -INT "$run_pid"
st=0
wait "$cons_pid" || st=$?
[ "$st" -ne 0 ] || fail "the trainer did not learn the stream stopped early"
grep -q "the producer was stopped (a signal) before the end of the stream" "$dir/consume.out" ||
	fail "trainer's message: $(head -1 "$dir/consume.out")"
st=0
wait "$run_pid" || st=$?
[ "$st" -eq 0 ] || fail "tsrun run exited $st after SIGINT"
# Draining: the last sample is produced, a slow trainer still reads. The
# status file stays fresh for `tsrun stat`, and a reload is refused at once.
cat > "$dir/one.ts" <<EOT
pipeline s = synthetic(size = 16, count = 40) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 1 ring = 4 batches }
EOT
cat > "$dir/two.ts" <<EOT
pipeline s = synthetic(size = 16, count = 50) | to(float32, nchw) | batch(10)
EOT
"$TSRUN" run "$dir/one.ts" -q 2> "$dir/run2.err" &
run_pid=$!
pids="$pids $run_pid"
i=0; while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
"$TSRUN" consume "$sock" --delay-ms 1500 > "$dir/consume2.out" 2>&1 &
cons_pid=$!
pids="$pids $cons_pid"
i=0; while ! grep -q '"state":"done"' "$sock.status.json" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
grep -q '"state":"done"' "$sock.status.json" || fail "the stream never reached done"
sleep 5.5  # past stat's 5 s staleness: the file must still be rewritten
"$TSRUN" stat "$sock" > "$dir/stat.out" 2>&1 || fail "stat while draining: $(cat "$dir/stat.out")"
grep -q "epoch 1/1, index 40/40" "$dir/stat.out" || fail "stat position while draining: $(cat "$dir/stat.out")"
st=0
timeout 10 "$TSRUN" reload "$sock" "$dir/two.ts" 2> "$dir/reload.err" || st=$?
[ "$st" -eq 1 ] || fail "reload while draining: exit $st, $(cat "$dir/reload.err")"
grep -q "rejected: the stream has ended" "$dir/reload.err" || fail "reload while draining: $(cat "$dir/reload.err")"
wait "$cons_pid" || fail "the slow trainer failed: $(cat "$dir/consume2.out")"
grep -q "^images: 40$" "$dir/consume2.out" || fail "the slow trainer: $(grep images: "$dir/consume2.out")"
wait "$run_pid" || fail "tsrun run (draining) failed"

# A trainer that joins mid-stream skips to its next batch boundary: the
# summary counts what it read (its own "images:"), not what it skipped.
cat > "$dir/late.ts" <<EOT
pipeline s = synthetic(size = 16, count = 100) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 3 ring = 4 batches }
EOT
"$TSRUN" run "$dir/late.ts" 2> "$dir/run3.err" &
run_pid=$!
pids="$pids $run_pid"
i=0; while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
"$TSRUN" consume "$sock" --batch 10 --delay-ms 40 > "$dir/first.out" 2>&1 &
first=$!
pids="$pids $first"
sleep 0.5
"$TSRUN" consume "$sock" --batch 7 > "$dir/late.out" 2>&1 &
late=$!
pids="$pids $late"
wait "$first" || fail "first trainer: $(cat "$dir/first.out")"
wait "$late" || fail "late trainer: $(cat "$dir/late.out")"
wait "$run_pid" || fail "tsrun run (late joiner) failed"
got=$(sed -n 's/^images: //p' "$dir/late.out")
# it joined late (its first epoch is not 0) and still got its 3 epochs
# (epochs count per trainer, tensorsocket(7))
[ "$got" = 300 ] && grep -q "^first: seq [0-9]* epoch [1-9]" "$dir/late.out" ||
	fail "the late trainer did not join late, or not for 3 epochs: $(cat "$dir/late.out")"
grep -q "^tsrun: summary: consumer $late (batch 7): $got images" "$dir/run3.err" ||
	fail "summary for the late trainer, which read $got: $(grep "consumer $late" "$dir/run3.err")"
grep -q "^tsrun: summary: consumer $first (batch 10): 300 images" "$dir/run3.err" ||
	fail "summary for the first trainer: $(grep "consumer $first" "$dir/run3.err")"

echo "run-stop: --start past the end refused (2); SIGINT: trainer told 'stopped', tsrun exit 0; draining: stat fresh, reload refused; a late joiner's summary counts what it read"
