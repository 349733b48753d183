#!/bin/sh
# plugins.sh - plugin operators (src/tsrun_plugin.h, runtime/plugin.h):
# the cloud-mask example filters exactly the cloudy images and tiles; the
# deliberately crashing plugin (crash, hang, error, exit) fails only its
# samples: under on_error = skip tsrun finishes, serves the rest and lists
# each failure by plugin and file; under on_error = fail it exits 1 with
# that message. Hung plugins are killed after timeout_ms. No plugin host
# is left behind (no zombie while running, no orphan after tsrun exits,
# even after a SIGKILL, nor after a plugin kills its guard: tsrun is the
# subreaper), and a host that dies on every sample restarts with a
# backoff. A missing .so and one without the symbol are
# clear errors at start; the public header compiles alone with -pedantic.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
: "${TS_BUILDDIR:?TS_BUILDDIR must name the build root}"
ts_setup plugins
# our plugin hosts run copies of the plugins under $T: this finds them only
hostpat="tsrun-plugin-host $T/"
hosts() { pgrep -f "$hostpat" | wc -l; }
bg=""
ts_cleanup_plugins() {
	[ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
	pkill -9 -f "$hostpat" 2>/dev/null
	ts_cleanup
}
trap ts_cleanup_plugins EXIT

# The plugins, copied under $T (see hostpat).
for p in cloudmask crash nosymbol; do
	cp "$TS_BUILDDIR/examples/plugins/$p.so" "$T/" || { fail "no $p.so built"; finish; }
done

# Data: 12 grey 32x32 PNGs of one value each. Odd values (101 103 105 251
# 253 255) make crash.so fail; values above 0.8 * 255 (250..255) are
# cloud. Three 32x32 frames whose top half is cloud, for tiles.
python3 - "$T" <<'EOF' || { fail "cannot write test images"; finish; }
import os, struct, sys, zlib
def png(path, rows):
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    raw = b''.join(b'\0' + bytes(r) for r in rows)
    hdr = struct.pack('>IIBBBBB', len(rows[0]), len(rows), 8, 0, 0, 0, 0)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', hdr) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
root = sys.argv[1]
os.makedirs(root + '/data/a')
os.makedirs(root + '/frames/a')
for i, v in enumerate([100, 101, 102, 103, 104, 105, 250, 251, 252, 253, 254, 255]):
    png('%s/data/a/%02d.png' % (root, i), [[v] * 32] * 32)
for i in range(3):
    png('%s/frames/a/%d.png' % (root, i), [[240] * 32] * 16 + [[60 + 2 * i] * 32] * 16)
EOF

# pipe NAME ON_ERROR STAGES: write $T/NAME.ts serving folder data through
# STAGES (relative plugin paths resolve against $T, the file's folder).
pipe() {
	cat >"$T/$1.ts" <<EOF
pipeline p =
    folder("${4:-data}")
    | decode(gray)
    | center_crop(32)
    | $3
    | batch(1)
serve p { socket = "$T/$1.sock"  epochs = 1  on_error = $2  threads = 2 }
EOF
}

# run NAME: run it once with no trainer; $rc, $T/NAME.err, $served
run() {
	timeout 60 "$TSRUN" run "$T/$1.ts" --wait 0 >"$T/$1.out" 2>"$T/$1.err"
	rc=$?
	served=$(sed -n 's/^tsrun: summary: \([0-9]*\) images served.*/\1/p' "$T/$1.err")
	left=$(hosts)
	[ "$left" -eq 0 ] || fail "$1: $left plugin host(s) left after tsrun exited"
}

expect_served() { # NAME RC SERVED SKIPPED
	[ "$rc" -eq "$2" ] || { fail "$1: exit $rc, want $2"; cat "$T/$1.err"; return; }
	[ "$served" = "$3" ] || { fail "$1: served '$served', want $3"; cat "$T/$1.err"; }
	n=$(grep -c "^tsrun: skipped " "$T/$1.err")
	[ "$n" -eq "$4" ] || { fail "$1: $n skipped lines, want $4"; cat "$T/$1.err"; }
	grep -q "skipped $4\$" "$T/$1.err" || fail "$1: summary does not count $4 skipped"
}

# --- the header alone, -pedantic -------------------------------------------
cc=${CC:-cc}
if command -v "$cc" >/dev/null 2>&1; then
	"$cc" -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c \
		"$TS_SRCDIR/include/tsrun/tsrun_plugin.h" 2>"$T/hdr.err" ||
		{ fail "tsrun_plugin.h does not compile alone with -pedantic"; cat "$T/hdr.err"; }
fi

# --- the working plugin: exact filtering --------------------------------------
pipe cloud fail 'plugin("cloudmask.so", threshold = 0.8, max_fraction = 0.5)'
"$TSRUN" graph "$T/cloud.ts" >"$T/graph.txt" 2>&1 || fail "graph of a plugin pipeline"
grep -q 'plugin("cloudmask.so", threshold=0.8, max_fraction=0.5, timeout_ms=1000, memory=1 GiB)' "$T/graph.txt" ||
	{ fail "graph does not show the plugin call"; cat "$T/graph.txt"; }
run cloud
expect_served cloud 0 6 0

# the plugin's own parameters reach it as text
cat >"$T/text.ts" <<EOF
let g = 3/4
pipeline p = synthetic(8, count = 2)
    | plugin("x.so", a = g, b = true, c = word, d = "s t", e = 4 KiB, f = -2, timeout_ms = 7,
             memory = 64 MiB)
    | batch(1)
EOF
"$TSRUN" graph "$T/text.ts" >"$T/text.txt" 2>&1 || fail "graph of text.ts"
grep -q 'plugin("x.so", a=0.75, b=true, c=word, d=s t, e=4096, f=-2, timeout_ms=7, memory=64 MiB)' "$T/text.txt" ||
	{ fail "plugin parameters as text"; cat "$T/text.txt"; }

# mask mode keeps everything
pipe mask fail 'plugin("cloudmask.so", mode = mask, threshold = 0.5)'
run mask
expect_served mask 0 12 0

# per tile: the top two of each frame's four 16x16 tiles are cloud
cat >"$T/tiles.ts" <<EOF
pipeline p = folder("frames") | decode(gray) | tile(16)
    | plugin("cloudmask.so", threshold = 0.8, max_fraction = 0.5) | batch(1)
serve p { socket = "$T/tiles.sock"  epochs = 1  threads = 2 }
EOF
run tiles
expect_served tiles 0 6 0

# a plugin error (an unknown parameter) under skip
pipe badparam skip 'plugin("cloudmask.so", thresold = 0.8)'
run badparam
expect_served badparam 0 0 12
grep -q "^tsrun: skipped .*data/a/00.png: plugin 'cloudmask.so' returned error -1\$" "$T/badparam.err" ||
	{ fail "badparam: no skip line for 00.png"; cat "$T/badparam.err"; }

# --- the crashing plugin --------------------------------------------------------
for mode in segv hang error exit; do
	case $mode in
	segv) why="crashed with SIGSEGV" ;;
	hang) why="timed out after 2000 ms" ;;
	error) why="returned error -7" ;;
	exit) why="exited with status 3" ;;
	esac
	# 2 s: long enough that a good sample on a loaded machine is never cut off.
	pipe "skip-$mode" skip "plugin(\"crash.so\", mode = $mode, timeout_ms = 2000)"
	t0=$(date +%s)
	run "skip-$mode"
	t1=$(date +%s)
	expect_served "skip-$mode" 0 6 6
	for i in 01 03 05 07 09 11; do
		grep -q "^tsrun: skipped .*data/a/$i.png: plugin 'crash.so' $why\$" "$T/skip-$mode.err" ||
			{ fail "skip-$mode: no '$why' line for $i.png"; cat "$T/skip-$mode.err"; break; }
	done
	[ $((t1 - t0)) -lt 30 ] || fail "skip-$mode took $((t1 - t0)) s"

	pipe "fail-$mode" fail "plugin(\"crash.so\", mode = $mode, timeout_ms = 2000)"
	run "fail-$mode"
	[ "$rc" -eq 1 ] || fail "fail-$mode: exit $rc, want 1"
	grep -q "^tsrun run: plugin 'crash.so' $why on .*data/a/[01][13579].png\$" "$T/fail-$mode.err" ||
		{ fail "fail-$mode: no '$why on FILE' message"; cat "$T/fail-$mode.err"; }
done

# The plugin's output goes on: crash.so inverts the samples it keeps, and
# after it cloudmask sees 255 - v, so the bright even images survive too.
pipe chain skip 'plugin("crash.so", mode = segv) | plugin("cloudmask.so")'
run chain
expect_served chain 0 6 6

if [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then
	pipe pixels skip 'plugin("crash.so", mode = error)'
	timeout 30 "$TSRUN" run "$T/pixels.ts" --wait 1 --quiet 2>"$T/pixels.err" &
	bg=$!
	firsts=$(TSRUN_LIBTSCLIENT="${TS_LIBTSCLIENT:-}" LD_PRELOAD="${TS_ASAN_PRELOAD:-}" \
		ASAN_OPTIONS=detect_leaks=0 timeout 30 \
		"$PY" - "$T/pixels.sock" <<'EOF'
import os, sys, time
import tsrun
path = sys.argv[1]
for _ in range(200):
    if os.path.exists(path):
        break
    time.sleep(0.05)
with tsrun.Loader(path, batch_size=1) as loader:
    print(" ".join(str(int(images[0, 0, 0, 0])) for images, _ in loader))
EOF
	) || kill -TERM "$bg"
	wait "$bg"
	prc=$?
	bg=""
	[ "$prc" -eq 0 ] || { fail "pixels: tsrun exit $prc"; cat "$T/pixels.err"; }
	[ "$firsts" = "155 153 151 5 3 1" ] || fail "pixels: first pixels '$firsts', want '155 153 151 5 3 1'"
else
	echo "note: /usr/bin/python3 with torch not found; pixel check skipped"
fi

# --- a plugin cannot hurt tsrun through what it shares with it ----------------
# attack: ftruncate to 0 and to twice the size, fallocate past the end,
# F_ADD_SEALS (write, future write), pwrite past the end of the pixel
# memfd, mprotect of its own mapping. Any memfd attack that works makes
# it return -9 (a skipped sample); a shrunk memfd would end tsrun with
# SIGBUS. All 12 must be served, none skipped.
pipe attack skip 'plugin("crash.so", mode = attack, when = always)'
run attack
expect_served attack 0 12 0

# garbage on the socket is named as such, not as the exit that follows
pipe garbage skip 'plugin("crash.so", mode = garbage, timeout_ms = 5000)'
run garbage
expect_served garbage 0 6 6
grep -q "^tsrun: skipped .*data/a/01.png: plugin 'crash.so' broke the plugin protocol (sent 5 bytes that are not a tsrun-plugin-host message; a plugin must not use descriptor 3)\$" "$T/garbage.err" ||
	{ fail "garbage: not named as protocol garbage"; cat "$T/garbage.err"; }

# memory: a 20 GiB allocation fails at the limit, reported as such (not
# the machine's OOM killer, not a bare SIGSEGV). Not under the sanitizers:
# there ASan's allocator refuses the allocation by its own rules, before
# RLIMIT_AS, and UBSan aborts on what follows, so the limit is not what
# is tested.
if [ "${TS_SANITIZE:-none}" != none ]; then
	echo "plugins.sh: memory-limit cases (hog, hogfail) not run under $TS_SANITIZE"
else
pipe hog skip 'plugin("crash.so", mode = hog, memory = 64 MiB, timeout_ms = 20000)'
t0=$(date +%s)
run hog
t1=$(date +%s)
expect_served hog 0 6 6
grep -q "^tsrun: skipped .*data/a/01.png: plugin 'crash.so' ran out of memory (its limit: memory = 64 MiB) and crashed with SIGSEGV\$" "$T/hog.err" ||
	{ fail "hog: not reported as out of memory"; cat "$T/hog.err"; }
[ $((t1 - t0)) -lt 60 ] || fail "hog took $((t1 - t0)) s"
pipe hogfail fail 'plugin("crash.so", mode = hog, timeout_ms = 20000)'
run hogfail
[ "$rc" -eq 1 ] || fail "hogfail: exit $rc, want 1"
grep -q "^tsrun run: plugin 'crash.so' ran out of memory (its limit: memory = 1 GiB) and crashed with SIGSEGV on .*data/a/[01][13579].png\$" "$T/hogfail.err" ||
	{ fail "hogfail: no out-of-memory message with the default limit"; cat "$T/hogfail.err"; }
fi

# a plugin that starts daemons (fork, setsid, fork) on every sample
# leaves none behind: they keep the host's command line, so hosts()
# (checked by run) counts them too
pipe spawn skip 'plugin("crash.so", mode = spawn, when = always)'
run spawn
expect_served spawn 0 12 0

# a plugin that escapes its guard: fork, setsid, fork, then SIGKILL the
# guard (same uid) and hang. tsrun is the child subreaper: each sample is
# a failed one under on_error (the host stopped answering: a timeout, or
# the guard's SIGKILL when the host saw it die first), and nothing it
# started is left (hosts(), checked by run)
pipe escape skip 'plugin("crash.so", mode = escape, when = always, timeout_ms = 300)'
run escape
expect_served escape 0 0 12
for i in 00 01 02 03 04 05 06 07 08 09 10 11; do
	grep -Eq "^tsrun: skipped .*data/a/$i.png: plugin 'crash.so' (timed out after 300 ms|crashed with SIGKILL)\$" "$T/escape.err" ||
		{ fail "escape: $i.png is not a failed sample (timed out or killed)"; cat "$T/escape.err"; break; }
done

# a host that dies on every sample restarts with a backoff (10 ms doubling
# to 200 ms), not at once for every sample: an endless stream of such
# samples for 3 s on 2 threads fails about 30 of them, not hundreds (the
# summary counts them)
cat >"$T/backoff.ts" <<EOF
pipeline p = folder("data") | decode(gray) | center_crop(32)
    | plugin("crash.so", mode = segv, when = always) | batch(1)
serve p { socket = "$T/backoff.sock"  epochs = 0  on_error = skip  threads = 2 }
EOF
timeout -s INT 3 "$TSRUN" run "$T/backoff.ts" --wait 0 >/dev/null 2>"$T/backoff.err"
nb=$(sed -n 's/^tsrun: summary: .*, skipped \([0-9]*\)$/\1/p' "$T/backoff.err")
[ -n "$nb" ] && [ "$nb" -ge 2 ] && [ "$nb" -le 60 ] ||
	{ fail "backoff: '$nb' samples failed in 3 s, want 2..60 (a restart per sample?)"; tail -3 "$T/backoff.err"; }
[ "$(hosts)" -eq 0 ] || fail "backoff: plugin hosts left after tsrun exited"

# --- no zombies while running, no orphans after a SIGKILL ---------------------
cat >"$T/forever.ts" <<EOF
pipeline p = folder("data") | decode(gray) | center_crop(32)
    | plugin("crash.so", mode = segv) | batch(1)
serve p { socket = "$T/forever.sock"  epochs = 0  on_error = skip  threads = 2 }
EOF
"$TSRUN" run "$T/forever.ts" --wait 0 --quiet >/dev/null 2>"$T/forever.err" &
bg=$!
sleep 1.5
# A crashed host is a zombie for the moment until its worker reaps it; one
# still a zombie half a second later was never reaped.
z1=$(ps -o pid=,stat= --ppid "$bg" | awk '$2 ~ /^Z/ { print $1 }')
sleep 0.5
z2=$(ps -o pid=,stat= --ppid "$bg" | awk '$2 ~ /^Z/ { print $1 }')
children=$(ps -o pid= --ppid "$bg" | wc -l)
for z in $z1; do
	for y in $z2; do
		[ "$z" = "$y" ] && fail "forever: plugin host $z stays a zombie"
	done
done
[ "$children" -le 2 ] || fail "forever: $children plugin hosts for 2 threads"
kill -TERM "$bg"
wait "$bg"
bg=""
[ "$(hosts)" -eq 0 ] || fail "forever: plugin hosts left after SIGTERM"
# every crash was a fresh host: well past one epoch's 6 of them
nskip=$(sed -n 's/^tsrun: summary: .*skipped \([0-9]*\)$/\1/p' "$T/forever.err")
[ "${nskip:-0}" -gt 12 ] || { fail "forever: only '${nskip:-}' crashes survived"; cat "$T/forever.err"; }

cat >"$T/hung.ts" <<EOF
pipeline p = folder("data") | decode(gray) | center_crop(32)
    | plugin("crash.so", mode = hang, when = always, timeout_ms = 600000) | batch(1)
serve p { socket = "$T/hung.sock"  epochs = 0  threads = 2 }
EOF
"$TSRUN" run "$T/hung.ts" --wait 0 --quiet >/dev/null 2>&1 &
bg=$!
n=0
while [ "$(hosts)" -lt 4 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ "$(hosts)" -eq 4 ] || fail "hung: $(hosts) plugin host processes, want 2 busy hosts (a guard and a worker each)"
kill -9 "$bg"
wait "$bg" 2>/dev/null
bg=""
n=0
while [ "$(hosts)" -gt 0 ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
[ "$(hosts)" -eq 0 ] || fail "hung: plugin hosts outlived a SIGKILLed tsrun"

# --- load errors, at start ------------------------------------------------------
pipe missing fail 'plugin("nothere.so")'
"$TSRUN" check "$T/missing.ts" >/dev/null 2>&1 || fail "check must not load plugins"
run missing
[ "$rc" -eq 1 ] || fail "missing: exit $rc, want 1"
grep -q "^tsrun run: plugin 'nothere.so': cannot load: $T/nothere.so: cannot open shared object file" "$T/missing.err" ||
	{ fail "missing: unclear error"; cat "$T/missing.err"; }

pipe nosym fail 'plugin("nosymbol.so")'
run nosym
[ "$rc" -eq 1 ] || fail "nosym: exit $rc, want 1"
grep -q "^tsrun run: plugin 'nosymbol.so': missing symbol tsrun_plugin_process\$" "$T/nosym.err" ||
	{ fail "nosym: unclear error"; cat "$T/nosym.err"; }

finish
