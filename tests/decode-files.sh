#!/bin/sh
# decode-files.sh - decode-tool (tsrun's decoders behind a tiny CLI) on
# files made with standard tools: identical to djpeg / ImageMagick, and a
# clear error with exit status 1 on truncated and foreign files.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup decode-files
tool=${TS_TOOL_DECODE_TOOL:?TS_TOOL_DECODE_TOOL not set}
need convert cjpeg djpeg cmp
cd "$T" || exit 1

convert -size 131x97 gradient:red-blue -depth 8 src.ppm &&
	convert -size 131x97 gradient:white-black -depth 16 src16.pgm || { fail "convert: cannot make the sources"; finish; }

# JPEG: byte-identical to djpeg (what PIL decodes), baseline and progressive.
cjpeg -quality 90 src.ppm > base.jpg && cjpeg -progressive src.ppm > prog.jpg || { fail "cjpeg failed"; finish; }
for f in base prog; do
	djpeg -ppm $f.jpg > $f.ref.ppm
	"$tool" $f.jpg $f.out.ppm > $f.geom || fail "$f.jpg did not decode"
	cmp -s $f.ref.ppm $f.out.ppm || fail "$f.jpg differs from djpeg"
	grep -q '^scale 8/8 out 131x97 ' $f.geom || fail "$f.jpg geometry: $(cat $f.geom)"
done

# A region at 2/8 scale equals djpeg -scale 2/8 cropped at (floor(x/4), floor(y/4)).
"$tool" base.jpg roi 40 20 80 64 20 16 roi.ppm > roi.geom || fail "roi decode failed"
grep -q '^scale 2/8 out 20x16 ' roi.geom || fail "roi geometry: $(cat roi.geom)"
djpeg -ppm -scale 2/8 base.jpg | convert - -crop 20x16+10+5 +repage roi.ref.ppm
cmp -s roi.ref.ppm roi.ppm || fail "scaled roi differs from djpeg -scale 2/8"

# PNG 16-bit gray: identical to ImageMagick's own 16-bit PGM.
convert src16.pgm -define png:bit-depth=16 g16.png
"$tool" --gray --depth 16 g16.png g16.out.pgm > /dev/null || fail "g16.png did not decode"
cmp -s src16.pgm g16.out.pgm || fail "g16.png differs from its source"
"$tool" --info g16.png | grep -q '^png 131x97 channels 1 depth 16 progressive 0$' ||
	fail "g16.png info: $("$tool" --info g16.png)"

# Errors: exit status 1 and a message that names the problem.
head -c $(($(wc -c < base.jpg) / 2)) base.jpg > cut.jpg
head -c 100 g16.png > cut.png
convert src.ppm src.gif
for case in "cut.jpg:truncated JPEG data" "cut.png:premature end of PNG data" \
	    "src.gif:not a JPEG or PNG file (starts with 47 49 46 38"; do
	f=${case%%:*}
	msg=${case#*:}
	"$tool" "$f" out.ppm > /dev/null 2> err.txt
	rc=$?
	[ $rc -eq 1 ] || fail "$f: exit status $rc, want 1"
	grep -qF "$msg" err.txt || fail "$f: message '$(cat err.txt)' lacks '$msg'"
done

finish
