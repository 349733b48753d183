/*
 * pixel_neon.c - aarch64 NEON rows of pixel.h (layout in pixel_kernels.h):
 * bytes widened to four int32/float lanes, the C path's float operations
 * lane for lane (vmulq then vaddq: two roundings, never a fused fmla),
 * clipped by vmax/vmin, truncated by vcvtq_s32_f32 and narrowed back, 16
 * bytes a step; the gray by vld3 and widening integer multiplies (exact).
 * Built only on aarch64.
 */
#include "pixel.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include "pixel_kernels.h"

/* The multiplies and adds stay two roundings even where the compiler may
 * fuse vector intrinsics (vmulq + vaddq into fmla; -mfma on x86). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static inline float32x4_t blend4(int32x4_t b, int32x4_t a, float32x4_t af, float32x4_t alpha)
{
	float32x4_t d = vcvtq_f32_s32(vsubq_s32(b, a));
	float32x4_t t = vaddq_f32(af, vmulq_f32(alpha, d));
	return vminq_f32(vmaxq_f32(t, vdupq_n_f32(0.0f)), vdupq_n_f32(255.0f));
}

/* The 16 bytes of v as four int32x4, in order. */
static inline void widen16(uint8x16_t v, int32x4_t o[4])
{
	uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_u8(vget_high_u8(v));
	o[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
	o[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
	o[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
	o[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
}

/* Four float vectors of 0..255 (whole after truncation) into 16 bytes. */
static inline void store16(uint8_t *p, const float32x4_t t[4])
{
	uint16x8_t lo = vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(vcvtq_s32_f32(t[0]))),
				     vmovn_u32(vreinterpretq_u32_s32(vcvtq_s32_f32(t[1]))));
	uint16x8_t hi = vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(vcvtq_s32_f32(t[2]))),
				     vmovn_u32(vreinterpretq_u32_s32(vcvtq_s32_f32(t[3]))));
	vst1q_u8(p, vcombine_u8(vmovn_u16(lo), vmovn_u16(hi)));
}

static size_t blend_const_neon(uint8_t *r, size_t n, int a, float alpha)
{
	const int32x4_t va = vdupq_n_s32(a);
	const float32x4_t af = vdupq_n_f32((float)a), al = vdupq_n_f32(alpha);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		int32x4_t b[4];
		float32x4_t t[4];
		widen16(vld1q_u8(r + i), b);
		for (int k = 0; k < 4; k++)
			t[k] = blend4(b[k], va, af, al);
		store16(r + i, t);
	}
	return i;
}

static size_t blend_row_neon(uint8_t *r, const uint8_t *a, size_t n, float alpha)
{
	const float32x4_t al = vdupq_n_f32(alpha);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		int32x4_t b[4], va[4];
		float32x4_t t[4];
		widen16(vld1q_u8(r + i), b);
		widen16(vld1q_u8(a + i), va);
		for (int k = 0; k < 4; k++)
			t[k] = blend4(b[k], va[k], vcvtq_f32_s32(va[k]), al);
		store16(r + i, t);
	}
	return i;
}

static size_t mask_neon(uint8_t *r, size_t n, uint8_t and_mask, uint8_t xor_mask)
{
	const uint8x16_t am = vdupq_n_u8(and_mask), xm = vdupq_n_u8(xor_mask);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		vst1q_u8(r + i, veorq_u8(vandq_u8(vld1q_u8(r + i), am), xm));
	return i;
}

static size_t solarize_neon(uint8_t *r, size_t n, uint8_t t)
{
	const uint8x16_t vt = vdupq_n_u8(t);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		uint8x16_t v = vld1q_u8(r + i);
		/* 255 - v is v ^ 0xff */
		vst1q_u8(r + i, veorq_u8(v, vcgeq_u8(v, vt)));
	}
	return i;
}

/* The sum of one row's three taps for 16 outputs, four lanes each. */
static inline void taps16(const uint8_t *p, size_t C, float32x4_t k0, float32x4_t k1,
			  float32x4_t s[4])
{
	int32x4_t a[4], b[4], c[4];
	widen16(vld1q_u8(p - C), a);
	widen16(vld1q_u8(p), b);
	widen16(vld1q_u8(p + C), c);
	for (int k = 0; k < 4; k++) {
		float32x4_t t = vaddq_f32(vmulq_f32(vcvtq_f32_s32(a[k]), k0),
					  vmulq_f32(vcvtq_f32_s32(b[k]), k1));
		t = vaddq_f32(t, vmulq_f32(vcvtq_f32_s32(c[k]), k0));
		s[k] = vaddq_f32(s[k], t);
	}
}

static size_t sharpen_neon(uint8_t *d, const uint8_t *up, const uint8_t *mid,
			   const uint8_t *dn, size_t C, size_t m)
{
	const float32x4_t k1 = vdupq_n_f32(1.0f / 13.0f), k5 = vdupq_n_f32(5.0f / 13.0f);
	size_t j = 0;
	for (;; j += 16) {
		/* the last step ends at m, overlapping the one before: d is
		 * not an input, so its bytes come out the same twice */
		if (j + 16 > m) {
			if (j == m || m < 16)
				return j;
			j = m - 16;
		}
		float32x4_t s[4];
		for (int k = 0; k < 4; k++)
			s[k] = vdupq_n_f32(0.5f);
		taps16(dn + j, C, k1, k1, s);
		taps16(mid + j, C, k1, k5, s);
		taps16(up + j, C, k1, k1, s);
		for (int k = 0; k < 4; k++)
			s[k] = vminq_f32(vmaxq_f32(s[k], vdupq_n_f32(0.0f)), vdupq_n_f32(255.0f));
		store16(d + j, s);
	}
}

static inline uint16x4_t gray4(uint16x4_t r, uint16x4_t g, uint16x4_t b)
{
	uint32x4_t s = vmull_n_u16(r, 19595);
	s = vmlal_n_u16(s, g, 38470);
	s = vmlal_n_u16(s, b, 7471);
	return vshrn_n_u32(vaddq_u32(s, vdupq_n_u32(0x8000)), 16);
}

static size_t gray3_neon(uint8_t *g, const uint8_t *rgb, size_t npx)
{
	size_t x = 0;
	for (; x + 8 <= npx; x += 8) {
		uint8x8x3_t v = vld3_u8(rgb + 3 * x);
		uint16x8_t r = vmovl_u8(v.val[0]), gg = vmovl_u8(v.val[1]), b = vmovl_u8(v.val[2]);
		uint16x8_t o = vcombine_u16(gray4(vget_low_u16(r), vget_low_u16(gg), vget_low_u16(b)),
					    gray4(vget_high_u16(r), vget_high_u16(gg), vget_high_u16(b)));
		vst1_u8(g + x, vmovn_u16(o));
	}
	return x;
}

/* 16 pixels a step, split into channels by vld3, into running minima and
 * maxima per channel, folded once at the end. */
static size_t minmax3_neon(const uint8_t *data, size_t stride, size_t w, size_t h,
			   uint8_t lo[3], uint8_t hi[3])
{
	const size_t done = w / 16 * 16;
	uint8x16_t l[3], u[3];
	for (int c = 0; c < 3; c++) {
		l[c] = vdupq_n_u8(lo[c]);
		u[c] = vdupq_n_u8(hi[c]);
	}
	for (size_t y = 0; y < h; y++) {
		const uint8_t *r = data + y * stride;
		for (size_t x = 0; x < done; x += 16) {
			uint8x16x3_t v = vld3q_u8(r + 3 * x);
			for (int c = 0; c < 3; c++) {
				l[c] = vminq_u8(l[c], v.val[c]);
				u[c] = vmaxq_u8(u[c], v.val[c]);
			}
		}
	}
	for (int c = 0; c < 3; c++) {
		lo[c] = vminvq_u8(l[c]);
		hi[c] = vmaxvq_u8(u[c]);
	}
	return done;
}

/* Sixteen gray bytes into 48: vst3 of the same vector three times. */
static size_t expand3_neon(uint8_t *g3, const uint8_t *g, size_t npx)
{
	size_t x = 0;
	for (; x + 16 <= npx; x += 16) {
		uint8x16_t v = vld1q_u8(g + x);
		uint8x16x3_t t = { { v, v, v } };
		vst3q_u8(g3 + 3 * x, t);
	}
	return x;
}

/* Eight pixels from each end a step: vld3 splits them into channels,
 * vrev64 reverses each, vst3 puts them in the other's place. */
static size_t flip3_neon(uint8_t *row, size_t w)
{
	size_t k = 0;
	for (; 2 * k + 16 <= w; k += 8) {
		uint8_t *pl = row + 3 * k, *pr = row + 3 * (w - k - 8);
		uint8x8x3_t l = vld3_u8(pl), r = vld3_u8(pr);
		for (int c = 0; c < 3; c++) {
			l.val[c] = vrev64_u8(l.val[c]);
			r.val[c] = vrev64_u8(r.val[c]);
		}
		vst3_u8(pl, r);
		vst3_u8(pr, l);
	}
	return k;
}

const struct ts_px_rows ts_px_rows_neon = {
	.blend_const = blend_const_neon,
	.blend_row = blend_row_neon,
	.mask = mask_neon,
	.solarize = solarize_neon,
	.sharpen = sharpen_neon,
	.gray3 = gray3_neon,
	.minmax3 = minmax3_neon,
	.expand3 = expand3_neon,
	.flip3 = flip3_neon,
};

#endif
