# lib.sh - the start-up preamble the shell tests share. Source it, then
# name the test:
#     . "$TS_SRCDIR/tests/lib.sh"
#     ts_setup NAME            # $T: a fresh folder, removed at exit
# It gives:
#   $T, $pids          the test's folder; processes to SIGKILL at exit
#   fail MSG           report a failure and go on (ts_fatal=1: stop, after
#                      printing the files named in $ts_log, e.g. the
#                      server's stderr, if set). Counted in $T/.failures
#                      too, so a failure inside a subshell (`$(...)`,
#                      `( ... )`, a piped loop) counts: there the message
#                      goes to stderr (stdout may be what is captured) and
#                      ts_fatal stops the test itself, not the subshell
#   pass MSG, skip WHY a passed check; skip the whole test (exit 77)
#   finish             "NAME: all passed" / "NAME: N failed", and the status
#                      (N counts the subshells' failures: ts_failures)
#   watchdog SECS PID  SIGKILL the PIDs after SECS seconds ($watchdog)
#   wait_for N TEST... poll TEST every 0.1 s for up to N seconds
#   need PROG...       skip unless every PROG is on PATH
#   $PY, need_python MODULE...
#                      /usr/bin/python3 (the one with Debian's torch); skip
#                      unless it imports every MODULE
#   make_dataset DIR ARGS...
#                      tsrun make-dataset DIR ARGS; skip when there are no
#                      photos to make it from, stop (exit 1) on any other
#                      failure
#   expect STATUS PAT CMD...
#                      CMD exits STATUS and its stdout+stderr, kept in
#                      $T/out, matches the grep pattern PAT ("": anything)
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
PY=/usr/bin/python3

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
	: >"$T/.failures"
}

# ts_in_subshell: true inside a subshell of the test. $$ is the test's
# own pid in every subshell; /proc/self, read by the builtin `read` (no
# child), is the process that runs it.
ts_in_subshell() {
	ts_me=""
	read -r ts_me ts_rest </proc/self/stat 2>/dev/null
	[ -n "$ts_me" ] && [ "$ts_me" != "$$" ]
}

fail() {
	failed=$((failed + 1))
	# one line per failure, whatever the message holds
	[ -z "$T" ] || printf 'FAIL: %s\n' "$(printf '%s' "$*" | tr '\n' ' ')" >>"$T/.failures"
	if ts_in_subshell; then
		# a subshell: its count and its exit are its own, and its stdout
		# may be a $(...) that keeps the message from the log
		echo "FAIL: $*" >&2
		if [ "$ts_fatal" -eq 1 ]; then
			ts_print_logs >&2
			kill -TERM $$
			exit 1
		fi
		return 0
	fi
	echo "FAIL: $*"
	if [ "$ts_fatal" -eq 1 ]; then
		ts_print_logs
		exit 1
	fi
}

ts_print_logs() {
	for ts_f in $ts_log; do
		[ -f "$ts_f" ] || continue
		echo "--- $ts_f"
		cat "$ts_f"
	done
}

# ts_failures: the failures so far, the subshells' included.
ts_failures() {
	ts_n=0
	[ -z "$T" ] || [ ! -f "$T/.failures" ] || ts_n=$(wc -l <"$T/.failures")
	[ "$ts_n" -ge "$failed" ] || ts_n=$failed
	echo $((ts_n))
}

pass() { echo "ok   $*"; }

skip() {
	echo "$ts_name: skipped: $*"
	exit 77
}

finish() {
	failed=$(ts_failures)
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

# ts_bound PLAIN SANITIZED: a hang guard's seconds: PLAIN, or SANITIZED
# under ASan+UBSan (TS_SANITIZE), whose builds run 5-10 times slower.
ts_bound() {
	case "${TS_SANITIZE:-none}" in
	none) echo "$1" ;;
	*) echo "$2" ;;
	esac
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

# need PROG...: skip the test unless every PROG is installed.
need() {
	for ts_p in "$@"; do
		command -v "$ts_p" >/dev/null 2>&1 || skip "$ts_p is not installed"
	done
}

# need_python MODULE...: skip the test unless $PY imports every MODULE.
need_python() {
	for ts_m in "$@"; do
		"$PY" -c "import $ts_m" 2>/dev/null || skip "$PY cannot import $ts_m"
	done
}

# make_dataset DIR ARGS...: `tsrun make-dataset DIR ARGS` (2 minutes at
# most), its output in $T/make-dataset.out. Without photos to make it
# from (it names mate-backgrounds and TSRUN_PHOTOS) the test cannot run:
# skip; any other failure stops the test.
make_dataset() {
	timeout 120 "$TSRUN" make-dataset "$@" >"$T/make-dataset.out" 2>&1 && return 0
	if grep -q 'mate-backgrounds\|TSRUN_PHOTOS' "$T/make-dataset.out"; then
		skip "no photos: $(cat "$T/make-dataset.out")"
	fi
	echo "FAIL: make-dataset $*: $(cat "$T/make-dataset.out")"
	exit 1
}

# expect STATUS PATTERN CMD...: CMD exits STATUS and its stderr+stdout
# matches the grep pattern PATTERN ("" matches anything); the output stays
# in $T/out.
expect() {
	want=$1 pat=$2; shift 2
	"$@" >"$T/out" 2>&1; rc=$?
	[ "$rc" -eq "$want" ] || { fail "'$*' exited $rc, want $want: $(head -5 "$T/out")"; return; }
	[ -z "$pat" ] || grep -q -- "$pat" "$T/out" || fail "'$*' did not say '$pat': $(head -5 "$T/out")"
}
