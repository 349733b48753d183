#!/bin/sh
# full-disk.sh - a full file system under the status file and --stats-json:
# each failure is said once in tsrun's log, with the file and the reason,
# the stream goes on (every image still reaches the trainer), and once
# space is back the status file is written again (`tsrun stat` sees the
# run). The file system is a 64 KiB tmpfs mounted here: root only (skip
# otherwise, and where mounting is not allowed, in a container say).
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup full-disk
[ "$(id -u)" -eq 0 ] || skip "mounting a small tmpfs needs root"
mkdir "$T/full"
mount -t tmpfs -o size=64k,mode=0700 tsrun-full "$T/full" 2>/dev/null ||
	skip "cannot mount a tmpfs here"
ts_cleanup_mount() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null || :; done
	i=0
	until umount "$T/full" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "full-disk: cannot unmount $T/full" >&2; break; }
		sleep 0.1
	done
	ts_cleanup
}
trap ts_cleanup_mount EXIT
# fill it: dd stops at ENOSPC
dd if=/dev/zero of="$T/full/fill" bs=4096 2>/dev/null
df -P "$T/full" | awk 'NR == 2 { exit !($4 == 0) }' || fail "the tmpfs is not full"

S="$T/full/s.sock"
cat > "$T/p.ts" <<EOF
pipeline s = synthetic(size = 8, count = 100) | to(uint8, nhwc) | batch(10)
serve s { socket = "$S" epochs = 4 ring = 4 batches }
EOF
"$TSRUN" run "$T/p.ts" --stats-json "$T/full/stats.json" 2> "$T/run.err" &
run_pid=$!
pids="$pids $run_pid"
watchdog 120 $run_pid
wait_for 10 test -S "$S" || { ts_fatal=1; ts_log="$T/run.err"; fail "no socket"; }
# 4 epochs of 10 batches, 60 ms each: about 2.4 s of serving
"$TSRUN" consume "$S" --batch 10 --delay-ms 60 > "$T/consume.out" &
cons=$!
pids="$pids $cons"
wait_for 10 grep -q "cannot write the status file" "$T/run.err" ||
	fail "the status file's failure is not in the log: $(cat "$T/run.err")"
wait_for 10 grep -q "cannot write --stats-json" "$T/run.err" ||
	fail "the --stats-json failure is not in the log: $(cat "$T/run.err")"
sleep 1.2
n=$(grep -c "cannot write the status file $S.status.json: No space left on device" "$T/run.err")
[ "$n" -eq 1 ] || fail "the status file's failure said $n times, not once"
n=$(grep -c "cannot write --stats-json: No space left on device (reported once)" "$T/run.err")
[ "$n" -eq 1 ] || fail "the --stats-json failure said $n times, not once"
[ ! -e "$S.status.json" ] || fail "a status file appeared on a full disk"
# space again: the status file comes back within a couple of seconds
rm -f "$T/full/fill"
wait_for 5 test -s "$S.status.json" || fail "no status file once space was back"
"$TSRUN" stat "$S" > "$T/stat.out" 2>&1 || fail "tsrun stat after recovery: $(cat "$T/stat.out")"
wait "$cons" || fail "the trainer failed"
wait "$run_pid" || fail "tsrun run failed: $(cat "$T/run.err")"
grep -q "^images: 400$" "$T/consume.out" || fail "the trainer did not get every image: $(grep images: "$T/consume.out")"
n=$(grep -c "cannot write" "$T/run.err")
[ "$n" -eq 2 ] || fail "$n write failures in the log, expected 2: $(grep "cannot write" "$T/run.err")"
[ "$failed" -eq 0 ] && echo "full-disk: each failure said once, the stream went on, the status file came back"
finish
