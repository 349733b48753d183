#!/bin/sh
# cli.sh - the tsrun command line: --help lists every subcommand,
# --version, usage errors exit 2, `tsrun FILE.ts` is `tsrun run FILE.ts`,
# a missing file is named, a socket in use is named, SIGINT stops a run
# cleanly and unlinks its socket and status file.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup cli

# expect STATUS PATTERN CMD...: CMD exits STATUS and its stderr+stdout
# matches the grep pattern PATTERN ("" matches anything).
expect() {
	want=$1 pat=$2; shift 2
	"$@" >"$T/out" 2>&1; rc=$?
	[ "$rc" -eq "$want" ] || { fail "'$*' exited $rc, want $want: $(head -5 "$T/out")"; return; }
	[ -z "$pat" ] || grep -q -- "$pat" "$T/out" || fail "'$*' did not say '$pat': $(head -5 "$T/out")"
}

# --- help and version ------------------------------------------------------
expect 0 "^usage: tsrun" "$TSRUN" --help
cp "$T/out" "$T/help"
for cmd in run check graph bench consume stat make-dataset; do
	grep -q "^  $cmd " "$T/help" || fail "--help does not list '$cmd'"
	expect 0 "usage: tsrun $cmd" "$TSRUN" "$cmd" --help
done
expect 0 "^usage: tsrun" "$TSRUN" -h
version=$(sed -n "s/^ *version: '\(.*\)',/\1/p" "$TS_SRCDIR/meson.build" | head -1)
[ -n "$version" ] || fail "no version in meson.build"
out=$("$TSRUN" --version); rc=$?
[ "$rc" -eq 0 ] && [ "$out" = "tsrun $version" ] || fail "--version: rc $rc, '$out', want 'tsrun $version'"
[ "$("$TSRUN" -V)" = "tsrun $version" ] || fail "-V"

# --- usage errors exit 2 -----------------------------------------------------
expect 2 "^usage: tsrun" "$TSRUN"
expect 2 "tsrun: unknown command 'frobnicate'" "$TSRUN" frobnicate
expect 2 "tsrun: unknown option '--frob'" "$TSRUN" --frob
expect 2 "tsrun: invalid value 'sometimes' for --color (use auto, always or never)" "$TSRUN" --color=sometimes check x.ts
expect 2 "usage: tsrun run" "$TSRUN" run
expect 2 "tsrun run: no FILE given" "$TSRUN" run
expect 2 "tsrun run: unknown option '--frob'" "$TSRUN" run --frob x.ts
expect 2 "tsrun run: option '--epochs' needs a value" "$TSRUN" run x.ts --epochs
expect 2 "usage: tsrun run" "$TSRUN" run a.ts b.ts
expect 2 "tsrun run: unexpected argument 'b.ts'" "$TSRUN" run a.ts b.ts
expect 2 "tsrun reload: no FILE given" "$TSRUN" reload s.sock
expect 2 "serves 2 pipelines (train, val); choose one with --pipeline NAME" \
	"$TSRUN" run "$TS_SRCDIR/tests/golden/check/serve-several.ts"
expect 2 "tsrun reload: unexpected argument 'c'" "$TSRUN" reload a b c
expect 2 "tsrun run: --epochs wants" "$TSRUN" run x.ts --epochs -1
expect 2 "tsrun run: --threads wants" "$TSRUN" run x.ts --threads 0
expect 2 "tsrun run: --start wants" "$TSRUN" run x.ts --start 3
expect 2 "tsrun run: --start 4294967296:0: epoch 4294967296 is past the last epoch a stream can count (4294967295)" \
	"$TSRUN" run x.ts --start 4294967296:0
expect 2 "tsrun check: no FILE given" "$TSRUN" check
expect 2 "tsrun check: unknown option '--bogus'" "$TSRUN" check --bogus x.ts
expect 2 "tsrun graph: no FILE given" "$TSRUN" graph
expect 2 "tsrun graph: --cores expects" "$TSRUN" graph --cores 0 x.ts
expect 2 "usage: tsrun bench" "$TSRUN" bench
expect 2 "tsrun bench: --batches wants" "$TSRUN" bench x.ts --batches 0
expect 2 "usage: tsrun consume" "$TSRUN" consume
expect 2 "tsrun consume: --batch wants" "$TSRUN" consume "$T/s" --batch 0
expect 2 "tsrun consume: --join wants" "$TSRUN" consume "$T/s" --join later
expect 2 "tsrun stat: no SOCKET given" "$TSRUN" stat
expect 2 "tsrun stat: unknown option '--yaml'" "$TSRUN" stat --yaml "$T/s"
expect 2 "tsrun make-dataset: no DIR given" "$TSRUN" make-dataset
expect 2 "tsrun make-dataset: --images needs a number" "$TSRUN" make-dataset "$T/d" --images lots

# --- missing files are named, exit 2 ----------------------------------------
missing="$T/no-such.ts"
for cmd in check graph bench run; do
	expect 2 "tsrun $cmd: cannot read $missing: No such file or directory" "$TSRUN" "$cmd" "$missing"
done
# a file with no end is refused at the bound, not read into memory
expect 2 "tsrun check: cannot read /dev/zero: larger than a pipeline file may be, 64 MiB" "$TSRUN" check /dev/zero
# `tsrun FILE.ts` is `tsrun run FILE.ts`
expect 2 "tsrun run: cannot read $missing: No such file or directory" "$TSRUN" "$missing"
expect 2 "tsrun stat: no such socket: $T/no.sock" "$TSRUN" stat "$T/no.sock"
expect 1 "tsrun consume: " "$TSRUN" consume "$T/no.sock"
# the worst status wins: unreadable (2) over invalid (1)
printf 'pipeline p = synthetic(8) | batchh(2)\n' >"$T/bad.ts"
expect 1 "bad.ts:1:29: error: unknown operator 'batchh'" "$TSRUN" check "$T/bad.ts"
expect 2 "" "$TSRUN" check "$T/bad.ts" "$missing"

# --- serving: tsrun FILE.ts, socket in use, SIGINT ---------------------------
cat >"$T/p.ts" <<EOF
pipeline p =
    synthetic(32, count = 100)
    | to(uint8, nhwc)
    | batch(10)
serve p { epochs = 0  ring = 4 batches  threads = 1 }
EOF
expect 0 "" "$TSRUN" check "$T/p.ts"
S="$T/s.sock"
"$TSRUN" "$T/p.ts" --socket "$S" 2>"$T/a.err" &
a=$!; pids="$pids $a"
watchdog 40 "$a"
wait_for 10 test -S "$S" || fail "tsrun FILE.ts did not create $S: $(cat "$T/a.err")"
# the socket can appear a moment before the line reaches the log
wait_for 10 grep -q "^tsrun: serving on $S " "$T/a.err" ||
	fail "tsrun FILE.ts did not say it serves: $(cat "$T/a.err")"
wait_for 10 test -f "$S.status.json" || fail "no status file $S.status.json"

# a second run on the same live socket fails and names it; the first is untouched
expect 1 "$S" "$TSRUN" run "$T/p.ts" --socket "$S"
grep -qi "in use" "$T/out" || fail "socket in use error does not say so: $(cat "$T/out")"
kill -0 "$a" 2>/dev/null || fail "the first run died when a second one tried its socket"
[ -S "$S" ] || fail "the second run removed the first one's socket"
expect 0 "images: 20" timeout 20 "$TSRUN" consume "$S" --max-batches 2

kill -INT "$a"
wait "$a"; rc=$?; pids=""
kill "$watchdog" 2>/dev/null
[ "$rc" -eq 0 ] || fail "run stopped by SIGINT exited $rc, want 0: $(cat "$T/a.err")"
grep -q "^tsrun: Interrupt: stopping" "$T/a.err" || fail "no 'stopping' after SIGINT: $(cat "$T/a.err")"
grep -q "^tsrun: summary: " "$T/a.err" || fail "no summary after SIGINT"
[ ! -e "$S" ] || fail "socket $S left behind after SIGINT"
[ ! -e "$S.status.json" ] || fail "status file left behind after SIGINT"

# a stale socket (its run was killed) is replaced by the next run
"$TSRUN" run "$T/p.ts" --socket "$S" --quiet 2>"$T/b.err" &
b=$!; pids="$b"
wait_for 10 test -S "$S" || fail "no socket for the run to kill"
kill -KILL "$b"; wait "$b" 2>/dev/null
[ -S "$S" ] || fail "SIGKILL removed the socket? (test assumption)"
"$TSRUN" run "$T/p.ts" --socket "$S" --quiet 2>"$T/c.err" &
c=$!; pids="$c"
# the new run's status file names it once it serves
wait_for 20 grep -q "\"pid\":$c," "$S.status.json" || fail "the run over a stale socket never served: $(cat "$T/c.err")"
expect 0 "images: 10" timeout 20 "$TSRUN" consume "$S" --max-batches 1
kill -TERM "$c"; wait "$c"; rc=$?; pids=""
[ "$rc" -eq 0 ] || fail "run over a stale socket / SIGTERM: rc $rc: $(cat "$T/c.err")"
[ ! -e "$S" ] || fail "socket left behind after SIGTERM"

# --- graph: a ring of odd-sized samples pads its slots and says so -----------
# 299x299x3 uint8 samples (268,203 bytes, odd) fill whole pages only 4,096
# at a time: unpadded, ring = 2 batches of 256 would be 4,096 samples (1
# GiB). The slots are padded to 268,224 bytes instead, the ring keeps its
# 512 samples (131 MiB) and graph says so, also with --cores (graph
# estimates again); 224x224x3 (150,528 bytes: 4 at a time) is not padded
# and says nothing.
for side in 299 224; do
	cat > "$T/r$side.ts" <<EOT
pipeline p =
    folder("$T")
    | decode(rgb)
    | random_resized_crop($side)
    | to(uint8, nhwc)
    | batch(256)
serve p { ring = 2 batches }
EOT
done
expect 0 "ring slots padded from 268203 to 268224 bytes, so that 512 samples fill whole pages" \
	"$TSRUN" graph "$T/r299.ts"
grep -q "^       ring 512 samples (2 batches of 256)" "$T/out" || fail "graph r299: $(grep ring "$T/out")"
grep -q "ring 131 MiB (512 samples x 262 KiB)" "$T/out" || fail "graph r299 memory: $(grep memory "$T/out")"
grep -q "rounded up" "$T/out" && fail "graph r299 says the ring was rounded up"
expect 0 "ring slots padded from 268203 to 268224 bytes" "$TSRUN" graph --cores 4 "$T/r299.ts"
expect 0 "^       ring 512 samples (2 batches of 256)" "$TSRUN" graph "$T/r224.ts"
grep -q "rounded up" "$T/out" && fail "graph r224 says the ring was rounded up"
grep -q "padded" "$T/out" && fail "graph r224 says its slots were padded"
# 8x8x3 uint8 (192 bytes, 64 a page): 4 batches of 5 round up to 64
# samples, 8 KiB too few to pad the slots for; graph says so.
cat > "$T/r8.ts" <<EOT
pipeline p = synthetic(size = 8, channels = 3, count = 100) | to(uint8, nhwc) | batch(5)
serve p { ring = 4 batches }
EOT
expect 0 "ring rounded up from 20 samples: 192-byte slots fill whole pages only 64 at a time" \
	"$TSRUN" graph "$T/r8.ts"
grep -q "padded" "$T/out" && fail "graph r8 says its slots were padded"

finish
