#!/bin/sh
# fuzz-replay.sh - replay the compiler's fuzz corpus through the CLI: each
# input goes through `tsrun check`, which must exit 0 (valid) or 1
# (invalid), never crash (signal, sanitizer report) and never hang. In a
# sanitizer build this is the CLI's side of the fuzz suite; the libFuzzer
# target itself (fuzz build) is the tests fuzz-corpus and fuzz-compile-run.
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
exit $fail
