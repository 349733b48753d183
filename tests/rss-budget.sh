#!/bin/sh
# The memory a plan promises is the memory it uses: for several sample
# shapes (224, 227, 299, 331; rgb, gray and 2-channel; uint8 and float32;
# rings that wrap, rings whose slots are padded to fill whole pages; a
# decoded cache that holds the set, and one that holds part of it) a
# budget set to the
# plan's own figure (`memory = N MiB`, the smallest the check accepts) is
# accepted, one MiB less is refused, and the peak RSS of `tsrun run`
# serving a trainer and of `tsrun bench` (getrusage of the child, as
# wait4 reports it) stays within it.
set -eu
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup rss
dir=$T
sock="$dir/s.sock"
PY=/usr/bin/python3
[ "${TS_SANITIZE:-none}" = none ] || skip "peak RSS means nothing under the sanitizers' shadow memory"
[ -z "${TS_EXE_WRAPPER:-}" ] || skip "peak RSS under an emulator counts the emulator"
[ -x "$PY" ] && "$PY" -c "import numpy, PIL" 2>/dev/null ||
	skip "/usr/bin/python3 with numpy and PIL is needed to make the images"

# 48 photo-sized JPEGs (500x375 and 400x500) in two classes.
"$PY" - "$dir/img" <<'EOT'
import os, sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for c in "ab":
    os.makedirs(os.path.join(sys.argv[1], c), exist_ok=True)
for i in range(48):
    h, w = (375, 500) if i % 2 else (500, 400)
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([x * (i + 1) % 256, y * 3 % 256, (x + y) % 256], -1).astype(np.float32)
    a += rng.normal(0, 20, a.shape)
    Image.fromarray(a.clip(0, 255).astype(np.uint8)).save(
        os.path.join(sys.argv[1], "ab"[i % 2], "%02d.jpg" % i), quality=90)
EOT

# maxrss OUT CMD...: run CMD, its output to OUT; print its peak RSS in KiB
# (ru_maxrss from wait4) and exit with its status.
maxrss() {
	out=$1; shift
	"$PY" - "$out" "$@" <<'EOT'
import os, subprocess, sys
with open(sys.argv[1], "w") as f:
    p = subprocess.Popen(sys.argv[2:], stdout=f, stderr=subprocess.STDOUT)
    _, status, ru = os.wait4(p.pid, 0)
print(ru.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
EOT
}

# case NAME SOURCE OPS EPOCHS [SETTINGS]: budget = the plan's figure, then
# measure.
case_() {
	name=$1 source=$2 ops=$3 epochs=$4 extra=${5:-}
	cat > "$dir/$name.ts" <<EOT
pipeline m = $source | $ops
serve m { socket = "$sock" epochs = $epochs ring = 4 batches threads = 2 queue_depth = 8 $extra memory = 1 MiB }
EOT
	st=0
	"$TSRUN" check "$dir/$name.ts" > "$dir/$name.chk" 2>&1 || st=$?
	need=$(sed -n 's/.*raise memory to \([0-9]*\) MiB.*/\1/p' "$dir/$name.chk" | head -1)
	[ -n "$need" ] || { fail "$name: no figure in the refusal: $(cat "$dir/$name.chk")"; return; }
	sed -i "s/memory = 1 MiB/memory = $need MiB/" "$dir/$name.ts"
	"$TSRUN" check "$dir/$name.ts" > "$dir/$name.chk" 2>&1 ||
		{ fail "$name: memory = $need MiB (the figure) refused: $(cat "$dir/$name.chk")"; return; }
	sed "s/memory = $need MiB/memory = $((need - 1)) MiB/" "$dir/$name.ts" > "$dir/$name-1.ts"
	! "$TSRUN" check "$dir/$name-1.ts" > /dev/null 2>&1 || fail "$name: memory = $((need - 1)) MiB accepted"
	figure=$("$TSRUN" graph "$dir/$name.ts" | sed -n 's/^memory: //p')
	budget=$((need * 1024))

	rm -f "$sock"
	rm -f "$dir/run.rss"
	(maxrss "$dir/run.err" "$TSRUN" run "$dir/$name.ts" > "$dir/run.rss") &
	run_pid=$!
	pids="$pids $run_pid"
	wait_for 30 test -S "$sock" || { fail "$name: socket never appeared: $(cat "$dir/run.err")"; return; }
	"$TSRUN" consume "$sock" > "$dir/consume.out" 2>&1 || fail "$name: the trainer: $(cat "$dir/consume.out")"
	wait "$run_pid" || fail "$name: tsrun run: $(cat "$dir/run.err")"
	run_kib=$(cat "$dir/run.rss")
	bench_kib=$(maxrss "$dir/bench.out" "$TSRUN" bench --epochs "$epochs" "$dir/$name.ts") ||
		fail "$name: tsrun bench: $(cat "$dir/bench.out")"
	images=$(sed -n 's/^images: //p' "$dir/bench.out")
	msg="$name (memory = $need MiB; $figure): run $((run_kib / 1024)) MiB, bench $((bench_kib / 1024)) MiB, $images images"
	if [ "$run_kib" -le "$budget" ] && [ "$bench_kib" -le "$budget" ]; then
		pass "$msg"
	else
		fail "$msg: over the budget"
	fi
}

img="folder(\"$dir/img\", ext = [\".jpg\"])"
# 224x224x3 float32: 602,112 bytes, whole pages: ring 128 samples, wraps.
case_ 224-rgb-f32 "$img" "decode(rgb) | random_resized_crop(224) | flip(horizontal, p = 0.5) | normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]) | to(float32, nchw) | batch(32)" 4
# 227x227x3 uint8: 154,587 bytes, odd: unpadded 4,096 samples (604 MiB),
# so its slots are padded to 154,624 bytes and it holds the 128 asked.
case_ 227-rgb-u8 "$img" "decode(rgb) | random_resized_crop(227) | to(uint8, nhwc) | batch(32)" 2
# 299x299x3 uint8 (268,203 bytes: 1 GiB unpadded) and 299x299 gray
# (89,401: 349 MiB unpadded): padded slots.
case_ 299-rgb-u8 "$img" "decode(rgb) | resize(320) | center_crop(299) | to(uint8, nhwc) | batch(8)" 2
case_ 299-gray-u8 "$img" "decode(gray) | random_resized_crop(299) | to(uint8, nhwc) | batch(10)" 2
# 331x331x3 float32: 1,314,732 bytes: 1,024 samples unpadded (1.25 GiB).
case_ 331-rgb-f32 "$img" "decode(rgb) | random_resized_crop(331) | to(float32, nchw) | batch(16)" 2
# The decoded cache, counted whole: 48 MiB holds all 48 photos (about
# 550 KiB each at full scale) and fills; 12 MiB holds a part and is full
# (its pages locked as they fill: RSS grows with it).
case_ 224-cache-all "$img" "decode(rgb) | random_resized_crop(224) | to(float32, nchw) | batch(32)" 3 "cache = 48 MiB"
case_ 224-cache-part "$img" "decode(rgb) | random_resized_crop(224) | to(uint8, nhwc) | batch(16)" 3 "cache = 12 MiB"
# 2 channels, 227x227 uint8 (103,058 bytes: 2,048 samples unpadded),
# 5,000 per epoch: the ring wraps twice, bench's batches across the wrap
# included.
case_ 227-2ch-u8 "synthetic(size = 227, channels = 2, count = 5000)" "flip(horizontal, p = 0.5) | to(uint8, nhwc) | batch(16)" 1

finish
