#!/bin/sh
# peer-cred.sh - trainers check who the producer is (SO_PEERCRED): a
# socket in a folder anyone can write, bound first by another user
# (nobody), is refused by the C client (`tsrun consume`) and by the
# Python Loader with a message naming that uid and TSRUN_PRODUCER_UID;
# with TSRUN_PRODUCER_UID naming it the check passes (and the fake
# producer's silence is what fails next). Needs root (to be another
# user) and setpriv; skipped otherwise.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup peer-cred
[ "$(id -u)" -eq 0 ] || skip "not root"
need setpriv
other="setpriv --reuid=nobody --regid=nogroup --clear-groups"
nobody=$(id -u nobody)
chmod 1777 "$T"

S="$T/train.sock"
# the impostor: listens, accepts, says nothing
$other /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8)
import os; os.chmod(sys.argv[1], 0o777)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' "$S" &
pids=$!
wait_for 5 test -S "$S" || { fail "the impostor did not bind"; finish; }

timeout 20 "$TSRUN" consume "$S" --max-batches 1 >/dev/null 2>"$T/c.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "C client: exit $rc, want a refusal"
grep -q "refusing the producer on $S: it runs as uid $nobody, not as you (uid 0); another user may have bound this socket first. If that user's tsrun is meant, set TSRUN_PRODUCER_UID=$nobody" "$T/c.err" ||
	{ fail "C client: unclear refusal"; cat "$T/c.err"; }

# named: the check passes; the silent impostor then times out the hello
TSRUN_PRODUCER_UID="12345,$nobody" timeout 30 "$TSRUN" consume "$S" --max-batches 1 >/dev/null 2>"$T/c2.err"
grep -q "refusing the producer" "$T/c2.err" && fail "TSRUN_PRODUCER_UID naming the uid still refused"

if "$PY" -c 'import torch' 2>/dev/null; then
	TSRUN_LIBTSCLIENT="${TS_LIBTSCLIENT:-}" LD_PRELOAD="${TS_ASAN_PRELOAD:-}" \
		ASAN_OPTIONS=detect_leaks=0 timeout 30 "$PY" - "$S" >"$T/py.out" 2>&1 <<'EOF'
import sys
import tsrun
try:
    with tsrun.Loader(sys.argv[1], batch_size=1) as loader:
        for _ in loader:
            break
    print("connected")
except Exception as e:
    print("error:", e)
EOF
	grep -q "error: .*refusing the producer on .*: it runs as uid $nobody" "$T/py.out" ||
		{ fail "Python Loader: no refusal"; cat "$T/py.out"; }
fi

finish
