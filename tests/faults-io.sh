#!/bin/sh
# Fault injection (issue 7): read faults on the reader's completions
# (TSRUN_FAULT_READ: EIO, short reads, ENOENT after listing) under both
# on_error policies, with io_uring and with plain reads; a ring that cannot
# be allocated; descriptor exhaustion with more trainers than descriptors.
# Each must end in a clear error or keep serving the others; nothing hangs.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup faults-io
dir=$T
make_dataset "$dir/ds" --images 40 --quiet

pipe() { # file on_error
	cat > "$1" <<EOT
pipeline p = folder("$dir/ds/train") | decode(rgb) | center_crop(64) | to(uint8) | batch(8)
serve p { epochs = 1 ring = 4 batches on_error = $2 socket = "$dir/p.sock" }
EOT
}
pipe "$dir/fail.ts" fail
pipe "$dir/skip.ts" skip

# 1. Read faults. Under fail: exit 1 naming the file and the reason. Under
# skip: every sample is still served, the faults are counted and listed.
for mode in uring plain; do
	if [ $mode = plain ]; then export TSRUN_NO_URING=1; else unset TSRUN_NO_URING; fi
	for fault in eio:5 enoent:9 short:3; do
		case $fault in
		eio*) why="Input/output error" ;;
		enoent*) why="No such file or directory" ;;
		short*) why="truncated JPEG data" ;;
		esac
		TSRUN_FAULT_READ=$fault timeout 60 "$TSRUN" bench "$dir/fail.ts" --threads 2 \
			> "$dir/b.out" 2> "$dir/b.err"
		st=$?
		[ $st = 1 ] || fail "$mode $fault, on_error=fail: exit $st, want 1"
		grep -q "^tsrun bench: $dir/ds/train/.*\.jpg: .*$why" "$dir/b.err" ||
			fail "$mode $fault, on_error=fail: no 'path: $why' in: $(cat "$dir/b.err")"
		TSRUN_FAULT_READ="$(echo $fault | sed 's/:/:%/')" timeout 60 "$TSRUN" bench "$dir/skip.ts" \
			--threads 2 > "$dir/b.out" 2> "$dir/b.err"
		st=$?
		[ $st = 0 ] || fail "$mode $fault every nth, on_error=skip: exit $st: $(cat "$dir/b.err")"
		grep -q "^images: 40$" "$dir/b.out" || fail "$mode $fault, skip: $(grep images: "$dir/b.out")"
		n=$(sed -n 's/^skipped: //p' "$dir/b.out")
		[ "${n:-0}" -gt 0 ] || fail "$mode $fault, skip: nothing counted as skipped"
		# each distinct path and reason is listed once, every listed
		# failure has the reason; skipped counts samples, a position
		# whose own item failed, once, even when its stand-in failed too
		# (the stand-in is listed, not counted): in one epoch every
		# counted item is a listed path, so the list is at least the count
		lines=$(grep -c "^tsrun bench: skipped .*$why" "$dir/b.err")
		[ "$lines" -ge 1 ] && [ "$n" -le "$lines" ] &&
			[ "$lines" = "$(grep -c '^tsrun bench: skipped ' "$dir/b.err")" ] ||
			fail "$mode $fault, skip: $n skipped but the list differs: $(cat "$dir/b.err")"
	done
	echo "read faults ($mode): fail stops with the path and reason; skip serves all 40 and lists each"
done
unset TSRUN_NO_URING

# 2. A ring that cannot be allocated (an address-space limit below the
# ring's double map): a clear error and exit 1, no crash.
cat > "$dir/big.ts" <<EOT
pipeline p = synthetic(size = 224, count = 100) | to(float32, nchw) | batch(256)
serve p { ring = 8 batches socket = "$dir/big.sock" }
EOT
# (Not under a sanitizer: ASan's shadow memory needs the address space.)
if [ "${TS_SANITIZE:-none}" = none ]; then
	(ulimit -v 1000000; exec timeout 60 "$TSRUN" run "$dir/big.ts") > "$dir/big.out" 2> "$dir/big.err"
	st=$?
	[ $st = 1 ] || fail "ring allocation failure: exit $st, want 1: $(cat "$dir/big.err")"
	grep -q "^tsrun run: ring: .*Cannot allocate memory" "$dir/big.err" ||
		fail "ring allocation failure: no clear message: $(cat "$dir/big.err")"
	[ ! -e "$dir/big.sock" ] || fail "ring allocation failure left a socket behind"
	echo "ring allocation failure: $(grep '^tsrun run:' "$dir/big.err" | head -n 1)"
else
	echo "ring allocation failure: not run under $TS_SANITIZE (address-space limit)"
fi

# 3. Descriptor exhaustion: tsrun with 20 descriptors and 16 trainers. The
# ones that do not fit are refused with the reason; the others are served
# in full; none hangs.
cat > "$dir/fd.ts" <<EOT
pipeline s = synthetic(size = 8, count = 1000) | to(float32, nchw) | batch(10)
serve s { socket = "$dir/fd.sock" epochs = 0 ring = 8 batches }
EOT
(ulimit -n 20; exec "$TSRUN" run "$dir/fd.ts" --quiet) 2> "$dir/fd.err" &
rp=$!
pids="$pids $rp"
wait_for 10 test -S "$dir/fd.sock" || :
cpids=""
for i in $(seq 1 16); do
	timeout 60 "$TSRUN" consume "$dir/fd.sock" --max-batches 200 --delay-ms 2 > "$dir/c.$i" 2>&1 &
	cpids="$cpids $!"
done
served=0; refused=0
for p in $cpids; do
	wait "$p"
	st=$?
	[ $st = 0 ] || [ $st = 1 ] || fail "a trainer ended with $st (hung or crashed)"
done
for i in $(seq 1 16); do
	# 200 whole batches (a trainer joining mid-epoch gets one short batch
	# at the epoch's end, so count batches, not images).
	if grep -q "^batches: 200$" "$dir/c.$i"; then served=$((served + 1));
	elif grep -q "Too many open files" "$dir/c.$i"; then refused=$((refused + 1));
	else fail "trainer $i: $(cat "$dir/c.$i")"; fi
done
kill -0 "$rp" 2>/dev/null || fail "tsrun died under descriptor exhaustion"
kill -TERM "$rp"; wait "$rp"
[ $served -ge 1 ] && [ $refused -ge 1 ] ||
	fail "descriptor exhaustion: $served served in full, $refused refused (want both)"
echo "descriptor exhaustion: $served trainers served in full, $refused refused with the reason"

finish
