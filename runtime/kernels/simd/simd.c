/*
 * simd.c - the instruction set the pixel kernels dispatch on: detected
 * once (GCC/clang's __builtin_cpu_supports on x86-64; NEON is part of
 * every aarch64 CPU), overridable by TSRUN_SIMD and by tests.
 */
#include "simd.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "barrier.h"

static const char *const names[] = {
	[TS_SIMD_GENERIC] = "generic",
	[TS_SIMD_SSE41] = "sse4.1",
	[TS_SIMD_AVX2] = "avx2",
	[TS_SIMD_NEON] = "neon",
};

/* The ISA in use, -1 until detected: set once by detect (or first by
 * ts_simd_force), read lock-free by every kernel call. */
static int current = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

const char *ts_simd_isa_name(enum ts_simd_isa isa)
{
	if ((unsigned)isa < sizeof(names) / sizeof(names[0]))
		return names[isa];
	return "unknown";
}

bool ts_simd_supported(enum ts_simd_isa isa)
{
	switch (isa) {
	case TS_SIMD_GENERIC:
		return true;
#if defined(__x86_64__) || defined(__i386__)
	case TS_SIMD_SSE41:
		return __builtin_cpu_supports("sse4.1");
	case TS_SIMD_AVX2:
		return __builtin_cpu_supports("avx2");
#endif
#if defined(__aarch64__)
	case TS_SIMD_NEON:
		return true;
#endif
	default:
		return false;
	}
}

static enum ts_simd_isa best(void)
{
	static const enum ts_simd_isa order[] = { TS_SIMD_AVX2, TS_SIMD_SSE41, TS_SIMD_NEON };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (ts_simd_supported(order[i]))
			return order[i];
	return TS_SIMD_GENERIC;
}

static void detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
#endif
	enum ts_simd_isa isa = best();
	const char *env = getenv("TSRUN_SIMD");
	if (env && *env)
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(env, names[i]) == 0 &&
			    ts_simd_supported((enum ts_simd_isa)i))
				isa = (enum ts_simd_isa)i;
	int expected = -1;
	/* A ts_simd_force() that ran first wins. */
	ATOMIC_CMPXCHG(&current, &expected, (int)isa);
}

enum ts_simd_isa ts_simd_isa(void)
{
	/* Untorn is enough: the value is all there is to see (no data is
	 * published with it), and pthread_once orders detect's store
	 * before the second read. */
	int v = READ_ONCE(current);
	if (v >= 0)
		return (enum ts_simd_isa)v;
	pthread_once(&once, detect);
	return (enum ts_simd_isa)READ_ONCE(current);
}

int ts_simd_force(enum ts_simd_isa isa)
{
	if (!ts_simd_supported(isa))
		return -ENOTSUP;
	pthread_once(&once, detect);
	WRITE_ONCE(current, (int)isa); /* a value only, as above */
	return 0;
}
