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
set -u
corpus="${TS_SRCDIR:?}/tests/fuzz/corpus-compile"

: "${TSRUN:?}"
if [ ! -x "$TSRUN" ]; then
	echo "fuzz-replay: $TSRUN not built" >&2
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for f in "$corpus"/*; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	# Run from an empty directory: relative data paths in the inputs
	# resolve to nothing there.
	cp "$f" "$tmp/input.ts"
	(cd "$tmp" && timeout 20 "$TSRUN" check input.ts) >"$tmp/out" 2>&1
	rc=$?
	# A sanitizer may report and still exit 1 (UBSan's default exit
	# code), so its report counts as a failure whatever the status.
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
		echo "FAIL: $(basename "$f"): exit $rc" >&2
		tail -n 20 "$tmp/out" >&2
		fail=1
	elif grep -q -e 'runtime error:' -e 'Sanitizer' "$tmp/out"; then
		echo "FAIL: $(basename "$f"): sanitizer report" >&2
		tail -n 20 "$tmp/out" >&2
		fail=1
	fi
done
echo "fuzz-replay: $n inputs through tsrun check, $([ $fail -eq 0 ] && echo ok || echo FAILED)"
[ "$n" -gt 0 ] || exit 1

# check_run NAME CMD...: run one decode-tool command; 0 or 1 is an answer,
# anything else (signal, sanitizer abort) or a sanitizer report a failure.
# Sets $rc.
check_run() {
	name=$1
	shift
	timeout 20 "$@" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
		echo "FAIL: decode $name ($*): exit $rc" >&2
		tail -n 20 "$tmp/out" >&2
		fail=1
	elif grep -q -e 'runtime error:' -e 'Sanitizer' "$tmp/out"; then
		echo "FAIL: decode $name ($*): sanitizer report" >&2
		tail -n 20 "$tmp/out" >&2
		fail=1
	fi
}

tool=${TS_TOOL_DECODE_TOOL:-}
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
	echo "fuzz-replay: decode-tool not built, decode corpus not replayed"
	exit $fail
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
		[ "$must" -eq 0 ] || { echo "FAIL: $b: header refused" >&2; cat "$tmp/out" >&2; fail=1; }
		continue
	fi
	# The seeds are 32x24 or 17x9: a region inside both, scaled down to 3x2
	# (JPEG decodes it at a DCT scale below 8/8).
	for req in "" "--gray" "--depth 16" "roi 2 1 12 6 3 2"; do
		case $req in
		roi*) set -- "$f" $req "$tmp/o.pnm" ;;
		*) set -- $req "$f" "$tmp/o.pnm" ;;
		esac
		check_run "$b" "$tool" "$@"
		if [ "$rc" -ne 0 ] && [ "$must" -eq 1 ]; then
			echo "FAIL: $b ($req) did not decode" >&2
			cat "$tmp/out" >&2
			fail=1
		fi
	done
done
echo "fuzz-replay: $nd images through decode-tool, $([ $fail -eq 0 ] && echo ok || echo FAILED)"
[ "$nd" -gt 0 ] || exit 1
exit $fail
