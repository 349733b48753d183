#!/bin/sh
# man.sh - every man page in man/ is `mandoc -Tlint` clean (warnings and
# worse; STYLE notes such as "referenced manual not found" depend on what
# is installed and are ignored), and every operator of the registry, as
# `tsrun check --list-operators` prints it, is documented in
# tsrun-pipeline(5) as a `.It Ic NAME` entry; the built pages carry the
# version.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup man
need mandoc
cd "$TS_SRCDIR/man" || exit 1
pages=0
for page in *.[1-8]; do
	[ -f "$page" ] || continue
	pages=$((pages + 1))
	if ! out=$(mandoc -Tlint -W warning "$page" 2>&1) || [ -n "$out" ]; then
		fail "mandoc -Tlint $page:"
		echo "$out"
	fi
done
[ "$pages" -gt 0 ] || fail "no man pages"

page=tsrun-pipeline.5
ops=$("$TSRUN" check --list-operators) || { fail "--list-operators"; finish; }
[ -n "$ops" ] || { fail "--list-operators printed nothing"; finish; }
n=0
for op in $ops; do
	n=$((n + 1))
	grep -q "^\.It Ic $op\( \|\$\)" "$page" ||
		fail "operator '$op' is not documented in $page (.It Ic $op)"
done
# the serve settings too
for s in socket group epochs ring memory threads on_error queue_depth; do
	grep -q "^\.It Cm $s " "$page" || fail "serve setting '$s' is not documented in $page"
done
# The built copies carry the program's version (man/meson.build stamps
# `.Os tsrun` with it), so `man tsrun` says which release it documents.
version=$("$TSRUN" --version | sed -n 's/^tsrun //p')
for src in *.[1-8]; do
	built="${TS_BUILDDIR:?TS_BUILDDIR must name the build root}/man/$src"
	grep -qx "\.Os tsrun $version" "$built" 2>/dev/null ||
		fail "$built does not say '.Os tsrun $version'"
done
echo "$pages pages, $n operators"
finish
