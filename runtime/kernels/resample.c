/*
 * resample.c - Pillow's uint8 resample passes: the generic C path (the
 * reference every vector kernel is tested against), the split of the Q22
 * weights into int16 halves for the vector kernels, and the dispatch on
 * simd.h's instruction set.
 */
#include "resample.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "resample_kernels.h"
#include "simd.h"

/* ---- Per-thread scratch for the split weights ---- */

struct rs_scratch {
	void *buf;
	size_t cap;
};

static __thread struct rs_scratch tls;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

static void release(void *p)
{
	struct rs_scratch *s = p;
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
}

static void key_init(void)
{
	key_ok = pthread_key_create(&key, release) == 0;
}

void ts_resample_scratch_free(void)
{
	release(&tls);
}

/* At least need bytes, 32-aligned (the AVX2 kernels load weights with
 * aligned loads), or NULL. */
static void *scratch(size_t need)
{
	if (need <= tls.cap)
		return tls.buf;
	size_t cap = need + need / 2;
	void *p = NULL;
	if (posix_memalign(&p, 32, cap) != 0)
		return NULL;
	free(tls.buf);
	tls.buf = p;
	tls.cap = cap;
	pthread_once(&key_once, key_init);
	if (key_ok)
		pthread_setspecific(key, &tls);
	return p;
}

/* ---- The split: w = hi * 2^11 + lo, 0 <= lo < 2^11 ---- */

static inline int16_t w_hi(int32_t w)
{
	return (int16_t)(w >> 11);
}

static inline int16_t w_lo(int32_t w)
{
	return (int16_t)(w & 0x7ff);
}

/* Weights of tap x of an output (0 past ksize: the zero padding a group of
 * 4 needs). */
static inline int32_t tap(const int32_t *k, int ksize, int x)
{
	return x < ksize ? k[x] : 0;
}

static void split_h_x86(int16_t *out, int ow, int ksize, int gmax,
			const int32_t *weights)
{
	for (int xx = 0; xx < ow; xx++) {
		const int32_t *k = weights + (size_t)xx * ksize;
		for (int g = 0; g < gmax; g++) {
			int16_t *hi = out + ((size_t)xx * gmax + g) * (TS_RS_X86_GROUP / 2);
			int16_t *lo = hi + 16;
			for (int half = 0; half < 2; half++) {
				int32_t a = tap(k, ksize, 4 * g + 2 * half);
				int32_t b = tap(k, ksize, 4 * g + 2 * half + 1);
				for (int r = 0; r < 4; r++) {
					hi[8 * half + 2 * r] = w_hi(a);
					hi[8 * half + 2 * r + 1] = w_hi(b);
					lo[8 * half + 2 * r] = w_lo(a);
					lo[8 * half + 2 * r + 1] = w_lo(b);
				}
			}
		}
	}
}

#if defined(__aarch64__)
static void split_h_neon(int16_t *out, int ow, int ksize, int gmax,
			 const int32_t *weights)
{
	for (int xx = 0; xx < ow; xx++) {
		const int32_t *k = weights + (size_t)xx * ksize;
		for (int g = 0; g < gmax; g++) {
			int16_t *hi = out + ((size_t)xx * gmax + g) * (TS_RS_NEON_GROUP / 2);
			for (int t = 0; t < 4; t++) {
				hi[t] = w_hi(tap(k, ksize, 4 * g + t));
				hi[4 + t] = w_lo(tap(k, ksize, 4 * g + t));
			}
		}
	}
}
#endif

#if defined(__x86_64__) || defined(__i386__)
static inline int32_t pack16(int16_t a, int16_t b)
{
	return (int32_t)((uint32_t)(uint16_t)a | (uint32_t)(uint16_t)b << 16);
}

static void split_v_x86(int32_t *out, int oh, int ksize, int vpairs,
			const int32_t *weights)
{
	for (int yy = 0; yy < oh; yy++) {
		const int32_t *k = weights + (size_t)yy * ksize;
		int32_t *o = out + (size_t)yy * vpairs * 2;
		for (int j = 0; j < vpairs; j++) {
			int32_t a = tap(k, ksize, 2 * j), b = tap(k, ksize, 2 * j + 1);
			o[2 * j] = pack16(w_hi(a), w_hi(b));
			o[2 * j + 1] = pack16(w_lo(a), w_lo(b));
		}
	}
}

/* The size of ts_resample_h3t_avx2's table (resample_kernels.h) for ow
 * outputs. */
static size_t h3t_size(int ow, int ksize)
{
	const size_t nblk = ((size_t)ow * 3 + 7) / 8;
	const size_t head = (nblk * sizeof(struct ts_resample_h3t_block) + 31) & ~(size_t)31;
	return head + nblk * (size_t)((ksize + 1) / 2) * sizeof(struct ts_resample_h3t_entry);
}

/* The table for ow outputs of rows of in_w RGB pixels, in buf (h3t_size
 * bytes, 32-aligned). Returns the number of blocks left to plain C in
 * every row (tail blocks are so only in the last). */
static int h3t_build(void *buf, int in_w, int ow, int ksize, const int *bounds,
		     const int32_t *weights, struct ts_resample_h3t_block **pblk,
		     struct ts_resample_h3t_entry **ptab)
{
	const int n_el = 3 * ow, nblk = (n_el + 7) / 8;
	const long row_bytes = (long)in_w * 3;
	struct ts_resample_h3t_block *blk = buf;
	struct ts_resample_h3t_entry *tab = (struct ts_resample_h3t_entry *)(void *)((char *)buf +
		(((size_t)nblk * sizeof(*blk) + 31) & ~(size_t)31));
	int used = 0, slow = 0;
	for (int b = 0; b < nblk; b++) {
		/* The block's 8 elements: first tap's byte, count, weights. */
		long at0[8];
		int cnt[8], nj = 0;
		const int32_t *wk[8];
		for (int k = 0; k < 8; k++) {
			const int e = 8 * b + k, xx = e / 3;
			cnt[k] = e < n_el ? bounds[2 * xx + 1] : 0;
			at0[k] = e < n_el ? (long)bounds[2 * xx] * 3 + e % 3 : 0;
			wk[k] = e < n_el ? weights + (size_t)xx * ksize : weights;
			if ((cnt[k] + 1) / 2 > nj)
				nj = (cnt[k] + 1) / 2;
		}
		bool ok = true, tail = false;
		for (int j = 0; j < nj && ok; j++) {
			struct ts_resample_h3t_entry *en = tab + used + j;
			memset(en->mask, -128, sizeof(en->mask)); /* zero bytes */
			memset(en->hi, 0, sizeof(en->hi));
			memset(en->lo, 0, sizeof(en->lo));
			for (int l = 0; l < 2 && ok; l++) {
				long base = -1;
				for (int k = 4 * l; k < 4 * l + 4; k++)
					if (2 * j < cnt[k] && (base < 0 || at0[k] + 6 * j < base))
						base = at0[k] + 6 * j;
				if (base < 0)
					base = 0; /* no tap of this lane: weights 0 */
				/* Past the row's end by at most 15 bytes: into
				 * the next row's (a row of 16 bytes or more
				 * holds them), a tail block. */
				if (base + 16 > row_bytes) {
					if (row_bytes < 16) {
						ok = false;
						break;
					}
					tail = true;
				}
				en->off[l] = (int32_t)base;
				for (int k = 4 * l; k < 4 * l + 4 && ok; k++)
					for (int q = 0; q < 2; q++) {
						const int t = 2 * j + q, i = 2 * k + q; /* int16 index */
						if (t >= cnt[k])
							break;
						const long at = at0[k] + 3 * t - base;
						if (at > 15) {
							ok = false;
							break;
						}
						/* within a lane, pshufb indexes that lane's 16 bytes */
						en->mask[2 * i] = (int8_t)at;
						en->hi[i] = w_hi(wk[k][t]);
						en->lo[i] = w_lo(wk[k][t]);
					}
			}
		}
		blk[b].nj = nj;
		blk[b].tail = ok && tail;
		if (ok) {
			blk[b].first = used;
			used += nj;
		} else {
			blk[b].first = -1;
			slow++;
		}
	}
	*pblk = blk;
	*ptab = tab;
	return slow;
}
#endif

/* ---- Generic C ---- */

/* GCC's -O2 cost model leaves these long, simple loops scalar; ask for
 * the vectorizer on them (clang vectorizes at -O2 already; -O3 does too). */
#if defined(__GNUC__) && !defined(__clang__)
#define TS_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define TS_VECTORIZE
#endif

TS_VECTORIZE static void h_generic(const uint8_t *src, size_t sstride, int rows, int C,
		      uint8_t *dst, size_t dstride, int ow, int ksize,
		      const int *bounds, const int32_t *kk, const struct ts_resample_pf *pf)
{
	const int32_t half = 1 << (TS_RESAMPLE_BITS - 1);
	for (int y = 0; y < rows; y++) {
		const uint8_t *s = src + (size_t)y * sstride;
		ts_resample_pf_row(src, sstride, pf, y);
		uint8_t *d = dst + (size_t)y * dstride;
		for (int xx = 0; xx < ow; xx++) {
			const int xmin = bounds[2 * xx], n = bounds[2 * xx + 1];
			const int32_t *k = kk + (size_t)xx * ksize;
			const uint8_t *p = s + (size_t)xmin * C;
			if (C == 3) {
				int32_t s0 = half, s1 = half, s2 = half;
				for (int x = 0; x < n; x++, p += 3) {
					s0 += p[0] * k[x];
					s1 += p[1] * k[x];
					s2 += p[2] * k[x];
				}
				d[0] = ts_resample_clip8(s0);
				d[1] = ts_resample_clip8(s1);
				d[2] = ts_resample_clip8(s2);
				d += 3;
			} else if (C == 1) {
				int32_t s0 = half;
				for (int x = 0; x < n; x++)
					s0 += p[x] * k[x];
				*d++ = ts_resample_clip8(s0);
			} else {
				ts_resample_h_pixel(p, n, C, k, d);
				d += C;
			}
		}
	}
}

/* Row by row into an int32 accumulator, a chunk of the row at a time so
 * the accumulator stays on the stack and in L1. */
TS_VECTORIZE static void v_generic(const uint8_t *src, size_t sstride, int n_elems,
		      uint8_t *dst, size_t dstride, int oh, int ksize,
		      const int *bounds, const int32_t *kk)
{
	enum { CHUNK = 512 };
	int32_t acc[CHUNK];
	const int32_t half = 1 << (TS_RESAMPLE_BITS - 1);
	for (int yy = 0; yy < oh; yy++) {
		const int ymin = bounds[2 * yy], n = bounds[2 * yy + 1];
		const int32_t *k = kk + (size_t)yy * ksize;
		uint8_t *d = dst + (size_t)yy * dstride;
		for (int i0 = 0; i0 < n_elems; i0 += CHUNK) {
			const int m = n_elems - i0 < CHUNK ? n_elems - i0 : CHUNK;
			for (int i = 0; i < m; i++)
				acc[i] = half;
			for (int y = 0; y < n; y++) {
				const uint8_t *s = src + (size_t)(y + ymin) * sstride + i0;
				const int32_t ky = k[y];
				for (int i = 0; i < m; i++)
					acc[i] += s[i] * ky;
			}
			for (int i = 0; i < m; i++)
				d[i0 + i] = ts_resample_clip8(acc[i]);
		}
	}
}

/* ---- Dispatch ---- */

/* The prefetch of a pass whose source is cold (resample.h, ahead): the
 * bytes of a row the outputs read, and the first ahead rows asked for
 * now (the kernels ask for each later one ahead rows before it). */
static const struct ts_resample_pf *pf_setup(struct ts_resample_pf *pf, const uint8_t *src,
					     size_t sstride, int rows, int channels, int ow,
					     const int *bounds, int ahead)
{
	if (ahead <= 0 || rows <= 0 || ow <= 0)
		return NULL;
	int x0 = bounds[0], x1 = bounds[0] + bounds[1];
	for (int i = 1; i < ow; i++) {
		if (bounds[2 * i] < x0)
			x0 = bounds[2 * i];
		if (bounds[2 * i] + bounds[2 * i + 1] > x1)
			x1 = bounds[2 * i] + bounds[2 * i + 1];
	}
	*pf = (struct ts_resample_pf){.lo = (size_t)x0 * (size_t)channels,
				      .hi = (size_t)x1 * (size_t)channels,
				      .ahead = ahead, .rows = rows};
	for (int y = -ahead; y < 0; y++)
		ts_resample_pf_row(src, sstride, pf, y);
	return pf;
}

void ts_resample_h_u8(const uint8_t *src, size_t sstride, int rows, int in_w,
		      int channels, uint8_t *dst, size_t dstride, int ow,
		      int ksize, const int *bounds, const int32_t *weights, int ahead)
{
	const enum ts_simd_isa isa = channels == 3 ? ts_simd_isa() : TS_SIMD_GENERIC;
	struct ts_resample_pf pfs;
	const struct ts_resample_pf *pf = pf_setup(&pfs, src, sstride, rows, channels, ow,
						   bounds, ahead);
	const int gmax = (ksize + 3) / 4;
	int16_t *split = NULL;
#if defined(__x86_64__) || defined(__i386__)
	/* AVX2 by table unless more than a few blocks a row would be left
	 * to plain C (downscales by more than 4): then per pixel. */
	if (isa == TS_SIMD_AVX2) {
		void *buf = scratch(h3t_size(ow, ksize));
		struct ts_resample_h3t_block *blk;
		struct ts_resample_h3t_entry *tab;
		if (buf && h3t_build(buf, in_w, ow, ksize, bounds, weights, &blk, &tab) <= 4) {
			ts_resample_h3t_avx2(src, sstride, rows, dst, dstride, ow, ksize, bounds,
				       weights, blk, tab, pf);
			return;
		}
	}
#endif
	if (isa == TS_SIMD_SSE41 || isa == TS_SIMD_AVX2) {
		split = scratch((size_t)ow * gmax * TS_RS_X86_GROUP);
		if (split)
			split_h_x86(split, ow, ksize, gmax, weights);
	}
#if defined(__aarch64__)
	if (isa == TS_SIMD_NEON) {
		split = scratch((size_t)ow * gmax * TS_RS_NEON_GROUP);
		if (split)
			split_h_neon(split, ow, ksize, gmax, weights);
	}
#endif
	if (!split) {
		h_generic(src, sstride, rows, channels, dst, dstride, ow, ksize,
			  bounds, weights, pf);
		return;
	}
	switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
	case TS_SIMD_AVX2:
		ts_resample_h3_avx2(src, sstride, rows, in_w, dst, dstride, ow, ksize,
			      bounds, weights, split, gmax, pf);
		return;
	case TS_SIMD_SSE41:
		ts_resample_h3_sse41(src, sstride, rows, in_w, dst, dstride, ow, ksize,
			       bounds, weights, split, gmax, pf);
		return;
#endif
#if defined(__aarch64__)
	case TS_SIMD_NEON:
		ts_resample_h3_neon(src, sstride, rows, in_w, dst, dstride, ow, ksize,
			      bounds, weights, split, gmax, pf);
		return;
#endif
	default:
		h_generic(src, sstride, rows, channels, dst, dstride, ow, ksize,
			  bounds, weights, pf);
	}
}

void ts_resample_v_u8(const uint8_t *src, size_t sstride, int n_elems,
		      uint8_t *dst, size_t dstride, int oh, int ksize,
		      const int *bounds, const int32_t *weights)
{
	const enum ts_simd_isa isa = ts_simd_isa();
#if defined(__x86_64__) || defined(__i386__)
	if (isa == TS_SIMD_SSE41 || isa == TS_SIMD_AVX2) {
		const int vpairs = (ksize + 1) / 2;
		int32_t *pairs = scratch((size_t)oh * vpairs * 2 * sizeof(int32_t));
		if (pairs) {
			split_v_x86(pairs, oh, ksize, vpairs, weights);
			if (isa == TS_SIMD_AVX2)
				ts_resample_v_avx2(src, sstride, n_elems, dst, dstride, oh,
					     bounds, pairs, vpairs);
			else
				ts_resample_v_sse41(src, sstride, n_elems, dst, dstride, oh,
					      bounds, pairs, vpairs);
			return;
		}
	}
#endif
#if defined(__aarch64__)
	if (isa == TS_SIMD_NEON) {
		ts_resample_v_neon(src, sstride, n_elems, dst, dstride, oh, ksize, bounds,
			     weights);
		return;
	}
#endif
	(void)isa;
	v_generic(src, sstride, n_elems, dst, dstride, oh, ksize, bounds, weights);
}
