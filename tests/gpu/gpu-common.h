/* gpu-common.h - helpers of the GPU test programs: skip (exit 77) without
 * a device, and a failing-check macro. */
#ifndef TS_GPU_COMMON_H
#define TS_GPU_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "tscuda.h"

#define SKIP 77

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		exit(1); \
	} \
} while (0)

/* Exit 77 with the reason when this host has no usable CUDA device. */
static inline void need_gpu(const char *prog)
{
	struct ts_error err = {0};
	int n = 0;
	if (ts_cuda_probe(&n, &err) < 0) {
		printf("%s: SKIP: no CUDA device: %s\n", prog, err.msg);
		exit(SKIP);
	}
}

/* Deterministic test pixels. */
static inline void fill_pixels(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}
#endif
