/*
 * outpass_kernels.h - the vector rows behind outpass.h (internal to
 * outpass*.c). A row function converts one source row of w pixels and
 * returns how many output pixels it wrote (a multiple of its step, from
 * the left); outpass.c does the rest of the row in C.
 */
#ifndef TS_OUTPASS_KERNELS_H
#define TS_OUTPASS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Three channels into three planes; hflip reads the row right to left. */
typedef int ts_outpass_planar3_fn(const uint8_t *row, int w, bool hflip,
			     const float *mean, const float *std, float *d0,
			     float *d1, float *d2);
/* n interleaved elements of C channels, in order (no flip). */
typedef size_t ts_outpass_inter_fn(const uint8_t *row, size_t n, int C,
			      const float *mean, const float *std, float *d);

#if defined(__x86_64__) || defined(__i386__)
ts_outpass_planar3_fn ts_outpass_planar3_sse41, ts_outpass_planar3_avx2;
ts_outpass_inter_fn ts_outpass_inter_sse41, ts_outpass_inter_avx2;
#endif
#if defined(__aarch64__)
ts_outpass_planar3_fn ts_outpass_planar3_neon;
ts_outpass_inter_fn ts_outpass_inter_neon;
#endif

#endif
