#!/bin/sh
# tsrun-trainers.sh - several C trainers (gpu-trainer, through
# libtsclient) on one `tsrun run` device ring at once, every sample checked
# against the CPU reference; then the producer's end while trainers still
# hold the ring: (1) at the end of the stream, trainers keep their mapping
# for a while and tsrun must wait for them (not free the ring under them,
# not hang past its bound); (2) on SIGTERM mid-stream, the same.
# Exit 77 without a GPU.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup trainers
tmp=$T
trainer=${GPU_TRAINER:-./gpu-trainer}
[ -x "$trainer" ] || skip "no $trainer (a build without CUDA)"
"$trainer" --probe || skip "$trainer --probe: no usable GPU"
# the first failure ends the test, after tsrun run's stderr and the
# trainers' output
ts_fatal=1
ts_log="$tmp/*.err $tmp/t*.out"   # globbed when a failure prints them
pid=
ts_cleanup_trainers() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	ts_cleanup
}
trap ts_cleanup_trainers EXIT
now() { date +%s.%N; }

pipeline() { # EPOCHS
	cat >"$tmp/p.ts" <<EOT
pipeline train =
    synthetic(32, count = 480, classes = 10)
    | flip(p = 0.5)
    | to(uint8, nhwc)
    | device(cuda, dtype = float32, mean = [0.5, 0.5, 0.5], std = [0.25, 0.25, 0.25])
    | batch(16)
serve train {
    socket = "$tmp/s.sock"
    epochs = $1
}
EOT
}

start_tsrun() { # WAIT
	rm -f "$tmp/s.sock"
	# no timeout(1) in between: the SIGTERM below must reach tsrun itself
	# (the step's own time limit and the EXIT trap bound a hang)
	"$TSRUN" run "$tmp/p.ts" --wait "$1" >"$tmp/run.out" 2>"$tmp/run.err" &
	pid=$!
	i=0
	while [ ! -S "$tmp/s.sock" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	[ -S "$tmp/s.sock" ] || fail "no socket"
}

# 1. four trainers at once, each the whole stream, all identical
n=4
pipeline 2
start_tsrun $n
tp=
for i in $(seq 1 $n); do
	"$trainer" "$tmp/s.sock" 0 0.5 0.25 0 960 >"$tmp/t$i.out" 2>&1 &
	tp="$tp $!"
done
ok=0
for t in $tp; do wait "$t"; done
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] || fail "tsrun run exited $rc"
grep -q 'finishing on GPU' "$tmp/run.err" || fail "tsrun did not serve a device ring"
for i in $(seq 1 $n); do
	grep -q 'trainer [0-9]*: 960 samples identical, zero-copy 1' "$tmp/t$i.out" && ok=$((ok + 1))
done
[ $ok -eq $n ] || fail "$ok of $n trainers read every sample identical and zero-copy"
echo "$n trainers: 960 samples each, identical, zero-copy"

# 2. the end of the stream while two trainers hold the ring for 2 s
pipeline 1
start_tsrun 2
tp=
for i in 1 2; do
	"$trainer" "$tmp/s.sock" 0 0.5 0.25 2000 480 >"$tmp/t$i.out" 2>&1 &
	tp="$tp $!"
done
for t in $tp; do wait "$t"; done
wait "$pid"
rc=$?
end=$(now)
pid=
[ $rc -eq 0 ] || fail "tsrun run exited $rc with trainers holding the ring"
for i in 1 2; do
	grep -q '480 samples identical' "$tmp/t$i.out" || fail "trainer $i"
	closed=$(sed -n 's/.*closed at //p' "$tmp/t$i.out")
	# tsrun exits only after the trainers closed the ring
	awk -v c="$closed" -v e="$end" 'BEGIN { exit !(e >= c) }' ||
		fail "tsrun exited at $end, before trainer $i closed the ring at $closed"
done
echo "end of stream: tsrun waited for the trainers holding the ring"

# 3. SIGTERM mid-stream while two trainers hold the ring for 1 s
pipeline 0
start_tsrun 2
tp=
for i in 1 2; do
	"$trainer" "$tmp/s.sock" 0 0.5 0.25 1000 >"$tmp/t$i.out" 2>&1 &
	tp="$tp $!"
done
sleep 2
kill -TERM "$pid"
t_kill=$(now)
for t in $tp; do wait "$t"; done
wait "$pid"
rc=$?
end=$(now)
pid=
[ $rc -eq 0 ] || fail "tsrun run exited $rc after SIGTERM"
for i in 1 2; do
	grep -q 'samples identical' "$tmp/t$i.out" || fail "trainer $i after SIGTERM"
	closed=$(sed -n 's/.*closed at //p' "$tmp/t$i.out")
	awk -v c="$closed" -v e="$end" 'BEGIN { exit !(e >= c) }' ||
		fail "tsrun exited at $end, before trainer $i closed the ring at $closed"
done
awk -v k="$t_kill" -v e="$end" 'BEGIN { exit !(e - k < 12) }' || fail "tsrun took over 12 s after SIGTERM"
echo "SIGTERM: tsrun waited for the trainers holding the ring"
finish
