/*
 * resample_neon.c - aarch64 NEON kernels of the uint8 resample passes
 * (resample.h). Same arithmetic as resample_x86.c: int16 weight halves
 * (hi, lo), int16 x int16 products accumulated in int32 by vmlal, combined
 * as (hi << 11) + lo, so the bytes equal the generic path's.
 *
 * Horizontal, three channels: per group of 4 taps, one 16-byte load and a
 * table lookup gather r0..r3, g0..g3, b0..b3; each channel's 4 products
 * accumulate lane-wise and are summed across lanes at the end. Vertical:
 * one input row at a time, 16 bytes per step, weights split on the fly.
 * Built only on aarch64 (the whole file is empty elsewhere).
 */
#include "resample.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include "resample_kernels.h"

#define HALF (1 << (TS_RESAMPLE_BITS - 1))

void ts_resample_h3_neon(const uint8_t *src, size_t sstride, int rows, int in_w,
		   uint8_t *dst, size_t dstride, int ow, int ksize,
		   const int *bounds, const int32_t *weights,
		   const int16_t *split, int gmax, const struct ts_resample_pf *pf)
{
	static const uint8_t idx[16] = { 0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11,
					 255, 255, 255, 255 };
	const uint8x16_t tbl = vld1q_u8(idx);
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
			const int16_t *kw = split + (size_t)xx * gmax * (TS_RS_NEON_GROUP / 2);
			int32x4_t rh = vdupq_n_s32(0), gh = rh, bh = rh, rl = rh, gl = rh, bl = rh;
			for (int g = 0; g < G; g++, kw += 8) {
				uint8x16_t t = vqtbl1q_u8(vld1q_u8(p + 12 * g), tbl);
				int16x8_t rg = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(t)));
				int16x4_t b = vget_low_s16(vreinterpretq_s16_u16(vmovl_high_u8(t)));
				int16x4_t kh = vld1_s16(kw), kl = vld1_s16(kw + 4);
				rh = vmlal_s16(rh, vget_low_s16(rg), kh);
				gh = vmlal_s16(gh, vget_high_s16(rg), kh);
				bh = vmlal_s16(bh, b, kh);
				rl = vmlal_s16(rl, vget_low_s16(rg), kl);
				gl = vmlal_s16(gl, vget_high_s16(rg), kl);
				bl = vmlal_s16(bl, b, kl);
			}
			d[0] = ts_resample_clip8((int32_t)((uint32_t)vaddvq_s32(rh) << 11) + vaddvq_s32(rl) + HALF);
			d[1] = ts_resample_clip8((int32_t)((uint32_t)vaddvq_s32(gh) << 11) + vaddvq_s32(gl) + HALF);
			d[2] = ts_resample_clip8((int32_t)((uint32_t)vaddvq_s32(bh) << 11) + vaddvq_s32(bl) + HALF);
		}
	}
}

static inline int16x4_t fix4(int32x4_t h, int32x4_t l)
{
	int32x4_t s = vaddq_s32(vaddq_s32(vshlq_n_s32(h, 11), l), vdupq_n_s32(HALF));
	return vqmovn_s32(vshrq_n_s32(s, TS_RESAMPLE_BITS));
}

void ts_resample_v_neon(const uint8_t *src, size_t sstride, int n_elems,
		  uint8_t *dst, size_t dstride, int oh, int ksize,
		  const int *bounds, const int32_t *weights)
{
	for (int yy = 0; yy < oh; yy++) {
		const int ymin = bounds[2 * yy], n = bounds[2 * yy + 1];
		const int32_t *k = weights + (size_t)yy * ksize;
		const uint8_t *base = src + (size_t)ymin * sstride;
		uint8_t *d = dst + (size_t)yy * dstride;
		if (n_elems < 16) {
			for (int i = 0; i < n_elems; i++) {
				int32_t acc = HALF;
				for (int y = 0; y < n; y++)
					acc += base[(size_t)y * sstride + i] * k[y];
				d[i] = ts_resample_clip8(acc);
			}
			continue;
		}
		for (int i = 0;; i += 16) {
			if (i + 16 > n_elems)
				i = n_elems - 16;
			int32x4_t h0 = vdupq_n_s32(0), h1 = h0, h2 = h0, h3 = h0;
			int32x4_t l0 = h0, l1 = h0, l2 = h0, l3 = h0;
			for (int y = 0; y < n; y++) {
				uint8x16_t a = vld1q_u8(base + (size_t)y * sstride + i);
				int16x8_t a0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(a)));
				int16x8_t a1 = vreinterpretq_s16_u16(vmovl_high_u8(a));
				const int16_t kh = (int16_t)(k[y] >> 11), kl = (int16_t)(k[y] & 0x7ff);
				h0 = vmlal_n_s16(h0, vget_low_s16(a0), kh);
				h1 = vmlal_high_n_s16(h1, a0, kh);
				h2 = vmlal_n_s16(h2, vget_low_s16(a1), kh);
				h3 = vmlal_high_n_s16(h3, a1, kh);
				l0 = vmlal_n_s16(l0, vget_low_s16(a0), kl);
				l1 = vmlal_high_n_s16(l1, a0, kl);
				l2 = vmlal_n_s16(l2, vget_low_s16(a1), kl);
				l3 = vmlal_high_n_s16(l3, a1, kl);
			}
			int16x8_t p0 = vcombine_s16(fix4(h0, l0), fix4(h1, l1));
			int16x8_t p1 = vcombine_s16(fix4(h2, l2), fix4(h3, l3));
			vst1q_u8(d + i, vcombine_u8(vqmovun_s16(p0), vqmovun_s16(p1)));
			if (i + 16 >= n_elems)
				break;
		}
	}
}

#endif
