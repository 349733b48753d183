#!/bin/sh
# man-examples.sh - run the EXAMPLES of the man pages, so that a page
# cannot drift from the program:
#   tsrun.1           every "$ " command line, extracted from the page,
#                     must be the list below (so adding, changing or
#                     dropping one fails until this test knows it), and
#                     is run in a temp folder with its output checked;
#   libtsrun.3        every program (a literal block with main) is
#                     compiled against the headers and libraries of this
#                     build and run against a small pipeline;
#   tensorsocket.7    the C and the PyTorch trainer fragments, wrapped into
#                     programs, read from a real producer;
#   tsrun-pipeline.5  every pipeline is accepted by `tsrun check`.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup man-examples
: "${TS_LIBTSRUN:?TS_LIBTSRUN must name libtsrun.so}"
: "${TS_LIBTSCLIENT:?TS_LIBTSCLIENT must name libtsclient.so}"
MAN="$TS_SRCDIR/man"
# A step's bound: the examples make a data set and run pipelines, some
# 5-10 times slower under ASan+UBSan (and on a loaded machine).
step_s=$(ts_bound 60 240)

# examples PAGE: the lines of the literal blocks of PAGE's EXAMPLES
# section, unescaped, each block followed by a line "@@END".
examples() {
	awk '
		/^\.Sh / { ex = ($2 == "EXAMPLES"); next }
		ex && /^\.Bd -literal/ { lit = 1; next }
		ex && lit && /^\.Ed/ { lit = 0; print "@@END"; next }
		ex && lit {
			gsub(/\\-/, "-"); gsub(/\\&/, ""); gsub(/\\e/, "\\")
			print
		}' "$1"
}

# --- tsrun.1 ------------------------------------------------------------------
# THE EXPECTED COMMANDS: exactly the "$ " lines of tsrun.1's EXAMPLES, in
# order. Keep this list and the page in step.
cat >"$T/expected" <<'EOF'
tsrun make-dataset data --images 200
tsrun check examples/quickstart.ts
tsrun graph examples/quickstart.ts
tsrun bench examples/quickstart.ts --epochs 1
tsrun preview examples/quickstart.ts --samples 8 -o grid.png
tsrun preview examples/quickstart.ts --stages --samples 2 -o stages.png
tsrun examples/quickstart.ts --epochs 0 --wait 2 --socket /tmp/qs.sock &
tsrun consume /tmp/qs.sock --batch 32 &
tsrun consume /tmp/qs.sock --batch 16 --delay-ms 20 &
tsrun stat /tmp/qs.sock
tsrun stat --json /tmp/qs.sock
tsrun stat --metrics /tmp/qs.sock
kill -INT %1
EOF
examples "$MAN/tsrun.1" | sed -n 's/^\$ //p' >"$T/got"
if ! cmp -s "$T/expected" "$T/got"; then
	fail "tsrun.1 EXAMPLES commands differ from this test's list:"
	diff "$T/expected" "$T/got"
fi

# Run them in a folder holding examples/quickstart.ts, with `tsrun` on
# PATH being this build's, and the socket under our temp folder (the one
# change made to the commands: /tmp/ -> $T/).
mkdir -p "$T/bin" "$T/run/examples"
ln -s "$TSRUN" "$T/bin/tsrun"
cp "$TS_SRCDIR/examples/quickstart.ts" "$T/run/examples/"
S="$T/qs.sock"
jobs=""
i=0
while IFS= read -r line; do
	i=$((i + 1))
	cmd=$(printf '%s\n' "$line" | sed "s|/tmp/|$T/|g")
	out="$T/out.$i"
	case "$cmd" in
	*" &")
		case "$cmd" in *consume*) wait_for 20 test -S "$S" || fail "no socket $S before '$line'";; esac
		(cd "$T/run" && PATH="$T/bin:$PATH" exec sh -c "exec ${cmd% &}" >"$out" 2>&1) &
		jobs="$jobs $!"; pids="$pids $!"
		continue ;;
	"kill -INT %1")
		set -- $jobs
		kill -INT "$1"
		wait "$1"; rc=$?
		[ "$rc" -eq 0 ] || fail "'$line': the run exited $rc: $(tail -3 "$T/out.7")"
		[ ! -e "$S" ] || fail "'$line': socket left behind"
		# its trainers see the producer go and exit 1 at once
		for p in $2 $3; do
			wait_for 5 sh -c "! kill -0 $p 2>/dev/null" || fail "consumer $p still running 5 s after its producer stopped"
			wait "$p"; rc=$?
			[ "$rc" -eq 1 ] || fail "consumer $p exited $rc after its producer stopped, want 1"
		done
		pids=""
		continue ;;
	*"tsrun stat"*)
		set -- $jobs
		listed() { grep -q "\"pid\":$2," "$S.status.json" && grep -q "\"pid\":$3," "$S.status.json"; }
		wait_for 30 listed "$@" || fail "the consumers never showed in $S.status.json" ;;
	esac
	(cd "$T/run" && PATH="$T/bin:$PATH" timeout "$step_s" sh -c "$cmd") >"$out" 2>&1; rc=$?
	[ "$rc" -eq 0 ] || { fail "'$line' exited $rc: $(tail -5 "$out")"; continue; }
	set -- $jobs
	case "$line" in
	*make-dataset*) want="^data set made: data: 200 train" ;;
	*check*) want="" ;;
	*graph*) want="quickstart" ;;
	*bench*) want="^images: 200$" ;;
	*"preview"*"--stages"*) want="^stages.png: [0-9]*x[0-9]* pixels, 4 cells$" ;;
	*preview*) want="^grid.png: [0-9]*x[0-9]* pixels, 8 cells$" ;;
	*"stat --json"*) want="\"pid\":$2,\"batch\":32,.*\"pid\":$3,\"batch\":16,\|\"pid\":$3,\"batch\":16,.*\"pid\":$2,\"batch\":32," ;;
	*"stat --metrics"*) want="^tsrun_trainer_wait_fraction{.*pid=\"$2\",batch=\"32\"" ;;
	*stat*) want="^consumers: 2$" ;;
	*) want="" ;;
	esac
	[ -z "$want" ] || grep -q "$want" "$out" || fail "'$line' did not print '$want': $(head -20 "$out")"
	case "$line" in
	*"tsrun stat /tmp"*)
		grep -Eq "^ +$2 +32 " "$out" || fail "'$line': no row for consumer $2, batch 32"
		grep -Eq "^ +$3 +16 " "$out" || fail "'$line': no row for consumer $3, batch 16" ;;
	esac
done <"$T/got"
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
pids=""

# --- libtsrun.3 ---------------------------------------------------------------
mkdir -p "$T/inc/tsrun" "$T/c"
ln -s "$TS_SRCDIR/include/tsrun/tsrun.h" "$TS_SRCDIR/include/tsrun/tsclient.h" "$TS_SRCDIR/include/tsrun/error.h" "$TS_SRCDIR/include/tsrun/types.h" "$T/inc/tsrun/"
examples "$MAN/libtsrun.3" | awk -v dir="$T/c" '
	/^@@END$/ { if (buf ~ /int main\(/) { n++; f = dir "/prog" n ".c"; printf "%s", buf > f; close(f) } buf = ""; next }
	{ buf = buf $0 "\n" }'
[ -f "$T/c/prog1.c" ] && [ -f "$T/c/prog2.c" ] || fail "libtsrun.3: want 2 example programs"
[ ! -f "$T/c/prog3.c" ] || fail "libtsrun.3: a third example program that this test does not run"
CC=${CC:-cc}
# an ASan build's libraries need the sanitizers in the program too
san=""
# (with clang and its shared runtime, as meson.build builds them)
if nm -D "$TS_LIBTSRUN" 2>/dev/null | grep -q __asan; then
	CC=clang
	rt=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
	san="-fsanitize=address,undefined -shared-libsan -Wl,-rpath,$(dirname "$rt")"
fi
libdirs="$(dirname "$TS_LIBTSRUN"):$(dirname "$TS_LIBTSCLIENT")"
cat >"$T/embed.ts" <<'EOF'
pipeline tiny = synthetic(16, count = 50) | to(uint8, nhwc) | batch(8)
serve tiny { epochs = 2  threads = 1 }
EOF
if [ -f "$T/c/prog1.c" ] && grep -q "ts_pipeline_compile" "$T/c/prog1.c"; then
	if $CC -std=gnu11 -Wall -Wextra -Werror $san -I"$T/inc" -o "$T/c/embed" "$T/c/prog1.c" \
		"$TS_LIBTSRUN" 2>"$T/cc1.err"; then
		LD_LIBRARY_PATH="$libdirs" timeout 30 "$T/c/embed" "$T/embed.ts" >"$T/embed.out" 2>&1; rc=$?
		[ "$rc" -eq 0 ] && grep -q "^images: 100$" "$T/embed.out" ||
			fail "libtsrun.3 embedding example: rc $rc, $(cat "$T/embed.out")"
		LD_LIBRARY_PATH="$libdirs" timeout 30 "$T/c/embed" "$T/bad.ts" >/dev/null 2>&1; rc=$?
		[ "$rc" -eq 2 ] || fail "libtsrun.3 embedding example on a missing file: rc $rc"
	else
		fail "libtsrun.3 embedding example does not compile: $(head -20 "$T/cc1.err")"
	fi
else
	fail "libtsrun.3: the first example program is not the embedding one"
fi
if [ -f "$T/c/prog2.c" ] && grep -q "ts_client_connect" "$T/c/prog2.c"; then
	if $CC -std=gnu11 -Wall -Wextra -Werror $san -I"$T/inc" -o "$T/c/trainer" "$T/c/prog2.c" \
		"$TS_LIBTSCLIENT" 2>"$T/cc2.err"; then
		S2="$T/c.sock"
		"$TSRUN" run "$T/embed.ts" --socket "$S2" --quiet 2>"$T/run2.err" &
		run=$!; pids="$run"
		wait_for 10 test -S "$S2" || fail "no socket $S2"
		LD_LIBRARY_PATH="$libdirs" timeout 30 "$T/c/trainer" "$S2" >"$T/trainer.out" 2>&1; rc=$?
		[ "$rc" -eq 0 ] && grep -q "^images: 100$" "$T/trainer.out" ||
			fail "libtsrun.3 trainer example: rc $rc, $(cat "$T/trainer.out")"
		wait_for 10 sh -c "! kill -0 $run 2>/dev/null" || fail "the run did not end after its trainer"
		kill -KILL "$run" 2>/dev/null; wait "$run" 2>/dev/null; pids=""
		LD_LIBRARY_PATH="$libdirs" timeout 30 "$T/c/trainer" "$S2" >/dev/null 2>&1; rc=$?
		[ "$rc" -eq 1 ] || fail "libtsrun.3 trainer example with no producer: rc $rc, want 1"
	else
		fail "libtsrun.3 trainer example does not compile: $(head -20 "$T/cc2.err")"
	fi
else
	fail "libtsrun.3: the second example program is not the trainer"
fi

# --- tensorsocket.7 -------------------------------------------------------------
# Two fragments: a C trainer loop and a PyTorch one. Each is wrapped into a
# program (train() counts images; a small model) and run against a producer
# on the fragment's socket, moved under our temp folder.
examples "$MAN/tensorsocket.7" | awk -v dir="$T" '
	/^@@END$/ { n++; f = dir "/ts7." n; printf "%s", buf > f; close(f); buf = ""; next }
	{ buf = buf $0 "\n" }'
[ -f "$T/ts7.1" ] && [ -f "$T/ts7.2" ] && [ ! -f "$T/ts7.3" ] ||
	fail "tensorsocket.7: want 2 example blocks (C, then Python)"
S7="$T/ts7.sock"
cat >"$T/ts7.ts" <<EOF
pipeline t = synthetic(16, count = 64) | to(uint8, nhwc) | batch(8)
serve t { socket = "$S7"  epochs = 12  threads = 1  ring = 1024 samples }
EOF
if grep -q "ts_client_connect" "$T/ts7.1" 2>/dev/null; then
	{
		printf '#include <err.h>\n#include <stdio.h>\n#include <tsrun/tsclient.h>\n'
		printf 'static size_t images;\n'
		printf '#define train(d, s, l, n, e, i) ((void)(d), (void)(s), (void)(l), (void)(e), (void)(i), images += (n))\n'
		printf 'int main(void)\n{\n'
		sed "s|/tmp/tsrun-train.sock|$S7|" "$T/ts7.1"
		printf 'printf("images: %%zu\\n", images);\nreturn 0;\n}\n'
	} >"$T/c/ts7.c"
	if $CC -std=gnu11 -Wall -Wextra -Werror $san -I"$T/inc" -o "$T/c/ts7" "$T/c/ts7.c" \
		"$TS_LIBTSCLIENT" 2>"$T/cc7.err"; then
		"$TSRUN" run "$T/ts7.ts" --quiet 2>"$T/run7.err" &
		run=$!; pids="$run"
		wait_for 10 test -S "$S7" || fail "no socket $S7"
		LD_LIBRARY_PATH="$libdirs" timeout 30 "$T/c/ts7" >"$T/ts7.out" 2>&1; rc=$?
		# 12 epochs of 64 samples, read in batches of 256 (8 batches of
		# 64: a batch never spans two epochs).
		[ "$rc" -eq 0 ] && grep -q "^images: 768$" "$T/ts7.out" ||
			fail "tensorsocket.7 C example: rc $rc, $(cat "$T/ts7.out")"
		wait_for 10 sh -c "! kill -0 $run 2>/dev/null" || fail "the run did not end after its trainer"
		kill -KILL "$run" 2>/dev/null; wait "$run" 2>/dev/null; pids=""
	else
		fail "tensorsocket.7 C example does not compile: $(head -20 "$T/cc7.err")"
	fi
else
	fail "tensorsocket.7: the first example is not the C trainer"
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "tensorsocket.7 Python example: skipped, /usr/bin/python3 has no torch"
elif grep -q "tsrun.Loader" "$T/ts7.2" 2>/dev/null; then
	{
		printf 'import torch\nimport torch.nn.functional as F\nimport tsrun\n'
		printf 'model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16 * 16 * 3, 10))\n'
		printf 'steps = 0\n'
		sed "s|/tmp/tsrun-train.sock|$S7|" "$T/ts7.2" |
			sed 's/^\(        loss = .*\)$/\1\n        loss.backward()\n        steps += 1/'
		printf 'print("steps:", steps)\n'
	} >"$T/ts7.py"
	"$TSRUN" run "$T/ts7.ts" --quiet 2>"$T/run7p.err" &
	run=$!; pids="$run"
	wait_for 10 test -S "$S7" || fail "no socket $S7"
	(cd "$T" && PYTHONPATH="$TS_SRCDIR/src/python" TSRUN_LIBTSCLIENT="$TS_LIBTSCLIENT" \
		LD_PRELOAD="${TS_ASAN_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 \
		timeout 60 /usr/bin/python3 "$T/ts7.py") >"$T/ts7p.out" 2>&1; rc=$?
	# 10 epochs of 64 samples in batches of 64: 10 steps.
	[ "$rc" -eq 0 ] && grep -q "^steps: 10$" "$T/ts7p.out" ||
		fail "tensorsocket.7 Python example: rc $rc, $(tail -5 "$T/ts7p.out")"
	kill -KILL "$run" 2>/dev/null; wait "$run" 2>/dev/null; pids=""
else
	fail "tensorsocket.7: the second example is not the PyTorch trainer"
fi

# --- tsrun-pipeline.5 ----------------------------------------------------------
examples "$MAN/tsrun-pipeline.5" | awk -v dir="$T" '
	/^@@END$/ { if (buf ~ /^(let|pipeline) /) { n++; f = dir "/pipe" n ".ts"; printf "%s", buf > f; close(f) } buf = ""; next }
	{ buf = buf $0 "\n" }'
n=0
for f in "$T"/pipe*.ts; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	"$TSRUN" check "$f" >"$T/check.out" 2>&1 || fail "tsrun-pipeline.5 example $n: $(cat "$T/check.out")"
done
[ "$n" -ge 1 ] || fail "tsrun-pipeline.5: no example pipelines found"

finish
