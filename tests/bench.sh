#!/bin/sh
# bench.sh - `tsrun bench`: every field of its report, the image and batch
# counts (epochs x data set size; batches never span epochs), --batches
# (also on a decode-only pipeline, whose samples are not batched),
# and bad files: under on_error = skip each one is counted (once a
# sample, also where its stand-in fails too) and reported with its path
# and the run succeeds; under on_error = fail it exits 1
# naming the path and the reason. A missing folder and bad options are
# refused with their own exit statuses.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup bench
dir=$T
make_dataset "$dir/ds" --images 30

# pipeline FILE FOLDER ON_ERROR
pipeline() {
	cat > "$1" <<EOF
pipeline val =
    folder("$2")
    | decode(rgb)
    | resize(80)
    | center_crop(64)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(8)

serve val { ring = 4 batches  on_error = $3 }
EOF
}
# field NAME: the value of "NAME: value" in bench.out
field() { sed -n "s|^$1: ||p" "$dir/bench.out"; }
# run_bench ARGS...: status in $st, stdout in bench.out, stderr in bench.err
run_bench() {
	timeout 60 "$TSRUN" bench "$@" > "$dir/bench.out" 2> "$dir/bench.err"
	st=$?
}

pipeline "$dir/val.ts" ds/train fail
run_bench "$dir/val.ts" --epochs 3 --threads 2
[ $st = 0 ] || fail "bench exited $st: $(cat "$dir/bench.err")"
cat "$dir/bench.out"
num='[0-9][0-9]*\(\.[0-9]*\)\{0,1\}'
for f in 'pipeline:val ('"$dir"'/val.ts)' "images:$num" "batches:$num" "seconds:$num" \
	"images/s:$num" "MB/s:$num" "input MB/s:$num" "cpu:$num s" "cpu/image:$num ms" \
	"peak_rss:$num MiB" "threads:2" 'reader:\(io_uring\|plain reads\)' "skipped:0" \
	"digest_cpu:$num s" "cpu/image_no_digest:$num ms" 'digest:[0-9a-f]\{16\}'; do
	name=${f%%:*}
	re=${f#*:}
	v=$(field "$name")
	[ -n "$v" ] || { fail "no '$name:' line"; continue; }
	printf '%s\n' "$v" | grep -qx "$re" || fail "$name: '$v' does not match '$re'"
done
[ "$(field images)" = 90 ] || fail "images: $(field images), want 3 x 30 = 90"
[ "$(field batches)" = 12 ] || fail "batches: $(field batches), want 3 x ceil(30 / 8) = 12"
awk -v r="$(field images/s)" -v m="$(field MB/s)" -v c="$(field cpu | cut -d' ' -f1)" \
	'BEGIN { x = r * 3 * 64 * 64 * 4 / 1e6; t = x * 0.01 > 0.06 ? x * 0.01 : 0.06;  # 1 %, or the printed 0.1 MB/s
		 exit !(r > 0 && c > 0 && m > x - t && m < x + t) }' ||
	fail "images/s, MB/s and cpu disagree: $(field images/s) $(field MB/s) $(field cpu)"
full=$(field digest)
awk -v c="$(field cpu | cut -d' ' -f1)" -v d="$(field digest_cpu | cut -d' ' -f1)" \
	-v a="$(field cpu/image | cut -d' ' -f1)" -v b="$(field cpu/image_no_digest | cut -d' ' -f1)" \
	'BEGIN { exit !(d > 0 && d < c && b <= a && b > 0) }' ||
	fail "digest_cpu $(field digest_cpu) and cpu/image_no_digest $(field cpu/image_no_digest) against cpu $(field cpu)"

# --profile: a row per stage, in ms/image, that add up to the total, which
# is cpu/image; decode and crop/resample are there for this recipe.
run_bench "$dir/val.ts" --epochs 3 --threads 2 --profile
[ $st = 0 ] || fail "bench --profile exited $st: $(cat "$dir/bench.err")"
rows=""
for r in read decode crop/resample output ring "worker other" setup consumer digest close other; do
	v=$(field "profile $r" | sed -n 's/^\([0-9.]*\) ms\/image$/\1/p')
	[ -n "$v" ] || { fail "--profile: no 'profile $r: N ms/image' line"; continue; }
	rows="$rows $v"
done
tot=$(field "profile total" | cut -d' ' -f1)
awk -v rows="$rows" -v tot="$tot" -v cpi="$(field cpu/image | cut -d' ' -f1)" \
	-v dec="$(field 'profile decode' | cut -d' ' -f1)" -v rs="$(field 'profile crop/resample' | cut -d' ' -f1)" \
	'BEGIN { n = split(rows, a, " "); for (i = 1; i <= n; i++) s += a[i];
		 d = s - tot; if (d < 0) d = -d; dc = tot - cpi; if (dc < 0) dc = -dc;
		 exit !(n == 11 && d <= 0.006 * n && dc <= 0.002 && dec > 0 && rs > 0) }' ||
	fail "--profile rows ($rows) do not add up to total $tot (cpu/image $(field cpu/image)), or decode/resample is 0"

# --no-digest: the same stream, not hashed.
run_bench "$dir/val.ts" --epochs 3 --threads 2 --no-digest
[ $st = 0 ] || fail "bench --no-digest exited $st: $(cat "$dir/bench.err")"
[ "$(field images)" = 90 ] || fail "--no-digest: images $(field images), want 90"
[ "$(field digest)" = "off (--no-digest)" ] || fail "--no-digest: digest line '$(field digest)'"
[ "$(field digest_cpu)" = "0.000000 s" ] || fail "--no-digest: digest_cpu $(field digest_cpu)"

# A decode-only pipeline (no fixed size: discard mode, unordered digest):
# its digest, the same on 1 and 2 threads, and none with --no-digest.
printf 'pipeline d =\n    folder("ds/train")\n    | decode(rgb)\n' > "$dir/dec.ts"
run_bench "$dir/dec.ts" --threads 1
[ $st = 0 ] || fail "decode-only bench exited $st: $(cat "$dir/bench.err")"
d1=$(field digest)
case "$d1" in
[0-9a-f]*" (unordered: samples of varying size)") ;;
*) fail "decode-only: digest line '$d1'" ;;
esac
run_bench "$dir/dec.ts" --threads 2
[ "$(field digest)" = "$d1" ] || fail "decode-only: 2 threads' digest $(field digest) != $d1"
run_bench "$dir/dec.ts" --threads 2 --no-digest
[ "$(field images)" = 30 ] || fail "decode-only --no-digest: images $(field images), want 30"
[ "$(field digest)" = "off (--no-digest)" ] || fail "decode-only --no-digest: digest line '$(field digest)'"

# --batches in discard mode: the samples are not batched, so N batches
# are N x --batch samples (1 each by default), across epochs, the same
# ones on any thread count; --batch alone changes nothing, and says so.
run_bench "$dir/dec.ts" --threads 2 --batches 5
[ $st = 0 ] || fail "decode-only --batches 5 exited $st: $(cat "$dir/bench.err")"
[ "$(field images)" = 5 ] || fail "decode-only --batches 5: images $(field images), want 5"
d5=$(field digest)
run_bench "$dir/dec.ts" --threads 1 --batches 5
[ "$(field digest)" = "$d5" ] || fail "decode-only --batches 5: 1 thread's digest $(field digest) != $d5"
[ "$d5" != "$d1" ] || fail "decode-only --batches 5: the digest of the whole epoch"
run_bench "$dir/dec.ts" --threads 2 --epochs 3 --batches 7 --batch 6
[ "$(field images)" = 42 ] || fail "decode-only --batches 7 --batch 6 over 3 epochs: images $(field images), want 42"
run_bench "$dir/dec.ts" --threads 2 --batch 6
[ $st = 0 ] && [ "$(field images)" = 30 ] || fail "decode-only --batch 6: exit $st, images $(field images), want 0, 30"
grep -q "^tsrun bench: note: pipeline 'd' makes samples of varying size, which are not batched" "$dir/bench.err" ||
	fail "decode-only --batch 6: no note that it is not batched: $(cat "$dir/bench.err")"

run_bench "$dir/val.ts" --epochs 2 --batch 30 --threads 1
[ "$(field images) $(field batches)" = "60 2" ] ||
	fail "--batch 30 over 2 epochs: images $(field images) batches $(field batches), want 60 2"
run_bench "$dir/val.ts" --epochs 3 --batches 5 --batch 4
[ "$(field images) $(field batches)" = "20 5" ] ||
	fail "--batches 5 --batch 4: images $(field images) batches $(field batches), want 20 5"
[ "$(field digest)" != "$full" ] || fail "--batches 5: the digest of the whole stream"

# Bad files in a copy: a garbled JPEG, a JPEG cut short, and a PNG that is
# not one.
cp -r "$dir/ds" "$dir/bad"
set -- $(find "$dir/bad/train" -name '*.jpg' | sort)
garbled=$3
short=${11}
notpng=$(dirname "$7")/zz-garbage.png
printf 'GARBAGE GARBAGE GARBAGE' | dd of="$garbled" bs=1 seek=2 conv=notrunc 2>/dev/null
head -c 700 "$short" > "$dir/short" && mv "$dir/short" "$short"
printf 'this is not a png file\n' > "$notpng"

pipeline "$dir/skip.ts" bad/train skip
run_bench "$dir/skip.ts" --epochs 2 --threads 2
[ $st = 0 ] || fail "on_error = skip: exit $st: $(cat "$dir/bench.err")"
cat "$dir/bench.err"
[ "$(field images)" = 62 ] || fail "skip: images $(field images), want 2 x 31 = 62 (replaced, not dropped)"
[ "$(field skipped)" = 6 ] || fail "skip: skipped $(field skipped), want 2 epochs x 3"
for p in "$garbled" "$short" "$notpng"; do
	n=$(grep -c "^tsrun bench: skipped $p: ..." "$dir/bench.err")
	[ "$n" = 1 ] || fail "skip: '$p' listed $n times, want once (counted every epoch)"
done
d1=$(field digest)
run_bench "$dir/skip.ts" --epochs 2 --threads 1
[ "$(field digest)" = "$d1" ] || fail "skip: digest with 1 thread $(field digest) != 2 threads $d1"
[ "$d1" != "$full" ] || fail "skip: the digest of the undamaged set"

# Two bad files next to each other in the epoch's order: the first one's
# stand-in, the second, fails too. Two samples are skipped an epoch (the
# count is of samples, not of the files tried for them: it was 3).
cp -r "$dir/ds" "$dir/pair"
set -- $(find "$dir/pair/train" -name '*.jpg' | sort)
printf 'GARBAGE' | dd of="$3" bs=1 seek=2 conv=notrunc 2>/dev/null
printf 'GARBAGE' | dd of="$4" bs=1 seek=2 conv=notrunc 2>/dev/null
pipeline "$dir/pair.ts" pair/train skip
for t in 1 2; do
	run_bench "$dir/pair.ts" --epochs 2 --threads $t
	[ $st = 0 ] || fail "pair, $t threads: exit $st: $(cat "$dir/bench.err")"
	[ "$(field images) $(field skipped)" = "60 4" ] ||
		fail "pair, $t threads: images $(field images) skipped $(field skipped), want 60 4 (2 epochs x 2)"
	[ "$(grep -c '^tsrun bench: skipped ' "$dir/bench.err")" = 2 ] ||
		fail "pair, $t threads: not 2 files listed: $(cat "$dir/bench.err")"
done

for t in 1 2; do
	for which in garbled short notpng; do
		cp -r "$dir/ds" "$dir/one"
		rel=$(eval echo "\$$which" | sed "s|^$dir/bad/||")
		cp "$dir/bad/$rel" "$dir/one/$rel"
		pipeline "$dir/one.ts" one/train fail
		run_bench "$dir/one.ts" --threads $t
		[ $st = 1 ] || fail "fail, $which, $t threads: exit $st, want 1"
		grep -q "^tsrun bench: $dir/one/$rel: ..." "$dir/bench.err" ||
			fail "fail, $which, $t threads: no 'tsrun bench: PATH: reason' in: $(cat "$dir/bench.err")"
		[ $t = 1 ] && echo "$which: $(head -n 1 "$dir/bench.err")"
		rm -rf "$dir/one"
	done
done

pipeline "$dir/missing.ts" no-such-folder fail
run_bench "$dir/missing.ts"
[ $st = 1 ] || fail "missing folder: exit $st, want 1"
grep -q "no-such-folder" "$dir/bench.err" || fail "missing folder not named: $(cat "$dir/bench.err")"

for args in "--threads 0" "--epochs x" "--start 1" "--batches -1"; do
	run_bench "$dir/val.ts" $args
	[ $st = 2 ] || fail "bench $args: exit $st, want 2"
	grep -q "^tsrun bench: " "$dir/bench.err" || fail "bench $args: $(cat "$dir/bench.err")"
done
run_bench "$dir/val.ts" --start 0:30
[ $st = 1 ] || fail "--start 0:30 (past the epoch's end): exit $st, want 1"
grep -q "start index 30" "$dir/bench.err" || fail "--start 0:30: $(cat "$dir/bench.err")"

# Decode only: samples of varying size go through the engine's discard
# mode; the unordered digest is the same for any thread count.
printf 'pipeline d = folder("%s") | decode(rgb)\n' "$dir/ds/train" > "$dir/decode.ts"
run_bench "$dir/decode.ts" --threads 1
[ $st = 0 ] || fail "decode only: exit $st: $(cat "$dir/bench.err")"
grep -q "^images: 30$" "$dir/bench.out" || fail "decode only: $(grep images: "$dir/bench.out")"
d1=$(sed -n 's/^digest: \([0-9a-f]*\) (unordered.*/\1/p' "$dir/bench.out")
run_bench "$dir/decode.ts" --threads 2
d2=$(sed -n 's/^digest: \([0-9a-f]*\) (unordered.*/\1/p' "$dir/bench.out")
[ -n "$d1" ] && [ "$d1" = "$d2" ] || fail "decode only: digests '$d1' (1 thread) and '$d2' (2 threads)"

finish
