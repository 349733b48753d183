#!/bin/sh
# fuzz-replay.sh - replay the compiler's fuzz corpus through the CLI: each
# input goes through `tsrun check`, which must exit 0 (valid) or 1
# (invalid), never crash (signal, sanitizer report) and never hang. In a
# sanitizer build this is the CLI's side of the fuzz suite; the libFuzzer
# target itself (fuzz build) is the tests fuzz-corpus and fuzz-compile-run.
# The decoders' corpus (tests/fuzz/corpus-decode) goes through decode-tool
# (when built) with the requests fuzz-decode makes: header only, whole RGB,
# gray, 16 bits, a scaled region; exit 0 or 1, no sanitizer report, and the
# valid seeds (any name not starting with bad-, truncated, not- or crash-)
# must decode.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup fuzz-replay
corpus="$TS_SRCDIR/tests/fuzz/corpus-compile"
[ -x "$TSRUN" ] || skip "$TSRUN not built"
n=0
for f in "$corpus"/*; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	# Run from an empty directory: relative data paths in the inputs
	# resolve to nothing there.
	cp "$f" "$T/input.ts"
	(cd "$T" && timeout 20 "$TSRUN" check input.ts) >"$T/out" 2>&1
	rc=$?
	# A sanitizer may report and still exit 1 (UBSan's default exit
	# code), so its report counts as a failure whatever the status.
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
		fail "$(basename "$f"): exit $rc"
		tail -n 20 "$T/out"
	elif grep -q -e 'runtime error:' -e 'Sanitizer' "$T/out"; then
		fail "$(basename "$f"): sanitizer report"
		tail -n 20 "$T/out"
	fi
done
echo "fuzz-replay: $n inputs through tsrun check, $([ $failed -eq 0 ] && echo ok || echo FAILED)"
[ "$n" -gt 0 ] || { fail "no inputs in $corpus"; finish; }

# check_run NAME CMD...: run one decode-tool command; 0 or 1 is an answer,
# anything else (signal, sanitizer abort) or a sanitizer report a failure.
# Sets $rc.
check_run() {
	name=$1
	shift
	timeout 20 "$@" >"$T/out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
		fail "decode $name ($*): exit $rc"
		tail -n 20 "$T/out"
	elif grep -q -e 'runtime error:' -e 'Sanitizer' "$T/out"; then
		fail "decode $name ($*): sanitizer report"
		tail -n 20 "$T/out"
	fi
}

tool=${TS_TOOL_DECODE_TOOL:-}
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
	echo "fuzz-replay: decode-tool not built, decode corpus not replayed"
	finish
fi
nd=0
for f in "$TS_SRCDIR"/tests/fuzz/corpus-decode/*; do
	[ -f "$f" ] || continue
	nd=$((nd + 1))
	b=$(basename "$f")
	case $b in
	bad-* | truncated* | not-* | crash-*) must=0 ;;
	*) must=1 ;;
	esac
	check_run "$b" "$tool" --info "$f"
	if [ "$rc" -ne 0 ]; then
		[ "$must" -eq 0 ] || { fail "$b: header refused"; cat "$T/out"; }
		continue
	fi
	# The seeds are 32x24 or 17x9: a region inside both, scaled down to 3x2
	# (JPEG decodes it at a DCT scale below 8/8).
	for req in "" "--gray" "--depth 16" "roi 2 1 12 6 3 2"; do
		case $req in
		roi*) set -- "$f" $req "$T/o.pnm" ;;
		*) set -- $req "$f" "$T/o.pnm" ;;
		esac
		check_run "$b" "$tool" "$@"
		if [ "$rc" -ne 0 ] && [ "$must" -eq 1 ]; then
			fail "$b ($req) did not decode"
			cat "$T/out"
		fi
	done
done
echo "fuzz-replay: $nd images through decode-tool, $([ $failed -eq 0 ] && echo ok || echo FAILED)"
[ "$nd" -gt 0 ] || fail "no images in $TS_SRCDIR/tests/fuzz/corpus-decode"
finish
