/*
 * pixel_x86.c - SSE4.1 and AVX2 rows of pixel.h (layout in
 * pixel_kernels.h). Each function carries its own target attribute, so the
 * file builds with the project's plain x86-64 flags and pixel.c calls a row
 * only when simd.c found its instructions. Neither target has FMA: the
 * multiplies and adds stay two roundings, as in the C path.
 *
 * Blends and the sharpness kernel: bytes widened to int32 lanes (4 for
 * SSE4.1, 8 for AVX2), the C path's float operations lane for lane,
 * clipped to 0..255 by max/min (the same as the C path's tests: a value in
 * (-1, 0] truncates to 0 either way, one in [255, 256) to 255), truncated
 * by cvttps and packed back, 16 bytes a step. The gray: pmaddwd on
 * (R, G) and (B, G) int16 pairs against (19595, 19235) and (7471, 19235)
 * (38470 = 2 x 19235 does not fit an int16): PIL's exact integer sum.
 */
#include "pixel.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pixel_kernels.h"

/* The multiplies and adds stay two roundings even where the compiler may
 * fuse vector intrinsics (vmulq + vaddq into fmla; -mfma on x86). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ---- SSE4.1 ---- */

__attribute__((target("sse4.1"))) static inline __m128i
blend4_sse41(__m128i b, __m128i a, __m128 af, __m128 alpha)
{
	__m128 d = _mm_cvtepi32_ps(_mm_sub_epi32(b, a));
	__m128 t = _mm_add_ps(af, _mm_mul_ps(alpha, d));
	t = _mm_min_ps(_mm_max_ps(t, _mm_setzero_ps()), _mm_set1_ps(255.0f));
	return _mm_cvttps_epi32(t);
}

/* Four int32 vectors of 0..255, in order, into 16 bytes. */
__attribute__((target("sse4.1"))) static inline void
store16_sse41(uint8_t *p, __m128i t0, __m128i t1, __m128i t2, __m128i t3)
{
	__m128i v = _mm_packus_epi16(_mm_packus_epi32(t0, t1), _mm_packus_epi32(t2, t3));
	_mm_storeu_si128((__m128i *)(void *)p, v);
}

__attribute__((target("sse4.1"))) static inline __m128i load4_sse41(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm_cvtepu8_epi32(_mm_cvtsi32_si128(v));
}

__attribute__((target("sse4.1"))) static size_t
blend_const_sse41(uint8_t *r, size_t n, int a, float alpha)
{
	const __m128i va = _mm_set1_epi32(a);
	const __m128 af = _mm_set1_ps((float)a), al = _mm_set1_ps(alpha);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(r + i));
		__m128i t0 = blend4_sse41(_mm_cvtepu8_epi32(v), va, af, al);
		__m128i t1 = blend4_sse41(_mm_cvtepu8_epi32(_mm_srli_si128(v, 4)), va, af, al);
		__m128i t2 = blend4_sse41(_mm_cvtepu8_epi32(_mm_srli_si128(v, 8)), va, af, al);
		__m128i t3 = blend4_sse41(_mm_cvtepu8_epi32(_mm_srli_si128(v, 12)), va, af, al);
		store16_sse41(r + i, t0, t1, t2, t3);
	}
	return i;
}

__attribute__((target("sse4.1"))) static size_t
blend_row_sse41(uint8_t *r, const uint8_t *a, size_t n, float alpha)
{
	const __m128 al = _mm_set1_ps(alpha);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i t[4];
		for (int k = 0; k < 4; k++) {
			__m128i va = load4_sse41(a + i + 4 * k);
			t[k] = blend4_sse41(load4_sse41(r + i + 4 * k), va, _mm_cvtepi32_ps(va), al);
		}
		store16_sse41(r + i, t[0], t[1], t[2], t[3]);
	}
	return i;
}

__attribute__((target("sse4.1"))) static size_t
mask_sse41(uint8_t *r, size_t n, uint8_t and_mask, uint8_t xor_mask)
{
	const __m128i am = _mm_set1_epi8((char)and_mask), xm = _mm_set1_epi8((char)xor_mask);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i *p = (__m128i *)(void *)(r + i);
		_mm_storeu_si128(p, _mm_xor_si128(_mm_and_si128(_mm_loadu_si128(p), am), xm));
	}
	return i;
}

__attribute__((target("sse4.1"))) static size_t solarize_sse41(uint8_t *r, size_t n, uint8_t t)
{
	const __m128i vt = _mm_set1_epi8((char)t);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i *p = (__m128i *)(void *)(r + i);
		__m128i v = _mm_loadu_si128(p);
		/* v >= t where max(v, t) == v; 255 - v is v ^ 0xff */
		__m128i ge = _mm_cmpeq_epi8(_mm_max_epu8(v, vt), v);
		_mm_storeu_si128(p, _mm_xor_si128(v, ge));
	}
	return i;
}

__attribute__((target("sse4.1"))) static inline __m128 ldf4_sse41(const uint8_t *p)
{
	return _mm_cvtepi32_ps(load4_sse41(p));
}

/* Four outputs of the sharpness kernel, in the C path's order. */
__attribute__((target("sse4.1"))) static inline __m128i
sharp4_sse41(const uint8_t *up, const uint8_t *mid, const uint8_t *dn, size_t C)
{
	const __m128 k1 = _mm_set1_ps(1.0f / 13.0f), k5 = _mm_set1_ps(5.0f / 13.0f);
	__m128 s = _mm_set1_ps(0.5f);
	s = _mm_add_ps(s, _mm_add_ps(_mm_add_ps(_mm_mul_ps(ldf4_sse41(dn - C), k1),
						_mm_mul_ps(ldf4_sse41(dn), k1)),
				     _mm_mul_ps(ldf4_sse41(dn + C), k1)));
	s = _mm_add_ps(s, _mm_add_ps(_mm_add_ps(_mm_mul_ps(ldf4_sse41(mid - C), k1),
						_mm_mul_ps(ldf4_sse41(mid), k5)),
				     _mm_mul_ps(ldf4_sse41(mid + C), k1)));
	s = _mm_add_ps(s, _mm_add_ps(_mm_add_ps(_mm_mul_ps(ldf4_sse41(up - C), k1),
						_mm_mul_ps(ldf4_sse41(up), k1)),
				     _mm_mul_ps(ldf4_sse41(up + C), k1)));
	s = _mm_min_ps(_mm_max_ps(s, _mm_setzero_ps()), _mm_set1_ps(255.0f));
	return _mm_cvttps_epi32(s);
}

__attribute__((target("sse4.1"))) static size_t
sharpen_sse41(uint8_t *d, const uint8_t *up, const uint8_t *mid, const uint8_t *dn,
	      size_t C, size_t m)
{
	size_t j = 0;
	for (;; j += 16) {
		/* the last step ends at m, overlapping the one before: d is
		 * not an input, so its bytes come out the same twice */
		if (j + 16 > m) {
			if (j == m || m < 16)
				return j;
			j = m - 16;
		}
		store16_sse41(d + j, sharp4_sse41(up + j, mid + j, dn + j, C),
			      sharp4_sse41(up + j + 4, mid + j + 4, dn + j + 4, C),
			      sharp4_sse41(up + j + 8, mid + j + 8, dn + j + 8, C),
			      sharp4_sse41(up + j + 12, mid + j + 12, dn + j + 12, C));
	}
}

/* The shuffles of four RGB pixels (one 16-byte load) into (R, G) and
 * (B, G) int16 pairs, one pixel per 32-bit lane. */
#define RG_PAIRS 0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1
#define BG_PAIRS 2, -1, 1, -1, 5, -1, 4, -1, 8, -1, 7, -1, 11, -1, 10, -1

__attribute__((target("sse4.1"))) static size_t gray3_sse41(uint8_t *g, const uint8_t *rgb,
							     size_t npx)
{
	const __m128i rg = _mm_setr_epi8(RG_PAIRS), bg = _mm_setr_epi8(BG_PAIRS);
	const __m128i wrg = _mm_setr_epi16(19595, 19235, 19595, 19235, 19595, 19235, 19595, 19235);
	const __m128i wbg = _mm_setr_epi16(7471, 19235, 7471, 19235, 7471, 19235, 7471, 19235);
	const __m128i half = _mm_set1_epi32(0x8000);
	size_t x = 0;
	/* the load takes 16 bytes for 12 */
	for (; 3 * x + 16 <= 3 * npx; x += 4) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(rgb + 3 * x));
		__m128i s = _mm_add_epi32(_mm_madd_epi16(_mm_shuffle_epi8(v, rg), wrg),
					  _mm_madd_epi16(_mm_shuffle_epi8(v, bg), wbg));
		s = _mm_srli_epi32(_mm_add_epi32(s, half), 16);
		s = _mm_packus_epi16(_mm_packus_epi32(s, s), s);
		int32_t o = _mm_cvtsi128_si32(s);
		memcpy(g + x, &o, 4);
	}
	return x;
}

/* 48 bytes (16 pixels) a step into three running minima and maxima
 * whose byte j holds channel j % 3 (48 is a multiple of 3, and each row's
 * steps start on channel 0), folded into the channels once at the end. */
__attribute__((target("sse4.1"))) static size_t
minmax3_sse41(const uint8_t *data, size_t stride, size_t w, size_t h, uint8_t lo[3],
	      uint8_t hi[3])
{
	const size_t done = w / 16 * 16;
	if (!done)
		return 0;
	uint8_t l[48], u[48];
	for (int j = 0; j < 48; j++) {
		l[j] = lo[j % 3];
		u[j] = hi[j % 3];
	}
	__m128i l0 = _mm_loadu_si128((const __m128i *)(const void *)l),
		l1 = _mm_loadu_si128((const __m128i *)(const void *)(l + 16)),
		l2 = _mm_loadu_si128((const __m128i *)(const void *)(l + 32));
	__m128i h0 = _mm_loadu_si128((const __m128i *)(const void *)u),
		h1 = _mm_loadu_si128((const __m128i *)(const void *)(u + 16)),
		h2 = _mm_loadu_si128((const __m128i *)(const void *)(u + 32));
	for (size_t y = 0; y < h; y++) {
		const uint8_t *r = data + y * stride;
		for (size_t x = 0; x < done; x += 16) {
			const __m128i *p = (const __m128i *)(const void *)(r + 3 * x);
			__m128i a = _mm_loadu_si128(p), b = _mm_loadu_si128(p + 1),
				c = _mm_loadu_si128(p + 2);
			l0 = _mm_min_epu8(l0, a);
			l1 = _mm_min_epu8(l1, b);
			l2 = _mm_min_epu8(l2, c);
			h0 = _mm_max_epu8(h0, a);
			h1 = _mm_max_epu8(h1, b);
			h2 = _mm_max_epu8(h2, c);
		}
	}
	_mm_storeu_si128((__m128i *)(void *)l, l0);
	_mm_storeu_si128((__m128i *)(void *)(l + 16), l1);
	_mm_storeu_si128((__m128i *)(void *)(l + 32), l2);
	_mm_storeu_si128((__m128i *)(void *)u, h0);
	_mm_storeu_si128((__m128i *)(void *)(u + 16), h1);
	_mm_storeu_si128((__m128i *)(void *)(u + 32), h2);
	for (int j = 0; j < 48; j++) {
		if (l[j] < lo[j % 3])
			lo[j % 3] = l[j];
		if (u[j] > hi[j % 3])
			hi[j % 3] = u[j];
	}
	return done;
}

/* Sixteen gray bytes into 48, three shuffles. */
__attribute__((target("sse4.1"))) static size_t expand3_sse41(uint8_t *g3, const uint8_t *g,
							       size_t npx)
{
	const __m128i s0 = _mm_setr_epi8(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5);
	const __m128i s1 = _mm_setr_epi8(5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 10);
	const __m128i s2 = _mm_setr_epi8(10, 11, 11, 11, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15);
	size_t x = 0;
	for (; x + 16 <= npx; x += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(g + x));
		__m128i *o = (__m128i *)(void *)(g3 + 3 * x);
		_mm_storeu_si128(o, _mm_shuffle_epi8(v, s0));
		_mm_storeu_si128(o + 1, _mm_shuffle_epi8(v, s1));
		_mm_storeu_si128(o + 2, _mm_shuffle_epi8(v, s2));
	}
	return x;
}

/* Five pixels (15 bytes of a 16-byte load) from each end a step, each
 * block's pixels reversed by a shuffle into the other's place; the 16th
 * byte each store takes beyond its block is the neighbour's own, put
 * back as it was (it is not yet touched: the blocks stop short of it). */
__attribute__((target("sse4.1"))) static size_t flip3_sse41(uint8_t *row, size_t w)
{
	/* the left block's pixels into the right's bytes 1-15, and back */
	const __m128i to_right = _mm_setr_epi8(-1, 12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2);
	const __m128i to_left = _mm_setr_epi8(13, 14, 15, 10, 11, 12, 7, 8, 9, 4, 5, 6, 1, 2, 3, -1);
	const __m128i last = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1);
	const __m128i first = _mm_setr_epi8(-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	size_t k = 0;
	for (; 2 * k + 11 <= w; k += 5) {
		__m128i *pl = (__m128i *)(void *)(row + 3 * k);
		__m128i *pr = (__m128i *)(void *)(row + 3 * (w - k - 5) - 1);
		__m128i l = _mm_loadu_si128(pl), r = _mm_loadu_si128(pr);
		_mm_storeu_si128(pl, _mm_blendv_epi8(_mm_shuffle_epi8(r, to_left), l, last));
		_mm_storeu_si128(pr, _mm_blendv_epi8(_mm_shuffle_epi8(l, to_right), r, first));
	}
	return k;
}

const struct ts_px_rows ts_px_rows_sse41 = {
	.blend_const = blend_const_sse41,
	.blend_row = blend_row_sse41,
	.mask = mask_sse41,
	.solarize = solarize_sse41,
	.sharpen = sharpen_sse41,
	.gray3 = gray3_sse41,
	.minmax3 = minmax3_sse41,
	.expand3 = expand3_sse41,
	.flip3 = flip3_sse41,
};

/* ---- AVX2 ---- */

__attribute__((target("avx2"))) static inline __m256i
blend8_avx2(__m256i b, __m256i a, __m256 af, __m256 alpha)
{
	__m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(b, a));
	__m256 t = _mm256_add_ps(af, _mm256_mul_ps(alpha, d));
	t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
	return _mm256_cvttps_epi32(t);
}

/* Two int32 vectors of 0..255, in order, into 16 bytes. */
__attribute__((target("avx2"))) static inline void store16_avx2(uint8_t *p, __m256i t0,
								__m256i t1)
{
	/* packus works per 128-bit lane: put the 16-bit halves in order */
	__m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(t0, t1), 0xd8);
	__m128i v = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
	_mm_storeu_si128((__m128i *)(void *)p, v);
}

__attribute__((target("avx2"))) static inline __m256i load8_avx2(const uint8_t *p)
{
	return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

__attribute__((target("avx2"))) static size_t
blend_const_avx2(uint8_t *r, size_t n, int a, float alpha)
{
	const __m256i va = _mm256_set1_epi32(a);
	const __m256 af = _mm256_set1_ps((float)a), al = _mm256_set1_ps(alpha);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		store16_avx2(r + i, blend8_avx2(load8_avx2(r + i), va, af, al),
			     blend8_avx2(load8_avx2(r + i + 8), va, af, al));
	return i;
}

__attribute__((target("avx2"))) static size_t
blend_row_avx2(uint8_t *r, const uint8_t *a, size_t n, float alpha)
{
	const __m256 al = _mm256_set1_ps(alpha);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i a0 = load8_avx2(a + i), a1 = load8_avx2(a + i + 8);
		store16_avx2(r + i, blend8_avx2(load8_avx2(r + i), a0, _mm256_cvtepi32_ps(a0), al),
			     blend8_avx2(load8_avx2(r + i + 8), a1, _mm256_cvtepi32_ps(a1), al));
	}
	return i;
}

__attribute__((target("avx2"))) static size_t
mask_avx2(uint8_t *r, size_t n, uint8_t and_mask, uint8_t xor_mask)
{
	const __m256i am = _mm256_set1_epi8((char)and_mask), xm = _mm256_set1_epi8((char)xor_mask);
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256i *p = (__m256i *)(void *)(r + i);
		_mm256_storeu_si256(p, _mm256_xor_si256(_mm256_and_si256(_mm256_loadu_si256(p), am), xm));
	}
	return i;
}

__attribute__((target("avx2"))) static size_t solarize_avx2(uint8_t *r, size_t n, uint8_t t)
{
	const __m256i vt = _mm256_set1_epi8((char)t);
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256i *p = (__m256i *)(void *)(r + i);
		__m256i v = _mm256_loadu_si256(p);
		__m256i ge = _mm256_cmpeq_epi8(_mm256_max_epu8(v, vt), v);
		_mm256_storeu_si256(p, _mm256_xor_si256(v, ge));
	}
	return i;
}

__attribute__((target("avx2"))) static inline __m256 ldf8_avx2(const uint8_t *p)
{
	return _mm256_cvtepi32_ps(load8_avx2(p));
}

__attribute__((target("avx2"))) static inline __m256i
sharp8_avx2(const uint8_t *up, const uint8_t *mid, const uint8_t *dn, size_t C)
{
	const __m256 k1 = _mm256_set1_ps(1.0f / 13.0f), k5 = _mm256_set1_ps(5.0f / 13.0f);
	__m256 s = _mm256_set1_ps(0.5f);
	s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(ldf8_avx2(dn - C), k1),
							 _mm256_mul_ps(ldf8_avx2(dn), k1)),
					   _mm256_mul_ps(ldf8_avx2(dn + C), k1)));
	s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(ldf8_avx2(mid - C), k1),
							 _mm256_mul_ps(ldf8_avx2(mid), k5)),
					   _mm256_mul_ps(ldf8_avx2(mid + C), k1)));
	s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(ldf8_avx2(up - C), k1),
							 _mm256_mul_ps(ldf8_avx2(up), k1)),
					   _mm256_mul_ps(ldf8_avx2(up + C), k1)));
	s = _mm256_min_ps(_mm256_max_ps(s, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
	return _mm256_cvttps_epi32(s);
}

__attribute__((target("avx2"))) static size_t
sharpen_avx2(uint8_t *d, const uint8_t *up, const uint8_t *mid, const uint8_t *dn,
	     size_t C, size_t m)
{
	size_t j = 0;
	for (;; j += 16) {
		/* the last step ends at m (as in sharpen_sse41) */
		if (j + 16 > m) {
			if (j == m || m < 16)
				return j;
			j = m - 16;
		}
		store16_avx2(d + j, sharp8_avx2(up + j, mid + j, dn + j, C),
			     sharp8_avx2(up + j + 8, mid + j + 8, dn + j + 8, C));
	}
}

__attribute__((target("avx2"))) static size_t gray3_avx2(uint8_t *g, const uint8_t *rgb,
							  size_t npx)
{
	const __m256i rg = _mm256_setr_epi8(RG_PAIRS, RG_PAIRS), bg = _mm256_setr_epi8(BG_PAIRS, BG_PAIRS);
	const __m256i wrg = _mm256_set1_epi32(19595 | 19235 << 16);
	const __m256i wbg = _mm256_set1_epi32(7471 | 19235 << 16);
	const __m256i half = _mm256_set1_epi32(0x8000);
	/* dword 0 of each 128-bit lane: the lanes' four gray bytes */
	const __m256i pick = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
	size_t x = 0;
	/* pixels 0-3 from one 16-byte load, 4-7 from one 12 bytes on */
	for (; 3 * x + 28 <= 3 * npx; x += 8) {
		const uint8_t *p = rgb + 3 * x;
		__m256i v = _mm256_inserti128_si256(
			_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p)),
			_mm_loadu_si128((const __m128i *)(const void *)(p + 12)), 1);
		__m256i s = _mm256_add_epi32(_mm256_madd_epi16(_mm256_shuffle_epi8(v, rg), wrg),
					     _mm256_madd_epi16(_mm256_shuffle_epi8(v, bg), wbg));
		s = _mm256_srli_epi32(_mm256_add_epi32(s, half), 16);
		s = _mm256_packus_epi16(_mm256_packus_epi32(s, s), s);
		s = _mm256_permutevar8x32_epi32(s, pick);
		_mm_storel_epi64((__m128i *)(void *)(g + x), _mm256_castsi256_si128(s));
	}
	return x;
}

/* Eight pixels a step: their byte offsets from the positions (the
 * positions wrap as the scalar accumulation would not, but every one the
 * row uses fits 32 bits, where wrapping arithmetic agrees), one 4-byte
 * gather each, the three bytes of each kept by a shuffle, two overlapping
 * 16-byte stores (the next step, or the C tail, overwrites their spare 4
 * bytes: hence two pixels of slack at the end). A step whose gather would
 * read past the source's last byte (its last pixel, 3 bytes) is left to
 * the C tail. */
__attribute__((target("avx2"))) static int
gather3_avx2(uint8_t *out, const uint8_t *src, size_t stride, size_t src_bytes, int32_t xx,
	     int32_t yy, int32_t ax, int32_t ay, int n)
{
	if (src_bytes < 4 || src_bytes > INT32_MAX || stride > INT32_MAX)
		return 0;
	const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	__m256i xv = _mm256_add_epi32(_mm256_set1_epi32(xx),
				      _mm256_mullo_epi32(lane, _mm256_set1_epi32(ax)));
	__m256i yv = _mm256_add_epi32(_mm256_set1_epi32(yy),
				      _mm256_mullo_epi32(lane, _mm256_set1_epi32(ay)));
	const __m256i xstep = _mm256_set1_epi32((int32_t)((uint32_t)ax * 8u));
	const __m256i ystep = _mm256_set1_epi32((int32_t)((uint32_t)ay * 8u));
	const __m256i vstride = _mm256_set1_epi32((int32_t)stride);
	const __m256i last = _mm256_set1_epi32((int32_t)(src_bytes - 4));
	const __m256i keep3 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
					       0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
	int k = 0;
	for (; k + 10 <= n; k += 8) {
		__m256i xi = _mm256_srai_epi32(xv, 16), yi = _mm256_srai_epi32(yv, 16);
		__m256i off = _mm256_add_epi32(_mm256_mullo_epi32(yi, vstride),
					       _mm256_add_epi32(xi, _mm256_add_epi32(xi, xi)));
		if (!_mm256_testz_si256(_mm256_cmpgt_epi32(off, last), _mm256_set1_epi32(-1)))
			break;
		__m256i g = _mm256_i32gather_epi32((const int *)(const void *)src, off, 1);
		g = _mm256_shuffle_epi8(g, keep3);
		uint8_t *o = out + (size_t)k * 3;
		_mm_storeu_si128((__m128i *)(void *)o, _mm256_castsi256_si128(g));
		_mm_storeu_si128((__m128i *)(void *)(o + 12), _mm256_extracti128_si256(g, 1));
		xv = _mm256_add_epi32(xv, xstep);
		yv = _mm256_add_epi32(yv, ystep);
	}
	return k;
}

/* ---- adjust_hue, AVX2: eight pixels a step ---- */

/* (float)(c + (double)a - (double)b), lane for lane: to_hsv's sums. */
__attribute__((target("avx2"))) static inline __m256 csub_avx2(double c, __m256 a, __m256 b)
{
	const __m256d vc = _mm256_set1_pd(c);
	__m128 lo = _mm256_cvtpd_ps(_mm256_sub_pd(
		_mm256_add_pd(vc, _mm256_cvtps_pd(_mm256_castps256_ps128(a))),
		_mm256_cvtps_pd(_mm256_castps256_ps128(b))));
	__m128 hi = _mm256_cvtpd_ps(_mm256_sub_pd(
		_mm256_add_pd(vc, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))),
		_mm256_cvtps_pd(_mm256_extractf128_ps(b, 1))));
	return _mm256_set_m128(hi, lo);
}

/* The level of four float fractions: (int)((double)(float)x * 255.0),
 * where h first goes through to_hsv's wrap of x = h / 6 + 1 into [0, 1). */
__attribute__((target("avx2"))) static inline __m128i level4_avx2(__m128 h, bool wrap)
{
	__m256d x = _mm256_cvtps_pd(h);
	if (wrap) {
		const __m256d one = _mm256_set1_pd(1.0);
		x = _mm256_add_pd(_mm256_div_pd(x, _mm256_set1_pd(6.0)), one);
		x = _mm256_blendv_pd(x, _mm256_sub_pd(x, one), _mm256_cmp_pd(x, one, _CMP_GE_OQ));
		x = _mm256_cvtps_pd(_mm256_cvtpd_ps(x));
	}
	return _mm256_cvttpd_epi32(_mm256_mul_pd(x, _mm256_set1_pd(255.0)));
}

/* round() of four non-negative doubles, from_hsv's round_pos. */
__attribute__((target("avx2"))) static inline __m128i round4_avx2(__m256d x)
{
	__m256d t = _mm256_cvtepi32_pd(_mm256_cvttpd_epi32(x));
	__m256d up = _mm256_cmp_pd(_mm256_sub_pd(x, t), _mm256_set1_pd(0.5), _CMP_GE_OQ);
	return _mm256_cvttpd_epi32(_mm256_blendv_pd(t, _mm256_add_pd(t, _mm256_set1_pd(1.0)), up));
}

/* p, q and t of four pixels (one half of the eight): v (1 - fs),
 * v (1 - fs f) with the product in float, v (1 - fs (1 - f)) in double. */
__attribute__((target("avx2"))) static inline void
pqt4_avx2(__m128i v, __m128 f, __m128 fs, __m128i *p, __m128i *q, __m128i *t)
{
	const __m256d one = _mm256_set1_pd(1.0);
	const __m256d vd = _mm256_cvtepi32_pd(v), fsd = _mm256_cvtps_pd(fs);
	const __m256d fsf = _mm256_cvtps_pd(_mm_mul_ps(fs, f));
	const __m256d fsg = _mm256_mul_pd(fsd, _mm256_sub_pd(one, _mm256_cvtps_pd(f)));
	*p = round4_avx2(_mm256_mul_pd(vd, _mm256_sub_pd(one, fsd)));
	*q = round4_avx2(_mm256_mul_pd(vd, _mm256_sub_pd(one, fsf)));
	*t = round4_avx2(_mm256_mul_pd(vd, _mm256_sub_pd(one, fsg)));
}

__attribute__((target("avx2"))) static inline __m256i clip8_avx2(__m256i v)
{
	return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), _mm256_set1_epi32(255));
}

/* Eight pixels a step, from two 16-byte loads (at pixel 0 and 4 bytes
 * before pixel 4: the 24 bytes and no more), to the same 24 bytes. Divisions by zero in the
 * lanes of gray pixels (hi == lo) are masked out after, as to_hsv's
 * early return does. */
__attribute__((target("avx2"))) static size_t
hue3_avx2(uint8_t *row, size_t npx, uint8_t shift, const struct ts_px_hsv_tabs *tab)
{
#define CH(c) c, -1, -1, -1, c + 3, -1, -1, -1, c + 6, -1, -1, -1, c + 9, -1, -1, -1
	/* the high lane's load starts 4 bytes before pixel 4 */
	const __m256i rsh = _mm256_setr_epi8(CH(0), CH(4)), gsh = _mm256_setr_epi8(CH(1), CH(5)),
		      bsh = _mm256_setr_epi8(CH(2), CH(6));
#undef CH
	const __m256i inter = _mm256_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1,
					       0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
	const __m256i vshift = _mm256_set1_epi32(shift), m255 = _mm256_set1_epi32(255);
	size_t x = 0;
	for (; x + 8 <= npx; x += 8) {
		uint8_t *px = row + 3 * x;
		__m256i in = _mm256_inserti128_si256(
			_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)px)),
			_mm_loadu_si128((const __m128i *)(const void *)(px + 8)), 1);
		__m256i r = _mm256_shuffle_epi8(in, rsh), g = _mm256_shuffle_epi8(in, gsh),
			b = _mm256_shuffle_epi8(in, bsh);
		__m256i hi = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
		__m256i lo = _mm256_min_epi32(r, _mm256_min_epi32(g, b));
		/* to_hsv */
		__m256 span = _mm256_cvtepi32_ps(_mm256_sub_epi32(hi, lo));
		__m256 sat = _mm256_div_ps(span, _mm256_cvtepi32_ps(hi));
		__m256 dr = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(hi, r)), span);
		__m256 dg = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(hi, g)), span);
		__m256 db = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(hi, b)), span);
		__m256i mr = _mm256_cmpeq_epi32(r, hi);
		__m256i mg = _mm256_andnot_si256(mr, _mm256_cmpeq_epi32(g, hi));
		__m256 h = _mm256_blendv_ps(csub_avx2(4.0, dg, dr), csub_avx2(2.0, dr, db),
					    _mm256_castsi256_ps(mg));
		h = _mm256_blendv_ps(h, _mm256_sub_ps(db, dg), _mm256_castsi256_ps(mr));
		__m256i hl = _mm256_set_m128i(level4_avx2(_mm256_extractf128_ps(h, 1), true),
					      level4_avx2(_mm256_castps256_ps128(h), true));
		__m256i sl = _mm256_set_m128i(level4_avx2(_mm256_extractf128_ps(sat, 1), false),
					      level4_avx2(_mm256_castps256_ps128(sat), false));
		const __m256i gray = _mm256_cmpeq_epi32(hi, lo);
		hl = _mm256_andnot_si256(gray, clip8_avx2(hl));
		sl = _mm256_andnot_si256(gray, clip8_avx2(sl));
		hl = _mm256_and_si256(_mm256_add_epi32(hl, vshift), m255);
		/* from_hsv */
		__m256 f = _mm256_i32gather_ps(tab->f, hl, 4);
		__m256 fs = _mm256_i32gather_ps(tab->fs, sl, 4);
		__m256i sec = _mm256_i32gather_epi32((const int *)tab->sector, hl, 4);
		__m128i p0, q0, t0, p1, q1, t1;
		pqt4_avx2(_mm256_castsi256_si128(hi), _mm256_castps256_ps128(f),
			  _mm256_castps256_ps128(fs), &p0, &q0, &t0);
		pqt4_avx2(_mm256_extracti128_si256(hi, 1), _mm256_extractf128_ps(f, 1),
			  _mm256_extractf128_ps(fs, 1), &p1, &q1, &t1);
		__m256i p = clip8_avx2(_mm256_set_m128i(p1, p0));
		__m256i q = clip8_avx2(_mm256_set_m128i(q1, q0));
		__m256i t = clip8_avx2(_mm256_set_m128i(t1, t0));
		const __m256i s1 = _mm256_cmpeq_epi32(sec, _mm256_set1_epi32(1));
		const __m256i s2 = _mm256_cmpeq_epi32(sec, _mm256_set1_epi32(2));
		const __m256i s3 = _mm256_cmpeq_epi32(sec, _mm256_set1_epi32(3));
		const __m256i s4 = _mm256_cmpeq_epi32(sec, _mm256_set1_epi32(4));
		const __m256i s5 = _mm256_cmpeq_epi32(sec, _mm256_set1_epi32(5));
		/* sectors 0-5: R = v q p p t v, G = t v v q p p, B = p p t v v q */
		__m256i R = _mm256_blendv_epi8(hi, q, s1);
		R = _mm256_blendv_epi8(R, p, _mm256_or_si256(s2, s3));
		R = _mm256_blendv_epi8(R, t, s4);
		__m256i G = _mm256_blendv_epi8(t, hi, _mm256_or_si256(s1, s2));
		G = _mm256_blendv_epi8(G, q, s3);
		G = _mm256_blendv_epi8(G, p, _mm256_or_si256(s4, s5));
		__m256i B = _mm256_blendv_epi8(p, t, s2);
		B = _mm256_blendv_epi8(B, hi, _mm256_or_si256(s3, s4));
		B = _mm256_blendv_epi8(B, q, s5);
		/* saturation 0: v, v, v */
		const __m256i s0 = _mm256_cmpeq_epi32(sl, _mm256_setzero_si256());
		R = _mm256_blendv_epi8(R, hi, s0);
		G = _mm256_blendv_epi8(G, hi, s0);
		B = _mm256_blendv_epi8(B, hi, s0);
		/* per lane: R0-3 G0-3 B0-3, interleaved into 12 bytes */
		__m256i o = _mm256_packus_epi16(_mm256_packus_epi32(R, G), _mm256_packus_epi32(B, B));
		o = _mm256_shuffle_epi8(o, inter);
		_mm_storeu_si128((__m128i *)(void *)px, _mm256_castsi256_si128(o));
		__m128i o1 = _mm256_extracti128_si256(o, 1);
		_mm_storel_epi64((__m128i *)(void *)(px + 12), o1);
		int32_t last4 = _mm_extract_epi32(o1, 2);
		memcpy(px + 20, &last4, 4);
	}
	return x;
}

const struct ts_px_rows ts_px_rows_avx2 = {
	.blend_const = blend_const_avx2,
	.blend_row = blend_row_avx2,
	.mask = mask_avx2,
	.solarize = solarize_avx2,
	.sharpen = sharpen_avx2,
	.gray3 = gray3_avx2,
	.minmax3 = minmax3_sse41,
	.expand3 = expand3_sse41,
	.flip3 = flip3_sse41,
	.hue3 = hue3_avx2,
	.gather3 = gather3_avx2,
};

#endif
