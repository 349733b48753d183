/* test-outpass.c - the uint8 to float32 output pass (runtime/outpass*.c)
 * under every vector path this CPU runs and the generic one: bit for bit
 * the scalar float32(v) / 255, (u - mean) / std of torchvision's ToTensor
 * + Normalize, for both layouts, both flips, 1 to 4 channels and widths
 * that leave row tails (the NCHW float32 case against torchvision itself
 * is tests/torch-equal.py's). The source ends where its buffer ends, so a
 * kernel reading past it is seen by ASan. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "outpass.h"
#include "simd.h"

static const enum ts_simd_isa isas[] = { TS_SIMD_GENERIC, TS_SIMD_SSE41, TS_SIMD_AVX2,
					  TS_SIMD_NEON };

static const int widths[] = { 1, 7, 8, 9, 23, 224 };

/* The reference: element (y, x, c) of the flipped image, computed by the
 * formula, not a table. */
static float expect(const uint8_t *src, size_t stride, int W, int H, int C, bool hf,
		    bool vf, int y, int x, int c, const float *mean, const float *std)
{
	int sy = vf ? H - 1 - y : y, sx = hf ? W - 1 - x : x;
	float u = (float)src[(size_t)sy * stride + (size_t)sx * C + c] / 255.0f;
	float d = u - mean[c];
	return d / std[c];
}

START_TEST(every_path_every_case)
{
	const int W = widths[_i % 6], H = 1 + _i / 6;
	const float means[2][4] = { { 0.485f, 0.456f, 0.406f, 0.5f }, { 0, 0, 0, 0 } };
	const float stds[2][4] = { { 0.229f, 0.224f, 0.225f, 0.25f }, { 1, 1, 1, 1 } };
	uint32_t seed = 12345u + (uint32_t)_i;
	for (int C = 1; C <= 4; C++) {
		size_t stride = (size_t)W * C + 5; /* rows with padding */
		size_t bytes = stride * (size_t)(H - 1) + (size_t)W * C;
		uint8_t *src = malloc(bytes);
		ck_assert_ptr_nonnull(src);
		for (size_t i = 0; i < bytes; i++) {
			seed = seed * 1103515245u + 12345u;
			src[i] = (uint8_t)(seed >> 16);
		}
		if (bytes > 2) {
			src[0] = 0;
			src[1] = 255;
		}
		const size_t n = (size_t)W * H * C;
		float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
		for (int norm = 0; norm < 2; norm++)
			for (int f = 0; f < 8; f++) {
				bool hf = f & 1, vf = f & 2, nchw = f & 4;
				const float *m = means[norm], *s = stds[norm];
				for (int y = 0; y < H; y++)
					for (int x = 0; x < W; x++)
						for (int c = 0; c < C; c++) {
							size_t o = nchw ? ((size_t)c * H + y) * W + x
									: ((size_t)y * W + x) * C + c;
							ref[o] = expect(src, stride, W, H, C, hf, vf, y, x, c, m, s);
						}
				for (size_t k = 0; k < sizeof(isas) / sizeof(isas[0]); k++) {
					if (ts_simd_force(isas[k]) != 0)
						continue;
					memset(got, 0xff, n * sizeof(float));
					ts_outpass_u8_f32(src, stride, W, H, C, hf, vf, nchw, m, s, got);
					for (size_t i = 0; i < n; i++)
						if (memcmp(&got[i], &ref[i], sizeof(float)) != 0)
							ck_abort_msg("%s: %dx%dx%d %s%s%s norm %d: element %zu is %.9g, want %.9g",
								     ts_simd_isa_name(isas[k]), W, H, C,
								     nchw ? "nchw" : "nhwc", hf ? " hflip" : "",
								     vf ? " vflip" : "", norm, i, got[i], ref[i]);
				}
			}
		free(ref);
		free(got);
		free(src);
	}
}
END_TEST

/* ToTensor of 0 and 255 is exactly 0 and 1; torchvision's normalized
 * value of 255 in channel 0 is (1 - 0.485) / 0.229 in float32. */
START_TEST(known_values)
{
	uint8_t px[24];
	for (int i = 0; i < 24; i++)
		px[i] = (uint8_t)(i % 2 ? 255 : 0);
	const float zero[3] = { 0 }, one[3] = { 1, 1, 1 };
	const float mean[3] = { 0.485f, 0.456f, 0.406f }, std[3] = { 0.229f, 0.224f, 0.225f };
	float out[24];
	for (size_t k = 0; k < sizeof(isas) / sizeof(isas[0]); k++) {
		if (ts_simd_force(isas[k]) != 0)
			continue;
		ts_outpass_u8_f32(px, 24, 8, 1, 3, false, false, true, zero, one, out);
		/* Plane 0 holds bytes 0, 3, 6, ...: 0, 255, 0, ... */
		ck_assert(out[0] == 0.0f && out[1] == 1.0f && out[2] == 0.0f);
		ts_outpass_u8_f32(px, 24, 8, 1, 3, false, false, true, mean, std, out);
		ck_assert(out[1] == (1.0f - 0.485f) / 0.229f);
		ck_assert(out[0] == (0.0f - 0.485f) / 0.229f);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outpass");
	TCase *tc = tcase_create("exact");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_path_every_case, 0, 6 * 3);
	tcase_add_test(tc, known_values);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
