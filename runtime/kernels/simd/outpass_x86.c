/*
 * outpass_x86.c - SSE4.1 and AVX2 rows of the output pass (outpass.h),
 * 8 pixels per step: a 16-byte and an 8-byte load (exactly the 24 bytes
 * of 8 RGB pixels), byte shuffles that gather each channel, widening to
 * int32, conversion to float and the division, subtraction, division of
 * the scalar path, lane for lane. A flipped row is read from the right
 * and its 8 values reversed before the store. Target attributes per
 * function: the file builds with the plain x86-64 flags.
 */
#include "outpass.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "outpass_kernels.h"

/* Channel c of 8 RGB pixels at p as 8 bytes in the low half. */
__attribute__((target("sse4.1")))
static inline __m128i gather(__m128i lo, __m128i hi, __m128i mlo, __m128i mhi)
{
	return _mm_or_si128(_mm_shuffle_epi8(lo, mlo), _mm_shuffle_epi8(hi, mhi));
}

#define MASKS                                                                  \
	const __m128i mlo[3] = {                                               \
		_mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1), \
		_mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1), \
		_mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1), \
	};                                                                     \
	const __m128i mhi[3] = {                                               \
		_mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1), \
		_mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1), \
		_mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1), \
	}

__attribute__((target("avx2")))
int ts_outpass_planar3_avx2(const uint8_t *row, int w, bool hflip,
			  const float *mean, const float *std, float *d0,
			  float *d1, float *d2)
{
	MASKS;
	float *const d[3] = { d0, d1, d2 };
	const __m256 k255 = _mm256_set1_ps(255.0f);
	const __m256i rev = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
	__m256 m[3], s[3];
	for (int c = 0; c < 3; c++) {
		m[c] = _mm256_set1_ps(mean[c]);
		s[c] = _mm256_set1_ps(std[c]);
	}
	int x = 0;
	for (; x + 8 <= w; x += 8) {
		/* Output pixels x..x+7 come from source pixels sx..sx+7. */
		const int sx = hflip ? w - x - 8 : x;
		const uint8_t *p = row + (size_t)sx * 3;
		__m128i lo = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i hi = _mm_loadl_epi64((const __m128i *)(const void *)(p + 16));
		for (int c = 0; c < 3; c++) {
			__m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(gather(lo, hi, mlo[c], mhi[c])));
			v = _mm256_div_ps(_mm256_sub_ps(_mm256_div_ps(v, k255), m[c]), s[c]);
			if (hflip)
				v = _mm256_permutevar8x32_ps(v, rev);
			_mm256_storeu_ps(d[c] + x, v);
		}
	}
	return x;
}

__attribute__((target("sse4.1")))
int ts_outpass_planar3_sse41(const uint8_t *row, int w, bool hflip,
			   const float *mean, const float *std, float *d0,
			   float *d1, float *d2)
{
	MASKS;
	float *const d[3] = { d0, d1, d2 };
	const __m128 k255 = _mm_set1_ps(255.0f);
	__m128 m[3], s[3];
	for (int c = 0; c < 3; c++) {
		m[c] = _mm_set1_ps(mean[c]);
		s[c] = _mm_set1_ps(std[c]);
	}
	int x = 0;
	for (; x + 8 <= w; x += 8) {
		const int sx = hflip ? w - x - 8 : x;
		const uint8_t *p = row + (size_t)sx * 3;
		__m128i lo = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i hi = _mm_loadl_epi64((const __m128i *)(const void *)(p + 16));
		for (int c = 0; c < 3; c++) {
			__m128i b = gather(lo, hi, mlo[c], mhi[c]);
			__m128 v0 = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(b));
			__m128 v1 = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(b, 4)));
			v0 = _mm_div_ps(_mm_sub_ps(_mm_div_ps(v0, k255), m[c]), s[c]);
			v1 = _mm_div_ps(_mm_sub_ps(_mm_div_ps(v1, k255), m[c]), s[c]);
			if (hflip) {
				/* Pixels 0..7 reversed: the halves swap, each reversed. */
				__m128 t = _mm_shuffle_ps(v1, v1, _MM_SHUFFLE(0, 1, 2, 3));
				v1 = _mm_shuffle_ps(v0, v0, _MM_SHUFFLE(0, 1, 2, 3));
				v0 = t;
			}
			_mm_storeu_ps(d[c] + x, v0);
			_mm_storeu_ps(d[c] + x + 4, v1);
		}
	}
	return x;
}

/* Per-lane mean and std of 8 interleaved elements whose first has
 * channel `start`. */
static void lane_params(int C, int start, const float *mean, const float *std,
			float m[8], float s[8])
{
	for (int j = 0; j < 8; j++) {
		m[j] = mean[(start + j) % C];
		s[j] = std[(start + j) % C];
	}
}

__attribute__((target("avx2")))
size_t ts_outpass_inter_avx2(const uint8_t *row, size_t n, int C,
			   const float *mean, const float *std, float *d)
{
	/* 8 elements a step: the first channel of step k is 8k mod C, so C
	 * patterns (at most 4) cover every step. */
	__m256 m[4], s[4];
	for (int k = 0; k < C; k++) {
		float mm[8], ss[8];
		lane_params(C, (8 * k) % C, mean, std, mm, ss);
		m[k] = _mm256_loadu_ps(mm);
		s[k] = _mm256_loadu_ps(ss);
	}
	const __m256 k255 = _mm256_set1_ps(255.0f);
	size_t i = 0;
	for (int k = 0; i + 8 <= n; i += 8, k = k + 1 == C ? 0 : k + 1) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(row + i));
		__m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
		v = _mm256_div_ps(_mm256_sub_ps(_mm256_div_ps(v, k255), m[k]), s[k]);
		_mm256_storeu_ps(d + i, v);
	}
	return i;
}

__attribute__((target("sse4.1")))
size_t ts_outpass_inter_sse41(const uint8_t *row, size_t n, int C,
			    const float *mean, const float *std, float *d)
{
	__m128 m[4][2], s[4][2];
	for (int k = 0; k < C; k++) {
		float mm[8], ss[8];
		lane_params(C, (8 * k) % C, mean, std, mm, ss);
		for (int h = 0; h < 2; h++) {
			m[k][h] = _mm_loadu_ps(mm + 4 * h);
			s[k][h] = _mm_loadu_ps(ss + 4 * h);
		}
	}
	const __m128 k255 = _mm_set1_ps(255.0f);
	size_t i = 0;
	for (int k = 0; i + 8 <= n; i += 8, k = k + 1 == C ? 0 : k + 1) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(row + i));
		__m128 v0 = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(b));
		__m128 v1 = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(b, 4)));
		v0 = _mm_div_ps(_mm_sub_ps(_mm_div_ps(v0, k255), m[k][0]), s[k][0]);
		v1 = _mm_div_ps(_mm_sub_ps(_mm_div_ps(v1, k255), m[k][1]), s[k][1]);
		_mm_storeu_ps(d + i, v0);
		_mm_storeu_ps(d + i + 4, v1);
	}
	return i;
}

#endif
