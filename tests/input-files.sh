#!/bin/sh
# input-files.sh - data files that are not what they seem, through both
# read paths (io_uring, and plain reads with TSRUN_NO_URING=1):
#   - a list naming a FIFO, a character device (/dev/zero) and a 3 GiB
#     sparse file next to good images: under on_error = skip the good
#     ones are served and each bad one is listed once with its reason
#     ("not a regular file", "more than max_file_size"), fast, with a
#     small peak memory; under on_error = fail the run stops naming it;
#   - a FIFO as the list file itself, and as a tar shard: a clear error
#     at start, no hang;
#   - a tar member larger than max_file_size fails under on_error.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup input-files

python3 - "$T" <<'EOF' || { fail "cannot write test images"; finish; }
import os, struct, sys, tarfile, zlib
def png(path, v):
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    raw = b''.join(b'\0' + bytes([v] * 8) for _ in range(8))
    hdr = struct.pack('>IIBBBBB', 8, 8, 8, 0, 0, 0, 0)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', hdr) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
root = sys.argv[1]
os.makedirs(root + '/img')
for i in range(4):
    png('%s/img/%d.png' % (root, i), 10 * i)
# a tar shard: three small members and one of 3 KiB (noise PNG-ish bytes)
import io
with tarfile.open(root + '/shard.tar', 'w') as t:
    def add(name, data):
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    for i in range(4):
        data = open('%s/img/%d.png' % (root, i), 'rb').read()
        if i == 3:
            data += b'\0' * 3000   # trailing bytes: a 3 KiB member
        add('%d.png' % i, data)
        add('%d.cls' % i, b'%d' % (i % 2))
EOF
mkfifo "$T/img/fifo.png"
truncate -s 3G "$T/img/sparse.png"
cat >"$T/list.csv" <<EOF
img/0.png,0
img/fifo.png,0
img/1.png,1
/dev/zero,1
img/2.png,0
img/sparse.png,1
img/3.png,1
EOF

# serve NAME ON_ERROR SOURCE [SETTINGS]: write $T/NAME.ts
serve() {
	cat >"$T/$1.ts" <<EOF
pipeline p = $3 | decode(gray) | resize(8) | center_crop(8) | batch(1)
serve p { socket = "$T/$1.sock"  epochs = 1  on_error = $2  threads = 2 ${4:-} }
EOF
}

for mode in uring plain; do
	if [ $mode = plain ]; then export TSRUN_NO_URING=1; else unset TSRUN_NO_URING; fi

	serve "skip-$mode" skip 'list("list.csv")'
	t0=$(date +%s)
	timeout 60 "$TSRUN" run "$T/skip-$mode.ts" --wait 0 >/dev/null 2>"$T/skip-$mode.err"
	rc=$?
	t1=$(date +%s)
	[ "$rc" -eq 0 ] || { fail "$mode skip: exit $rc"; cat "$T/skip-$mode.err"; }
	[ $((t1 - t0)) -lt 20 ] || fail "$mode skip: took $((t1 - t0)) s"
	# (a sample whose file fails is replaced by the next item's: 7 served)
	grep -q "summary: 7 images served.*skipped 3\$" "$T/skip-$mode.err" ||
		{ fail "$mode skip: not 7 served, 3 skipped"; cat "$T/skip-$mode.err"; }
	for f in "$T/img/fifo.png" /dev/zero; do
		n=$(grep -c "^tsrun: skipped $f: not a regular file (a FIFO, device or socket): tsrun reads only regular files\$" "$T/skip-$mode.err")
		[ "$n" -eq 1 ] || { fail "$mode skip: $f listed $n times, want once as not a regular file"; cat "$T/skip-$mode.err"; }
	done
	grep -q "^tsrun: skipped $T/img/sparse.png: 3 GiB, more than max_file_size (64 MiB): not read; raise max_file_size in the serve block if it is meant\$" "$T/skip-$mode.err" ||
		{ fail "$mode skip: the 3 GiB file not refused by size"; cat "$T/skip-$mode.err"; }
	peak=$(sed -n 's/.*peak memory \([0-9.]*\) MiB.*/\1/p' "$T/skip-$mode.err")
	[ -n "$peak" ] && awk -v p="$peak" 'BEGIN { exit !(p < 200) }' ||
		fail "$mode skip: peak memory '$peak' MiB"

	serve "fail-$mode" fail 'list("list.csv")'
	timeout 60 "$TSRUN" run "$T/fail-$mode.ts" --wait 0 >/dev/null 2>"$T/fail-$mode.err"
	rc=$?
	[ "$rc" -eq 1 ] || { fail "$mode fail: exit $rc, want 1"; cat "$T/fail-$mode.err"; }
	grep -q "^tsrun run: \($T/img/fifo.png\|/dev/zero\|$T/img/sparse.png\): \(not a regular file\|3 GiB, more than\)" "$T/fail-$mode.err" ||
		{ fail "$mode fail: no message naming the file"; cat "$T/fail-$mode.err"; }

	# a tar member above max_file_size
	serve "tar-$mode" skip 'tar("shard.tar")' 'max_file_size = 2 KiB'
	timeout 60 "$TSRUN" run "$T/tar-$mode.ts" --wait 0 >/dev/null 2>"$T/tar-$mode.err"
	rc=$?
	[ "$rc" -eq 0 ] || { fail "$mode tar: exit $rc"; cat "$T/tar-$mode.err"; }
	grep -q "summary: 4 images served.*skipped 1\$" "$T/tar-$mode.err" &&
		grep -q "^tsrun: skipped .*shard.tar: 3 KiB, more than max_file_size (2 KiB)" "$T/tar-$mode.err" ||
		{ fail "$mode tar: the big member not refused"; cat "$T/tar-$mode.err"; }
done
unset TSRUN_NO_URING

# the list itself, and a tar shard, as FIFOs
mkfifo "$T/fifo.csv" "$T/fifo.tar"
serve listfifo fail 'list("fifo.csv")'
timeout 20 "$TSRUN" run "$T/listfifo.ts" --wait 0 >/dev/null 2>"$T/listfifo.err"
rc=$?
[ "$rc" -eq 1 ] || { fail "a FIFO list: exit $rc, want 1"; cat "$T/listfifo.err"; }
grep -q "list '.*fifo.csv': not a regular file" "$T/listfifo.err" || { fail "a FIFO list: unclear error"; cat "$T/listfifo.err"; }
serve tarfifo fail 'tar("fifo.tar")'
timeout 20 "$TSRUN" run "$T/tarfifo.ts" --wait 0 >/dev/null 2>"$T/tarfifo.err"
rc=$?
[ "$rc" -eq 1 ] || { fail "a FIFO tar shard: exit $rc, want 1"; cat "$T/tarfifo.err"; }
grep -q "tar shard '.*fifo.tar': not a regular file" "$T/tarfifo.err" || { fail "a FIFO shard: unclear error"; cat "$T/tarfifo.err"; }

# --- symbolic links cannot multiply paths --------------------------------------
# 21 folders of two links each to the next: 2^21 paths to one image,
# listed once (each folder is listed once per class, by device and inode)
mkdir -p "$T/fan/c" "$T/links"
k=1
while [ $k -le 21 ]; do mkdir "$T/links/d$k"; k=$((k + 1)); done
cp "$T/img/0.png" "$T/links/d21/x.png"
ln -s "$T/links/d1" "$T/fan/c/a"
ln -s "$T/links/d1" "$T/fan/c/b"
k=1
while [ $k -le 20 ]; do
	ln -s "$T/links/d$((k + 1))" "$T/links/d$k/a"
	ln -s "$T/links/d$((k + 1))" "$T/links/d$k/b"
	k=$((k + 1))
done
serve fan fail 'folder("fan")'
t0=$(date +%s)
timeout 60 "$TSRUN" run "$T/fan.ts" --wait 0 >/dev/null 2>"$T/fan.err"
rc=$?
t1=$(date +%s)
[ "$rc" -eq 0 ] || { fail "fan-out: exit $rc"; cat "$T/fan.err"; }
grep -q "summary: 1 images served" "$T/fan.err" || { fail "fan-out: the image is not listed once"; cat "$T/fan.err"; }
[ $((t1 - t0)) -lt 10 ] || fail "fan-out: took $((t1 - t0)) s"

# --- headers that declare huge images --------------------------------------------
# A 16x16 progressive JPEG whose SOF2 says 16384x16384 (libjpeg would
# allocate its whole coefficient buffer, 805 MB and more, per worker):
# refused from the header by max_image_pixels. A PNG header of
# 2147483647 x 1 is refused before any crop box is computed from it (the
# box used to overflow an int: UBSan, runtime/augment.c).
if /usr/bin/python3 -c 'import PIL' 2>/dev/null; then
	mkdir -p "$T/huge/a"
	/usr/bin/python3 - "$T/huge/a" <<'EOF'
import io, struct, sys, zlib
from PIL import Image
b = io.BytesIO()
Image.new('RGB', (16, 16), (10, 20, 30)).save(b, 'JPEG', progressive=True)
d = bytearray(b.getvalue())
i = d.index(b'\xff\xc2')
d[i + 5:i + 9] = struct.pack('>HH', 16384, 16384)
open(sys.argv[1] + '/bomb.jpg', 'wb').write(bytes(d))
def chunk(t, x):
    return struct.pack('>I', len(x)) + t + x + struct.pack('>I', zlib.crc32(t + x) & 0xffffffff)
hdr = struct.pack('>IIBBBBB', 2147483647, 1, 8, 0, 0, 0, 0)
open(sys.argv[1] + '/wide.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', hdr) +
    chunk(b'IDAT', zlib.compress(b'\0' * 16)) + chunk(b'IEND', b''))
Image.new('RGB', (16, 16), (1, 2, 3)).save(sys.argv[1] + '/ok.jpg', 'JPEG')
EOF
	cat >"$T/huge.ts" <<EOF
pipeline p = folder("huge") | decode | random_resized_crop(8) | batch(1)
serve p { socket = "$T/huge.sock"  epochs = 1  on_error = skip  threads = 2 }
EOF
	timeout 60 "$TSRUN" run "$T/huge.ts" --wait 0 >/dev/null 2>"$T/huge.err"
	rc=$?
	[ "$rc" -eq 0 ] || { fail "huge: exit $rc"; cat "$T/huge.err"; }
	grep -q "^tsrun: skipped $T/huge/a/bomb.jpg: image is 16384x16384 (268.4 Mpx), more than max_image_pixels (33.6 Mpx): not decoded" "$T/huge.err" ||
		{ fail "huge: the JPEG bomb not refused from its header"; cat "$T/huge.err"; }
	grep -q "^tsrun: skipped $T/huge/a/wide.png: image too large: 2147483647x1" "$T/huge.err" ||
		{ fail "huge: the 2^31-1 wide PNG not refused"; cat "$T/huge.err"; }
	peak=$(sed -n 's/.*peak memory \([0-9.]*\) MiB.*/\1/p' "$T/huge.err")
	[ -n "$peak" ] && awk -v p="$peak" 'BEGIN { exit !(p < 200) }' ||
		fail "huge: peak memory '$peak' MiB"
fi

finish
