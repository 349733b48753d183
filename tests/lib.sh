# lib.sh - the start-up preamble the shell tests share. Source it, then
# name the test:
#     . "$TS_SRCDIR/tests/lib.sh"
#     ts_setup NAME            # $T: a fresh folder, removed at exit
# It gives:
#   $T, $pids          the test's folder; processes to SIGKILL at exit
#   fail MSG           report a failure and go on (ts_fatal=1: stop, after
#                      printing $ts_log, e.g. the server's stderr, if set)
#   pass MSG, skip WHY a passed check; skip the whole test (exit 77)
#   finish             "NAME: all passed" / "NAME: N failed", and the status
#   watchdog SECS PID  SIGKILL the PIDs after SECS seconds ($watchdog)
#   wait_for N TEST... poll TEST every 0.1 s for up to N seconds
# TSRUN and TS_SRCDIR come from the environment meson sets.
set -u
: "${TSRUN:?TSRUN must name the tsrun binary}"
: "${TS_SRCDIR:?TS_SRCDIR must name the source root}"

T=""
pids=""
watchdog=""
failed=0
ts_name=test
ts_fatal=0
ts_log=""

ts_cleanup() {
	[ -z "$watchdog" ] || kill "$watchdog" 2>/dev/null || :
	for p in $pids; do kill -KILL "$p" 2>/dev/null || :; done
	[ -z "$T" ] || rm -rf "$T"
}

ts_setup() {
	ts_name=$1
	# in /tmp, not $TMPDIR: socket paths in it must stay short
	T=$(mktemp -d "/tmp/tsrun-$1.XXXXXX") || exit 1
	trap ts_cleanup EXIT
	trap 'exit 1' INT TERM
}

fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
	if [ "$ts_fatal" -eq 1 ]; then
		if [ -n "$ts_log" ]; then
			echo "--- $ts_log"
			cat "$ts_log" 2>/dev/null
		fi
		exit 1
	fi
}

pass() { echo "ok   $*"; }

skip() {
	echo "$ts_name: skipped: $*"
	exit 77
}

finish() {
	if [ "$failed" -eq 0 ]; then
		echo "$ts_name: all passed"
		exit 0
	fi
	echo "$ts_name: $failed failed"
	exit 1
}

# watchdog SECS PID...: SIGKILL the PIDs after SECS seconds; sets $watchdog.
# Its sleep dies with it and holds no output open, so killing $watchdog
# leaves nothing behind.
watchdog() {
	secs=$1; shift
	(trap 'kill $s 2>/dev/null; exit 0' TERM
	 sleep "$secs" & s=$!
	 wait $s && kill -KILL "$@" 2>/dev/null) >/dev/null 2>&1 &
	watchdog=$!
}

# wait_for N TEST...: poll TEST every 0.1 s for up to N seconds.
wait_for() {
	n=$(($1 * 10)); shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}
