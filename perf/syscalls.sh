#!/bin/sh
# syscalls.sh - system calls per image of `tsrun bench`: the io_uring reader
# against plain reads (TSRUN_NO_URING=1), side by side, A B A B ..., on the
# same data set, under strace -f -c. Prints each side's calls per image by
# name (median over rounds) and the ratio plain/io_uring of the totals.
#
#   perf/syscalls.sh [--images N] [--rounds N] [--threads N] [--data DIR]
#
# Needs strace (apt-get install strace). Counts, not times: strace slows
# both sides alike and the counts do not depend on the machine's load.
set -eu
images=300 rounds=3 threads=1 data=""
while [ $# -gt 0 ]; do
	case "$1" in
	--images) images=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--data) data=$2; shift 2 ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "syscalls.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
command -v strace >/dev/null || { echo "syscalls.sh: strace is not installed (apt-get install strace)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
# The release build's tsrun (perf/benchlib.py's choice, as compare.py's).
tsrun=${TSRUN:-$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import benchlib; print(benchlib.find_build_file("src/tsrun"))' "$root/perf")} || exit 2
[ -x "$tsrun" ] || { echo "syscalls.sh: no built tsrun (meson compile -C build, or TSRUN=...)" >&2; exit 2; }
# --data: any ImageFolder as it is; otherwise a data set made here.
if [ -n "$data" ] && [ -d "$data" ]; then
	[ -d "$data/train" ] && data="$data/train"
else
	[ -n "$data" ] || data="${TMPDIR:-/tmp}/tsrun-bench-data-$images"
	"$tsrun" make-dataset "$data" --images "$images" --quiet >/dev/null
	data="$data/train"
fi
images=$(find "$data" -type f \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \) | wc -l)
[ "$images" -gt 0 ] || { echo "syscalls.sh: no .jpg, .jpeg or .png files under $data" >&2; exit 2; }
T=$(mktemp -d /tmp/tsrun-syscalls.XXXXXX)
trap 'rm -rf "$T"' EXIT
cat >"$T/p.ts" <<EOT
pipeline p = folder("$data") | decode(rgb) | resize(64, 64) | to(uint8, nhwc) | batch(32)
serve p { epochs = 1  threads = $threads }
EOT
# side NAME ROUND: strace one bench; "name count" lines per call name.
side() {
	if [ "$1" = plain ]; then
		TSRUN_NO_URING=1 strace -f -c -o "$T/raw" "$tsrun" bench "$T/p.ts" >"$T/out" 2>&1
	else
		strace -f -c -o "$T/raw" "$tsrun" bench "$T/p.ts" >"$T/out" 2>&1
	fi
	grep -q "^images: $images$" "$T/out" || { echo "syscalls.sh: bench failed: $(cat "$T/out")" >&2; exit 1; }
	awk '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { print $NF, $4 }' "$T/raw" >"$T/$1.$2"
}
r=1
while [ "$r" -le "$rounds" ]; do
	side uring "$r"
	side plain "$r"
	r=$((r + 1))
done
# Median per name over rounds, per image.
report() {
	cat "$T/$1".* | awk -v img="$images" -v rounds="$rounds" '
		{ v[$1] = v[$1] " " $2 }
		END {
			for (k in v) {
				n = split(v[k], a, " ")
				while (n < rounds) a[++n] = 0
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
					if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				m = a[int((n + 1) / 2)]
				printf "%s %.3f\n", k, m / img
			}
		}' | sort -k2 -nr >"$T/$1.med"
	total=$(awk '{ s += $2 } END { printf "%.2f", s }' "$T/$1.med")
	echo "$2: $total calls per image"
	head -6 "$T/$1.med" | awk '{ printf "  %-16s %.2f\n", $1, $2 }'
}
echo "tsrun bench, $images images, 1 epoch, $threads thread(s), $rounds rounds (median):"
report uring "io_uring reader"
report plain "plain reads (TSRUN_NO_URING=1)"
awk 'NR == FNR { a += $2; next } { b += $2 } END { printf "ratio plain / io_uring: %.2f\n", b / a }' \
	"$T/uring.med" "$T/plain.med"
