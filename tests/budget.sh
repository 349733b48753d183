#!/bin/sh
# Memory budget, the on-board case: a plan over its budget is refused
# before start with a breakdown; one within it runs, and its peak RSS
# stays under the budget. Frames are 16-bit grayscale PNGs, tiled, cloudy
# tiles filtered out, as examples/cubesat.ts does.
set -e
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup budget
ts_fatal=1
dir=$T
need convert
mkdir -p "$dir/frames/pass1"
for i in 1 2 3 4 5 6; do
	convert -size 1100x1030 -depth 16 -seed "$i" plasma:fractal -colorspace gray "$dir/frames/pass1/f$i.png"
done
convert -size 1100x1030 -depth 16 xc:white -colorspace gray "$dir/frames/pass1/cloud.png"
cat > "$dir/ok.ts" <<EOT
pipeline frames =
    folder("frames", ext = [".png"])
    | decode(gray, depth = 16)
    | tile(512, stride = 512)
    | filter(threshold = 0.8, max_fraction = 0.5)
    | to(uint8)
    | batch(8)
serve frames { socket = "$dir/f.sock" epochs = 3 ring = 64 samples memory = 64 MiB threads = 2 queue_depth = 8 on_error = skip }
EOT
sed 's/ring = 64 samples/ring = 512 samples/' "$dir/ok.ts" > "$dir/over.ts"

# Over the budget: refused before anything runs, with where the memory goes.
if "$TSRUN" bench "$dir/over.ts" > "$dir/over.out" 2> "$dir/over.err"; then
	fail "a plan over its memory budget was started"
fi
grep -q "ring 128 MiB (512 samples" "$dir/over.err" || { cat "$dir/over.err"; fail "no breakdown in the refusal"; }
grep -q "budget is 64 MiB" "$dir/over.err" || { cat "$dir/over.err"; fail "refusal does not name the budget"; }

# Within it: `tsrun run` serves a trainer, and the producer's peak RSS
# (the summary's "peak memory") stays under 64 MiB. (`tsrun bench` maps the
# ring a second time for its in-process consumer, so its RSS counts the
# ring twice; the served case is the one the budget is about.)
"$TSRUN" run "$dir/ok.ts" 2> "$dir/run.err" &
run_pid=$!
pids="$pids $run_pid"
wait_for 10 test -S "$dir/f.sock" || :
"$TSRUN" consume "$dir/f.sock" > "$dir/consume.out" || fail "consumer failed"
wait "$run_pid" || { cat "$dir/run.err"; fail "tsrun run failed"; }
images=$(sed -n 's/^images: //p' "$dir/consume.out")
[ "$images" = 72 ] || fail "expected 72 tiles (6 frames x 4 tiles x 3 epochs, cloud dropped), got $images"
rss=$(sed -n 's/.*peak memory \([0-9]*\)\.[0-9]* MiB.*/\1/p' "$dir/run.err")
[ -n "$rss" ] || { cat "$dir/run.err"; fail "no peak memory in the summary"; }
if [ "${TS_SANITIZE:-none}" != none ]; then
	# ASan's shadow memory and quarantine count in RSS: no budget to hold.
	pass "over-budget plan refused with a breakdown; within budget served 72 tiles (peak RSS $rss MiB not checked: sanitizer build)"
	finish
fi
[ "$rss" -lt 64 ] || fail "peak RSS $rss MiB is over the 64 MiB budget"
pass "over-budget plan refused with a breakdown; within budget served 72 tiles at peak RSS $rss MiB < 64 MiB"
finish
