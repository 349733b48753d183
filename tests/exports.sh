#!/bin/sh
# exports.sh CC - each shared library exports exactly the functions its
# public headers declare: libtsrun.so what src/tsrun.h,
# src/tsrun_plugin.h and src/tsrun_producer.h declare, libtsclient.so what src/tsclient.h and
# src/tsclient_cuda.h declare. An undeclared symbol that leaks, or a
# declared function that is not exported (its header grew but the version
# script, src/lib*.sym, did not), fails with both lists.
cc=${1:?usage: exports.sh CC}
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup exports
command -v nm >/dev/null 2>&1 || skip "nm (binutils) is not installed"

check_lib() { # LIB HEADER...
	lib=$1; shift
	for h in "$@"; do
		"$cc" -E -P -I"$TS_SRCDIR/include/tsrun" "$TS_SRCDIR/include/tsrun/$h" ||
			fail "cannot preprocess include/tsrun/$h"
	done | grep -oE '\bts_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u >"$T/declared"
	[ -s "$T/declared" ] || fail "no functions found in $*"
	# defined dynamic symbols, versions stripped (ts_x@@TSRUN_0.1)
	nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ { sub(/@.*/, "", $3); print $3 }' |
		grep -v '^TS[A-Z]*_[0-9.]*$' | sort -u >"$T/exported"
	leaked=$(comm -23 "$T/exported" "$T/declared" | tr '\n' ' ')
	missing=$(comm -13 "$T/exported" "$T/declared" | tr '\n' ' ')
	[ -z "$leaked" ] ||
		fail "$(basename "$lib") exports what $* do not declare: $leaked(hide it, or declare it and add it to the version script)"
	[ -z "$missing" ] ||
		fail "$(basename "$lib") does not export what $* declare: $missing(add them to src/$(basename "$lib" | sed 's/\.so.*//').sym)"
	pass "$(basename "$lib"): exports exactly the $(wc -l <"$T/declared") functions of $*"
}

# One version: meson's project version, major.minor, is tsrun.h's
# TSRUN_VERSION_* and the newest symbol node of the two version scripts
# (a library whose ABI did not change keeps its older newest node).
v=${TS_PROJECT_VERSION:?}
mm=${v%.*}
hv=$(sed -n 's/^#define TSRUN_VERSION_MAJOR \([0-9]*\)$/\1/p' "$TS_SRCDIR/include/tsrun/tsrun.h").$(sed -n 's/^#define TSRUN_VERSION_MINOR \([0-9]*\)$/\1/p' "$TS_SRCDIR/include/tsrun/tsrun.h")
[ "$hv" = "$mm" ] || fail "tsrun.h says version $hv, meson.build $v (one version: change both)"
newest=$(grep -ohE '^TS(RUN|CLIENT)_[0-9]+\.[0-9]+' "$TS_SRCDIR/src/libtsrun.sym" \
	"$TS_SRCDIR/src/client/libtsclient.sym" | sed 's/^[A-Z]*_//' | sort -t. -k1,1n -k2,2n | tail -n 1)
[ "$newest" = "$mm" ] ||
	fail "the newest symbol node is $newest, meson.build's version $v (bump the project with a new node)"
pass "one version: meson $v, tsrun.h $hv, the newest symbol node $newest"

check_lib "${TS_LIBTSRUN:?}" tsrun.h tsrun_plugin.h tsrun_producer.h
check_lib "${TS_LIBTSCLIENT:?}" tsclient.h tsclient_cuda.h
finish
