#!/bin/sh
# scripts-test.sh - the newcomer's way through the tests, as README says:
# its first section holds exactly two commands (./scripts/quickstart and
# ./scripts/test, the full run CI runs), a paragraph after it names
# ./scripts/test --quick; and scripts/test does what they say: without an
# option it runs every phase (release, valgrind, aarch64, asan), with
# --quick the release build's suites alone, an unknown option is a usage
# error (exit 2). Phases are read with --list, which runs nothing.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup scripts-test
readme=$TS_SRCDIR/README.md
st=$TS_SRCDIR/scripts/test

# The first fenced block of the README, and the text up to the next heading.
awk '/^```/ { if (inb) exit; inb = 1; next } inb' "$readme" >"$T/first"
printf './scripts/quickstart\n./scripts/test\n' >"$T/want"
if cmp -s "$T/first" "$T/want"; then
	pass "README's first block is the two commands"
else
	fail "README's first block is not exactly ./scripts/quickstart and ./scripts/test: $(cat "$T/first")"
fi
awk '/^```/ { n++; next } n == 2 && /^## / { exit } n == 2' "$readme" >"$T/after"
if grep -q '`./scripts/test --quick`' "$T/after"; then
	pass "README names ./scripts/test --quick after them"
else
	fail "README's first section does not name ./scripts/test --quick after the two commands"
fi

got=$(sh "$st" --list | tr '\n' ' ')
[ "$got" = "release valgrind aarch64 asan " ] && pass "scripts/test: every phase ($got)" ||
	fail "scripts/test --list: '$got', want every phase"
got=$(sh "$st" --quick --list | tr '\n' ' ')
[ "$got" = "release " ] && pass "scripts/test --quick: the release build alone" ||
	fail "scripts/test --quick --list: '$got', want release alone"
sh "$st" --bogus >"$T/out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "unknown option '--bogus'" "$T/out" && grep -q -- "--quick" "$T/out" &&
	pass "scripts/test --bogus: a usage error" || fail "scripts/test --bogus: exit $rc: $(cat "$T/out")"
finish
