#!/bin/sh
# train.sh - examples/train.py (PyTorch) and examples/consumer.c (C) train
# side by side from one `tsrun run`: both see every epoch, both losses
# fall, tsrun ends by itself with exit 0 and a summary naming both.
# Skips (77) when /usr/bin/python3 has no torch.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
: "${TS_LIBTSCLIENT:?TS_LIBTSCLIENT must name libtsclient}"
ts_setup train
need_python torch
# In a sanitizer build libtsclient needs the ASan runtime, which Python
# lacks: preload it (leak checks off: Python's own allocations are not
# ours); skip when even that does not load it.
probe() { env ${preload:+LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0} \
	"$PY" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$TS_LIBTSCLIENT" 2>/dev/null; }
preload=""
if ! probe; then
	preload=$(clang -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null)
	[ -f "$preload" ] && probe || skip "$PY cannot load $TS_LIBTSCLIENT"
fi
tmp=$T
ts_fatal=1
ts_log="$tmp/run.err $tmp/train.out $tmp/train.err $tmp/c.out"

images=300 epochs=8 batch=32
make_dataset "$tmp/ds" --images $images --quiet
cat >"$tmp/train.ts" <<EOF
pipeline train =
    folder("$tmp/ds/train")
    | shuffle(seed = 3)
    | decode(rgb)
    | random_resized_crop(64, scale = 0.35..1.0)
    | flip(horizontal)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch($batch)

serve train {
    socket = "$tmp/train.sock"
    epochs = $epochs
    ring   = 8 batches
    threads = 1
}
EOF

consumer="${TS_BUILDDIR:-}/examples/consumer"
[ -x "$consumer" ] || fail "examples/consumer not built at $consumer"

# --wait 2: start once both trainers are connected, so both see epoch 0.
# No `timeout` in front: $! must be the process itself; a watchdog bounds
# tsrun run and the C consumer.
"$TSRUN" run "$tmp/train.ts" --wait 2 >"$tmp/run.out" 2>"$tmp/run.err" &
run_pid=$!
pids="$pids $run_pid"
i=0
while [ ! -S "$tmp/train.sock" ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && fail "tsrun did not create its socket in 10 s"
	kill -0 $run_pid 2>/dev/null || fail "tsrun exited early"
	sleep 0.1
done
"$consumer" "$tmp/train.sock" --log-every 20 >"$tmp/c.out" 2>&1 &
c_pid=$!
pids="$pids $c_pid"
watchdog 150 "$run_pid" "$c_pid"
TSRUN_LIBTSCLIENT="$TS_LIBTSCLIENT" timeout 120 \
	env ${preload:+LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0} \
	"$PY" "$TS_SRCDIR/examples/train.py" \
	--socket "$tmp/train.sock" --batch-size $batch --lr 0.05 --log-every 20 \
	--window 10 --min-drop 0.3 >"$tmp/train.out" 2>"$tmp/train.err"
py_rc=$?
wait $c_pid
c_rc=$?
wait $run_pid
run_rc=$?
kill "$watchdog" 2>/dev/null
cat "$tmp/train.out" "$tmp/c.out"

[ $py_rc -eq 0 ] || fail "train.py exited $py_rc"
[ $c_rc -eq 0 ] || fail "consumer exited $c_rc"
[ $run_rc -eq 0 ] || fail "tsrun run exited $run_rc"

# The PyTorch trainer read every epoch and its loss fell by a clear margin
# (train.py --min-drop checked 30 %; check the printed numbers too).
total=$((images * epochs))
steps=$(( (images + batch - 1) / batch * epochs ))
grep -q "^steps: $steps  images: $total " "$tmp/train.out" ||
	fail "train.py did not read $steps steps / $total images"
set -- $(sed -n 's/^loss: first \([0-9.]*\) last \([0-9.]*\)$/\1 \2/p' "$tmp/train.out")
[ $# -eq 2 ] || fail "no loss line from train.py"
awk -v f="$1" -v l="$2" 'BEGIN { exit !(f > 1.0 && l < 0.6 * f) }' ||
	fail "train.py loss did not fall clearly: first $1 last $2"

# The C trainer saw the same number of samples, every epoch, and learned.
grep -q "^consumer: images $total batches $steps epochs 0..$((epochs - 1)) " "$tmp/c.out" ||
	fail "consumer did not read $total images over epochs 0..$((epochs - 1))"
set -- $(sed -n 's/^loss: first \([0-9.]*\) last \([0-9.]*\)$/\1 \2/p' "$tmp/c.out")
[ $# -eq 2 ] || fail "no loss line from the consumer"
awk -v f="$1" -v l="$2" 'BEGIN { exit !(l < 0.9 * f) }' ||
	fail "consumer loss did not fall: first $1 last $2"

# tsrun ended by itself after the last epoch, with a summary of both.
grep -q "summary: $total images served" "$tmp/run.err" ||
	fail "no summary with $total images in tsrun's output"
[ "$(grep -c 'summary: consumer ' "$tmp/run.err")" -eq 2 ] ||
	fail "the summary does not list two consumers"
finish
