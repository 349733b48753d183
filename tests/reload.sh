#!/bin/sh
# Hot reload: `tsrun reload SOCKET FILE` and SIGHUP. An invalid pipeline is
# rejected with its diagnostics while the running one carries on; one whose
# sample shape differs, or whose source does not open, is refused with the
# reason (`tsrun reload` waits for tsrun's answer); a valid one takes over
# at the next epoch boundary, a second valid one before then replaces it,
# and the trainer sees every sample of every epoch, no torn batch.
set -eu
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup reload
dir=$T
sock="$dir/s.sock"
ts_fatal=1
ts_log="$dir/run.err"

cat > "$dir/a.ts" <<EOT
pipeline s = synthetic(size = 16, count = 100) | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 10 ring = 4 batches }
EOT
sed 's/\[0.5, 0.5, 0.5\], \[0.5/[0.4, 0.4, 0.4], [0.3/' "$dir/a.ts" > "$dir/b.ts"
sed 's/size = 16/size = 8/' "$dir/a.ts" > "$dir/shape.ts"
sed 's/\[0.5, 0.5, 0.5\], \[0.5/[0.2, 0.2, 0.2], [0.3/' "$dir/a.ts" > "$dir/c.ts"
cat > "$dir/missing.ts" <<EOT
pipeline s = folder("$dir/no-such-folder") | decode(rgb) | resize(16, 16) | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 10 ring = 4 batches }
EOT
printf 'pipeline s = synthetic(size = 16) | flipp\n' > "$dir/bad.ts"

"$TSRUN" run "$dir/a.ts" 2> "$dir/run.err" &
pids="$pids $!"
run_pid=$!
i=0; while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$sock" ] || fail "socket never appeared"
"$TSRUN" consume "$sock" --batch 10 --delay-ms 30 > "$dir/consume.out" &
pids="$pids $!"
cons_pid=$!
i=0; while [ ! -f "$sock.status.json" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5

# An invalid pipeline: rejected locally with its diagnostics, exit 1.
if "$TSRUN" reload "$sock" "$dir/bad.ts" 2> "$dir/bad.err"; then fail "invalid reload accepted"; fi
grep -q "unknown operator 'flipp'" "$dir/bad.err" || fail "no diagnostic for the invalid pipeline"
# Requests written by hand, as any program of this user could: one naming
# a FIFO (opened without blocking, refused as no regular file), one a file
# over the 4 MiB a reload takes (tsrun checks it on its main thread), and
# one that is no request at all: each refused in the log and answered,
# while the stream goes on.
mkfifo "$dir/fifo.ts"
head -c 5000000 /dev/zero | tr '\0' '#' > "$dir/big.ts"
sleep 30 & a1=$!
sleep 30 & a2=$!
sleep 30 & a3=$!
pids="$pids $a1 $a2 $a3"
printf '%s\n' "$dir/fifo.ts" > "$sock.reload.$a1.req"
printf '%s\n' "$dir/big.ts" > "$sock.reload.$a2.req"
printf 'relative.ts\n\000/etc/passwd\n' > "$sock.reload.$a3.req"
kill -HUP "$run_pid"
wait_for 10 grep -q "not a reload request" "$dir/run.err" || fail "a garbage request was not refused"
wait_for 10 grep -q "big.ts rejected: .*at most 4 MiB" "$dir/run.err" || fail "a 5 MB reload was not refused: $(grep reload "$dir/run.err")"
grep -q "fifo.ts rejected: .*at most 4 MiB" "$dir/run.err" || fail "a FIFO reload was not refused: $(grep reload "$dir/run.err")"
grep -q "fifo.ts: not a regular file" "$dir/run.err" || fail "the FIFO is not named as such: $(grep fifo "$dir/run.err")"
grep -q "^rejected: " "$sock.reload.$a1" || fail "the FIFO's asker got no answer"
[ ! -e "$sock.reload.$a3.req" ] || fail "the garbage request was left behind"
kill -0 "$run_pid" || fail "tsrun ended after the bad requests"

# Another sample shape: refused by the running tsrun, which answers with
# the reason: exit 1.
if "$TSRUN" reload "$sock" "$dir/shape.ts" > /dev/null 2> "$dir/shape.err"; then
	fail "shape change accepted"
fi
grep -q "rejected: its samples are 3x8x8" "$dir/shape.err" || fail "no reason for the shape: $(cat "$dir/shape.err")"
grep -q "rejected: its samples are 3x8x8" "$dir/run.err" || fail "shape change not logged"
# A source that does not open: refused now, not at the epoch boundary
# (where it would end the stream for every trainer).
if "$TSRUN" reload "$sock" "$dir/missing.ts" > /dev/null 2> "$dir/missing.err"; then
	fail "reload of a missing folder accepted"
fi
grep -q "rejected: .*$dir/no-such-folder" "$dir/missing.err" || fail "no reason for the missing folder: $(cat "$dir/missing.err")"
# A valid one: accepted (exit 0, with the epoch); a second before the
# boundary replaces it.
"$TSRUN" reload "$sock" "$dir/b.ts" > "$dir/b.out" || fail "valid reload failed"
grep -q "accepted by tsrun .*takes over at epoch" "$dir/b.out" || fail "no acceptance: $(cat "$dir/b.out")"
"$TSRUN" reload "$sock" "$dir/c.ts" > /dev/null || fail "second valid reload failed"
sleep 0.5
grep -q "b.ts accepted: takes over at epoch [0-9]* (counted from 0)" "$dir/run.err" || fail "valid reload not taken"
grep -q "c.ts replaces $dir/b.ts\|c.ts accepted: takes over at epoch" "$dir/run.err" || fail "second reload not taken"
grep -q "c.ts took over" "$dir/run.err" || fail "no log line when c.ts took over"
# Two reloads at the same time: each gets its own answer (both valid:
# both accepted, the later replacing the earlier).
"$TSRUN" reload "$sock" "$dir/b.ts" > "$dir/r1.out" 2>&1 &
r1=$!
"$TSRUN" reload "$sock" "$dir/c.ts" > "$dir/r2.out" 2>&1 &
r2=$!
wait "$r1" || fail "concurrent reload 1: $(cat "$dir/r1.out")"
wait "$r2" || fail "concurrent reload 2: $(cat "$dir/r2.out")"
grep -q "accepted by tsrun" "$dir/r1.out" && grep -q "accepted by tsrun" "$dir/r2.out" ||
	fail "concurrent reloads not both answered: $(cat "$dir/r1.out" "$dir/r2.out")"
sleep 0.5
# SIGHUP alone reloads the running file.
kill -HUP "$run_pid"
sleep 0.5
grep -q "reload: checking $dir/c.ts" "$dir/run.err" || fail "SIGHUP did not recheck the current file"

# A status file that names a live process which is not tsrun (a stale
# file, its pid reused): refused, and that process is not signalled.
sleep 30 &
other=$!
pids="$pids $other"
printf '{"pid":%d,"consumers":[]}\n' "$other" > "$dir/fake.sock.status.json"
if "$TSRUN" reload "$dir/fake.sock" "$dir/b.ts" 2> "$dir/fake.err"; then fail "reload to a non-tsrun accepted"; fi
grep -q "which is not a tsrun" "$dir/fake.err" || fail "stale status file: $(cat "$dir/fake.err")"
kill -0 "$other" || fail "reload signalled a process that is not tsrun"

wait "$cons_pid" || fail "consumer failed"
wait "$run_pid" || fail "tsrun run failed"
grep -q "^images: 1000$" "$dir/consume.out" || fail "consumer did not get all 10 epochs: $(grep images: "$dir/consume.out")"
grep -q "^batches: 100$" "$dir/consume.out" || fail "a batch was torn or lost: $(grep batches: "$dir/consume.out")"
echo "reload: invalid rejected, shape change and missing source refused with exit 1, valid accepted and replaced by a second; 1000 samples in 100 whole batches"
