#!/bin/sh
# golden-graph.sh - `tsrun graph --cores 4 examples/NAME.ts` must print
# exactly tests/golden/graph/NAME.txt, for every pipeline in examples/.
# --cores 4 pins the thread count the memory estimate assumes for
# `threads = auto`, so the output does not depend on this machine.
# --dot must print a well-formed Graphviz graph (checked by dot(1) when
# it is installed). UPDATE=1 rewrites the golden files instead.
set -u
: "${TSRUN:?TSRUN must name the tsrun binary}"
: "${TS_SRCDIR:?TS_SRCDIR must name the source root}"

golden="$TS_SRCDIR/tests/golden/graph"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$TS_SRCDIR" || exit 1
mkdir -p "$golden"

n=0
failed=0
for ts in examples/*.ts; do
	name=$(basename "$ts" .ts)
	n=$((n + 1))
	if ! NO_COLOR=1 "$TSRUN" graph --cores 4 "$ts" >"$tmp/$name.txt" 2>"$tmp/err"; then
		echo "FAIL $name: tsrun graph failed"
		cat "$tmp/err"
		failed=$((failed + 1))
		continue
	fi
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$tmp/$name.txt" "$golden/$name.txt"
		echo "updated $name.txt"
	elif [ ! -f "$golden/$name.txt" ]; then
		echo "FAIL $name: no golden/graph/$name.txt (run with UPDATE=1)"
		failed=$((failed + 1))
	elif ! cmp -s "$golden/$name.txt" "$tmp/$name.txt"; then
		echo "FAIL $name: graph differs from golden/graph/$name.txt"
		diff -u "$golden/$name.txt" "$tmp/$name.txt"
		failed=$((failed + 1))
	fi

	# --dot: one digraph, balanced braces, an edge chain ending in the ring.
	"$TSRUN" graph --dot --cores 4 "$ts" >"$tmp/$name.dot" 2>/dev/null
	open=$(tr -cd '{' <"$tmp/$name.dot" | wc -c)
	close=$(tr -cd '}' <"$tmp/$name.dot" | wc -c)
	if ! head -n 1 "$tmp/$name.dot" | grep -q '^digraph "' ||
	   [ "$open" -ne 1 ] || [ "$close" -ne 1 ] ||
	   ! grep -q -- '-> batch -> ring;' "$tmp/$name.dot"; then
		echo "FAIL $name: --dot output is not the expected graph"
		cat "$tmp/$name.dot"
		failed=$((failed + 1))
	elif command -v dot >/dev/null 2>&1 &&
	     ! dot -Tsvg "$tmp/$name.dot" >/dev/null 2>"$tmp/err"; then
		echo "FAIL $name: dot(1) rejects the --dot output"
		cat "$tmp/err"
		failed=$((failed + 1))
	fi
done

# Options: --cores must change the scratch estimate, bad values are usage
# errors (exit 2), an unknown pipeline is an invalid file (exit 1).
one=$("$TSRUN" graph --cores 1 examples/imagenet.ts | grep '^memory:')
many=$("$TSRUN" graph --cores 8 examples/imagenet.ts | grep '^memory:')
[ "$one" != "$many" ] || { echo "FAIL: --cores does not change the estimate"; failed=$((failed + 1)); }
"$TSRUN" graph --cores 0 examples/imagenet.ts >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --cores 0 should exit 2"; failed=$((failed + 1)); }
"$TSRUN" graph --pipeline nosuch examples/imagenet.ts >/dev/null 2>&1
[ $? -eq 1 ] || { echo "FAIL: unknown --pipeline should exit 1"; failed=$((failed + 1)); }

[ "$n" -gt 0 ] || { echo "FAIL: no examples/*.ts"; failed=$((failed + 1)); }
echo "$n examples, $failed failed"
[ "$failed" -eq 0 ]
