#!/bin/sh
# waits.sh - what the trainers' wait accounting costs (tensorsocket(7), Who
# waits): a `tsrun consume` trainer with it (the default) and without it
# (TSRUN_NO_WAIT_ACCOUNTING=1), A B A B ..., against one `tsrun run` each
# time, on tiny synthetic samples so that the per-batch path is what is
# timed: batch 1 (the worst case, one accounting per sample) and batch 64.
# Prints per side and batch size the trainer's images/s and CPU per batch
# (median over pairs), each pair with both ratios and the other load of
# both its sides (the cores busy with anything else), and the median
# with/without ratios (images/s, trainer CPU per batch) with their ranges.
#
#   perf/waits.sh [--samples N] [--pairs N] [--batches "1 64"]
#
# The producer's own accounting (two clock reads per wait for a free slot,
# none while one is free) is on in both sides: it has no switch.
set -eu
samples=20000000 pairs=5 batches="1 64"
while [ $# -gt 0 ]; do
	case "$1" in
	--samples) samples=$2; shift 2 ;;
	--pairs) pairs=$2; shift 2 ;;
	--batches) batches=$2; shift 2 ;;
	-h|--help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "waits.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
# The release build's tsrun (perf/benchlib.py's choice, as compare.py's).
tsrun=${TSRUN:-$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import benchlib; print(benchlib.find_build_file("src/tsrun"))' "$root/perf")} || exit 2
[ -x "$tsrun" ] || { echo "waits.sh: no built tsrun (meson compile -C build, or TSRUN=...)" >&2; exit 2; }
T=$(mktemp -d /tmp/tsrun-waits.XXXXXX)
run=""
trap '[ -z "$run" ] || kill "$run" 2>/dev/null; rm -rf "$T"' EXIT

# busy CPU seconds of the whole machine (/proc/stat: user nice system irq
# softirq steal), and CPU seconds of this shell's reaped children (times,
# run in this shell: a $(...) subshell has reaped none)
hz=$(getconf CLK_TCK)
busy() { awk -v hz="$hz" '$1 == "cpu" { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat; }
kids() {
	awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } print t }' "$T/times"
}

# side NAME BATCH PAIR: one producer, one trainer; "images/s cpu_us_per_batch
# other_load", other_load being the cores busy with anything else than the
# side's two processes over its wall time (perf/benchlib.py's LoadMeter)
side() {
	times >"$T/times"; b0=$(busy) k0=$(kids) t0=$(date +%s.%N)
	cat >"$T/p.ts" <<EOT
pipeline p = synthetic(size = 4, count = $samples) | to(uint8, nhwc) | batch($2)
serve p { socket = "$T/s.sock"  epochs = 1  ring = 64 batches  threads = 1 }
EOT
	rm -f "$T/s.sock"
	"$tsrun" run "$T/p.ts" --wait 1 --quiet 2>"$T/run.err" &
	run=$!
	i=0
	while [ ! -S "$T/s.sock" ] && [ "$i" -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	if [ "$1" = without ]; then
		TSRUN_NO_WAIT_ACCOUNTING=1 "$tsrun" consume "$T/s.sock" --batch "$2" >"$T/out" 2>&1
	else
		"$tsrun" consume "$T/s.sock" --batch "$2" >"$T/out" 2>&1
	fi
	wait "$run" || { echo "waits.sh: tsrun run failed: $(cat "$T/run.err")" >&2; exit 1; }
	run=""
	grep -q "^images: $samples$" "$T/out" || { echo "waits.sh: consume failed: $(cat "$T/out")" >&2; exit 1; }
	times >"$T/times"; b1=$(busy) k1=$(kids) t1=$(date +%s.%N)
	other=$(awk -v x="$b0 $b1 $k0 $k1 $t0 $t1" 'BEGIN {
		split(x, v, " "); o = (v[2] - v[1]) - (v[4] - v[3]); if (o < 0) o = 0
		printf "%.2f", o / (v[6] - v[5]) }')
	awk -v b="$(sed -n 's/^batches: //p' "$T/out")" -v o="$other" '
		/^images\/s:/ { r = $2 } /^cpu:/ { c = $2 }
		END { printf "%s %.3f %s\n", r, c * 1e6 / b, o }' "$T/out" >>"$T/$1.$2"
}

# median of the lines of stdin (one number each)
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf "%-6s %-8s %12s %14s\n" batch side "images/s" "cpu us/batch"
for b in $batches; do
	p=1
	while [ "$p" -le "$pairs" ]; do
		# A B, then B A: neither side always runs first
		if [ $((p % 2)) -eq 1 ]; then side with "$b" "$p"; side without "$b" "$p"
		else side without "$b" "$p"; side with "$b" "$p"; fi
		p=$((p + 1))
	done
	for s in with without; do
		printf "%-6s %-8s %12s %14s\n" "$b" "$s" "$(cut -d' ' -f1 "$T/$s.$b" | median)" \
			"$(cut -d' ' -f2 "$T/$s.$b" | median)"
	done
	# per pair: images/s with / without (pair k is line k of each file), and
	# the other load of both sides
	paste -d' ' "$T/with.$b" "$T/without.$b" | awk '{ print $1 / $4 }' >"$T/ratio.$b"
	paste -d' ' "$T/with.$b" "$T/without.$b" | awk -v b="$b" '{
		printf "%-6s pair %d: with %s images/s, without %s, ratio %.3f; cpu us/batch %s / %s, ratio %.3f; other load %s / %s cores\n",
			b, NR, $1, $4, $1 / $4, $2, $5, ($5 > 0 ? $2 / $5 : 0), $3, $6 }'
	printf "%-6s other load over all sides: %s to %s cores\n" "$b" \
		"$(cut -d' ' -f3 "$T/with.$b" "$T/without.$b" | sort -g | head -1)" \
		"$(cut -d' ' -f3 "$T/with.$b" "$T/without.$b" | sort -g | tail -1)"
	printf "%-6s with/without images/s: median %s, range %s to %s over %d pairs\n" "$b" \
		"$(median <"$T/ratio.$b")" "$(sort -g "$T/ratio.$b" | head -1)" \
		"$(sort -g "$T/ratio.$b" | tail -1)" "$pairs"
	paste -d' ' "$T/with.$b" "$T/without.$b" | awk '$5 > 0 { print $2 / $5 }' >"$T/cratio.$b"
	[ ! -s "$T/cratio.$b" ] || printf "%-6s with/without trainer cpu/batch: median %s, range %s to %s over %d pairs\n" "$b" \
		"$(median <"$T/cratio.$b")" "$(sort -g "$T/cratio.$b" | head -1)" \
		"$(sort -g "$T/cratio.$b" | tail -1)" "$(wc -l <"$T/cratio.$b")"
done
