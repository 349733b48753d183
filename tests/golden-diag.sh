#!/bin/sh
# golden-diag.sh - every tests/golden/check/NAME.ts, checked with
# `tsrun check NAME.ts` from inside that folder, must print exactly
# NAME.err on stderr and exit 1 (or 0 when NAME.err is empty).
# UPDATE=1 rewrites the .err files from the current output instead.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup golden-diag
tmp=$T

dir="$TS_SRCDIR/tests/golden/check"
cd "$dir" || { fail "cannot enter $dir"; finish; }

n=0
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
		fail "$name: no $name.err (run with UPDATE=1 to create it)"
		continue
	fi
	want_rc=1
	[ -s "$name.err" ] || want_rc=0
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$name: exit status $rc, expected $want_rc"
		cat "$tmp/$name.err"
	elif ! cmp -s "$name.err" "$tmp/$name.err"; then
		fail "$name: stderr differs from $name.err"
		diff -u "$name.err" "$tmp/$name.err"
	fi
done

# tests/golden/sources/NAME.ts: `tsrun check --sources NAME.ts` opens the
# source as tsrun run does and must print exactly NAME.err (exit 1, or 0
# when it is empty); `tsrun graph NAME.ts` only looks whether the folder
# is there and must print exactly NAME.graph on stderr (nothing when there
# is no NAME.graph), exit 0.
cd "$TS_SRCDIR/tests/golden/sources" || { fail "cannot enter $TS_SRCDIR/tests/golden/sources"; finish; }
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
		fail "sources/$name: check --sources exit status $rc, expected $want_rc"
		cat "$tmp/$name.err"
	elif ! cmp -s "$name.err" "$tmp/$name.err"; then
		fail "sources/$name: check --sources stderr differs from $name.err"
		diff -u "$name.err" "$tmp/$name.err"
	elif [ "$grc" -ne 0 ]; then
		fail "sources/$name: graph exited $grc, expected 0 (a warning only)"
	elif ! cmp -s "${name}.graph" "$tmp/$name.graph" 2>/dev/null &&
		! { [ ! -f "$name.graph" ] && [ ! -s "$tmp/$name.graph" ]; }; then
		fail "sources/$name: graph stderr differs from $name.graph"
		diff -u "$name.graph" "$tmp/$name.graph" 2>/dev/null || cat "$tmp/$name.graph"
	fi
done
# Without --sources, check does not open them: the same files are valid.
NO_COLOR=1 "$TSRUN" check folder-missing.ts >/dev/null 2>"$tmp/nosrc"
[ $? -eq 0 ] && [ ! -s "$tmp/nosrc" ] ||
	fail "check without --sources opened the source"
cd "$dir" || { fail "cannot enter $dir"; finish; }

# Exit statuses beyond the golden files: usage and unreadable files are 2,
# one invalid file among valid ones makes the whole run 1.
"$TSRUN" check >/dev/null 2>&1
[ $? -eq 2 ] || fail "'tsrun check' without FILE should exit 2"
"$TSRUN" check "$tmp/does-not-exist.ts" >/dev/null 2>&1
[ $? -eq 2 ] || fail "unreadable file should exit 2"
"$TSRUN" check --bogus valid.ts >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option should exit 2"
NO_COLOR=1 "$TSRUN" check valid.ts unknown-operator.ts valid.ts >/dev/null 2>"$tmp/multi"
[ $? -eq 1 ] || fail "one invalid file among valid ones should exit 1"
cmp -s "$tmp/multi" unknown-operator.err || fail "several files: stderr differs"

echo "golden-diag: $n golden cases"
finish
