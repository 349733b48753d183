#!/bin/sh
# layout.sh - README's "Layout" section names every source file of the
# layer folders, no file includes a header by a relative path (which
# would step around the per-folder include paths of the build), and
# every shell test (tests/**/*.sh) sources tests/lib.sh, the one preamble
# ($T, fail and finish, failures inside subshells counted).
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup layout
cd "$TS_SRCDIR" || fail "cannot enter $TS_SRCDIR"
sed -n '/^## Layout$/,/^## /p' README.md >"$T/layout"
[ -s "$T/layout" ] || fail "README.md has no '## Layout' section"
missing=""
n=0
for d in include/tsrun common plan grammar dsl runtime/base runtime/io runtime/decode \
	runtime/kernels runtime/kernels/simd runtime/engine runtime/share runtime/serve \
	runtime/cuda preview src src/client src/python/tsrun; do
	[ -d "$d" ] || fail "folder $d is gone: update tests/layout.sh and README's Layout"
	for f in "$d"/*; do
		[ -f "$f" ] || continue
		case $f in
		*.c | *.h | *.def | *.cu | *.sym | *.l | *.y | *.py) ;;
		*) continue ;;
		esac
		n=$((n + 1))
		b=$(basename "$f")
		grep -qF "\`$b\`" "$T/layout" || missing="$missing $f"
	done
done
[ -z "$missing" ] || fail "README's Layout does not name:$missing (say what each holds)"
bad=$(grep -rnE '^#include "\.\./' include common plan dsl runtime preview src \
	--include='*.c' --include='*.h' --include='*.cu' || true)
[ -z "$bad" ] || fail "relative includes step around the layers: $bad"
# An operator is one unit: its kind is named in at most 3 source files
# outside the tests (its kernel family's, and at most two that lower or
# free it); the rest ask the op's flags (CODING_STYLE.md).
kinds=$(sed -n 's/^TS_OP(\([A-Z0-9_]*\),.*/\1/p' plan/ops.def)
[ -n "$kinds" ] || fail "no TS_OP(...) rows read from plan/ops.def"
spread=""
for k in $kinds; do
	files=$(grep -rlw "TS_OP_$k" include common plan grammar dsl runtime preview src \
		--include='*.c' --include='*.h' --include='*.cu' --include='*.l' --include='*.y' | sort)
	c=$(printf '%s\n' "$files" | grep -c .)
	[ "$c" -le 3 ] || spread="$spread TS_OP_$k($c: $(echo $files))"
done
[ -z "$spread" ] || fail "operator kinds named in more than 3 files (ask the op's flags instead):$spread"
pass "README's Layout names all $n files of the layer folders; no relative includes; no kind named in more than 3 files"
nolib=""
ns=0
for f in $(find tests -name '*.sh' ! -path tests/lib.sh | sort); do
	ns=$((ns + 1))
	grep -q '^\. "[^"]*/tests/lib\.sh"$' "$f" || nolib="$nolib $f"
done
[ "$ns" -gt 0 ] || fail "no shell tests found under tests/"
[ -z "$nolib" ] || fail "shell tests that do not source tests/lib.sh:$nolib" \
	"(start them with: . \"\${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh\"; ts_setup NAME)"
[ -n "$nolib" ] || pass "all $ns shell tests under tests/ source tests/lib.sh"
finish
