#!/bin/sh
# A stalled trainer cannot hold the others forever (serve setting
# stall_timeout): a C and a Python trainer stopped with SIGSTOP while
# another reads are detached after the timeout, the other goes on, the
# producer logs it, and the stopped one gets the error naming the setting
# when continued; with stall_timeout = 0 the others wait; a trainer alone
# is never detached. Half-open connections (3 bytes of a hello) from one
# process or from many never lock a new trainer out; consumers = N
# refuses trainer N + 1; misused settings are check errors at the column.
set -eu
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup stall
dir=$T
sock="$dir/s.sock"
PY=/usr/bin/python3
export TSRUN_LIBTSCLIENT="${TS_LIBTSCLIENT:-}" TSRUN_LIBTSRUN="${TS_LIBTSRUN:-}"

pipeline() {  # pipeline FILE SETTINGS...
	f=$1; shift
	cat > "$f" <<EOT
pipeline s = synthetic(size = 16, count = 1000) | to(float32, nchw) | batch(10)
serve s { socket = "$sock" epochs = 0 ring = 4 batches $* }
EOT
}

start_run() {  # start_run FILE: tsrun run in the background, $run_pid
	rm -f "$sock"
	"$TSRUN" run "$1" 2> "$dir/run.err" &
	run_pid=$!
	pids="$pids $run_pid"
	wait_for 20 test -S "$sock" || fail "socket never appeared: $(cat "$dir/run.err")"
}

stop_run() {
	kill -INT "$run_pid" 2>/dev/null || :
	wait "$run_pid" 2>/dev/null || :
}

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }

# 1. C trainers: B stops, A still reads 300 batches (120 ring-fulls).
pipeline "$dir/p1.ts" "stall_timeout = 1"
start_run "$dir/p1.ts"
"$TSRUN" consume "$sock" --delay-ms 20 > "$dir/b.out" 2>&1 &
b_pid=$!
pids="$pids $b_pid"
sleep 0.5
kill -STOP "$b_pid"
t0=$(now)
st=0
timeout 30 "$TSRUN" consume "$sock" --max-batches 300 > "$dir/a.out" 2>&1 || st=$?
t=$(elapsed "$t0")
[ "$st" -eq 0 ] || fail "the running trainer was held (exit $st): $(cat "$dir/a.out")"
grep -q "^batches: 300$" "$dir/a.out" || fail "the running trainer: $(grep batches: "$dir/a.out")"
[ "$(echo "$t >= 0.9 && $t < 15" | bc)" -eq 1 ] || fail "300 batches took $t s (want about the 1 s timeout)"
pass "a trainer stopped with SIGSTOP is detached after stall_timeout = 1; the other read 300 batches in $t s"
wait_for 5 grep -q "tsrun: detached trainer pid $b_pid: it held the ring 1.[0-9] s without releasing a batch while others waited (serve setting stall_timeout = 1)" "$dir/run.err" ||
	fail "no line in the producer's log: $(cat "$dir/run.err")"
kill -CONT "$b_pid"
st=0
wait "$b_pid" || st=$?
[ "$st" -eq 1 ] || fail "the stopped trainer, continued: exit $st, want 1"
grep -q "the producer detached this trainer: it held the ring 1.[0-9] s without releasing a batch (serve setting stall_timeout = 1); reconnect to join again" "$dir/b.out" ||
	fail "the stopped trainer's error: $(cat "$dir/b.out")"
pass "continued, it ends with the error naming stall_timeout; the log names its pid"
# It may reconnect: a new trainer of the same user joins the stream again.
timeout 30 "$TSRUN" consume "$sock" --max-batches 20 > "$dir/again.out" 2>&1 ||
	fail "reconnecting after a detach: $(cat "$dir/again.out")"
pass "a detached trainer may reconnect"
stop_run

# 2. Python: a Loader stopped as long raises tsrun.Detached when continued.
if [ -x "$PY" ] && "$PY" -c "import torch" 2>/dev/null; then
	start_run "$dir/p1.ts"
	LD_PRELOAD="${TS_ASAN_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$PY" - "$sock" > "$dir/py.out" 2>&1 <<'EOT' &
import sys, time, tsrun
n = 0
try:
    for images, labels in tsrun.Loader(sys.argv[1], batch_size=10, join="now"):
        n += 1
        if n == 3:
            print("READING", flush=True)
        time.sleep(0.02)
except tsrun.Detached as e:
    print("DETACHED after %d: %s" % (n, e), flush=True)
    sys.exit(3)
print("ended without an error after %d batches" % n)
EOT
	py_pid=$!
	pids="$pids $py_pid"
	wait_for 60 grep -q READING "$dir/py.out" || fail "the Python trainer never read: $(cat "$dir/py.out")"
	kill -STOP "$py_pid"
	timeout 30 "$TSRUN" consume "$sock" --max-batches 300 > "$dir/a2.out" 2>&1 ||
		fail "the C trainer was held by the stopped Python one: $(cat "$dir/a2.out")"
	kill -CONT "$py_pid"
	st=0
	wait "$py_pid" || st=$?
	[ "$st" -eq 3 ] || fail "the Python trainer, continued: exit $st: $(cat "$dir/py.out")"
	grep -q "DETACHED after [0-9]*: the producer detached this trainer: .*stall_timeout = 1" "$dir/py.out" ||
		fail "the Python trainer's exception: $(cat "$dir/py.out")"
	pass "a stopped Python Loader raises tsrun.Detached naming stall_timeout"
	stop_run
else
	echo "skipped the Python case: /usr/bin/python3 with torch is not installed"
fi

# 2b. tsrun.serve takes the same settings: stall_timeout=1 detaches a
# stopped trainer of a Python producer; consumers=1 refuses a second one.
if [ -x "$PY" ] && "$PY" -c "import torch" 2>/dev/null; then
	rm -f "$sock"
	LD_PRELOAD="${TS_ASAN_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$PY" - "$sock" > "$dir/serve.out" 2>&1 <<'EOT' &
import sys, torch, tsrun
with tsrun.Producer(sys.argv[1], epochs=0, ring=4, stall_timeout=1, quiet=True) as p:
    x = torch.zeros(10, 3, 8, 8)
    y = torch.zeros(10, dtype=torch.int64)
    while True:
        p.put(x, y)
EOT
	serve_pid=$!
	pids="$pids $serve_pid"
	wait_for 60 test -S "$sock" || fail "tsrun.Producer never served: $(cat "$dir/serve.out")"
	"$TSRUN" consume "$sock" --join now --delay-ms 20 > "$dir/sb.out" 2>&1 &
	b_pid=$!
	pids="$pids $b_pid"
	sleep 0.5
	kill -STOP "$b_pid"
	timeout 30 "$TSRUN" consume "$sock" --join now --max-batches 300 > "$dir/sa.out" 2>&1 ||
		fail "tsrun.Producer: the running trainer was held: $(cat "$dir/sa.out")"
	kill -CONT "$b_pid"
	st=0
	wait "$b_pid" || st=$?
	[ "$st" -eq 1 ] && grep -q "stall_timeout = 1" "$dir/sb.out" ||
		fail "tsrun.Producer: the stopped trainer: exit $st: $(cat "$dir/sb.out")"
	wait_for 5 grep -q "detached trainer pid $b_pid" "$dir/serve.out" ||
		fail "tsrun.Producer: no line in its log: $(cat "$dir/serve.out")"
	kill -KILL "$serve_pid" 2>/dev/null || :
	wait "$serve_pid" 2>/dev/null || :
	pass "tsrun.Producer(stall_timeout=1) detaches a stopped trainer, the other goes on"
	st=0
	"$PY" -c "import tsrun; tsrun.Producer('$sock', consumers=0)" > "$dir/bad.out" 2>&1 || st=$?
	[ "$st" -ne 0 ] && grep -q "consumers must be an integer 1..64, got 0" "$dir/bad.out" ||
		fail "Producer(consumers=0): $(cat "$dir/bad.out")"
	"$PY" -c "import tsrun; tsrun.Producer('$sock', stall_timeout=-1)" > "$dir/bad.out" 2>&1 && st=0 || st=$?
	[ "$st" -ne 0 ] && grep -q "stall_timeout must be 0 (never) to 86400 seconds, got -1" "$dir/bad.out" ||
		fail "Producer(stall_timeout=-1): $(cat "$dir/bad.out")"
	pass "tsrun.Producer refuses a bad stall_timeout or consumers"
fi

# 3. stall_timeout = 0: the others wait as long as the stopped one stops.
pipeline "$dir/p0.ts" "stall_timeout = 0"
start_run "$dir/p0.ts"
"$TSRUN" consume "$sock" --delay-ms 20 > "$dir/b0.out" 2>&1 &
b_pid=$!
pids="$pids $b_pid"
sleep 0.5
kill -STOP "$b_pid"
"$TSRUN" consume "$sock" --max-batches 300 > "$dir/a0.out" 2>&1 &
a_pid=$!
pids="$pids $a_pid"
sleep 3
kill -0 "$a_pid" 2>/dev/null || fail "with stall_timeout = 0 the other trainer was not held: $(cat "$dir/a0.out")"
kill -CONT "$b_pid"
st=0
wait "$a_pid" || st=$?
[ "$st" -eq 0 ] || fail "once continued, the held trainer: exit $st: $(cat "$dir/a0.out")"
! grep -q detached "$dir/run.err" || fail "stall_timeout = 0 detached: $(cat "$dir/run.err")"
kill "$b_pid" 2>/dev/null || :
wait "$b_pid" 2>/dev/null || :
pass "stall_timeout = 0 waits for the stopped trainer (3 s), then goes on"
stop_run

# 4. A trainer alone holds nobody back: stopped 2.5 s, it is not detached.
start_run "$dir/p1.ts"
"$TSRUN" consume "$sock" --delay-ms 5 --max-batches 200 > "$dir/alone.out" 2>&1 &
b_pid=$!
pids="$pids $b_pid"
sleep 0.5
kill -STOP "$b_pid"
sleep 2.5
kill -CONT "$b_pid"
st=0
wait "$b_pid" || st=$?
[ "$st" -eq 0 ] || fail "a lone trainer stopped 2.5 s: exit $st: $(cat "$dir/alone.out")"
! grep -q detached "$dir/run.err" || fail "a lone trainer was detached: $(cat "$dir/run.err")"
pass "a lone trainer stopped past stall_timeout is not detached"
stop_run

# 5. Half-open connections: 3 bytes of a hello, 256 of them, from one
# process, then from 64 processes of 4; a new trainer still gets in.
pipeline "$dir/p5.ts" "consumers = 2"
start_run "$dir/p5.ts"
for procs in 1 64; do
	rm -f "$dir/half.ready"
	"$PY" - "$sock" "$procs" "$dir/half.ready" > "$dir/half.out" 2>&1 <<'EOT' &
import os, socket, sys, time
path, procs, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
each = 256 // procs
kids = []
for p in range(procs):
    pid = os.fork() if procs > 1 else 0
    if pid:
        kids.append(pid)
        continue
    conns = []
    for i in range(each):
        # The producer refuses (and closes) those past its per-process
        # limit: keep going, as an attacker would.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            s.send(b"TSS")
        except OSError:
            pass
        conns.append(s)
    if procs > 1:
        open(ready + ".%d" % p, "w").close()
        time.sleep(30)
        os._exit(0)
    break
if procs > 1:
    while len([f for f in os.listdir(os.path.dirname(ready)) if f.startswith("half.ready.")]) < procs:
        time.sleep(0.05)
open(ready, "w").close()
time.sleep(30)
EOT
	half_pid=$!
	pids="$pids $half_pid"
	wait_for 30 test -e "$dir/half.ready" || fail "the half-open connections never opened: $(cat "$dir/half.out")"
	st=0
	timeout 20 "$TSRUN" consume "$sock" --max-batches 5 > "$dir/new.out" 2>&1 || st=$?
	[ "$st" -eq 0 ] || fail "a new trainer behind 256 half-open connections from $procs process(es): exit $st: $(cat "$dir/new.out")"
	pkill -KILL -P "$half_pid" 2>/dev/null || :
	kill -KILL "$half_pid" 2>/dev/null || :
	wait "$half_pid" 2>/dev/null || :
	rm -f "$dir"/half.ready*
	pass "256 half-sent hellos from $procs process(es) do not lock out a new trainer"
done

# consumers = 2: a third trainer is refused with the setting's name.
"$TSRUN" consume "$sock" --delay-ms 50 > "$dir/c1.out" 2>&1 &
c1=$!
"$TSRUN" consume "$sock" --delay-ms 50 > "$dir/c2.out" 2>&1 &
c2=$!
pids="$pids $c1 $c2"
sleep 1
st=0
timeout 20 "$TSRUN" consume "$sock" --max-batches 1 > "$dir/c3.out" 2>&1 || st=$?
[ "$st" -ne 0 ] || fail "a third trainer was served with consumers = 2"
grep -q "too many trainers: the producer serves at most 2 at once (serve setting consumers)" "$dir/c3.out" ||
	fail "the third trainer's refusal: $(cat "$dir/c3.out")"
kill "$c1" "$c2" 2>/dev/null || :
wait "$c1" 2>/dev/null || :
wait "$c2" 2>/dev/null || :
sleep 0.5
timeout 20 "$TSRUN" consume "$sock" --max-batches 1 > "$dir/c4.out" 2>&1 ||
	fail "a trainer after the two left: $(cat "$dir/c4.out")"
pass "consumers = 2 refuses the third trainer, serves one once they left"
stop_run

# 6. Misused settings: check errors at the value's column.
check_err() {  # check_err SETTING COLUMN MESSAGE
	printf 'pipeline s = synthetic(size = 16, count = 10) | batch(2)\nserve s { %s }\n' "$1" > "$dir/bad.ts"
	st=0
	"$TSRUN" check "$dir/bad.ts" > "$dir/bad.out" 2>&1 || st=$?
	[ "$st" -eq 1 ] || fail "check of '$1': exit $st, want 1"
	grep -q "bad.ts:2:$2: error: $3" "$dir/bad.out" || fail "check of '$1': $(cat "$dir/bad.out")"
}
check_err "stall_timeout = -1" 27 "setting 'stall_timeout'"
check_err "stall_timeout = 100000" 27 "setting 'stall_timeout'"
check_err "stall_timeout = 2 MiB" 27 "setting 'stall_timeout'"
check_err "stall_timeout = \"long\"" 27 "setting 'stall_timeout'"
check_err "stall_timeout = 0.0001" 27 "setting 'stall_timeout' is 0.0001 s, finer than the producer checks"
check_err "consumers = 0" 23 "setting 'consumers'"
check_err "consumers = 65" 23 "setting 'consumers'"
check_err "consumers = 2.5" 23 "setting 'consumers'"
check_err "consumers = 4 consumers = 5" 25 "setting 'consumers' given twice"
check_err "stall_timout = 5" 11 "unknown serve setting 'stall_timout'"
grep -q "did you mean 'stall_timeout'" "$dir/bad.out" || fail "no suggestion: $(cat "$dir/bad.out")"
printf 'pipeline s = synthetic(size = 16, count = 10) | batch(2)\nserve s { stall_timeout = 0.5 consumers = 64 }\n' > "$dir/good.ts"
"$TSRUN" check "$dir/good.ts" > "$dir/good.out" 2>&1 || fail "stall_timeout = 0.5 consumers = 64: $(cat "$dir/good.out")"
pass "misused stall_timeout and consumers are check errors at the column"

finish
