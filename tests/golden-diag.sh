#!/bin/sh
# golden-diag.sh - every tests/golden/check/NAME.ts, checked with
# `tsrun check NAME.ts` from inside that folder, must print exactly
# NAME.err on stderr and exit 1 (or 0 when NAME.err is empty).
# UPDATE=1 rewrites the .err files from the current output instead.
set -u
: "${TSRUN:?TSRUN must name the tsrun binary}"
: "${TS_SRCDIR:?TS_SRCDIR must name the source root}"

dir="$TS_SRCDIR/tests/golden/check"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$dir" || exit 1

n=0
failed=0
for ts in *.ts; do
	name=${ts%.ts}
	n=$((n + 1))
	NO_COLOR=1 "$TSRUN" check "$ts" >"$tmp/out" 2>"$tmp/$name.err"
	rc=$?
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$tmp/$name.err" "$name.err"
		echo "updated $name.err (exit $rc)"
		continue
	fi
	if [ ! -f "$name.err" ]; then
		echo "FAIL $name: no $name.err (run with UPDATE=1 to create it)"
		failed=$((failed + 1))
		continue
	fi
	want_rc=1
	[ -s "$name.err" ] || want_rc=0
	if [ "$rc" -ne "$want_rc" ]; then
		echo "FAIL $name: exit status $rc, expected $want_rc"
		cat "$tmp/$name.err"
		failed=$((failed + 1))
	elif ! cmp -s "$name.err" "$tmp/$name.err"; then
		echo "FAIL $name: stderr differs from $name.err"
		diff -u "$name.err" "$tmp/$name.err"
		failed=$((failed + 1))
	fi
done

# tests/golden/sources/NAME.ts: `tsrun check --sources NAME.ts` opens the
# source as tsrun run does and must print exactly NAME.err (exit 1, or 0
# when it is empty); `tsrun graph NAME.ts` only looks whether the folder
# is there and must print exactly NAME.graph on stderr (nothing when there
# is no NAME.graph), exit 0.
cd "$TS_SRCDIR/tests/golden/sources" || exit 1
for ts in *.ts; do
	name=${ts%.ts}
	n=$((n + 1))
	NO_COLOR=1 "$TSRUN" check --sources "$ts" >"$tmp/out" 2>"$tmp/$name.err"
	rc=$?
	NO_COLOR=1 "$TSRUN" graph "$ts" >"$tmp/out" 2>"$tmp/$name.graph"
	grc=$?
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$tmp/$name.err" "$name.err"
		if [ -s "$tmp/$name.graph" ]; then cp "$tmp/$name.graph" "$name.graph"; else rm -f "$name.graph"; fi
		echo "updated sources/$name.err (exit $rc)"
		continue
	fi
	want_rc=1
	[ -s "$name.err" ] || want_rc=0
	if [ "$rc" -ne "$want_rc" ]; then
		echo "FAIL sources/$name: check --sources exit status $rc, expected $want_rc"
		cat "$tmp/$name.err"
		failed=$((failed + 1))
	elif ! cmp -s "$name.err" "$tmp/$name.err"; then
		echo "FAIL sources/$name: check --sources stderr differs from $name.err"
		diff -u "$name.err" "$tmp/$name.err"
		failed=$((failed + 1))
	elif [ "$grc" -ne 0 ]; then
		echo "FAIL sources/$name: graph exited $grc, expected 0 (a warning only)"
		failed=$((failed + 1))
	elif ! cmp -s "${name}.graph" "$tmp/$name.graph" 2>/dev/null &&
		! { [ ! -f "$name.graph" ] && [ ! -s "$tmp/$name.graph" ]; }; then
		echo "FAIL sources/$name: graph stderr differs from $name.graph"
		diff -u "$name.graph" "$tmp/$name.graph" 2>/dev/null || cat "$tmp/$name.graph"
		failed=$((failed + 1))
	fi
done
# Without --sources, check does not open them: the same files are valid.
NO_COLOR=1 "$TSRUN" check folder-missing.ts >/dev/null 2>"$tmp/nosrc"
[ $? -eq 0 ] && [ ! -s "$tmp/nosrc" ] ||
	{ echo "FAIL: check without --sources opened the source"; failed=$((failed + 1)); }
cd "$dir" || exit 1

# Exit statuses beyond the golden files: usage and unreadable files are 2,
# one invalid file among valid ones makes the whole run 1.
"$TSRUN" check >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: 'tsrun check' without FILE should exit 2"; failed=$((failed + 1)); }
"$TSRUN" check "$tmp/does-not-exist.ts" >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: unreadable file should exit 2"; failed=$((failed + 1)); }
"$TSRUN" check --bogus valid.ts >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: unknown option should exit 2"; failed=$((failed + 1)); }
NO_COLOR=1 "$TSRUN" check valid.ts unknown-operator.ts valid.ts >/dev/null 2>"$tmp/multi"
[ $? -eq 1 ] || { echo "FAIL: one invalid file among valid ones should exit 1"; failed=$((failed + 1)); }
cmp -s "$tmp/multi" unknown-operator.err || { echo "FAIL: several files: stderr differs"; failed=$((failed + 1)); }

echo "$n golden cases, $failed failed"
[ "$failed" -eq 0 ]
