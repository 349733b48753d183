#!/bin/sh
# side-files.sh - the files tsrun keeps next to its socket (status,
# reload requests and answers, --stats-json) and the default socket's
# folder, against another user (nobody, via setpriv, when we are root):
#   - the default socket is in $XDG_RUNTIME_DIR/tsrun/ (else
#     /tmp/tsrun-UID/), a folder tsrun makes 0700; one another user made
#     first is refused with a clear error, nothing served there;
#   - a symlink planted at the status file or its old fixed temporary
#     name is never followed: the file it points to stays as it was;
#   - a FIFO planted at a reload request name or at the temporary name
#     blocks nothing: status keeps being written, `tsrun reload` is
#     answered at once;
#   - a status file write that fails, and a --stats-json on a full disk
#     (/dev/full), are each reported once in the log.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup side-files
chmod 755 "$T"

other=""
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
	other="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
as_other() { $other "$@"; }

cat >"$T/p.ts" <<EOF
pipeline side = synthetic(16, count = 64) | to(uint8, nhwc) | batch(4)
serve side { epochs = 0  threads = 1 }
EOF

# --- the default socket, in a private folder ----------------------------------
mkdir -m 700 "$T/xdg"
XDG_RUNTIME_DIR="$T/xdg" "$TSRUN" run "$T/p.ts" --wait 0 --quiet 2>"$T/default.err" &
pid=$!
pids="$pids $pid"
wait_for 20 test -S "$T/xdg/tsrun/side.sock" || { fail "no socket at \$XDG_RUNTIME_DIR/tsrun/side.sock"; cat "$T/default.err"; }
mode=$(stat -c %a "$T/xdg/tsrun" 2>/dev/null)
[ "$mode" = 700 ] || fail "the socket folder has mode '$mode', want 700"
"$TSRUN" consume "$T/xdg/tsrun/side.sock" --max-batches 2 >/dev/null 2>"$T/consume.err" ||
	{ fail "a trainer cannot reach the default socket"; cat "$T/consume.err"; }
kill -TERM "$pid"; wait "$pid"

# without XDG_RUNTIME_DIR: /tmp/tsrun-UID, 0700
u=$(id -u)
env -u XDG_RUNTIME_DIR "$TSRUN" run "$T/p.ts" --wait 0 --quiet 2>"$T/tmpdef.err" &
pid=$!
pids="$pids $pid"
wait_for 20 test -S "/tmp/tsrun-$u/side.sock" || { fail "no socket at /tmp/tsrun-$u/side.sock"; cat "$T/tmpdef.err"; }
mode=$(stat -c '%a %u' "/tmp/tsrun-$u" 2>/dev/null)
[ "$mode" = "700 $u" ] || fail "/tmp/tsrun-$u is '$mode', want '700 $u'"
kill -TERM "$pid"; wait "$pid"

if [ -n "$other" ]; then
	# another user made the folder first: refused, with what to do
	mkdir -m 1777 "$T/shared"
	as_other mkdir -m 777 "$T/shared/tsrun"
	XDG_RUNTIME_DIR="$T/shared" timeout 20 "$TSRUN" run "$T/p.ts" --wait 0 --quiet 2>"$T/planted.err"
	rc=$?
	[ "$rc" -eq 1 ] || fail "a folder of another user's: exit $rc, want 1"
	grep -q "the socket folder $T/shared/tsrun belongs to uid $(id -u nobody), not to you" "$T/planted.err" ||
		{ fail "a folder of another user's: unclear error"; cat "$T/planted.err"; }
	[ ! -e "$T/shared/tsrun/side.sock" ] || fail "served in another user's folder"
	# a symlink there to a folder of ours is refused as well
	rm -rf "$T/shared/tsrun"
	mkdir -m 700 "$T/mine"
	as_other ln -s "$T/mine" "$T/shared/tsrun"
	XDG_RUNTIME_DIR="$T/shared" timeout 20 "$TSRUN" run "$T/p.ts" --wait 0 --quiet 2>"$T/link.err"
	[ $? -eq 1 ] || fail "a symlinked socket folder: not refused"
	grep -q "is not a folder\|belongs to uid" "$T/link.err" || { fail "symlinked folder: unclear error"; cat "$T/link.err"; }
fi

# --- planted symlinks and FIFOs next to a socket in a shared folder -------------
mkdir -m 1777 "$T/pub"
S="$T/pub/s.sock"
echo "precious" >"$T/victim"
chmod 666 "$T/victim"
if [ -n "$other" ]; then
	as_other ln -s "$T/victim" "$S.status.json.tmp"
	as_other mkfifo "$S.reload.99999.req"
else
	ln -s "$T/victim" "$S.status.json.tmp"
	mkfifo "$S.reload.99999.req"
fi
"$TSRUN" run "$T/p.ts" --socket "$S" --wait 0 2>"$T/pub.err" &
pid=$!
pids="$pids $pid"
wait_for 20 test -f "$S.status.json" || { fail "no status file next to $S"; cat "$T/pub.err"; }
# SIGHUP: the FIFO request must not block the main thread
kill -HUP "$pid"
sleep 1
m1=$(stat -c %Y "$S.status.json")
sleep 2.5
m2=$(stat -c %Y "$S.status.json")
[ "$m2" -gt "$m1" ] || fail "status file not rewritten after a SIGHUP with a FIFO request planted (blocked?)"
grep -q "reload: ignoring $S.reload.99999.req: not a regular file of this user" "$T/pub.err" ||
	{ fail "the planted FIFO request is not named"; cat "$T/pub.err"; }
# a real reload is answered, though a FIFO sits at the old fixed
# temporary name of its request
mkfifo "$S.reload.$$.tmp" 2>/dev/null
timeout 30 "$TSRUN" reload "$S" "$T/p.ts" >"$T/reload.out" 2>"$T/reload.err"
rc=$?
[ "$rc" -eq 0 ] || { fail "reload with planted files: exit $rc"; cat "$T/reload.err" "$T/pub.err"; }
[ "$(cat "$T/victim")" = precious ] || fail "the victim file was written through a planted symlink"
[ -L "$S.status.json.tmp" ] || [ -z "$other" ] || true
# now a symlink at the status file itself: replaced, not followed
kill -TERM "$pid"; wait "$pid"
rm -f "$S.status.json"
if [ -n "$other" ]; then
	# (another user's link in a sticky folder cannot be replaced by us
	# unless we are root; either way it is not followed)
	as_other ln -s "$T/victim" "$S.status.json"
else
	ln -s "$T/victim" "$S.status.json"
fi
"$TSRUN" run "$T/p.ts" --socket "$S" --wait 0 --quiet 2>"$T/pub2.err" &
pid=$!
pids="$pids $pid"
sleep 2.5
[ "$(cat "$T/victim")" = precious ] || fail "the victim file was written through a symlinked status file"
# tsrun stat refuses to read through a symlink
if [ -L "$S.status.json" ]; then
	"$TSRUN" stat "$S" >/dev/null 2>&1 && fail "stat read a status file through a symlink"
fi
kill -TERM "$pid"; wait "$pid"

# --- write failures, reported once ------------------------------------------------
S2="$T/w.sock"
mkdir -p "$S2.status.json/x" # a non-empty folder: the rename fails
"$TSRUN" run "$T/p.ts" --socket "$S2" --wait 0 --stats-json /dev/full 2>"$T/w.err" &
pid=$!
pids="$pids $pid"
sleep 3.5
kill -TERM "$pid"; wait "$pid"
n=$(grep -c "cannot write the status file $S2.status.json" "$T/w.err")
[ "$n" -eq 1 ] || { fail "status write failure reported $n times, want once"; cat "$T/w.err"; }
n=$(grep -c "cannot write --stats-json: No space left on device" "$T/w.err")
[ "$n" -eq 1 ] || { fail "--stats-json on a full disk reported $n times, want once"; cat "$T/w.err"; }

finish
