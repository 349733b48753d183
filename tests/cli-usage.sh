#!/bin/sh
# cli-usage.sh - usage errors say what is wrong before the usage, as
# "tsrun CMD: ...", and exit 2: bench and consume with a missing or extra
# argument or a bad option (never getopt's own "bench: ..." text), their
# --help with one line per option, make-dataset out-of-range numbers, an
# invalid --color value, and "did you mean" for a mistyped command.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup cli-usage

# lacks PATTERN: the last expect's output does not match PATTERN.
lacks() {
	! grep -q -- "$1" "$T/out" || fail "said '$1': $(head -5 "$T/out")"
}
# first_line TEXT: the last expect's output starts with the line TEXT.
first_line() {
	[ "$(head -n 1 "$T/out")" = "$1" ] || fail "first line is '$(head -n 1 "$T/out")', want '$1'"
}

# --- bench and consume: what is missing or extra, then the usage -------------
expect 2 "^usage: tsrun bench " "$TSRUN" bench
first_line "tsrun bench: no FILE given"
expect 2 "^usage: tsrun bench " "$TSRUN" bench a.ts b.ts
first_line "tsrun bench: unexpected argument 'b.ts'"
expect 2 "^usage: tsrun consume " "$TSRUN" consume
first_line "tsrun consume: no SOCKET given"
expect 2 "^usage: tsrun consume " "$TSRUN" consume a.sock b.sock
first_line "tsrun consume: unexpected argument 'b.sock'"

# --- option errors name the command as "tsrun CMD:" ---------------------------
for cmd in bench consume; do
	expect 2 "^usage: tsrun $cmd " "$TSRUN" "$cmd" x --frob
	first_line "tsrun $cmd: unknown option '--frob'"
	lacks "^$cmd:"
	expect 2 "^usage: tsrun $cmd " "$TSRUN" "$cmd" x -Z
	first_line "tsrun $cmd: unknown option '-Z'"
	lacks "^$cmd:"
	expect 2 "^usage: tsrun $cmd " "$TSRUN" "$cmd" x --batch
	first_line "tsrun $cmd: option '--batch' needs a value"
	lacks "^$cmd:"
	expect 2 "" "$TSRUN" "$cmd" x --help=yes
	first_line "tsrun $cmd: option '--help' takes no value"
done
expect 2 "" "$TSRUN" bench x --pipeline
first_line "tsrun bench: option '--pipeline' needs a value"
expect 2 "" "$TSRUN" bench x -p
first_line "tsrun bench: option '-p' needs a value"
expect 2 "" "$TSRUN" bench x --bat 4
first_line "tsrun bench: ambiguous option '--bat'"
expect 2 "" "$TSRUN" consume x --drop-last=1
first_line "tsrun consume: option '--drop-last' takes no value"

# --- --help: one line per option ----------------------------------------------
expect 0 "^usage: tsrun bench " "$TSRUN" bench --help
for opt in pipeline epochs threads batches batch start; do
	grep -q "^  --$opt .*[a-z]" "$T/out" || fail "bench --help does not describe --$opt"
done
expect 0 "^usage: tsrun consume " "$TSRUN" consume --help
for opt in batch max-batches join drop-last delay-ms; do
	grep -q "^  --$opt .*[a-z]" "$T/out" || fail "consume --help does not describe --$opt"
done

# --- make-dataset: numbers out of range are usage errors ----------------------
expect 2 "tsrun make-dataset: --images must be a positive number" \
	"$TSRUN" make-dataset "$T/d" --images -5
lacks "needs a number"
expect 2 "tsrun make-dataset: --images must be a positive number" \
	"$TSRUN" make-dataset "$T/d" --images=0
expect 2 "tsrun make-dataset: --classes must be a positive number" \
	"$TSRUN" make-dataset "$T/d" --classes 5000
expect 2 "tsrun make-dataset: --val must be a number from 0" \
	"$TSRUN" make-dataset "$T/d" --val -1
expect 2 "tsrun make-dataset: --seed must be a number from 0" \
	"$TSRUN" make-dataset "$T/d" --seed -3
expect 2 "tsrun make-dataset: --images needs a number, got 'lots'" \
	"$TSRUN" make-dataset "$T/d" --images lots
# fewer images than classes: the options do not fit together
expect 2 "tsrun make-dataset: .*images" "$TSRUN" make-dataset "$T/d" --images 5 --classes 10
[ ! -e "$T/d" ] || fail "make-dataset with bad options made $T/d"

# --- the dispatcher ------------------------------------------------------------
expect 2 "" "$TSRUN" --color=bogus check x.ts
first_line "tsrun: invalid value 'bogus' for --color (use auto, always or never)"
lacks "unknown option"
expect 2 "tsrun: --color needs a value" "$TSRUN" --color check x.ts
# a valid --color still reaches the command
expect 2 "tsrun check: cannot read $T/none.ts" "$TSRUN" --color=never check "$T/none.ts"
expect 2 "^hint: did you mean 'check'?" "$TSRUN" chek x.ts
first_line "tsrun: unknown command 'chek'"
expect 2 "^hint: did you mean 'make-dataset'?" "$TSRUN" make-datset d
expect 2 "^hint: did you mean 'consume'?" "$TSRUN" cosnume s
# nothing close: no hint, the usage
expect 2 "^usage: tsrun" "$TSRUN" frobnicate
lacks "did you mean"

finish
