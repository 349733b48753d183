#!/bin/sh
# fuzz-run.sh FUZZER SECONDS CORPUS - a bounded libFuzzer run: mutate the
# committed corpus for SECONDS and fail on any crash, leak, sanitizer report,
# timeout (10 s per input) or memory blow-up (2 GiB). New inputs and crash
# artifacts go to a scratch folder in the build tree, never into the
# source corpus; a crash input is kept there (its path is printed) so it
# can be added to CORPUS as a regression case. libFuzzer's own exit code
# for a finding is 77, which meson reads as a skip: it is made 1 here.
. "${TS_SRCDIR:?TS_SRCDIR must name the source root}/tests/lib.sh"
fuzzer=${1:?fuzzer} secs=${2:?seconds} corpus=${3:?corpus}
ts_setup "fuzz-run-$(basename "$fuzzer")"
out="${TS_BUILDDIR:?}/tests/fuzz/run-$(basename "$fuzzer")"
rm -rf "$out/new"
mkdir -p "$out/new" "$out/artifacts" || { fail "cannot make $out/new and $out/artifacts"; finish; }
# Fixed seed: a CI failure reruns identically (-seed=N to try others).
"$fuzzer" -seed="${TS_FUZZ_SEED:-1}" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-artifact_prefix="$out/artifacts/" "$out/new" "$corpus"
rc=$?
[ "$rc" -eq 0 ] || fail "$(basename "$fuzzer") failed (exit $rc); inputs in $out/artifacts/"
finish
