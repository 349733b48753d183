#!/bin/sh
# determinism.sh - the stream digest of `tsrun bench` does not depend on
# the thread count, the batch size or the run, and a resumed stream
# (--start EPOCH:INDEX) is the same whether it is benched in-process or
# served by `tsrun run` to `tsrun consume`.
#
# The digest is chained over the samples in stream order, so the digest of
# a resumed tail cannot be cut out of the full run's; tests/test-engine.c
# compares the tail sample by sample. Here the tail is compared across
# thread counts, batch sizes and the two ways of running it, and must
# differ from other tails and from the whole stream.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup determinism
dir=$T
make_dataset "$dir/ds" --images 60

cat > "$dir/train.ts" <<EOF
pipeline train =
    folder("ds/train")
    | shuffle(seed = 42)
    | decode(rgb)
    | random_resized_crop(64)
    | flip(horizontal)
    | color_jitter(brightness = 0.4, contrast = 0.4, saturation = 0.4, hue = 0.1)
    | equalize(p = 0.3)
    | solarize(128, p = 0.2)
    | gaussian_blur(5, sigma = 0.1..2.0)
    | adjust_sharpness(1.5)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(16)

serve train {
    socket = "$dir/train.sock"
    epochs = 2
    ring   = 4 batches
}
EOF
sed 's/seed = 42/seed = 43/' "$dir/train.ts" > "$dir/seed43.ts"
# The geometry family's random ops (their draws from each sample's
# stream), after a variable-size decode.
cat > "$dir/geo.ts" <<EOF
pipeline geo =
    folder("ds/train")
    | shuffle(seed = 42)
    | decode(rgb)
    | random_rotation(20, interpolation = bilinear, expand = true, fill = [10, 20, 30])
    | resize([72, 80])
    | random_affine(10, translate = [0.1, 0.1], scale = 0.8..1.2, shear = [-5, 5, -3, 3])
    | random_perspective(0.4, p = 0.5)
    | pad([3, 1], padding_mode = reflect)
    | erase(4, 4, 8, 8, [0, 255, 0])
    | batch(16)
EOF
sed 's/random_perspective(0.4, p = 0.5)/random_perspective(0.4, p = 0)/' "$dir/geo.ts" > "$dir/geo-p0.ts"
# augmix (its Beta, Dirichlet and chain draws from each sample's
# stream), after a variable-size decode and on the crop.
cat > "$dir/augmix.ts" <<EOF
pipeline mix =
    folder("ds/train")
    | shuffle(seed = 42)
    | decode(rgb)
    | augmix(severity = 5, alpha = 0.5, fill = [10, 20, 30])
    | random_resized_crop(48)
    | augmix(chain_depth = 2, mixture_width = 2, interpolation = nearest)
    | batch(16)
EOF
sed 's/alpha = 0.5/alpha = 0.6/' "$dir/augmix.ts" > "$dir/augmix-a6.ts"

# bench FILE ARGS... -> "images digest" (exit status checked). The
# timeout is a hang guard: an ASan build on a loaded 2-core machine takes
# over 60 s for augmix's 120 samples.
limit=$(ts_bound 60 300)
bench() {
	f=$1
	shift
	timeout "$limit" "$TSRUN" bench "$f" "$@" > "$dir/bench.out" 2> "$dir/bench.err" ||
		{ fail "bench $* failed: $(cat "$dir/bench.err")"; echo "- -"; return; }
	printf '%s %s\n' "$(sed -n 's/^images: //p' "$dir/bench.out")" \
		"$(sed -n 's/^digest: //p' "$dir/bench.out")"
}
same() { [ "$2" = "$3" ] || fail "$1: '$2' != '$3'"; }
differ() { [ "$2" != "$3" ] || fail "$1: both '$2'"; }

empty=243f6a8885a308d3   # the digest of no samples
t1=$(bench "$dir/train.ts" --epochs 2 --threads 1)
t2=$(bench "$dir/train.ts" --epochs 2 --threads 2)
t2b=$(bench "$dir/train.ts" --epochs 2 --threads 2)
t3=$(bench "$dir/train.ts" --epochs 2 --threads 3 --batch 7)
echo "full stream: threads 1: $t1; threads 2: $t2, $t2b; threads 3 batch 7: $t3"
same "2 epochs: images and digest" "$t1" "120 ${t1#* }"
same "threads 1 vs 2" "$t1" "$t2"
same "two runs, threads 2" "$t2" "$t2b"
same "threads 3, batch 7" "$t1" "$t3"
differ "digest of a real stream" "${t1#* }" "$empty"
g1=$(bench "$dir/geo.ts" --epochs 2 --threads 1)
g2=$(bench "$dir/geo.ts" --epochs 2 --threads 2)
g3=$(bench "$dir/geo.ts" --epochs 2 --threads 3 --batch 5)
echo "geometry: threads 1: $g1; threads 2: $g2; threads 3 batch 5: $g3"
same "geometry: 2 epochs" "$g1" "120 ${g1#* }"
same "geometry: threads 1 vs 2" "$g1" "$g2"
same "geometry: threads 3, batch 5" "$g1" "$g3"
differ "geometry: random_perspective p = 0.5 vs 0" "$g1" "$(bench "$dir/geo-p0.ts" --epochs 2 --threads 2)"
a1=$(bench "$dir/augmix.ts" --epochs 2 --threads 1)
a2=$(bench "$dir/augmix.ts" --epochs 2 --threads 2)
a3=$(bench "$dir/augmix.ts" --epochs 2 --threads 3 --batch 5)
echo "augmix: threads 1: $a1; threads 2: $a2; threads 3 batch 5: $a3"
same "augmix: 2 epochs" "$a1" "120 ${a1#* }"
same "augmix: threads 1 vs 2" "$a1" "$a2"
same "augmix: threads 3, batch 5" "$a1" "$a3"
differ "augmix: alpha 0.5 vs 0.6" "$a1" "$(bench "$dir/augmix-a6.ts" --epochs 2 --threads 2)"
s43=$(bench "$dir/seed43.ts" --epochs 2 --threads 2)
differ "another seed" "$t1" "$s43"
e1=$(bench "$dir/train.ts" --epochs 1 --threads 2)
differ "epoch 0 alone vs epochs 0-1" "${e1#* }" "${t1#* }"
z=$(bench "$dir/train.ts" --epochs 2 --threads 2 --start 0:0)
same "--start 0:0" "$z" "$t1"

# The tail of epoch 1 from index 23: 60 - 23 = 37 samples.
r1=$(bench "$dir/train.ts" --epochs 1 --start 1:23 --threads 1 --batch 1)
r2=$(bench "$dir/train.ts" --epochs 1 --start 1:23 --threads 2)
r3=$(bench "$dir/train.ts" --epochs 1 --start 1:23 --threads 3 --batch 5)
echo "resume 1:23: $r1; $r2; $r3"
same "resume: images" "${r1% *}" 37
same "resume, threads 1 batch 1 vs threads 2" "$r1" "$r2"
same "resume, threads 3 batch 5" "$r1" "$r3"
o=$(bench "$dir/train.ts" --epochs 1 --start 1:24 --threads 2)
differ "resume 1:23 vs 1:24" "${r1#* }" "${o#* }"
o=$(bench "$dir/train.ts" --epochs 1 --start 0:23 --threads 2)
differ "resume 1:23 vs 0:23 (epochs are shuffled apart)" "${r1#* }" "${o#* }"
# The first 37 samples of a resume at 0:23 over two epochs are epoch 0's
# tail: the same as the one-epoch resume.
a=$(bench "$dir/train.ts" --epochs 1 --start 0:23 --threads 2)
b=$(bench "$dir/train.ts" --epochs 2 --start 0:23 --threads 1 --batch 1 --batches 37)
same "resume 0:23: one epoch vs the first 37 of two" "$a" "$b"

# The same tail served by `tsrun run` to `tsrun consume` (run's --epochs
# is the end epoch; bench's counts from the start). No `timeout` in
# front: $! must be tsrun's own pid; a watchdog bounds it.
"$TSRUN" run "$dir/train.ts" --start 1:23 --epochs 2 --threads 2 \
	--quiet > "$dir/run.out" 2> "$dir/run.err" &
server=$!
pids="$pids $server"
watchdog 60 "$server"
if wait_for 10 test -S "$dir/train.sock"; then
	# --join now: the stream begins mid-epoch, and the default (whole
	# epochs) would skip to the next one.
	timeout 60 "$TSRUN" consume "$dir/train.sock" --batch 9 --join now > "$dir/consume.out" 2>&1 ||
		fail "consume failed: $(cat "$dir/consume.out")"
	c="$(sed -n 's/^images: //p' "$dir/consume.out") $(sed -n 's/^digest: //p' "$dir/consume.out")"
	echo "run --start 1:23 + consume: $c"
	same "resume served to a consumer vs bench" "$c" "$r1"
	wait "$server" || fail "tsrun run exited $?: $(cat "$dir/run.err")"
else
	fail "tsrun run did not create its socket: $(cat "$dir/run.err")"
fi
kill "$watchdog" 2>/dev/null

finish
