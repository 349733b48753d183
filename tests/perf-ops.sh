#!/bin/sh
# perf-ops.sh - perf/ops.sh, the operators table's driver, on a tiny size
# (8 images at the table's 224x224, one pair; erase and perspective
# name pixels of a 224 image): every row's pipeline checks and runs
# (a row that fails prints "failed" and the driver exits non-zero), one
# table line per row, and a row that is a chain (random_erasing after
# normalize) is measured against its own baseline chain. No figures: they
# are noise here; the lead measures on a quiet machine.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup perf-ops
out="$T/out"

timeout 240 sh "$TS_SRCDIR/perf/ops.sh" --tsrun "$TSRUN" --images 8 --pairs 1 > "$out"
rc=$?
[ "$rc" -eq 0 ] || fail "perf/ops.sh exited $rc"
grep -n 'failed' "$out" && fail "rows failed"
# the rows of the script's table, and the table's lines
want=$(sed -n "/^	cat <<'EOF'$/,/^EOF$/p" "$TS_SRCDIR/perf/ops.sh" | grep -v "^#\|cat <<\|^EOF$" | grep -c .)
got=$(grep -c '^| .* ([0-9]*x[0-9]*) | -\{0,1\}[0-9.]* | ' "$out")
[ "$want" -gt 30 ] || fail "only $want rows found in perf/ops.sh"
[ "$got" -eq "$want" ] || fail "$got table lines for $want rows"
grep -q '^| random_erasing(0.25) (224x224) | -\{0,1\}[0-9.]* | ' "$out" || fail "no random_erasing line"
# NAME... keeps only the rows it names
timeout 60 sh "$TS_SRCDIR/perf/ops.sh" --tsrun "$TSRUN" --images 8 --pairs 1 random_erasing invert > "$out" ||
	fail "perf/ops.sh random_erasing invert failed"
[ "$(grep -c '^| .* ([0-9]*x[0-9]*) | ' "$out")" -eq 2 ] || { fail "NAME... did not keep 2 rows"; cat "$out"; }
echo "$want rows"
finish
