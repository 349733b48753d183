#!/bin/sh
# tsrun-device.sh - `tsrun run` of a pipeline ending in device(cuda):
# without a GPU it says once that it serves uint8 NHWC from the CPU ring,
# and why; with one it serves the device ring. Never a crash, and a CPU
# trainer gets every sample as uint8 nhwc either way. `tsrun graph` shows
# the device stage.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup gpu
tmp=$T
# the first failure ends the test, after tsrun run's stderr
ts_fatal=1
ts_log="$tmp/run.err"
pid=
ts_cleanup_device() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	ts_cleanup
}
trap ts_cleanup_device EXIT

cat >"$tmp/p.ts" <<EOT
pipeline train =
    synthetic(16, count = 40)
    | to(uint8, nhwc)
    | device(cuda, dtype = float16, mean = [0.5, 0.5, 0.5], std = [0.25, 0.25, 0.25])
    | batch(8)
serve train {
    socket = "$tmp/s.sock"
    epochs = 1
}
EOT
"$TSRUN" graph "$tmp/p.ts" >"$tmp/graph" 2>&1 || fail "graph"
grep -q 'device(cuda, float16, nchw, mean=\[0.5, 0.5, 0.5\], std=\[0.25, 0.25, 0.25\]) *3x16x16 float16 nchw' "$tmp/graph" ||
	fail "graph lacks the device stage: $(cat "$tmp/graph")"
grep -q '^device: cuda, 1536 bytes per sample' "$tmp/graph" || fail "graph device line"
grep -q '^sample: 16x16x3 uint8 nhwc, 768 bytes' "$tmp/graph" || fail "host sample is not uint8 nhwc"

timeout 30 "$TSRUN" run "$tmp/p.ts" >"$tmp/run.out" 2>"$tmp/run.err" &
pid=$!
i=0
while [ ! -S "$tmp/s.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$tmp/s.sock" ] || fail "no socket"
timeout 20 "$TSRUN" consume "$tmp/s.sock" >"$tmp/consume" 2>&1 || fail "consume: $(cat "$tmp/consume")"
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] || fail "tsrun run exited $rc"
# A GPU host (tests/gpu/run sets TS_EXPECT_GPU=1 once nvidia-smi lists
# one): the CPU path passes only for a build without CUDA.
gpu=0
if [ "${TS_EXPECT_GPU:-0}" = 1 ] || nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	gpu=1
fi
if [ $gpu = 1 ] && ! grep -q 'finishing on GPU' "$tmp/run.err" &&
   ! grep -q 'built without CUDA' "$tmp/run.err"; then
	fail "a GPU is present, but tsrun served the CPU ring"
fi
if grep -q 'finishing on GPU' "$tmp/run.err"; then
	# a GPU host: the device ring is served; a CPU trainer still reads
	# the host ring's uint8 NHWC samples (the staged ring shows them
	# once finished on the device)
	grep -q 'device(cuda): .*serving uint8 NHWC' "$tmp/run.err" &&
		fail "a GPU was used and the CPU fallback note printed too"
else
	n=$(grep -c 'device(cuda): .*; serving uint8 NHWC batches from the CPU ring instead' "$tmp/run.err")
	[ "$n" = 1 ] || fail "expected the device(cuda) note once, got $n"
fi
grep -q 'summary: 40 images served' "$tmp/run.err" || fail "not 40 images served"
head -2 "$tmp/run.err"

# Against the stand-in runtime (tests/gpu/run --fake): a device ring that
# fails to start (cudaMalloc refused) falls back to the host ring, says
# why, and gives back what the start took: no block and no context left
# on the GPU while it serves the host ring.
if [ "${TS_FAKE_CUDART:-0}" = 1 ]; then
	rm -f "$tmp/report" "$tmp/s.sock"
	FAKE_CUDART_FAIL_MALLOC=1 FAKE_CUDART_REPORT="$tmp/report" timeout 30 "$TSRUN" run "$tmp/p.ts" \
		>"$tmp/run.out" 2>"$tmp/run.err" &
	pid=$!
	i=0
	while [ ! -S "$tmp/s.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -S "$tmp/s.sock" ] || fail "no socket (failed device start)"
	timeout 20 "$TSRUN" consume "$tmp/s.sock" >"$tmp/consume" 2>&1 || fail "consume: $(cat "$tmp/consume")"
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "tsrun run exited $rc after a failed device start"
	grep -q 'device(cuda): .*cudaMalloc.*; serving uint8 NHWC batches from the CPU ring instead' "$tmp/run.err" ||
		fail "the failed device start was not reported with its cause"
	grep -q 'contexts_left 0 blocks_left 0' "$tmp/report" ||
		fail "the failed device start left on the GPU: $(cat "$tmp/report" 2>/dev/null)"
	echo "failed device start: host ring served, nothing left on the GPU"

	# page-locking the host ring (6 MiB) takes 12 s here, and holds the
	# driver's lock while it runs, as on a GPU: serving must not wait for
	# it, neither for the thread (the socket comes at once) nor for the
	# lock (the ring is registered in pieces, a sixteenth each at most,
	# 0.75 s here, and the pin thread lets a fill under way end before its
	# next piece, so the first fill, 256 samples over 8 pieces, waits for
	# one piece, not for each of its 8 copies: 10 s without that;
	# each copy takes 2 ms here, as a DMA takes its time, so that the pin
	# thread is back in the driver's queue before the next copy and the
	# order is not a race the finisher wins on an idle machine)
	cat >"$tmp/p2.ts" <<EOT
pipeline train =
    synthetic(64, count = 400)
    | to(uint8, nhwc)
    | device(cuda, dtype = float16)
    | batch(8)
serve train {
    socket = "$tmp/s2.sock"
    epochs = 1
    ring = 512 samples
}
EOT
	FAKE_CUDART_REGISTER_MS_PER_MIB=1920 FAKE_CUDART_COPY_US=2000 timeout 30 "$TSRUN" run "$tmp/p2.ts" \
		>"$tmp/run.out" 2>"$tmp/run.err" &
	pid=$!
	i=0
	while [ ! -S "$tmp/s2.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -S "$tmp/s2.sock" ] || fail "no socket (slow registration)"
	t0=$(date +%s.%N)
	timeout 20 "$TSRUN" consume "$tmp/s2.sock" --max-batches 1 >"$tmp/consume" 2>&1 ||
		fail "consume: $(cat "$tmp/consume")"
	t1=$(date +%s.%N)
	timeout 20 "$TSRUN" consume "$tmp/s2.sock" --join now >"$tmp/consume" 2>&1 ||
		fail "consume of the rest: $(cat "$tmp/consume")"
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "tsrun run exited $rc with a slow registration"
	awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 3) }' ||
		fail "the first batch waited for the host ring's registration: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s from the socket (bound 3 s: 4 pieces of 0.75 s; waiting for a piece at each copy of its first fill took 10 s)"
	grep -q 'finishing on GPU' "$tmp/run.err" || fail "no device ring with a slow registration"
	echo "slow registration (12 s, in pieces): the first batch after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
fi
finish
