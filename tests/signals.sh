#!/bin/sh
# SIGINT and SIGTERM end `tsrun run` and `tsrun bench` within a second in
# every state: starting, waiting for trainers, serving trainers, with a
# trainer stopped (SIGSTOP, stall_timeout = 0: the producer waits on it),
# waiting on a slow trainer, and in the middle of decoding a 32-megapixel
# JPEG (about a second of one worker's time). tsrun run exits 0, removes
# its socket, and its trainers hear that the producer was stopped.
set -eu
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup signals
dir=$T
sock="$dir/s.sock"
PY=/usr/bin/python3
BOUND=1.0

now() { date +%s.%N; }

# stop_within SIG PID WHAT [STATUS]: send SIG, the process must be gone
# within BOUND seconds (and exit STATUS when given).
stop_within() {
	sig=$1 pid=$2 what=$3 want=${4:-}
	t0=$(now)
	kill -"$sig" "$pid"
	st=0
	# A watchdog in case it does not end at all.
	watchdog 20 "$pid"
	wait "$pid" || st=$?
	t=$(echo "$(now) - $t0" | bc)
	kill "$watchdog" 2>/dev/null || :
	watchdog=""
	if [ "$(echo "$t < $BOUND" | bc)" -ne 1 ]; then
		fail "$what: SIG$sig took $t s to end it (bound $BOUND s)"
	elif [ -n "$want" ] && [ "$st" -ne "$want" ]; then
		fail "$what: SIG$sig: exit $st, want $want"
	else
		pass "$what: SIG$sig ended it in $t s (exit $st)"
	fi
}

# A 8192x4096 noise JPEG, decoded whole (flip before the resize): about a
# second per decode.
mkdir -p "$dir/huge/a"
if [ -x "$PY" ] && "$PY" -c "import numpy, PIL" 2>/dev/null; then
	"$PY" - "$dir/huge/a/huge.jpg" <<'EOT'
import sys
import numpy as np
from PIL import Image
a = np.random.default_rng(1).integers(0, 256, (4096, 8192, 3), dtype=np.uint8)
Image.fromarray(a).save(sys.argv[1], quality=95)
EOT
	have_huge=1
else
	have_huge=0
	echo "skipped the large decode: /usr/bin/python3 with numpy and PIL is not installed"
fi

cat > "$dir/syn.ts" <<EOT
pipeline s = synthetic(size = 32, count = 2000) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 0 ring = 4 batches stall_timeout = 0 }
EOT
cat > "$dir/huge.ts" <<EOT
pipeline h = folder("$dir/huge", ext = [".jpg"]) | decode(rgb) | flip(horizontal, p = 1.0)
    | resize([64, 64]) | to(uint8, nhwc) | batch(1)
serve h { socket = "$sock" epochs = 0 ring = 2 batches threads = 1 }
EOT

start_run() {  # start_run FILE ARGS...: $run_pid; waits for the socket
	f=$1; shift
	rm -f "$sock"
	"$TSRUN" run "$f" -q "$@" 2> "$dir/run.err" &
	run_pid=$!
	pids="$pids $run_pid"
	wait_for 20 test -S "$sock" || fail "socket never appeared: $(cat "$dir/run.err")"
}

consumer() {  # consumer OUT ARGS...: $cons_pid
	out=$1; shift
	"$TSRUN" consume "$sock" "$@" > "$out" 2>&1 &
	cons_pid=$!
	pids="$pids $cons_pid"
}

socket_gone() {
	[ ! -e "$sock" ] || fail "$1: the socket is still there"
}

for sig in INT TERM; do
	# Starting: the signal comes while tsrun starts up.
	rm -f "$sock"
	"$TSRUN" run "$dir/syn.ts" -q 2> "$dir/run.err" &
	run_pid=$!
	pids="$pids $run_pid"
	sleep 0.05
	t0=$(now)
	kill -"$sig" "$run_pid"
	st=0
	wait "$run_pid" || st=$?
	t=$(echo "$(now) - $t0" | bc)
	[ "$(echo "$t < $BOUND" | bc)" -eq 1 ] || fail "run, starting: SIG$sig took $t s"
	pass "run, starting: SIG$sig ended it in $t s (exit $st)"
	socket_gone "run, starting"

	# Waiting for its trainers (--wait 2, none comes).
	start_run "$dir/syn.ts" --wait 2
	sleep 0.3
	stop_within "$sig" "$run_pid" "run, waiting for trainers" 0
	socket_gone "run, waiting for trainers"

	# Serving two trainers.
	start_run "$dir/syn.ts"
	consumer "$dir/c1.out"; c1=$cons_pid
	consumer "$dir/c2.out" --delay-ms 2; c2=$cons_pid
	sleep 1
	stop_within "$sig" "$run_pid" "run, serving two trainers" 0
	for c in $c1 $c2; do
		st=0
		wait "$c" || st=$?
		[ "$st" -ne 0 ] || fail "a trainer did not learn the stream stopped"
	done
	grep -q "the producer was stopped (a signal) before the end of the stream" "$dir/c1.out" ||
		fail "trainer's message: $(cat "$dir/c1.out")"
	socket_gone "run, serving"

	# A trainer stopped: the producer waits on it (stall_timeout = 0).
	start_run "$dir/syn.ts"
	consumer "$dir/c3.out"; c3=$cons_pid
	consumer "$dir/c4.out"; c4=$cons_pid
	sleep 0.5
	kill -STOP "$c3"
	sleep 1
	stop_within "$sig" "$run_pid" "run, a trainer stopped (SIGSTOP)" 0
	kill -CONT "$c3"
	wait "$c3" 2>/dev/null || :
	wait "$c4" 2>/dev/null || :
	socket_gone "run, a trainer stopped"

	# Waiting on a slow trainer (3 s per batch).
	start_run "$dir/syn.ts"
	consumer "$dir/c5.out" --delay-ms 3000; c5=$cons_pid
	sleep 1
	stop_within "$sig" "$run_pid" "run, waiting on a slow trainer" 0
	wait "$c5" 2>/dev/null || :
	socket_gone "run, a slow trainer"

	if [ "$have_huge" -eq 1 ]; then
		# In the middle of a 32-megapixel decode (a trainer asks).
		start_run "$dir/huge.ts"
		consumer "$dir/c6.out"; c6=$cons_pid
		sleep 1.5
		stop_within "$sig" "$run_pid" "run, decoding a 8192x4096 JPEG" 0
		wait "$c6" 2>/dev/null || :
		grep -q "the producer was stopped (a signal) before the end of the stream" "$dir/c6.out" ||
			fail "run, a large decode: the trainer's message: $(cat "$dir/c6.out")"
		socket_gone "run, a large decode"

		# bench, in the middle of the same decode.
		"$TSRUN" bench "$dir/huge.ts" --epochs 100 > "$dir/bench.out" 2>&1 &
		b=$!
		pids="$pids $b"
		sleep 1.5
		stop_within "$sig" "$b" "bench, decoding a 8192x4096 JPEG"
	fi

	# bench, starting and running.
	"$TSRUN" bench "$dir/syn.ts" --epochs 1000 > "$dir/bench.out" 2>&1 &
	b=$!
	pids="$pids $b"
	sleep 0.05
	stop_within "$sig" "$b" "bench, starting"
	"$TSRUN" bench "$dir/syn.ts" --epochs 1000 > "$dir/bench.out" 2>&1 &
	b=$!
	pids="$pids $b"
	sleep 1
	if [ "$sig" = INT ]; then want=130; else want=143; fi
	stop_within "$sig" "$b" "bench, running" "$want"
	grep -q "^tsrun bench: .*: stopped after [0-9]* batches" "$dir/bench.out" ||
		fail "bench, running: no stop line: $(cat "$dir/bench.out")"
	grep -q "^images: [1-9]" "$dir/bench.out" || fail "bench, running: no figures: $(cat "$dir/bench.out")"
done

finish
