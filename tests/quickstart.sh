#!/bin/sh
# quickstart.sh - scripts/quickstart end to end, in a temporary copy of the
# files it uses (its own data/ and socket; build/ is a link to this build,
# so its compile step is a no-op): it installs nothing (all present), makes
# the data set, serves examples/quickstart.ts to train.py and the C
# consumer, both losses fall, and the output ends with tsrun's summary.
# Skips (77) without torch under /usr/bin/python3 or when that Python
# cannot load this build's libtsclient (a sanitizer build).
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
: "${TS_BUILDDIR:?}" "${TS_LIBTSCLIENT:?}"
ts_setup quickstart
ts_fatal=1   # the first failure ends the test
tmp=$T
need_python torch
"$PY" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$TS_LIBTSCLIENT" 2>/dev/null ||
	skip "$PY cannot load $TS_LIBTSCLIENT (sanitizer build?)"
q=$tmp/repo
mkdir -p "$q/scripts" "$q/examples" "$q/src"
for f in scripts/quickstart scripts/install-deps scripts/packages.txt \
	examples/quickstart.ts examples/train.py; do
	cp "$TS_SRCDIR/$f" "$q/$f" || fail "cannot copy $f"
done
cp -r "$TS_SRCDIR/src/python" "$q/src/python" || fail "cannot copy src/python"
ln -s "$(cd "$TS_BUILDDIR" && pwd)" "$q/build"

images=300
epochs=$(sed -n 's/^ *epochs *= *\([0-9]*\).*/\1/p' "$q/examples/quickstart.ts")
[ -n "$epochs" ] && [ "$epochs" -ge 1 ] || fail "no epochs in quickstart.ts"

start=$(date +%s)
TSRUN_IMAGES=$images TSRUN_SOCKET=$tmp/qs.sock TSRUN_TIMEOUT=240 \
	timeout 300 "$q/scripts/quickstart" >"$tmp/out" 2>&1
rc=$?
secs=$(($(date +%s) - start))
cat "$tmp/out"
echo "quickstart.sh: scripts/quickstart exited $rc after $secs s"
[ $rc -eq 0 ] || fail "scripts/quickstart exited $rc"
out=$tmp/out

grep -q "^install-deps: all packages present" "$out" || fail "install-deps did not run"
[ "$(find "$q/data/train" -name '*.jpg' | wc -l)" -eq $images ] ||
	fail "data/train does not hold $images images"
grep -q "serving on $tmp/qs.sock (epochs: $epochs); waiting for 2 trainers" "$out" ||
	fail "tsrun did not serve $epochs epochs on the test socket"
grep -q "^tsrun: epoch [0-9]*/$epochs \[" "$out" || fail "no status line"

total=$((images * epochs))
grep -q "^C trainer: consumer: images $total .* epochs 0\.\.$((epochs - 1)) " "$out" ||
	fail "the C trainer did not read all $total samples"
grep -q "^PyTorch trainer: steps: $(((images + 31) / 32 * epochs))  images: $total " "$out" ||
	fail "train.py did not read all $total samples"
for who in "PyTorch trainer" "C trainer"; do
	set -- $(sed -n "s/^$who: loss: first \([0-9.]*\) last \([0-9.]*\)\$/\1 \2/p" "$out")
	[ $# -eq 2 ] || fail "no loss line from the $who"
	awk -v f="$1" -v l="$2" 'BEGIN { exit !(l < 0.9 * f) }' ||
		fail "the $who's loss did not fall: first $1 last $2"
done

# It ends with tsrun's summary: images served (then the producer's time
# and who waited on whom), then one line per trainer.
tail -n 5 "$out" | grep -q "^tsrun: summary: $total images served" ||
	fail "the output does not end with tsrun's summary"
[ "$(tail -n 2 "$out" | grep -c '^tsrun: summary: consumer ')" -eq 2 ] ||
	fail "the summary does not end with the two trainers"
[ ! -e "$tmp/qs.sock" ] || fail "the socket was left behind"
finish
