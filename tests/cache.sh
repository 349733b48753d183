#!/bin/sh
# The decoded cache (tsrun-pipeline(5), Decoded cache) through the CLI:
# `tsrun bench`'s digest is the same with the cache as without it for the
# train and val recipes, gray, PNG, views, tiles of a fused decode, a
# plugin, a device(cuda) pipeline's CPU part, tiles decoded in bands
# (which bypass it), for 1 and 2 threads and from a --start position; the
# cache holds every item it has room for, and the epochs after the first
# hit it; tsrun graph,
# the status file, tsrun stat and the summary show it; a refused lock is
# said. The uncached digests are those of the paths the conformance
# suites compare with torchvision (pipeline-torch.py, test-augment).
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup cache
dir=$T
PY=/usr/bin/python3

out=$(timeout 120 "$TSRUN" make-dataset "$dir/ds" --images 20 --classes 2 2>&1) || {
	case $out in
	*mate-backgrounds*|*TSRUN_PHOTOS*) skip "no photos: $out" ;;
	*) fail "make-dataset: $out"; finish ;;
	esac
}
# A PNG copy of 12 of them (libpng's path), when PIL is there.
png=no
if [ -x "$PY" ] && "$PY" -c "import PIL" 2>/dev/null; then
	"$PY" - "$dir/ds/train" "$dir/png" <<'EOT' && png=yes
import glob, os, sys
from PIL import Image
for i, f in enumerate(sorted(glob.glob(sys.argv[1] + "/*/*.jpg"))[:12]):
    d = os.path.join(sys.argv[2], "c%d" % (i % 2))
    os.makedirs(d, exist_ok=True)
    Image.open(f).save(os.path.join(d, "%02d.png" % i))
EOT
fi
cp "$TS_BUILDDIR/examples/plugins/cloudmask.so" "$dir/" 2>/dev/null || :

# pipe NAME SOURCE STAGES BATCH: a pipeline file $dir/NAME.ts
pipe() {
	cat > "$dir/$1.ts" <<EOT
pipeline p = $2 | shuffle(seed = 11) | $3 | batch($4)
serve p { socket = "$dir/$1.sock" epochs = 3 threads = 2 ring = 4 batches }
EOT
}
ds='folder("ds/train")'
pipe train "$ds" 'decode(rgb) | random_resized_crop(224) | flip(horizontal) | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | to(float32, nchw)' 16
pipe val "$ds" 'decode(rgb) | resize(256) | center_crop(224) | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | to(float32, nchw)' 16
pipe gray "$ds" 'decode(gray) | random_resized_crop(96, scale = 0.3..1.0) | to(uint8, nhwc)' 8
pipe views "$ds" 'decode(rgb) | views(2 = random_resized_crop(64) | flip(horizontal) | to(uint8, nhwc), 1 = center_crop(96) | to(uint8, nhwc))' 4
pipe tiles "$ds" 'decode(rgb) | resize([128, 128]) | tile(64) | to(uint8, nhwc)' 8
pipe bands "$ds" 'decode(rgb) | tile(64) | to(uint8, nhwc)' 8
# device(cuda): bench runs its CPU part (the uint8 samples before it), as
# the embedding API does; the cache sits before the device stage.
pipe device "$ds" 'decode(rgb) | random_resized_crop(64) | flip(horizontal) | to(uint8, nhwc) | device(cuda, dtype = float16, mean = [0.5, 0.5, 0.5], std = [0.25, 0.25, 0.25])' 8
[ -f "$dir/cloudmask.so" ] &&
	pipe plugin "$ds" 'decode(gray) | center_crop(64) | plugin("cloudmask.so", threshold = 0.9, max_fraction = 0.9) | to(uint8, nhwc)' 4
[ $png = yes ] && pipe png 'folder("png", ext = [".png"])' 'decode(rgb) | random_resized_crop(128) | to(uint8, nhwc)' 4

# bench NAME OUT ARGS...: tsrun bench of NAME into OUT; its digest line
bench() {
	name=$1 o=$2; shift 2
	timeout 120 "$TSRUN" bench "$dir/$name.ts" --epochs 3 "$@" > "$o" 2>&1 ||
		fail "$name: tsrun bench $*: $(cat "$o")"
	sed -n 's/^digest: //p' "$o"
}

for name in train val gray views tiles bands device plugin png; do
	[ -f "$dir/$name.ts" ] || { echo "note: $name not run (no plugin or PIL)"; continue; }
	want=$(bench "$name" "$dir/$name.off" --cache off)
	[ -n "$want" ] || continue
	for t in 1 2; do
		got=$(bench "$name" "$dir/$name.on$t" --cache 64MiB --threads "$t")
		[ "$got" = "$want" ] || fail "$name: digest $got with the cache ($t threads), $want without"
	done
	tail=$(bench "$name" "$dir/$name.st0" --cache off --start 1:5)
	got=$(bench "$name" "$dir/$name.st1" --cache 64MiB --start 1:5)
	[ "$got" = "$tail" ] || fail "$name: from 1:5 digest $got with the cache, $tail without"
	hits=$(sed -n 's/^cache_hits: \([0-9]*\) of \([0-9]*\).*/\1 \2/p' "$dir/$name.on2")
	items=$(sed -n 's/^cache: .* \([0-9]*\) items.*/\1/p' "$dir/$name.on2")
	if [ "$name" = bands ]; then
		# decoded a band of rows at a time: no cache (and no lines)
		[ -z "$hits" ] || fail "bands: a cache for a banded tile plan: $hits"
		pass "$name: same digest, cache bypassed (tiles in bands)"
		continue
	fi
	set -- $hits
	n=$(ls "$dir"/ds/train/*/* | wc -l)
	[ $name = png ] && n=12
	[ "$items" = "$n" ] || fail "$name: the cache holds '$items' items of $n"
	[ "${2:-0}" -eq $((3 * n)) ] || fail "$name: ${2:-?} lookups for $((3 * n)) samples"
	# every later lookup of a fixed decode hits (but for an item looked
	# up while another worker still admits it); of a crop, most
	min=$((2 * n - 2))
	case $name in train|gray|views|png) min=$((3 * n / 2)) ;;
	# a 64 crop of these photos spreads over scales 1/8 to 4/8: the
	# frame's scale serves about half of them
	device) min=$((2 * n / 3)) ;;
	esac
	[ "${1:-0}" -ge $min ] || fail "$name: ${1:-0} hits, fewer than $min"
	pass "$name: same digest with and without the cache (1, 2 threads, from 1:5); $items items, $1 of $2 lookups hit"
done

# Half the set: 5 MiB holds some of the 20 photos (about 450 KiB each);
# the rest decode every epoch, the stream the same.
want=$(sed -n 's/^digest: //p' "$dir/train.off")
got=$(bench train "$dir/train.half" --cache 5MiB)
items=$(sed -n 's/^cache: .* \([0-9]*\) items.*/\1/p' "$dir/train.half")
[ "$got" = "$want" ] || fail "train: digest $got with an 8 MiB cache, $want without"
[ "${items:-0}" -gt 0 ] && [ "${items:-0}" -lt 20 ] ||
	fail "train: a 5 MiB cache holds '$items' of 20 items"
pass "train: a 5 MiB cache holds $items of 20 items, same digest"

# A file whose header reads but whose pixels are cut short (its frame's
# bytes reserved, then dropped when the decode fails), under on_error =
# skip: skipped in every epoch as without the cache, the stream the same,
# every other item held.
mkdir -p "$dir/bad/c0" "$dir/bad/c1"
i=0
for f in "$dir"/ds/train/*/*; do
	cp "$f" "$dir/bad/c$((i % 2))/$i.jpg"
	i=$((i + 1))
done
f=$(ls "$dir"/bad/c0/*.jpg | head -1)
head -c $(($(wc -c < "$f") / 2)) "$f" > "$dir/cut" && mv "$dir/cut" "$f"
pipe bad 'folder("bad")' 'decode(rgb) | random_resized_crop(96) | to(uint8, nhwc)' 4
sed -i 's/ring = 4 batches }/ring = 4 batches on_error = skip }/' "$dir/bad.ts"
want=$(bench bad "$dir/bad.off" --cache off)
for t in 1 2; do
	got=$(bench bad "$dir/bad.on$t" --cache 64MiB --threads $t)
	items=$(sed -n 's/^cache: .* \([0-9]*\) items.*/\1/p' "$dir/bad.on$t")
	[ -n "$want" ] && [ "$got" = "$want" ] ||
		fail "bad file: digest '$got' with the cache ($t threads), '$want' without"
	[ "$items" = $((i - 1)) ] || fail "bad file: the cache holds '$items' items of $((i - 1)) good ones"
done
pass "a file that fails to decode: the same stream with the cache, $((i - 1)) items held"

# The workers' CPU split at the first epoch (bench's worker_cpu line):
# 3 epochs have some of each; 1 epoch has no later ones.
wc3=$(sed -n 's/^worker_cpu: first epoch \([0-9.]*\) s user \([0-9.]*\) s sys, later epochs \([0-9.]*\) s user \([0-9.]*\) s sys$/\1 \2 \3 \4/p' "$dir/train.on2")
timeout 120 "$TSRUN" bench "$dir/train.ts" --epochs 1 --cache 64MiB > "$dir/train.one" 2>&1 ||
	fail "train: 1 epoch: $(cat "$dir/train.one")"
wc1=$(sed -n 's/^worker_cpu: first epoch \([0-9.]*\) s user \([0-9.]*\) s sys, later epochs \([0-9.]*\) s user \([0-9.]*\) s sys$/\1 \2 \3 \4/p' "$dir/train.one")
echo "$wc3 $wc1" | awk 'NF != 8 || $1 + $2 <= 0 || $3 + $4 <= 0 || $5 + $6 <= 0 || $7 + $8 != 0 { exit 1 }' ||
	fail "worker_cpu: 3 epochs '$wc3', 1 epoch '$wc1'"
pass "worker_cpu: first and later epochs apart (3 epochs: $wc3; 1 epoch: $wc1)"

# A lock refused (the testing hook stands in for RLIMIT_MEMLOCK): said.
TSRUN_CACHE_NOLOCK=1 bench val "$dir/val.nolock" --cache 64MiB > /dev/null
grep -q "^cache: .*not locked" "$dir/val.nolock" || fail "an unlocked cache is not said: $(grep cache "$dir/val.nolock")"
grep -q "^cache: .*, locked" "$dir/val.on2" || echo "note: the cache was not locked here (RLIMIT_MEMLOCK)"

# tsrun graph: in the memory figure, and what an entry holds.
sed -e 's/ring = 4 batches }/ring = 4 batches cache = 64 MiB }/' -e 's/train.sock/served.sock/' \
	-e 's/epochs = 3/epochs = 8/' \
	"$dir/train.ts" > "$dir/served.ts"
g=$("$TSRUN" graph "$dir/served.ts")
echo "$g" | grep -q "^memory: .* + cache 64 MiB$" || fail "graph: no cache in the memory line: $g"
echo "$g" | grep -q "^cache: 64 MiB of decoded pixels" || fail "graph: no cache line: $g"
echo "$g" | grep -q "its whole image before random_resized_crop" || fail "graph: not what an entry holds: $g"
pass "graph shows the cache"

# tsrun run: the status file, tsrun stat and the summary.
"$TSRUN" run "$dir/served.ts" 2> "$dir/run.err" &
run_pid=$!
pids="$pids $run_pid"
wait_for 30 test -S "$dir/served.sock" || fail "run: no socket: $(cat "$dir/run.err")"
"$TSRUN" consume "$dir/served.sock" --delay-ms 300 > "$dir/consume.out" 2>&1 &
cons=$!
pids="$pids $cons"
# into the third epoch: every item held
wait_for 60 grep -qs '"epoch":[2-6],' "$dir/served.sock.status.json" ||
	fail "run: never reached epoch 2: $(cat "$dir/served.sock.status.json" 2>/dev/null)"
sleep 0.5
st=$("$TSRUN" stat "$dir/served.sock" 2>&1)
echo "$st" | grep -q "^cache: *20 items in .* of 64.0 MiB" || fail "stat: no cache line: $st"
grep -q '"cache_bytes":67108864,' "$dir/served.sock.status.json" &&
	grep -q '"cache_items":20,' "$dir/served.sock.status.json" ||
	fail "status file: no cache figures: $(cat "$dir/served.sock.status.json")"
wait "$cons" || fail "consume: $(cat "$dir/consume.out")"
wait "$run_pid" || fail "run: $(cat "$dir/run.err")"
grep -q "^tsrun: cache: 20 items in .* lookups hit" "$dir/run.err" || fail "summary: no cache line: $(cat "$dir/run.err")"
pass "status file, tsrun stat and the summary show the cache"
finish
