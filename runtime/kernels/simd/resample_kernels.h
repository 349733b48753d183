/*
 * resample_kernels.h - the vector kernels behind resample.h (internal to
 * resample*.c). Each takes the weights already split by resample.c into
 * int16 halves (see resample.h) in the layout its instruction set wants.
 *
 * x86 horizontal layout (TS_RS_X86_GROUP bytes per group of 4 taps, gmax
 * groups per output pixel): 16 int16 "hi" then 16 int16 "lo"; in each, the
 * first 8 are (w0, w1) repeated 4 times and the last 8 (w2, w3) repeated,
 * so one 256-bit register (or two 128-bit ones) holds the weights of 4
 * taps for the three channels of a pixel.
 * NEON horizontal layout (TS_RS_NEON_GROUP bytes per group): hi0..hi3,
 * lo0..lo3.
 * x86 vertical layout: per output row, vpairs pairs of taps, each two
 * int32 that pack two int16: (hi_a | hi_b << 16), (lo_a | lo_b << 16); an
 * odd count ends with a pair whose second weight is 0.
 */
#ifndef TS_RESAMPLE_KERNELS_H
#define TS_RESAMPLE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define TS_RS_X86_GROUP 64
#define TS_RS_NEON_GROUP 16

/* One output pixel of the horizontal pass in plain C (the kernels use it
 * where a vector load would read past the row). */
static inline uint8_t ts_resample_clip8(int32_t v)
{
	if (v >= (1 << 30))
		return 255;
	if (v <= 0)
		return 0;
	return (uint8_t)(v >> 22);
}

static inline void ts_resample_h_pixel(const uint8_t *p, int n, int C,
				 const int32_t *k, uint8_t *d)
{
	int32_t acc[4] = { 1 << 21, 1 << 21, 1 << 21, 1 << 21 };
	for (int x = 0; x < n; x++, p += C)
		for (int c = 0; c < C; c++)
			acc[c] += p[c] * k[x];
	for (int c = 0; c < C; c++)
		d[c] = ts_resample_clip8(acc[c]);
}

/* Software prefetch for the horizontal pass of a source that is not in
 * the CPU's caches (a decoded-cache frame, read once per sample from
 * memory written an epoch ago): at row y a kernel asks for row y + ahead's
 * bytes [lo, hi) (those the pass reads), rows past the call's last not.
 * NULL: none. A hint only: the pixels are the same either way. */
struct ts_resample_pf {
	size_t lo, hi;
	int ahead, rows;
};

static inline void ts_resample_pf_row(const uint8_t *src, size_t sstride,
				      const struct ts_resample_pf *pf, int y)
{
	if (!pf || y + pf->ahead >= pf->rows)
		return;
	const uint8_t *row = src + (size_t)(y + pf->ahead) * sstride;
	uintptr_t a = (uintptr_t)(row + pf->lo) & ~(uintptr_t)63;
	for (; a < (uintptr_t)(row + pf->hi); a += 64)
		__builtin_prefetch((const void *)a, 0, 3);
}

/*
 * The AVX2 three-channel horizontal pass by table (ts_resample_h3t_avx2): a row's
 * 3 * ow output bytes ("elements", element e = channel e % 3 of output pixel
 * e / 3) in blocks of 8, 4 per 128-bit lane. Per block and pair j of taps
 * (2j, 2j + 1) an entry holds, per lane, the byte offset in the row of a
 * 16-byte load and a byte shuffle of it into 8 int16 (pixel, 0) pairs, one
 * pair per element for its two taps, and the taps' weights split as
 * resample.h says (hi and lo, int16, in the same pairs): one pmaddwd each
 * gives 4 elements' two taps. A tap past an element's count has weight 0
 * and a zero byte. A block whose bytes do not fit one 16-byte load per
 * lane (a downscale by more than 4) has no entries: its elements are
 * summed in plain C. A block at the row's end whose loads reach up to 15
 * bytes past it (tail) reads what follows the row there (stride padding,
 * the pixels right of a window, the next row's first bytes), which its
 * shuffle never picks: every row but the call's last takes it by vector,
 * the last (whose next bytes may not be ours) in plain C.
 */
struct ts_resample_h3t_entry {
	int8_t mask[32];
	int16_t hi[16], lo[16];
	int32_t off[2];
	int32_t pad[6];
};

struct ts_resample_h3t_block {
	int32_t nj;      /* tap pairs */
	int32_t first;   /* its first entry, or -1: summed in plain C */
	int32_t tail;    /* 1: a load reads past the row's end (see above) */
};

#if defined(__x86_64__) || defined(__i386__)
void ts_resample_h3t_avx2(const uint8_t *src, size_t sstride, int rows, uint8_t *dst,
		    size_t dstride, int ow, int ksize, const int *bounds,
		    const int32_t *weights, const struct ts_resample_h3t_block *blk,
		    const struct ts_resample_h3t_entry *tab, const struct ts_resample_pf *pf);
void ts_resample_h3_sse41(const uint8_t *src, size_t sstride, int rows, int in_w,
		    uint8_t *dst, size_t dstride, int ow, int ksize,
		    const int *bounds, const int32_t *weights,
		    const int16_t *split, int gmax, const struct ts_resample_pf *pf);
void ts_resample_h3_avx2(const uint8_t *src, size_t sstride, int rows, int in_w,
		   uint8_t *dst, size_t dstride, int ow, int ksize,
		   const int *bounds, const int32_t *weights,
		   const int16_t *split, int gmax, const struct ts_resample_pf *pf);
void ts_resample_v_sse41(const uint8_t *src, size_t sstride, int n_elems,
		   uint8_t *dst, size_t dstride, int oh, const int *bounds,
		   const int32_t *pairs, int vpairs);
void ts_resample_v_avx2(const uint8_t *src, size_t sstride, int n_elems,
		  uint8_t *dst, size_t dstride, int oh, const int *bounds,
		  const int32_t *pairs, int vpairs);
#endif
#if defined(__aarch64__)
void ts_resample_h3_neon(const uint8_t *src, size_t sstride, int rows, int in_w,
		   uint8_t *dst, size_t dstride, int ow, int ksize,
		   const int *bounds, const int32_t *weights,
		   const int16_t *split, int gmax, const struct ts_resample_pf *pf);
void ts_resample_v_neon(const uint8_t *src, size_t sstride, int n_elems,
		  uint8_t *dst, size_t dstride, int oh, int ksize,
		  const int *bounds, const int32_t *weights);
#endif

#endif
