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

# The launch recipes as printed: every torchrun line of README,
# tensorsocket(7) and the examples carries -r 1 -t 1, which Debian's
# torch 1.13 under Python 3.11 needs (its default -r 0 fails with an
# AttributeError); tests/jobs.py runs train_ddp.py so.
for f in README.md man/tensorsocket.7 examples/ddp.ts examples/ddp-host.sh \
	examples/ddp-nodes.sh examples/train_ddp.py; do
	# continued lines joined ("\" or mdoc's "\e" at the end)
	sed -e 's/\\-/-/g' -e 's/\\e$/\\/' -e ':a' -e '/\\$/N; s/\\\n//; ta' "$TS_SRCDIR/$f" |
		grep -E '(^|[ #])torchrun --[a-z]|-m torch\.distributed\.run ' |
		grep -v '^\.Ic ' >"$T/launch"
	[ -s "$T/launch" ] || { fail "$f: no torchrun line"; continue; }
	if grep -v -- '-r 1 -t 1' "$T/launch" >"$T/bad"; then
		fail "$f: torchrun without -r 1 -t 1: $(cat "$T/bad")"
	else
		pass "$f: torchrun with -r 1 -t 1"
	fi
done
grep -q '"-r", "1", "-t", "1"' "$TS_SRCDIR/tests/jobs.py" ||
	fail "tests/jobs.py no longer runs torchrun with -r 1 -t 1"
finish
