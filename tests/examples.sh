#!/bin/sh
# examples.sh - every examples/*.ts works as its header says, from a
# repository root laid out as ./scripts/quickstart leaves it (data/train
# at the root, made small here; build/ is this build; tsrun on PATH is
# this build's), so that an example cannot drift from the data it reads.
# The header's command lines ("#   CMD", a "\" at the end continues one)
# (a trailing "# comment" dropped) are run in turn:
#   tsrun make-dataset data ...   as written, with fewer images;
#   tsrun check / graph / bench   as written;
#   tsrun run FILE ...            as `tsrun bench FILE --epochs 1 --batches 2`
#                                 (a run serves trainers, and needs a GPU
#                                 for device(cuda) to be what it says);
#   cc ..., build/examples/...    as written;
#   a trainer (python3, torchrun,
#   build/examples/consumer)      not run (quickstart.sh, train.sh and
#                                 views.py run them), but the script it
#                                 names must exist and its --socket must
#                                 be the pipeline's serve socket.
# A header with no tsrun command fails: it does not say how to run it.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup examples
step_s=$(ts_bound 120 480)

repo=$T/repo
mkdir -p "$repo" "$T/bin" || exit 1
cp -r "$TS_SRCDIR/examples" "$repo/examples" || exit 1
cp -r "$TS_SRCDIR/include" "$repo/include" || exit 1
rm -f "$repo"/examples/*.so
ln -s "$(cd "${TS_BUILDDIR:?}" && pwd)" "$repo/build"
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${TS_EXE_WRAPPER:-}" "$TSRUN" >"$T/bin/tsrun"
chmod +x "$T/bin/tsrun"
PATH=$T/bin:$PATH
export PATH
cd "$repo" || exit 1

# The quickstart's layout: data/train at the repository root.
tsrun make-dataset data --images 24 --quiet >"$T/ds.log" 2>&1 ||
	{ cat "$T/ds.log"; fail "cannot make the data set"; finish; }

# The cubesat frames: 16-bit grayscale PNGs of 1024x1024, half cloud.
frames=no
if /usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null; then
	mkdir -p examples/frames/cam
	/usr/bin/python3 - examples/frames/cam <<'PYEOF' && frames=yes
import sys
import numpy as np
from PIL import Image
y, x = np.mgrid[0:1024, 0:1024]
for i in range(2):
    img = 30000 + 24000 * np.sin(x / (80.0 + 9 * i)) * np.cos(y / 53.0)
    img[:512, :512] = 64000
    Image.fromarray(img.clip(0, 65535).astype(np.uint16), mode="I;16").save(
        "%s/f%d.png" % (sys.argv[1], i))
PYEOF
fi

# header FILE: the command lines of FILE's leading comment, one a line,
# continuations joined.
header() {
	awk '
		!/^#/ { exit }
		/^#   / || cont {
			line = substr($0, cont ? 2 : 5)
			sub(/^ +/, "", line)
			sub(/ +# .*$/, "", line)
			cont = sub(/ *\\$/, " ", line)
			cmd = cmd line
			if (!cont) { print cmd; cmd = "" }
		}' "$1"
}

# the serve block's socket of FILE
serve_socket() {
	sed -n 's/^ *socket *= *"\([^"]*\)".*/\1/p' "$1" | head -1
}

for ts in examples/*.ts; do
	name=$(basename "$ts")
	header "$ts" >"$T/cmds"
	n_tsrun=0
	while IFS= read -r cmd; do
		[ -n "$cmd" ] || continue
		# the words after any VAR=value prefix
		cmd=$(printf '%s\n' "$cmd" | tr -s ' ')
		words=$(printf '%s\n' "$cmd" | sed 's/^\([A-Za-z_][A-Za-z0-9_]*=[^ ]* \)*//')
		env_prefix=${cmd%"$words"}
		first=${words%% *}
		case "$words" in
		"tsrun make-dataset "*)
			run=$(printf '%s\n' "$words" | sed 's/--images [0-9]*/--images 24/;
				s/--val [0-9]*/--val 8/')" --quiet"
			;;
		"tsrun run "* | "tsrun examples/"*)
			run=$(printf '%s\n' "$words" | sed 's/ &$//; s/ *\[--device N\]//;
				s/ --device [0-9N]*//; s/ --wait [0-9]*//; s/^tsrun run /tsrun /;
				s/^tsrun /tsrun bench /')" --epochs 1 --batches 2"
			;;
		tsrun\ *) run=$(printf '%s\n' "$words" | sed 's/ &$//') ;;
		build/examples/consumer\ *)
			sock=$(printf '%s\n' "$words" | cut -d' ' -f2)
			if [ "$sock" != "$(serve_socket "$ts")" ]; then
				fail "$name: its C trainer reads $sock, the pipeline serves $(serve_socket "$ts")"
			else
				pass "$name: C trainer on the pipeline's socket"
			fi
			continue
			;;
		cc\ * | build/*) run=$words ;;
		/usr/bin/python3\ * | torchrun\ * | python3\ *)
			script=$(printf '%s\n' "$words" | tr ' ' '\n' | grep '^examples/.*\.py$' | head -1)
			sock=$(printf '%s\n' "$words" | sed -n 's/.*--socket \([^ ]*\).*/\1/p')
			if [ -z "$script" ] || [ ! -f "$script" ]; then
				fail "$name: its trainer line names no examples/*.py that exists: $cmd"
			elif [ -n "$sock" ] && [ "$sock" != "$(serve_socket "$ts")" ]; then
				fail "$name: its trainer reads $sock, the pipeline serves $(serve_socket "$ts")"
			else
				pass "$name: trainer $script on the pipeline's socket"
			fi
			continue
			;;
		*)
			fail "$name: a header command this test does not know: $cmd"
			continue
			;;
		esac
		case "$first" in tsrun) n_tsrun=$((n_tsrun + 1)) ;; esac
		case "$name:$frames" in
		cubesat*:no)
			echo "skip $name: $run (no numpy and PIL to make the frames)"
			continue
			;;
		esac
		if [ "$first" = cc ] && ! command -v cc >/dev/null 2>&1; then
			echo "skip $name: $run (no cc)"
			continue
		fi
		# shellcheck disable=SC2086
		if env $env_prefix timeout "$step_s" sh -c "$run" >"$T/out" 2>&1; then
			case "$run" in
			"tsrun bench "*)
				if grep -q '^images: [1-9]' "$T/out"; then
					pass "$name: $run"
				else
					cat "$T/out"
					fail "$name: $run made no images"
				fi
				;;
			*) pass "$name: $run" ;;
			esac
		else
			cat "$T/out"
			fail "$name: \`$env_prefix$run\` (from \`$cmd\`) failed"
		fi
	done <"$T/cmds"
	[ "$n_tsrun" -gt 0 ] || fail "$name: its header has no tsrun command (how is it run?)"
done
finish
