#!/bin/sh
# exports.sh CC - each shared library exports exactly the functions its
# headers declare, node by node: libtsrun.so what include/tsrun/tsrun.h,
# tsrun_plugin.h and tsrun_producer.h declare; libtsclient.so in its public
# nodes (TSCLIENT_<n>) what tsclient.h and tsclient_cuda.h declare, in its
# private node (TSCLIENT_PRIVATE_<n>) what src/client/tsclient_private.h
# adds for the Python client. An undeclared symbol that leaks, or a
# declared function that is not exported (its header grew but the version
# script, src/lib*.sym, did not), fails with both lists.
cc=${1:?usage: exports.sh CC}
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
ts_setup exports
command -v nm >/dev/null 2>&1 || skip "nm (binutils) is not installed"

declared() { # INCLUDE_DIR HEADER_PATH... : the functions they declare
	inc=$1; shift
	for h in "$@"; do
		"$cc" -E -P -I"$TS_SRCDIR/include/tsrun" -I"$inc" "$h" ||
			fail "cannot preprocess $h"
	done | grep -oE '\bts_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u
}

check_lib() { # LIB NODES DECLARED_FILE WHAT
	lib=$1 nodes=$2 decl=$3 what=$4
	[ -s "$decl" ] || fail "no functions found in $what"
	# defined dynamic symbols of the nodes that match NODES (an extended
	# regex), versions stripped (ts_x@@TSRUN_0.1)
	nm -D --defined-only "$lib" |
		awk -v nodes="^($nodes)\$" '$2 ~ /^[TDBRVWiu]$/ {
			v = $3; sub(/^[^@]*@+/, "", v); sub(/@.*/, "", $3)
			if (v ~ nodes) print $3 }' |
		grep -v '^TS[A-Z_]*_[0-9.]*$' | sort -u >"$T/exported"
	leaked=$(comm -23 "$T/exported" "$decl" | tr '\n' ' ')
	missing=$(comm -13 "$T/exported" "$decl" | tr '\n' ' ')
	[ -z "$leaked" ] ||
		fail "$(basename "$lib") exports in $nodes what $what do not declare: $leaked(hide it, or declare it and add it to the version script)"
	[ -z "$missing" ] ||
		fail "$(basename "$lib") does not export in $nodes what $what declare: $missing(add them to the version script's $nodes node)"
	[ -n "$leaked$missing" ] ||
		pass "$(basename "$lib"): exports in $nodes exactly the $(wc -l <"$decl") functions of $what"
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

I=$TS_SRCDIR/include/tsrun
declared "$I" "$I/tsrun.h" "$I/tsrun_plugin.h" "$I/tsrun_producer.h" >"$T/tsrun.decl"
check_lib "${TS_LIBTSRUN:?}" 'TSRUN_[0-9.]+' "$T/tsrun.decl" "tsrun.h, tsrun_plugin.h, tsrun_producer.h"
# libtsclient: the public nodes hold the public headers' functions; the
# private node, those of src/client/tsclient_private.h that no public
# header declares (the Python client's), and none leaks across.
declared "$I" "$I/tsclient.h" "$I/tsclient_cuda.h" >"$T/client.decl"
check_lib "${TS_LIBTSCLIENT:?}" 'TSCLIENT_[0-9.]+' "$T/client.decl" "tsclient.h, tsclient_cuda.h"
P=$TS_SRCDIR/src/client
declared "$P" "$P/tsclient_private.h" | comm -23 - "$T/client.decl" >"$T/private.decl"
check_lib "$TS_LIBTSCLIENT" 'TSCLIENT_PRIVATE_[0-9.]+' "$T/private.decl" "tsclient_private.h"
# and no installed header includes the private one
! grep -l 'tsclient_private' "$I"/*.h >/dev/null 2>&1 ||
	fail "an installed header includes tsclient_private.h: $(grep -l tsclient_private "$I"/*.h)"
finish
