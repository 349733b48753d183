/*
 * pixel.c - the generic C rows of pixel.h (the reference every vector row
 * is tested against) and the dispatch on simd.h's instruction set: a
 * vector row does a prefix of the row and says how much; the C loop here
 * finishes it.
 */
#include "pixel.h"

#include <string.h>

#include "pixel_kernels.h"
#include "simd.h"

/* PIL's arithmetic rounds every float product before the sum it enters
 * (its own build has no FMA): no contraction here either (aarch64's
 * compilers contract by default). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* The rows of the instruction set in use, NULL for the C path. */
static const struct ts_px_rows *rows(void)
{
	switch (ts_simd_isa()) {
#if defined(__x86_64__) || defined(__i386__)
	case TS_SIMD_AVX2:
		return &ts_px_rows_avx2;
	case TS_SIMD_SSE41:
		return &ts_px_rows_sse41;
#endif
#if defined(__aarch64__)
	case TS_SIMD_NEON:
		return &ts_px_rows_neon;
#endif
	default:
		return NULL;
	}
}

void ts_px_blend_const(uint8_t *r, size_t n, int a, float alpha)
{
	const struct ts_px_rows *v = rows();
	size_t i = v ? v->blend_const(r, n, a, alpha) : 0;
	for (; i < n; i++)
		r[i] = ts_px_blend1(a, r[i], alpha);
}

void ts_px_blend_row(uint8_t *r, const uint8_t *a, size_t n, float alpha)
{
	const struct ts_px_rows *v = rows();
	size_t i = v ? v->blend_row(r, a, n, alpha) : 0;
	for (; i < n; i++)
		r[i] = ts_px_blend1(a[i], r[i], alpha);
}

void ts_px_mask(uint8_t *r, size_t n, uint8_t and_mask, uint8_t xor_mask)
{
	const struct ts_px_rows *v = rows();
	size_t i = v ? v->mask(r, n, and_mask, xor_mask) : 0;
	for (; i < n; i++)
		r[i] = (uint8_t)((r[i] & and_mask) ^ xor_mask);
}

void ts_px_solarize(uint8_t *r, size_t n, int t)
{
	if (t > 255)
		return;
	if (t <= 0) {
		ts_px_mask(r, n, 0xff, 0xff);
		return;
	}
	const struct ts_px_rows *v = rows();
	size_t i = v ? v->solarize(r, n, (uint8_t)t) : 0;
	for (; i < n; i++)
		r[i] = (uint8_t)(r[i] >= t ? 255 - r[i] : r[i]);
}

/* Filter.c's clip8 of a float sum: truncation, clipped. */
static inline uint8_t clip8f(float v)
{
	if (v <= 0.0f)
		return 0;
	if (v >= 255.0f)
		return 255;
	return (uint8_t)v;
}

/* One row of three taps, PIL's KERNEL1x3: (a k0 + b k1) + c k2. */
static inline float taps3(const uint8_t *p, size_t d, float k0, float k1)
{
	return (float)p[-(ptrdiff_t)d] * k0 + (float)p[0] * k1 + (float)p[d] * k0;
}

void ts_px_sharpen_row(uint8_t *d, const uint8_t *up, const uint8_t *mid,
		       const uint8_t *dn, size_t C, size_t m)
{
	/* _imaging.c divides the float kernel by the float divisor. */
	const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
	const struct ts_px_rows *v = rows();
	size_t j = v ? v->sharpen(d, up, mid, dn, C, m) : 0;
	for (; j < m; j++) {
		/* 0.5 for rounding; PIL takes the row below first */
		float ss = 0.5f;
		ss += taps3(dn + j, C, k1, k1);
		ss += taps3(mid + j, C, k1, k5);
		ss += taps3(up + j, C, k1, k1);
		d[j] = clip8f(ss);
	}
}

void ts_px_gray(uint8_t *g, const uint8_t *rgb, size_t npx, int C)
{
	const struct ts_px_rows *v = rows();
	size_t x = v && C == 3 ? v->gray3(g, rgb, npx) : 0;
	for (const uint8_t *p = rgb + x * (size_t)C; x < npx; x++, p += C)
		g[x] = (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

void ts_px_color3(uint8_t *r, size_t npx, float alpha)
{
	/* a chunk of the row at a time: its gray, then each byte blended
	 * with its pixel's gray */
	uint8_t g[256], g3[3 * 256];
	const struct ts_px_rows *v = rows();
	while (npx) {
		size_t k = npx < 256 ? npx : 256;
		ts_px_gray(g, r, k, 3);
		size_t x = v ? v->expand3(g3, g, k) : 0;
		for (; x < k; x++)
			g3[3 * x] = g3[3 * x + 1] = g3[3 * x + 2] = g[x];
		ts_px_blend_row(r, g3, 3 * k, alpha);
		r += 3 * k;
		npx -= k;
	}
}

void ts_px_gather3(uint8_t *out, const uint8_t *src, size_t stride, size_t src_bytes,
		   int32_t xx, int32_t yy, int32_t ax, int32_t ay, int n)
{
	const struct ts_px_rows *v = rows();
	int k = v && v->gather3 ? v->gather3(out, src, stride, src_bytes, xx, yy, ax, ay, n) : 0;
	/* the positions after k steps, as the accumulation gives them */
	xx = (int32_t)(xx + (int64_t)k * ax);
	yy = (int32_t)(yy + (int64_t)k * ay);
	for (out += (size_t)k * 3; k < n; k++, out += 3) {
		const uint8_t *s = src + (size_t)(yy >> 16) * stride + (size_t)(xx >> 16) * 3;
		out[0] = s[0];
		out[1] = s[1];
		out[2] = s[2];
		xx += ax;
		yy += ay;
	}
}

void ts_px_flip3(uint8_t *row, size_t w)
{
	const struct ts_px_rows *v = rows();
	size_t k = v ? v->flip3(row, w) : 0;
	if (w < 2 * k + 2)  /* at most one pixel left in the middle (w 0 too) */
		return;
	uint8_t *a = row + 3 * k, *b = row + 3 * (w - 1 - k);
	for (; a < b; a += 3, b -= 3) {
		uint8_t t[3];
		memcpy(t, a, 3);
		memcpy(a, b, 3);
		memcpy(b, t, 3);
	}
}

size_t ts_px_hue3(uint8_t *row, size_t npx, uint8_t shift, const struct ts_px_hsv_tabs *tab)
{
	const struct ts_px_rows *v = rows();
	return v && v->hue3 ? v->hue3(row, npx, shift, tab) : 0;
}

void ts_px_minmax(const uint8_t *data, size_t stride, size_t w, size_t h, int C, uint8_t *lo,
		  uint8_t *hi)
{
	const struct ts_px_rows *v = rows();
	const size_t x0 = v && C == 3 ? v->minmax3(data, stride, w, h, lo, hi) : 0;
	for (size_t y = 0; y < h; y++) {
		const uint8_t *r = data + y * stride + x0 * (size_t)C;
		for (size_t x = x0; x < w; x++)
			for (int c = 0; c < C; c++, r++) {
				if (*r < lo[c])
					lo[c] = *r;
				if (*r > hi[c])
					hi[c] = *r;
			}
	}
}
