/*
 * simd.h - which vector instruction set the pixel kernels use (resample.c,
 * outpass.c, pixel.c), chosen once per process from the CPU (x86-64: AVX2, else
 * SSE4.1, else the generic C path; aarch64: NEON) and overridable:
 *
 *   TSRUN_SIMD=generic|sse4.1|avx2|neon   in the environment, read once at
 *                                         the first kernel call;
 *   ts_simd_force()                       for tests, at any time.
 *
 * Every path gives the same bytes as the generic one (the kernels are
 * exact integer or IEEE arithmetic, tested in tests/test-resample.c,
 * test-outpass.c and test-pixel.c), so
 * the choice changes speed only.
 *
 * Thread safety: ts_simd_isa() may be called from any thread; a forced
 * change is seen by kernels that start after it (relaxed atomic).
 */
#ifndef TS_SIMD_H
#define TS_SIMD_H

#include <stdbool.h>

enum ts_simd_isa {
	TS_SIMD_GENERIC = 0,
	TS_SIMD_SSE41,
	TS_SIMD_AVX2,
	TS_SIMD_NEON,
};

/* The instruction set in use: TSRUN_SIMD when set and supported by this
 * CPU (an unknown or unsupported value falls back to the best supported
 * one: a kernel can never run an instruction the CPU lacks), else the best
 * the CPU and the build support. */
enum ts_simd_isa ts_simd_isa(void);

/* True when this build has kernels for isa and this CPU runs them
 * (TS_SIMD_GENERIC always). */
bool ts_simd_supported(enum ts_simd_isa isa);

/* Use isa from now on (tests). Returns 0, or -ENOTSUP (nothing changed)
 * when ts_simd_supported(isa) is false. */
int ts_simd_force(enum ts_simd_isa isa);

/* "generic", "sse4.1", "avx2" or "neon". */
const char *ts_simd_isa_name(enum ts_simd_isa isa);

#endif
