/*
 * outpass.c - uint8 to float32 output pass (outpass.h): the dispatch, the
 * row tails the vector kernels leave, and the generic path (a 256-entry
 * table per channel, filled with the same two operations, so a lookup
 * gives the same bits as the arithmetic).
 */
#include "outpass.h"

#include "outpass_kernels.h"
#include "simd.h"

static inline float value(uint8_t v, float mean, float std)
{
	float u = (float)v / 255.0f;
	float d = u - mean;
	return d / std;
}

static void by_table(const uint8_t *src, size_t sstride, int W, int H, int C,
		     bool hflip, bool vflip, bool nchw, const float *mean,
		     const float *std, float *o)
{
	float lut[4][256];
	for (int c = 0; c < C; c++)
		for (int v = 0; v < 256; v++)
			lut[c][v] = value((uint8_t)v, mean[c], std[c]);
	const ptrdiff_t step = hflip ? -C : C;
	const size_t first = hflip ? (size_t)(W - 1) * C : 0;
	if (nchw) {
		for (int c = 0; c < C; c++)
			for (int y = 0; y < H; y++) {
				const uint8_t *p = src + (size_t)(vflip ? H - 1 - y : y) * sstride + first + c;
				for (int x = 0; x < W; x++, p += step)
					*o++ = lut[c][*p];
			}
		return;
	}
	for (int y = 0; y < H; y++) {
		const uint8_t *p = src + (size_t)(vflip ? H - 1 - y : y) * sstride + first;
		for (int x = 0; x < W; x++, p += step)
			for (int c = 0; c < C; c++)
				*o++ = lut[c][p[c]];
	}
}

void ts_outpass_u8_f32(const uint8_t *src, size_t sstride, int W, int H, int C,
		       bool hflip, bool vflip, bool nchw, const float *mean,
		       const float *std, float *dst)
{
	ts_outpass_planar3_fn *planar = NULL;
	ts_outpass_inter_fn *inter = NULL;
	switch (ts_simd_isa()) {
#if defined(__x86_64__) || defined(__i386__)
	case TS_SIMD_AVX2:
		planar = ts_outpass_planar3_avx2;
		inter = ts_outpass_inter_avx2;
		break;
	case TS_SIMD_SSE41:
		planar = ts_outpass_planar3_sse41;
		inter = ts_outpass_inter_sse41;
		break;
#endif
#if defined(__aarch64__)
	case TS_SIMD_NEON:
		planar = ts_outpass_planar3_neon;
		inter = ts_outpass_inter_neon;
		break;
#endif
	default:
		break;
	}
	if (nchw && C == 3 && planar) {
		const size_t plane = (size_t)W * H;
		for (int y = 0; y < H; y++) {
			const uint8_t *row = src + (size_t)(vflip ? H - 1 - y : y) * sstride;
			float *d0 = dst + (size_t)y * W, *d1 = d0 + plane, *d2 = d1 + plane;
			for (int x = planar(row, W, hflip, mean, std, d0, d1, d2); x < W; x++) {
				const uint8_t *p = row + (size_t)(hflip ? W - 1 - x : x) * 3;
				d0[x] = value(p[0], mean[0], std[0]);
				d1[x] = value(p[1], mean[1], std[1]);
				d2[x] = value(p[2], mean[2], std[2]);
			}
		}
		return;
	}
	if (!nchw && !hflip && inter) {
		const size_t n = (size_t)W * C;
		for (int y = 0; y < H; y++) {
			const uint8_t *row = src + (size_t)(vflip ? H - 1 - y : y) * sstride;
			float *d = dst + (size_t)y * n;
			for (size_t i = inter(row, n, C, mean, std, d); i < n; i++)
				d[i] = value(row[i], mean[i % C], std[i % C]);
		}
		return;
	}
	by_table(src, sstride, W, H, C, hflip, vflip, nchw, mean, std, dst);
}
