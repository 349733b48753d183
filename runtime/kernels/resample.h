/*
 * resample.h - the two passes of Pillow's separable uint8 resample
 * (ImagingResampleHorizontal/Vertical_8bpc), for ts_aug_resize: generic C
 * and vector kernels (x86-64 SSE4.1 and AVX2, aarch64 NEON) chosen at run
 * time through simd.h.
 *
 * Numerics. The caller computes Pillow's coefficients: per output pixel a
 * first input index and a count (bounds[2i], bounds[2i + 1]) and ksize
 * weights in 22-bit fixed point (Q22, zero past the count). Each output is
 * clip8((sum of pixel * weight + 2^21) >> 22), as Pillow does. The vector
 * kernels multiply in int16 with int32 accumulation (pmaddwd, vmlal) and
 * keep Pillow's 22-bit precision by splitting each weight into two int16
 * halves, w = hi * 2^11 + lo with 0 <= lo < 2^11, summing pixel * hi and
 * pixel * lo separately and combining them as (hi_sum << 11) + lo_sum: that
 * is the same int32 as Pillow's sum, so every path is bit-exact with the
 * generic one and with PIL (Pillow-SIMD instead rounds the weights to
 * fewer bits and differs from PIL by a level now and then).
 *
 * Thread safety: the kernels keep per-thread scratch for the split
 * weights (reused; freed at thread exit or by ts_resample_scratch_free);
 * different threads may run them at once. When that scratch cannot grow,
 * a kernel runs the generic path (same bytes, slower), so they cannot
 * fail.
 */
#ifndef TS_RESAMPLE_H
#define TS_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Bits of the fixed-point weights (Pillow's PRECISION_BITS). */
#define TS_RESAMPLE_BITS 22

/* Horizontal pass: rows rows of channels-channel uint8 pixels, in_w wide,
 * starting at src (sstride bytes apart), into rows of ow pixels at dst
 * (dstride apart). bounds and weights describe the ow output columns;
 * every bounds range lies inside [0, in_w). sstride is at least in_w *
 * channels: a vector path may read up to 15 bytes past the end of every
 * row but the last (bytes between the first row and the last, never
 * used), so all of them must be readable. ahead > 0: src is not in the
 * CPU's caches (a decoded-cache frame): each row's bytes are prefetched
 * ahead rows before the pass reads them (TS_RESAMPLE_AHEAD); the output is
 * the same bytes either way. */
#define TS_RESAMPLE_AHEAD 4
void ts_resample_h_u8(const uint8_t *src, size_t sstride, int rows, int in_w,
		      int channels, uint8_t *dst, size_t dstride, int ow,
		      int ksize, const int *bounds, const int32_t *weights, int ahead);

/* Vertical pass: oh output rows of n_elems bytes each at dst (dstride
 * apart) from the rows at src (sstride apart; bounds index those rows). */
void ts_resample_v_u8(const uint8_t *src, size_t sstride, int n_elems,
		      uint8_t *dst, size_t dstride, int oh, int ksize,
		      const int *bounds, const int32_t *weights);

/* Free this thread's scratch (also done at thread exit). */
void ts_resample_scratch_free(void);

#endif
