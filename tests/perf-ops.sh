#!/bin/sh
# perf-ops.sh - perf/ops.sh, the operators table's driver, on a tiny size
# (8 images at the table's 224x224, one pair; erase and perspective
# name pixels of a 224 image): every row's pipeline checks and runs
# (a row that fails prints "failed" and the driver exits non-zero), one
# table line per row, and a row that is a chain (random_erasing after
# normalize) is measured against its own baseline chain. No figures: they
# are noise here; the lead measures on a quiet machine.
set -u
tsrun=${TSRUN:?TSRUN not set}
src=${TS_SRCDIR:?TS_SRCDIR not set}
out=$(mktemp "${TMPDIR:-/tmp}/ts-perf-ops.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
trap 'exit 1' INT TERM
fail=0
bad() { echo "FAIL: $*"; fail=1; }

timeout 240 sh "$src/perf/ops.sh" --tsrun "$tsrun" --images 8 --pairs 1 > "$out"
rc=$?
[ "$rc" -eq 0 ] || bad "perf/ops.sh exited $rc"
grep -n 'failed' "$out" && bad "rows failed"
# the rows of the script's table, and the table's lines
want=$(sed -n "/^	cat <<'EOF'$/,/^EOF$/p" "$src/perf/ops.sh" | grep -v "^#\|cat <<\|^EOF$" | grep -c .)
got=$(grep -c '^| .* ([0-9]*x[0-9]*) | -\{0,1\}[0-9.]* | ' "$out")
[ "$want" -gt 30 ] || bad "only $want rows found in perf/ops.sh"
[ "$got" -eq "$want" ] || bad "$got table lines for $want rows"
grep -q '^| random_erasing(0.25) (224x224) | -\{0,1\}[0-9.]* | ' "$out" || bad "no random_erasing line"
# NAME... keeps only the rows it names
timeout 60 sh "$src/perf/ops.sh" --tsrun "$tsrun" --images 8 --pairs 1 random_erasing invert > "$out" ||
	bad "perf/ops.sh random_erasing invert failed"
[ "$(grep -c '^| .* ([0-9]*x[0-9]*) | ' "$out")" -eq 2 ] || { bad "NAME... did not keep 2 rows"; cat "$out"; }
[ $fail -eq 0 ] && echo "ok: $want rows"
exit $fail
