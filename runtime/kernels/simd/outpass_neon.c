/*
 * outpass_neon.c - aarch64 NEON rows of the output pass (outpass.h):
 * vld3 splits 8 RGB pixels into channels, then the same widening,
 * conversion, division, subtraction and division as the scalar path,
 * lane for lane (vdivq_f32 is IEEE division). Built only on aarch64.
 */
#include "outpass.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include "outpass_kernels.h"

static inline float32x4_t norm4(uint16x4_t v, float32x4_t m, float32x4_t s)
{
	float32x4_t f = vcvtq_f32_u32(vmovl_u16(v));
	return vdivq_f32(vsubq_f32(vdivq_f32(f, vdupq_n_f32(255.0f)), m), s);
}

static inline float32x4_t rev4(float32x4_t v)
{
	v = vrev64q_f32(v);
	return vcombine_f32(vget_high_f32(v), vget_low_f32(v));
}

int ts_outpass_planar3_neon(const uint8_t *row, int w, bool hflip,
			  const float *mean, const float *std, float *d0,
			  float *d1, float *d2)
{
	float *const d[3] = { d0, d1, d2 };
	int x = 0;
	for (; x + 8 <= w; x += 8) {
		const int sx = hflip ? w - x - 8 : x;
		uint8x8x3_t px = vld3_u8(row + (size_t)sx * 3);
		for (int c = 0; c < 3; c++) {
			uint16x8_t v = vmovl_u8(px.val[c]);
			float32x4_t m = vdupq_n_f32(mean[c]), s = vdupq_n_f32(std[c]);
			float32x4_t v0 = norm4(vget_low_u16(v), m, s);
			float32x4_t v1 = norm4(vget_high_u16(v), m, s);
			if (hflip) {
				float32x4_t t = rev4(v1);
				v1 = rev4(v0);
				v0 = t;
			}
			vst1q_f32(d[c] + x, v0);
			vst1q_f32(d[c] + x + 4, v1);
		}
	}
	return x;
}

size_t ts_outpass_inter_neon(const uint8_t *row, size_t n, int C,
			   const float *mean, const float *std, float *d)
{
	float32x4_t m[4][2], s[4][2];
	for (int k = 0; k < C; k++)
		for (int h = 0; h < 2; h++) {
			float mm[4], ss[4];
			for (int j = 0; j < 4; j++) {
				mm[j] = mean[(8 * k + 4 * h + j) % C];
				ss[j] = std[(8 * k + 4 * h + j) % C];
			}
			m[k][h] = vld1q_f32(mm);
			s[k][h] = vld1q_f32(ss);
		}
	size_t i = 0;
	for (int k = 0; i + 8 <= n; i += 8, k = k + 1 == C ? 0 : k + 1) {
		uint16x8_t v = vmovl_u8(vld1_u8(row + i));
		vst1q_f32(d + i, norm4(vget_low_u16(v), m[k][0], s[k][0]));
		vst1q_f32(d + i + 4, norm4(vget_high_u16(v), m[k][1], s[k][1]));
	}
	return i;
}

#endif
