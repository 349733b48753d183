#!/bin/sh
# perf/ops.sh - CPU ms/image of each image operator, at 224x224 by default:
# for every row below, `tsrun bench` (one worker thread, no digest) runs
# synthetic([S, S]) | OP | batch(32) and the same pipeline with the row's
# baseline stage instead of OP (none, or for an operator that changes the
# size a center_crop to the same size: a view, next to free), in turn
# (A B A B ..., --pairs pairs), and the row reports the median of the
# pairs' differences of cpu/image (the operator's own cost, the synthetic
# source and the output stage subtracted) with their range.
#
#   perf/ops.sh [--tsrun PATH] [--images N] [--size S] [--pairs K] [NAME...]
#
# NAME... runs only the rows whose name starts with one of them. Prints a
# markdown table (perf/README.md's "Operators" table). Measure on a quiet
# machine; a loaded one gives noise, not figures.
#
# Rows: "name;source side (0: --size);the stage(s);the baseline stage
# (empty: none)", split on ';' so that a stage may be a chain of
# operators joined by '|'. Each family adds its own rows in its own block.
set -u

tsrun=${TSRUN:-build/src/tsrun}
images=512
size=224
pairs=3
while [ $# -gt 0 ]; do
	case $1 in
	--tsrun) tsrun=$2; shift 2 ;;
	--images) images=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--pairs) pairs=$2; shift 2 ;;
	--help|-h) sed -n '2,16p' "$0"; exit 0 ;;
	--*) echo "perf/ops.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ -x "$tsrun" ] || { echo "perf/ops.sh: no tsrun at $tsrun (build first, or --tsrun PATH)" >&2; exit 2; }

rows() {
	cat <<'EOF'
# colour (ops_color.c)
invert;0;invert
posterize;0;posterize(4)
solarize;0;solarize(128)
autocontrast;0;autocontrast
equalize;0;equalize
adjust_brightness;0;adjust_brightness(1.3)
adjust_contrast;0;adjust_contrast(1.3)
adjust_saturation;0;adjust_saturation(1.3)
adjust_hue;0;adjust_hue(0.1)
color_jitter;0;color_jitter(0.4, 0.4, 0.4, 0.1)
# filters and interpolation (ops_filter.c, ops_color.c, ops_image.c)
adjust_sharpness;0;adjust_sharpness(2)
adjust_gamma;0;adjust_gamma(0.8)
gaussian_blur(3);0;gaussian_blur(3, 1.0)
gaussian_blur(23);0;gaussian_blur(23, 0.1..2.0)
resize bilinear 448->224;448;resize([224, 224]);center_crop(224)
resize bicubic 448->224;448;resize([224, 224], interpolation = bicubic);center_crop(224)
resize lanczos 448->224;448;resize([224, 224], interpolation = lanczos);center_crop(224)
rrc bilinear 448->224;448;random_resized_crop(224);center_crop(224)
rrc bicubic 448->224;448;random_resized_crop(224, interpolation = bicubic);center_crop(224)
# geometry (ops_geometry.c); pad is charged its larger output too
rotate nearest;0;rotate(30)
rotate bilinear;0;rotate(30, interpolation = bilinear)
rotate bicubic;0;rotate(30, interpolation = bicubic)
rotate 90;0;rotate(90)
affine shear_x (RandAugment);0;affine(0, shear = [16.7, 0], center = [0, 0])
affine translate_x (RandAugment);0;affine(0, translate = [50, 0])
affine bilinear;0;affine(10, [4, -2], 1.1, [5, 0], interpolation = bilinear)
perspective bilinear;0;perspective([0, 0, 223, 0, 223, 223, 0, 223], [12, 4, 210, 0, 223, 219, 5, 200])
pad constant;0;pad(16)
pad reflect;0;pad(16, padding_mode = reflect)
erase;0;erase(50, 50, 100, 100)
random_rotation;0;random_rotation(15, interpolation = bilinear)
random_affine;0;random_affine(10, translate = [0.1, 0.1], scale = 0.9..1.1, shear = 5)
random_perspective;0;random_perspective(0.5, p = 1)
# policies (ops_policy.c); random_erasing needs the float tensor: its row
# is a chain after normalize, against normalize alone
random_apply;0;random_apply(equalize, p = 0.5)
random_choice;0;random_choice([equalize, invert, autocontrast])
rand_augment(2, 9);0;rand_augment(2, 9)
trivial_augment_wide;0;trivial_augment_wide
auto_augment(imagenet);0;auto_augment(imagenet)
augmix;0;augmix
augmix(chain_depth = 1);0;augmix(chain_depth = 1)
random_erasing(0.25);0;normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | random_erasing(0.25);normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
EOF
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# cpu SIDE STAGE -> cpu/image_no_digest in ms ("" when the run failed)
cpu() {
	{
		echo "pipeline p ="
		echo "    synthetic([$1, $1], count = $images)"
		[ -n "$2" ] && echo "    | $2"
		echo "    | batch(32)"
	} > "$tmp/p.ts"
	"$tsrun" bench "$tmp/p.ts" --threads 1 --no-digest > "$tmp/out" 2> "$tmp/err" ||
		{ sed 's/^/  /' "$tmp/err" >&2; return 1; }
	sed -n 's/^cpu\/image_no_digest: \([0-9.]*\) ms$/\1/p' "$tmp/out"
}

wanted() {
	[ $# -le 1 ] && return 0
	n=$1
	shift
	for w in "$@"; do
		case $n in "$w"*) return 0 ;; esac
	done
	return 1
}

echo "| operator | CPU ms/image (median of $pairs pairs) | range | baseline ms/image |"
echo "| --- | --- | --- | --- |"
rows | grep -v '^#' | while IFS=';' read -r name side stage basestage; do
	wanted "$name" "$@" || continue
	[ "$side" = 0 ] && side=$size
	diffs=""
	base=""
	k=0
	while [ $k -lt "$pairs" ]; do
		a=$(cpu "$side" "$stage") && b=$(cpu "$side" "$basestage") && [ -n "$a" ] && [ -n "$b" ] ||
			{ echo "| $name | failed | | |"; : > "$tmp/failed"; continue 2; }
		diffs="$diffs $(echo "$a $b" | awk '{printf "%.4f", $1 - $2}')"
		base="$base $b"
		k=$((k + 1))
	done
	echo "$diffs" | tr ' ' '\n' | grep . | sort -g > "$tmp/d"
	echo "$base" | tr ' ' '\n' | grep . | sort -g > "$tmp/b"
	med=$(awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}' "$tmp/d")
	bmed=$(awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}' "$tmp/b")
	lo=$(head -n 1 "$tmp/d")
	hi=$(tail -n 1 "$tmp/d")
	echo "| $name (${side}x${side}) | $med | $lo .. $hi | $bmed |"
done
[ ! -e "$tmp/failed" ]
