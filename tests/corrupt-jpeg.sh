#!/bin/sh
# corrupt-jpeg.sh - real photographs (tsrun make-dataset) made corrupt the
# ways libjpeg only warns about: cut in the middle of the scan with an EOI
# marker after it ("Corrupt JPEG data: premature end of data segment": it
# would pad the rest with zeros and serve a half-gray image), cut without
# one ("premature end of file"), and a marker dropped into the entropy
# data. Under on_error = skip each is skipped, counted and listed once
# with its reason while the good images are served; under on_error = fail
# the run stops naming the file. djpeg, where installed, confirms that
# libjpeg warns about each (and only warns).
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup corrupt-jpeg
"$TSRUN" make-dataset "$T/ds" --images 12 --classes 2 > "$T/make.out" 2>&1 ||
	skip "no photographs to make a data set: $(tail -1 "$T/make.out")"
ls "$T"/ds/train/*/*.jpg | sort > "$T/all"
[ "$(wc -l < "$T/all")" -eq 12 ] || fail "the data set has $(wc -l < "$T/all") images"
mkdir "$T/bad"
a=$(sed -n 1p "$T/all") b=$(sed -n 2p "$T/all") c=$(sed -n 3p "$T/all")
# half the file, then EOI
n=$(wc -c < "$a")
head -c $((n / 2)) "$a" > "$T/bad/segment.jpg"
printf '\377\331' >> "$T/bad/segment.jpg"
# half the file, no EOI
n=$(wc -c < "$b")
head -c $((n / 2)) "$b" > "$T/bad/eof.jpg"
# a marker (FF C4, a Huffman table's) in the scan, then the file's tail
n=$(wc -c < "$c")
{ head -c $((n / 2)) "$c"; printf '\377\304'; tail -c $((n / 2 - 2)) "$c"; } > "$T/bad/marker.jpg"
if command -v djpeg > /dev/null; then
	for f in segment eof marker; do
		djpeg "$T/bad/$f.jpg" > /dev/null 2> "$T/djpeg-$f.err"
		grep -q "Corrupt JPEG data\|Premature end of JPEG file" "$T/djpeg-$f.err" ||
			fail "djpeg does not warn about $f.jpg: $(cat "$T/djpeg-$f.err")"
	done
	grep -q "premature end of data segment" "$T/djpeg-segment.err" ||
		fail "djpeg's warning for segment.jpg: $(cat "$T/djpeg-segment.err")"
fi
# the list: 9 good images with the 3 bad ones between them (a failed
# sample is replaced by the next item's, a good one), labels 0
{ sed -n '4,6p' "$T/all"; echo "$T/bad/segment.jpg"; sed -n '7,9p' "$T/all"
  echo "$T/bad/eof.jpg"; sed -n '10,12p' "$T/all"; echo "$T/bad/marker.jpg"; } |
	sed 's/$/,0/' > "$T/list.csv"

serve() {
	cat > "$T/$1.ts" <<EOF
pipeline p = list("list.csv") | decode(rgb) | resize(32) | center_crop(32) | to(uint8, nhwc) | batch(4)
serve p { socket = "$T/$1.sock"  epochs = 1  on_error = $1  threads = 2 }
EOF
}
serve skip
timeout 60 "$TSRUN" run "$T/skip.ts" --wait 0 > /dev/null 2> "$T/skip.err"
rc=$?
[ "$rc" -eq 0 ] || fail "on_error = skip: exit $rc: $(cat "$T/skip.err")"
grep -q "summary: 12 images served.*skipped 3\$" "$T/skip.err" ||
	fail "on_error = skip: not 12 served (bad ones replaced), 3 skipped: $(grep summary "$T/skip.err")"
grep -q "^tsrun: skipped $T/bad/segment.jpg: corrupt JPEG data: premature end of data segment\$" "$T/skip.err" ||
	fail "segment.jpg not skipped as corrupt data: $(grep skipped "$T/skip.err")"
grep -q "^tsrun: skipped $T/bad/eof.jpg: truncated JPEG data" "$T/skip.err" ||
	fail "eof.jpg not skipped as truncated: $(grep skipped "$T/skip.err")"
grep -q "^tsrun: skipped $T/bad/marker.jpg: corrupt" "$T/skip.err" ||
	fail "marker.jpg not skipped as corrupt: $(grep skipped "$T/skip.err")"
for f in segment eof marker; do
	n=$(grep -c "^tsrun: skipped $T/bad/$f.jpg" "$T/skip.err")
	[ "$n" -eq 1 ] || fail "$f.jpg listed $n times"
done

serve fail
timeout 60 "$TSRUN" run "$T/fail.ts" --wait 0 > /dev/null 2> "$T/fail.err"
rc=$?
[ "$rc" -eq 1 ] || fail "on_error = fail: exit $rc, want 1: $(cat "$T/fail.err")"
grep -q "^tsrun run: $T/bad/\(segment\|eof\|marker\).jpg: \(corrupt\|truncated\) JPEG data" "$T/fail.err" ||
	fail "on_error = fail: no message naming the file: $(cat "$T/fail.err")"
[ "$failed" -eq 0 ] && echo "corrupt-jpeg: 3 corrupt photographs skipped and counted, or failing the run, each named with its reason"
finish
