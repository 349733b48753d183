/*
 * resample_x86.c - SSE4.1 and AVX2 kernels of the uint8 resample passes
 * (resample.h; weights split into int16 halves by resample.c, layout in
 * resample_kernels.h). Each function carries its own target attribute, so
 * the file builds with the project's plain x86-64 flags and resample.c
 * calls a kernel only when simd.c found its instructions.
 *
 * Horizontal pass, three channels, AVX2 by table (ts_resample_h3t_avx2, layout
 * in resample_kernels.h): 8 output bytes per step, each lane's 4 from one
 * 16-byte load per pair of taps, shuffled and pmaddwd'ed against the
 * table's split weights; half the instructions of the per-pixel kernel
 * below on the ImageNet recipes. Downscales by more than 4, whose taps do
 * not fit one load, run per pixel.
 *
 * Horizontal pass, three channels, per pixel (AVX2: two rows at once, one per
 * 128-bit lane, sharing bounds and weights): per output pixel, groups of 4 taps; one
 * 16-byte load covers 4 RGB pixels (12 bytes, 4 bytes spare), a byte
 * shuffle makes int16 pairs (r0, r1) (g0, g1) (b0, b1) (0, 0) for taps
 * 0-1 and the same for taps 2-3, and pmaddwd against the (w0, w1) and
 * (w2, w3) weights gives per channel two taps' products summed, for the hi
 * and the lo halves. Zero weights past a pixel's count make its padding
 * taps vanish; a pixel whose last load would pass the end of the row runs
 * the scalar ts_resample_h_pixel instead.
 *
 * Vertical pass: two input rows at a time, bytes interleaved into (a, b)
 * int16 pairs and pmaddwd against the rows' packed weight pair, 16 output
 * bytes per step with the accumulators in registers; the last step of a
 * row overlaps the one before when the row is not a multiple of 16.
 */
#include "resample.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <string.h>

#include "resample_kernels.h"

#define HALF (1 << (TS_RESAMPLE_BITS - 1))

/* Store the three bytes of one output pixel: 4 bytes when a later pixel
 * of the row will overwrite the fourth, else exactly 3. */
static inline void store3(uint8_t *d, uint32_t v, int last)
{
	if (!last) {
		memcpy(d, &v, 4);
	} else {
		d[0] = (uint8_t)v;
		d[1] = (uint8_t)(v >> 8);
		d[2] = (uint8_t)(v >> 16);
	}
}

/* (hi << 11) + lo + half, >> 22, clipped to uint8 by the saturating packs
 * (a negative sum gives 0, one of 2^30 or more gives 255, as clip8). */
__attribute__((target("sse4.1")))
static inline uint32_t combine3_sse41(__m128i h, __m128i l)
{
	__m128i s = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(h, 11), l),
				  _mm_set1_epi32(HALF));
	s = _mm_srai_epi32(s, TS_RESAMPLE_BITS);
	s = _mm_packs_epi32(s, s);
	s = _mm_packus_epi16(s, s);
	return (uint32_t)_mm_cvtsi128_si32(s);
}

__attribute__((target("sse4.1")))
void ts_resample_h3_sse41(const uint8_t *src, size_t sstride, int rows, int in_w,
		    uint8_t *dst, size_t dstride, int ow, int ksize,
		    const int *bounds, const int32_t *weights,
		    const int16_t *split, int gmax, const struct ts_resample_pf *pf)
{
	const __m128i m01 = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1,
					  -1, -1, -1, -1);
	const __m128i m23 = _mm_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1,
					  -1, -1, -1, -1);
	const size_t row_bytes = (size_t)in_w * 3;
	for (int y = 0; y < rows; y++) {
		const uint8_t *s = src + (size_t)y * sstride;
		uint8_t *d = dst + (size_t)y * dstride;
		ts_resample_pf_row(src, sstride, pf, y);
		for (int xx = 0; xx < ow; xx++, d += 3) {
			const int xmin = bounds[2 * xx], n = bounds[2 * xx + 1];
			const int G = (n + 3) >> 2;
			const uint8_t *p = s + (size_t)xmin * 3;
			if ((size_t)xmin * 3 + 12 * (size_t)G + 4 > row_bytes) {
				ts_resample_h_pixel(p, n, 3, weights + (size_t)xx * ksize, d);
				continue;
			}
			const __m128i *kw = (const __m128i *)(const void *)
				(split + (size_t)xx * gmax * (TS_RS_X86_GROUP / 2));
			__m128i ah = _mm_setzero_si128(), al = _mm_setzero_si128();
			for (int g = 0; g < G; g++, kw += 4) {
				__m128i px = _mm_loadu_si128((const __m128i *)(const void *)(p + 12 * g));
				__m128i v01 = _mm_shuffle_epi8(px, m01);
				__m128i v23 = _mm_shuffle_epi8(px, m23);
				ah = _mm_add_epi32(ah, _mm_add_epi32(_mm_madd_epi16(v01, _mm_load_si128(kw)),
								     _mm_madd_epi16(v23, _mm_load_si128(kw + 1))));
				al = _mm_add_epi32(al, _mm_add_epi32(_mm_madd_epi16(v01, _mm_load_si128(kw + 2)),
								     _mm_madd_epi16(v23, _mm_load_si128(kw + 3))));
			}
			store3(d, combine3_sse41(ah, al), xx == ow - 1);
		}
	}
}

/* One output pixel of one row (the AVX2 kernel's odd last row). */
__attribute__((target("avx2")))
static inline uint32_t h3_pixel_avx2(const uint8_t *p, int G, const __m256i *kw, __m256i m)
{
	__m256i ah = _mm256_setzero_si256(), al = _mm256_setzero_si256();
	for (int g = 0; g < G; g++, kw += 2) {
		__m128i px = _mm_loadu_si128((const __m128i *)(const void *)(p + 12 * g));
		__m256i v = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(px), m);
		ah = _mm256_add_epi32(ah, _mm256_madd_epi16(v, _mm256_load_si256(kw)));
		al = _mm256_add_epi32(al, _mm256_madd_epi16(v, _mm256_load_si256(kw + 1)));
	}
	__m128i h = _mm_add_epi32(_mm256_castsi256_si128(ah), _mm256_extracti128_si256(ah, 1));
	__m128i l = _mm_add_epi32(_mm256_castsi256_si128(al), _mm256_extracti128_si256(al, 1));
	return combine3_sse41(h, l);
}

/* Two rows at a time, one per 128-bit lane: the bounds, the weights
 * (broadcast to both lanes) and the final packing serve both rows. */
__attribute__((target("avx2")))
void ts_resample_h3_avx2(const uint8_t *src, size_t sstride, int rows, int in_w,
		   uint8_t *dst, size_t dstride, int ow, int ksize,
		   const int *bounds, const int32_t *weights,
		   const int16_t *split, int gmax, const struct ts_resample_pf *pf)
{
	const __m256i m1 = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1,
					    -1, -1, -1, -1,
					    6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1,
					    -1, -1, -1, -1);
	const __m256i m01 = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1,
					     -1, -1, -1, -1,
					     0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1,
					     -1, -1, -1, -1);
	const __m256i m23 = _mm256_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1,
					     -1, -1, -1, -1,
					     6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1,
					     -1, -1, -1, -1);
	const __m256i half = _mm256_set1_epi32(HALF);
	const size_t row_bytes = (size_t)in_w * 3;
	int y = 0;
	for (; y + 1 < rows; y += 2) {
		const uint8_t *s0 = src + (size_t)y * sstride, *s1 = s0 + sstride;
		uint8_t *d0 = dst + (size_t)y * dstride, *d1 = d0 + dstride;
		ts_resample_pf_row(src, sstride, pf, y);
		ts_resample_pf_row(src, sstride, pf, y + 1);
		for (int xx = 0; xx < ow; xx++, d0 += 3, d1 += 3) {
			const int xmin = bounds[2 * xx], n = bounds[2 * xx + 1];
			const int G = (n + 3) >> 2;
			const size_t off = (size_t)xmin * 3;
			if (off + 12 * (size_t)G + 4 > row_bytes) {
				const int32_t *k = weights + (size_t)xx * ksize;
				ts_resample_h_pixel(s0 + off, n, 3, k, d0);
				ts_resample_h_pixel(s1 + off, n, 3, k, d1);
				continue;
			}
			const __m128i *kw = (const __m128i *)(const void *)
				(split + (size_t)xx * gmax * (TS_RS_X86_GROUP / 2));
			__m256i ah = _mm256_setzero_si256(), al = _mm256_setzero_si256();
			for (int g = 0; g < G; g++, kw += 4) {
				const size_t o = off + 12 * (size_t)g;
				__m256i px = _mm256_inserti128_si256(
					_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(s0 + o))),
					_mm_loadu_si128((const __m128i *)(const void *)(s1 + o)), 1);
				__m256i v01 = _mm256_shuffle_epi8(px, m01);
				ah = _mm256_add_epi32(ah, _mm256_madd_epi16(
					v01, _mm256_broadcastsi128_si256(_mm_load_si128(kw))));
				al = _mm256_add_epi32(al, _mm256_madd_epi16(
					v01, _mm256_broadcastsi128_si256(_mm_load_si128(kw + 2))));
				/* Taps 2-3 of the group, unless their weights are the
				 * padding (an up-scale has 2 taps a pixel). */
				if (n - 4 * g > 2) {
					__m256i v23 = _mm256_shuffle_epi8(px, m23);
					ah = _mm256_add_epi32(ah, _mm256_madd_epi16(
						v23, _mm256_broadcastsi128_si256(_mm_load_si128(kw + 1))));
					al = _mm256_add_epi32(al, _mm256_madd_epi16(
						v23, _mm256_broadcastsi128_si256(_mm_load_si128(kw + 3))));
				}
			}
			__m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(ah, 11), al), half);
			sum = _mm256_srai_epi32(sum, TS_RESAMPLE_BITS);
			sum = _mm256_packs_epi32(sum, sum);
			sum = _mm256_packus_epi16(sum, sum);
			const int last = xx == ow - 1;
			store3(d0, (uint32_t)_mm256_extract_epi32(sum, 0), last);
			store3(d1, (uint32_t)_mm256_extract_epi32(sum, 4), last);
		}
	}
	for (; y < rows; y++) {
		const uint8_t *s = src + (size_t)y * sstride;
		uint8_t *d = dst + (size_t)y * dstride;
		ts_resample_pf_row(src, sstride, pf, y);
		for (int xx = 0; xx < ow; xx++, d += 3) {
			const int xmin = bounds[2 * xx], n = bounds[2 * xx + 1];
			const int G = (n + 3) >> 2;
			const uint8_t *p = s + (size_t)xmin * 3;
			if ((size_t)xmin * 3 + 12 * (size_t)G + 4 > row_bytes) {
				ts_resample_h_pixel(p, n, 3, weights + (size_t)xx * ksize, d);
				continue;
			}
			const __m256i *kw = (const __m256i *)(const void *)
				(split + (size_t)xx * gmax * (TS_RS_X86_GROUP / 2));
			store3(d, h3_pixel_avx2(p, G, kw, m1), xx == ow - 1);
		}
	}
}

/* The elements [e0, e1) of one output row (resample_kernels.h) in plain
 * C: the same int32 sums as the generic path. */
static void h3t_scalar(const uint8_t *s, uint8_t *d, int e0, int e1, int ksize,
		       const int *bounds, const int32_t *weights)
{
	for (int e = e0; e < e1; e++) {
		const int xx = e / 3, c = e % 3;
		const int xmin = bounds[2 * xx], n = bounds[2 * xx + 1];
		const int32_t *k = weights + (size_t)xx * ksize;
		const uint8_t *p = s + (size_t)xmin * 3 + c;
		int32_t acc = HALF;
		for (int t = 0; t < n; t++)
			acc += p[3 * t] * k[t];
		d[e] = ts_resample_clip8(acc);
	}
}

/* 8 elements' sums (hi, lo) to bytes at d: all 8, or the first n. */
__attribute__((target("avx2")))
static inline void h3t_store(uint8_t *d, __m256i h, __m256i l, int n)
{
	__m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h, 11), l),
				     _mm256_set1_epi32(HALF));
	s = _mm256_srai_epi32(s, TS_RESAMPLE_BITS);
	s = _mm256_packs_epi32(s, s);
	s = _mm256_packus_epi16(s, s);
	__m128i b = _mm_unpacklo_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
	if (n >= 8) {
		_mm_storel_epi64((__m128i *)(void *)d, b);
	} else {
		uint8_t tmp[16];
		_mm_storeu_si128((__m128i *)(void *)tmp, b);
		memcpy(d, tmp, (size_t)n);
	}
}

/* The two 16-byte loads of an entry, one per lane, shuffled into pairs. */
__attribute__((target("avx2")))
static inline __m256i h3t_pixels(const uint8_t *s, const struct ts_resample_h3t_entry *e)
{
	__m256i px = _mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(s + e->off[0]))),
		_mm_loadu_si128((const __m128i *)(const void *)(s + e->off[1])), 1);
	return _mm256_shuffle_epi8(px, _mm256_load_si256((const __m256i *)(const void *)e->mask));
}

/* One block's sums for two rows (h3t_pixels per row, the entry's
 * weights shared). */
__attribute__((target("avx2")))
static inline void h3t_block2(const uint8_t *s0, const uint8_t *s1,
			      const struct ts_resample_h3t_entry *e, int nj, __m256i *h0,
			      __m256i *l0, __m256i *h1, __m256i *l1)
{
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
	for (int j = 0; j < nj; j++, e++) {
		const __m256i wh = _mm256_load_si256((const __m256i *)(const void *)e->hi);
		const __m256i wl = _mm256_load_si256((const __m256i *)(const void *)e->lo);
		const __m256i v0 = h3t_pixels(s0, e), v1 = h3t_pixels(s1, e);
		a = _mm256_add_epi32(a, _mm256_madd_epi16(v0, wh));
		b = _mm256_add_epi32(b, _mm256_madd_epi16(v0, wl));
		c = _mm256_add_epi32(c, _mm256_madd_epi16(v1, wh));
		d = _mm256_add_epi32(d, _mm256_madd_epi16(v1, wl));
	}
	*h0 = a;
	*l0 = b;
	*h1 = c;
	*l1 = d;
}

/* Two whole blocks' sums (a: elements 0-7, b: 8-15) to 16 bytes at d:
 * one pack, permute and store for both, not one each. */
__attribute__((target("avx2")))
static inline void h3t_store16(uint8_t *d, __m256i ha, __m256i la, __m256i hb,
			       __m256i lb)
{
	const __m256i half = _mm256_set1_epi32(HALF);
	__m256i a = _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(
		_mm256_slli_epi32(ha, 11), la), half), TS_RESAMPLE_BITS);
	__m256i b = _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(
		_mm256_slli_epi32(hb, 11), lb), half), TS_RESAMPLE_BITS);
	/* int16 quarters a0-3 b0-3 | a4-7 b4-7, put in order a0-7 b0-7 */
	__m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
	_mm_storeu_si128((__m128i *)(void *)d,
			 _mm_packus_epi16(_mm256_castsi256_si128(p),
					  _mm256_extracti128_si256(p, 1)));
}

/* Two rows at a time share each entry's loads of shuffle and weights;
 * two whole blocks at a time share the packing and the store. A tail
 * block (resample_kernels.h) is summed in plain C in the call's last row,
 * by vector in the others. */
__attribute__((target("avx2")))
void ts_resample_h3t_avx2(const uint8_t *src, size_t sstride, int rows, uint8_t *dst,
		    size_t dstride, int ow, int ksize, const int *bounds,
		    const int32_t *weights, const struct ts_resample_h3t_block *blk,
		    const struct ts_resample_h3t_entry *tab, const struct ts_resample_pf *pf)
{
	const int n_el = 3 * ow, nblk = (n_el + 7) / 8;
	int y = 0;
	for (; y + 1 < rows; y += 2) {
		const uint8_t *s0 = src + (size_t)y * sstride, *s1 = s0 + sstride;
		uint8_t *d0 = dst + (size_t)y * dstride, *d1 = d0 + dstride;
		const int last = y + 2 >= rows; /* s1 is the last row */
		ts_resample_pf_row(src, sstride, pf, y);
		ts_resample_pf_row(src, sstride, pf, y + 1);
		for (int b = 0; b < nblk; b++) {
			const int e0 = 8 * b, m = n_el - e0 < 8 ? n_el - e0 : 8;
			if (blk[b].first < 0 || (last && blk[b].tail)) {
				h3t_scalar(s0, d0, e0, e0 + m, ksize, bounds, weights);
				h3t_scalar(s1, d1, e0, e0 + m, ksize, bounds, weights);
				continue;
			}
			__m256i h0, l0, h1, l1;
			h3t_block2(s0, s1, tab + blk[b].first, blk[b].nj, &h0, &l0, &h1, &l1);
			if (e0 + 16 <= n_el && blk[b + 1].first >= 0 &&
			    !(last && blk[b + 1].tail)) {
				__m256i h0b, l0b, h1b, l1b;
				h3t_block2(s0, s1, tab + blk[b + 1].first, blk[b + 1].nj, &h0b,
					   &l0b, &h1b, &l1b);
				h3t_store16(d0 + e0, h0, l0, h0b, l0b);
				h3t_store16(d1 + e0, h1, l1, h1b, l1b);
				b++;
				continue;
			}
			h3t_store(d0 + e0, h0, l0, m);
			h3t_store(d1 + e0, h1, l1, m);
		}
	}
	for (; y < rows; y++) {
		const uint8_t *s = src + (size_t)y * sstride;
		uint8_t *d = dst + (size_t)y * dstride;
		ts_resample_pf_row(src, sstride, pf, y);
		for (int b = 0; b < nblk; b++) {
			const int e0 = 8 * b, m = n_el - e0 < 8 ? n_el - e0 : 8;
			if (blk[b].first < 0 || blk[b].tail) { /* the last row */
				h3t_scalar(s, d, e0, e0 + m, ksize, bounds, weights);
				continue;
			}
			const struct ts_resample_h3t_entry *e = tab + blk[b].first;
			__m256i h = _mm256_setzero_si256(), l = h;
			for (int j = 0; j < blk[b].nj; j++, e++) {
				const __m256i v = h3t_pixels(s, e);
				h = _mm256_add_epi32(h, _mm256_madd_epi16(
					v, _mm256_load_si256((const __m256i *)(const void *)e->hi)));
				l = _mm256_add_epi32(l, _mm256_madd_epi16(
					v, _mm256_load_si256((const __m256i *)(const void *)e->lo)));
			}
			h3t_store(d + e0, h, l, m);
		}
	}
}

/* The vertical pass of a row shorter than one vector step. */
static void v_row_scalar(const uint8_t *base, size_t sstride, int n_elems,
			 uint8_t *d, int n, const int32_t *pr)
{
	for (int i = 0; i < n_elems; i++) {
		int32_t hi = 0, lo = 0;
		for (int y = 0; y < n; y++) {
			int32_t ph = pr[2 * (y / 2)], pl = pr[2 * (y / 2) + 1];
			int sh = (y & 1) ? 16 : 0;
			int32_t wh = (int16_t)(uint16_t)((uint32_t)ph >> sh);
			int32_t wl = (int16_t)(uint16_t)((uint32_t)pl >> sh);
			int v = base[(size_t)y * sstride + i];
			hi += v * wh;
			lo += v * wl;
		}
		d[i] = ts_resample_clip8((int32_t)((uint32_t)hi << 11) + lo + HALF);
	}
}

__attribute__((target("sse4.1")))
static inline __m128i fix4_sse41(__m128i h, __m128i l)
{
	__m128i s = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(h, 11), l),
				  _mm_set1_epi32(HALF));
	return _mm_srai_epi32(s, TS_RESAMPLE_BITS);
}

__attribute__((target("sse4.1")))
void ts_resample_v_sse41(const uint8_t *src, size_t sstride, int n_elems,
		   uint8_t *dst, size_t dstride, int oh, const int *bounds,
		   const int32_t *pairs, int vpairs)
{
	for (int yy = 0; yy < oh; yy++) {
		const int ymin = bounds[2 * yy], n = bounds[2 * yy + 1];
		const int32_t *pr = pairs + (size_t)yy * vpairs * 2;
		const uint8_t *base = src + (size_t)ymin * sstride;
		uint8_t *d = dst + (size_t)yy * dstride;
		if (n_elems < 16) {
			v_row_scalar(base, sstride, n_elems, d, n, pr);
			continue;
		}
		for (int i = 0;; i += 16) {
			if (i + 16 > n_elems)
				i = n_elems - 16;
			__m128i h[4], l[4];
			for (int q = 0; q < 4; q++)
				h[q] = l[q] = _mm_setzero_si128();
			for (int y = 0; y < n; y += 2) {
				const uint8_t *ra = base + (size_t)y * sstride + i;
				const uint8_t *rb = y + 1 < n ? ra + sstride : ra;
				__m128i a = _mm_loadu_si128((const __m128i *)(const void *)ra);
				__m128i b = _mm_loadu_si128((const __m128i *)(const void *)rb);
				__m128i lo8 = _mm_unpacklo_epi8(a, b), hi8 = _mm_unpackhi_epi8(a, b);
				__m128i w[4] = {
					_mm_cvtepu8_epi16(lo8), _mm_cvtepu8_epi16(_mm_srli_si128(lo8, 8)),
					_mm_cvtepu8_epi16(hi8), _mm_cvtepu8_epi16(_mm_srli_si128(hi8, 8)),
				};
				__m128i kh = _mm_set1_epi32(pr[y]), kl = _mm_set1_epi32(pr[y + 1]);
				for (int q = 0; q < 4; q++) {
					h[q] = _mm_add_epi32(h[q], _mm_madd_epi16(w[q], kh));
					l[q] = _mm_add_epi32(l[q], _mm_madd_epi16(w[q], kl));
				}
			}
			__m128i p0 = _mm_packs_epi32(fix4_sse41(h[0], l[0]), fix4_sse41(h[1], l[1]));
			__m128i p1 = _mm_packs_epi32(fix4_sse41(h[2], l[2]), fix4_sse41(h[3], l[3]));
			_mm_storeu_si128((__m128i *)(void *)(d + i), _mm_packus_epi16(p0, p1));
			if (i + 16 >= n_elems)
				break;
		}
	}
}

__attribute__((target("avx2")))
static inline __m256i fix8_avx2(__m256i h, __m256i l)
{
	__m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h, 11), l),
				     _mm256_set1_epi32(HALF));
	return _mm256_srai_epi32(s, TS_RESAMPLE_BITS);
}

/* Tap pairs a row of the 32-byte vertical step holds broadcast. */
#define V32_MAXPAIRS 8

/*
 * One output row of the vertical pass, 32 bytes per step (rows of at
 * least 32; the last step overlaps the one before). Per pair of rows: two
 * 32-byte loads, bytes interleaved (a, b) and zero-extended to int16
 * pairs by four unpacks against zero, so that lane 0 holds elements 0-15
 * and lane 1 16-31 and the packs at the end give them back in order with
 * no permute; the pairs' weights are broadcast once per row, not per
 * step. The same int32 sums as the 16-byte step.
 */
__attribute__((target("avx2")))
static void v_row32_avx2(const uint8_t *base, size_t sstride, int n_elems,
			 uint8_t *d, int n, const int32_t *pr)
{
	const int np = (n + 1) / 2;
	__m256i kh[V32_MAXPAIRS], kl[V32_MAXPAIRS];
	const uint8_t *rb[V32_MAXPAIRS];
	for (int j = 0; j < np; j++) {
		kh[j] = _mm256_set1_epi32(pr[2 * j]);
		kl[j] = _mm256_set1_epi32(pr[2 * j + 1]);
		/* an odd count's last pair reads its row twice, weight 0 */
		rb[j] = base + (size_t)(2 * j + 1 < n ? 2 * j + 1 : 2 * j) * sstride;
	}
	const __m256i zero = _mm256_setzero_si256();
	for (int i = 0;; i += 32) {
		if (i + 32 > n_elems)
			i = n_elems - 32;
		__m256i h0 = zero, h1 = zero, h2 = zero, h3 = zero;
		__m256i l0 = zero, l1 = zero, l2 = zero, l3 = zero;
		for (int j = 0; j < np; j++) {
			const uint8_t *ra = base + (size_t)(2 * j) * sstride + i;
			__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)ra);
			__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(rb[j] + i));
			__m256i t0 = _mm256_unpacklo_epi8(a, b), t1 = _mm256_unpackhi_epi8(a, b);
			__m256i w0 = _mm256_unpacklo_epi8(t0, zero), w1 = _mm256_unpackhi_epi8(t0, zero);
			__m256i w2 = _mm256_unpacklo_epi8(t1, zero), w3 = _mm256_unpackhi_epi8(t1, zero);
			h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(w0, kh[j]));
			h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(w1, kh[j]));
			h2 = _mm256_add_epi32(h2, _mm256_madd_epi16(w2, kh[j]));
			h3 = _mm256_add_epi32(h3, _mm256_madd_epi16(w3, kh[j]));
			l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(w0, kl[j]));
			l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(w1, kl[j]));
			l2 = _mm256_add_epi32(l2, _mm256_madd_epi16(w2, kl[j]));
			l3 = _mm256_add_epi32(l3, _mm256_madd_epi16(w3, kl[j]));
		}
		/* per lane: w0 elements 0-3, w1 4-7, w2 8-11, w3 12-15 */
		__m256i p01 = _mm256_packs_epi32(fix8_avx2(h0, l0), fix8_avx2(h1, l1));
		__m256i p23 = _mm256_packs_epi32(fix8_avx2(h2, l2), fix8_avx2(h3, l3));
		_mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_packus_epi16(p01, p23));
		if (i + 32 >= n_elems)
			break;
	}
}

__attribute__((target("avx2")))
void ts_resample_v_avx2(const uint8_t *src, size_t sstride, int n_elems,
		  uint8_t *dst, size_t dstride, int oh, const int *bounds,
		  const int32_t *pairs, int vpairs)
{
	for (int yy = 0; yy < oh; yy++) {
		const int ymin = bounds[2 * yy], n = bounds[2 * yy + 1];
		const int32_t *pr = pairs + (size_t)yy * vpairs * 2;
		const uint8_t *base = src + (size_t)ymin * sstride;
		uint8_t *d = dst + (size_t)yy * dstride;
		if (n_elems < 16) {
			v_row_scalar(base, sstride, n_elems, d, n, pr);
			continue;
		}
		if (n_elems >= 32 && n <= 2 * V32_MAXPAIRS) {
			v_row32_avx2(base, sstride, n_elems, d, n, pr);
			continue;
		}
		for (int i = 0;; i += 16) {
			if (i + 16 > n_elems)
				i = n_elems - 16;
			__m256i h0 = _mm256_setzero_si256(), h1 = h0, l0 = h0, l1 = h0;
			for (int y = 0; y < n; y += 2) {
				const uint8_t *ra = base + (size_t)y * sstride + i;
				const uint8_t *rb = y + 1 < n ? ra + sstride : ra;
				__m128i a = _mm_loadu_si128((const __m128i *)(const void *)ra);
				__m128i b = _mm_loadu_si128((const __m128i *)(const void *)rb);
				__m256i w0 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b));
				__m256i w1 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b));
				__m256i kh = _mm256_set1_epi32(pr[y]), kl = _mm256_set1_epi32(pr[y + 1]);
				h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(w0, kh));
				h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(w1, kh));
				l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(w0, kl));
				l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(w1, kl));
			}
			__m256i p16 = _mm256_permute4x64_epi64(
				_mm256_packs_epi32(fix8_avx2(h0, l0), fix8_avx2(h1, l1)), 0xD8);
			__m128i out = _mm_packus_epi16(_mm256_castsi256_si128(p16),
						       _mm256_extracti128_si256(p16, 1));
			_mm_storeu_si128((__m128i *)(void *)(d + i), out);
			if (i + 16 >= n_elems)
				break;
		}
	}
}

#endif
