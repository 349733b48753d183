/*
 * pixel_kernels.h - the vector rows behind pixel.h (internal to
 * pixel*.c). Each does a prefix of its row (a multiple of its step, from
 * the left) and returns its length; pixel.c does the rest in C.
 */
#ifndef TS_PIXEL_KERNELS_H
#define TS_PIXEL_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "pixel.h"

struct ts_px_rows {
	size_t (*blend_const)(uint8_t *r, size_t n, int a, float alpha);
	size_t (*blend_row)(uint8_t *r, const uint8_t *a, size_t n, float alpha);
	size_t (*mask)(uint8_t *r, size_t n, uint8_t and_mask, uint8_t xor_mask);
	/* t in 1..255 */
	size_t (*solarize)(uint8_t *r, size_t n, uint8_t t);
	size_t (*sharpen)(uint8_t *d, const uint8_t *up, const uint8_t *mid,
			  const uint8_t *dn, size_t C, size_t m);
	/* packed RGB, 3 bytes a pixel; returns pixels done */
	size_t (*gray3)(uint8_t *g, const uint8_t *rgb, size_t npx);
	/* ts_px_minmax of RGB rows; returns the pixels done in every row */
	size_t (*minmax3)(const uint8_t *data, size_t stride, size_t w, size_t h, uint8_t lo[3],
			  uint8_t hi[3]);
	/* g3[3x .. 3x + 2] = g[x]; returns pixels done */
	size_t (*expand3)(uint8_t *g3, const uint8_t *g, size_t npx);
	/* mirrors the outer k pixels at each end of a row of w RGB pixels,
	 * returns k */
	size_t (*flip3)(uint8_t *row, size_t w);
	/* NULL where the set has none; returns pixels done */
	size_t (*hue3)(uint8_t *row, size_t npx, uint8_t shift,
		       const struct ts_px_hsv_tabs *tab);
	/* NULL where the set has no gather; returns pixels done */
	int (*gather3)(uint8_t *out, const uint8_t *src, size_t stride, size_t src_bytes,
		       int32_t xx, int32_t yy, int32_t ax, int32_t ay, int n);
};

#if defined(__x86_64__) || defined(__i386__)
extern const struct ts_px_rows ts_px_rows_sse41, ts_px_rows_avx2;
#endif
#if defined(__aarch64__)
extern const struct ts_px_rows ts_px_rows_neon;
#endif

#endif
