#!/bin/sh
# man.sh - every man page in man/ is `mandoc -Tlint` clean (warnings and
# worse; STYLE notes such as "referenced manual not found" depend on what
# is installed and are ignored), and every operator of the registry, as
# `tsrun check --list-operators` prints it, is documented in
# tsrun-pipeline(5) as a `.It Ic NAME` entry; the built pages carry the
# version.
set -u
: "${TSRUN:?TSRUN must name the tsrun binary}"
: "${TS_SRCDIR:?TS_SRCDIR must name the source root}"

if ! command -v mandoc >/dev/null 2>&1; then
	echo "mandoc not installed: skipping"
	exit 77
fi
cd "$TS_SRCDIR/man" || exit 1
failed=0
pages=0
for page in *.[1-8]; do
	[ -f "$page" ] || continue
	pages=$((pages + 1))
	if ! out=$(mandoc -Tlint -W warning "$page" 2>&1) || [ -n "$out" ]; then
		echo "FAIL: mandoc -Tlint $page:"
		echo "$out"
		failed=$((failed + 1))
	fi
done
[ "$pages" -gt 0 ] || { echo "FAIL: no man pages"; failed=$((failed + 1)); }

page=tsrun-pipeline.5
ops=$("$TSRUN" check --list-operators) || { echo "FAIL: --list-operators"; exit 1; }
[ -n "$ops" ] || { echo "FAIL: --list-operators printed nothing"; exit 1; }
n=0
for op in $ops; do
	n=$((n + 1))
	if ! grep -q "^\.It Ic $op\( \|\$\)" "$page"; then
		echo "FAIL: operator '$op' is not documented in $page (.It Ic $op)"
		failed=$((failed + 1))
	fi
done
# the serve settings too
for s in socket group epochs ring memory threads on_error queue_depth; do
	if ! grep -q "^\.It Cm $s " "$page"; then
		echo "FAIL: serve setting '$s' is not documented in $page"
		failed=$((failed + 1))
	fi
done
# The built copies carry the program's version (man/meson.build stamps
# `.Os tsrun` with it), so `man tsrun` says which release it documents.
version=$("$TSRUN" --version | sed -n 's/^tsrun //p')
for src in *.[1-8]; do
	built="${TS_BUILDDIR:?TS_BUILDDIR must name the build root}/man/$src"
	if ! grep -qx "\.Os tsrun $version" "$built" 2>/dev/null; then
		echo "FAIL: $built does not say '.Os tsrun $version'"
		failed=$((failed + 1))
	fi
done
echo "$pages pages, $n operators, $failed failed"
[ "$failed" -eq 0 ]
