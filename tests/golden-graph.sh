#!/bin/sh
# golden-graph.sh - `tsrun graph --cores 4 examples/NAME.ts` must print
# exactly tests/golden/graph/NAME.txt, for every pipeline in examples/.
# --cores 4 pins the thread count the memory estimate assumes for
# `threads = auto`, so the output does not depend on this machine.
# --dot must print a well-formed Graphviz graph (checked by dot(1) when
# it is installed). UPDATE=1 rewrites the golden files instead.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup golden-graph

golden="$TS_SRCDIR/tests/golden/graph"
cd "$TS_SRCDIR" || exit 1
mkdir -p "$golden"

n=0
for ts in examples/*.ts; do
	name=$(basename "$ts" .ts)
	n=$((n + 1))
	if ! NO_COLOR=1 "$TSRUN" graph --cores 4 "$ts" >"$T/$name.txt" 2>"$T/err"; then
		fail "$name: tsrun graph failed"
		cat "$T/err"
		continue
	fi
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$T/$name.txt" "$golden/$name.txt"
		echo "updated $name.txt"
	elif [ ! -f "$golden/$name.txt" ]; then
		fail "$name: no golden/graph/$name.txt (run with UPDATE=1)"
	elif ! cmp -s "$golden/$name.txt" "$T/$name.txt"; then
		fail "$name: graph differs from golden/graph/$name.txt"
		diff -u "$golden/$name.txt" "$T/$name.txt"
	fi

	# --dot: one digraph, balanced braces, an edge chain ending in the ring.
	"$TSRUN" graph --dot --cores 4 "$ts" >"$T/$name.dot" 2>/dev/null
	open=$(tr -cd '{' <"$T/$name.dot" | wc -c)
	close=$(tr -cd '}' <"$T/$name.dot" | wc -c)
	if ! head -n 1 "$T/$name.dot" | grep -q '^digraph "' ||
	   [ "$open" -ne 1 ] || [ "$close" -ne 1 ] ||
	   ! grep -q -- '-> batch -> ring;' "$T/$name.dot"; then
		fail "$name: --dot output is not the expected graph"
		cat "$T/$name.dot"
	elif command -v dot >/dev/null 2>&1 &&
	     ! dot -Tsvg "$T/$name.dot" >/dev/null 2>"$T/err"; then
		fail "$name: dot(1) rejects the --dot output"
		cat "$T/err"
	fi
done

# Options: --cores must change the scratch estimate, bad values are usage
# errors (exit 2), an unknown pipeline is an invalid file (exit 1).
one=$("$TSRUN" graph --cores 1 examples/imagenet.ts | grep '^memory:')
many=$("$TSRUN" graph --cores 8 examples/imagenet.ts | grep '^memory:')
[ "$one" != "$many" ] || fail "--cores does not change the estimate"
"$TSRUN" graph --cores 0 examples/imagenet.ts >/dev/null 2>&1
[ $? -eq 2 ] || fail "--cores 0 should exit 2"
"$TSRUN" graph --pipeline nosuch examples/imagenet.ts >/dev/null 2>&1
[ $? -eq 1 ] || fail "unknown --pipeline should exit 1"

[ "$n" -gt 0 ] || fail "no examples/*.ts"
echo "$n examples"
finish
