/* test-filter.c - the filters and enhancements of runtime/filter.c and
 * adjust_gamma: the kernels on tiny images against values torchvision
 * 0.14 gave on PIL images (embedded here, so that a build on another
 * CPU, aarch64 under qemu included, is held to the same bytes; the match
 * on real photos is tests/torch-filter.py's job), gaussian_blur's
 * weights, reflect border and bound, the sigma draw and its determinism,
 * dispatch and refusals, and what the checker makes of the operators'
 * text (plan fields, the misuses and the column they point at). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "color.h"
#include "dsl.h"
#include "filter.h"
#include "kernel.h"
#include "unit-dsl.h"

static struct ts_image make(int w, int h, int c, enum ts_dtype t, const void *px)
{
	struct ts_image img = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, w, h, c, t), 0);
	if (px)
		memcpy(img.data, px, (size_t)w * h * c * ts_dtype_size(t));
	return img;
}

/* ---- adjust_sharpness ---- */

/* A 5x4 RGB image and F.adjust_sharpness of it on a PIL image. */
static const uint8_t sharp_px[60] = {
	99, 206, 239, 189, 230, 118, 144, 73, 8, 228, 231, 190, 155, 112, 158,
	208, 7, 204, 143, 113, 181, 231, 80, 27, 44, 205, 203, 65, 175, 30,
	212, 86, 125, 146, 254, 121, 137, 106, 41, 233, 190, 129, 210, 103, 144,
	206, 5, 58, 0, 208, 132, 110, 164, 105, 179, 27, 31, 2, 68, 38,
};
static const struct {
	float factor;
	uint8_t want[60];
} sharp_cases[] = {
	{ 1.7f, { 99, 206, 239, 189, 230, 118, 144, 73, 8, 228, 231, 190, 155, 112, 158,
		  208, 7, 204, 131, 105, 211, 255, 38, 0, 0, 235, 251, 65, 175, 30,
		  212, 86, 125, 141, 255, 125, 137, 85, 8, 255, 222, 151, 210, 103, 144,
		  206, 5, 58, 0, 208, 132, 110, 164, 105, 179, 27, 31, 2, 68, 38 } },
	{ 0.3f, { 99, 206, 239, 189, 230, 118, 144, 73, 8, 228, 231, 190, 155, 112, 158,
		  208, 7, 204, 154, 120, 150, 199, 121, 69, 100, 174, 154, 65, 175, 30,
		  212, 86, 125, 150, 186, 116, 136, 127, 73, 185, 157, 106, 210, 103, 144,
		  206, 5, 58, 0, 208, 132, 110, 164, 105, 179, 27, 31, 2, 68, 38 } },
};

START_TEST(sharpness_pil)
{
	struct ts_image img = make(5, 4, 3, TS_DTYPE_U8, sharp_px), tmp = { 0 };
	ck_assert_int_eq(ts_filter_sharpness(&img, &tmp, sharp_cases[_i].factor), 0);
	for (int i = 0; i < 60; i++)
		ck_assert_msg(img.data[i] == sharp_cases[_i].want[i],
			      "factor %g byte %d: %u, PIL %u", sharp_cases[_i].factor, i,
			      img.data[i], sharp_cases[_i].want[i]);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* Factor 1 keeps the image; an image under 3x3 is its own degenerate. */
START_TEST(sharpness_identity)
{
	struct ts_image img = make(5, 4, 3, TS_DTYPE_U8, sharp_px), tmp = { 0 };
	ck_assert_int_eq(ts_filter_sharpness(&img, &tmp, 1.0f), 0);
	ck_assert_mem_eq(img.data, sharp_px, 60);
	ts_image_free(&img);
	img = make(2, 5, 3, TS_DTYPE_U8, sharp_px);
	ck_assert_int_eq(ts_filter_sharpness(&img, &tmp, 9.0f), 0);
	ck_assert_mem_eq(img.data, sharp_px, 30);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* ---- adjust_gamma ---- */

static const struct {
	double gamma, gain;
	uint8_t want[7]; /* of 0, 1, 64, 128, 200, 254, 255 (torchvision, PIL) */
} gamma_cases[] = {
	{ 2.0, 1, { 0, 0, 16, 64, 157, 253, 255 } },
	{ 0.5, 1, { 0, 16, 128, 181, 226, 255, 255 } },
	{ 1.0, 1.5, { 0, 1, 96, 192, 255, 255, 255 } },
	{ 0, 0.5, { 127, 127, 127, 127, 127, 127, 127 } },
};

START_TEST(gamma_table)
{
	const uint8_t px[7] = { 0, 1, 64, 128, 200, 254, 255 };
	struct ts_image img = make(7, 1, 1, TS_DTYPE_U8, px);
	ts_color_gamma(&img, gamma_cases[_i].gamma, gamma_cases[_i].gain);
	ck_assert_mem_eq(img.data, gamma_cases[_i].want, 7);
	ts_image_free(&img);
}
END_TEST

START_TEST(gamma_u16)
{
	const uint16_t px[4] = { 0, 16384, 32768, 65535 };
	struct ts_image img = make(2, 2, 1, TS_DTYPE_U16, px);
	ts_color_gamma(&img, 2.0, 1.0);
	const uint16_t *o = (const uint16_t *)(const void *)img.data;
	for (int i = 0; i < 4; i++) {
		double want = floor(65535.999 * pow(px[i] / 65535.0, 2.0));
		ck_assert_uint_eq(o[i], (unsigned)(want > 65535 ? 65535 : want));
	}
	ck_assert_uint_eq(o[1], 4096);
	ts_image_free(&img);
}
END_TEST

/* ---- gaussian_blur ---- */

/* torchvision's _get_gaussian_kernel1d(k, sigma), float32 printed. */
static const struct {
	int k;
	float sigma;
	float want[7];
} kernel_cases[] = {
	{ 5, 1.0f, { 0.0544886887f, 0.244201362f, 0.402619958f, 0.244201362f, 0.0544886887f } },
	{ 7, 0.6f, { 2.47380831e-06f, 0.00256625633f, 0.165523753f, 0.663815022f,
		     0.165523753f, 0.00256625633f, 2.47380831e-06f } },
	{ 3, 2.5f, { 0.324329197f, 0.351341635f, 0.324329197f } },
	{ 1, 0.3f, { 1.0f } },
};

START_TEST(gaussian_weights)
{
	float w[7];
	ts_filter_gaussian_kernel(kernel_cases[_i].k, kernel_cases[_i].sigma, w);
	for (int i = 0; i < kernel_cases[_i].k; i++)
		ck_assert_msg(fabsf(w[i] - kernel_cases[_i].want[i]) <=
				      2e-7f * (1.0f + kernel_cases[_i].want[i]),
			      "k %d tap %d: %.9g, torch %.9g", kernel_cases[_i].k, i, w[i],
			      kernel_cases[_i].want[i]);
}
END_TEST

/* F.gaussian_blur(pil, [5, 3], [1.0, 0.7]) of a 6x5 gray image: the
 * reflect border on both axes, a kernel wider than tall. */
START_TEST(gaussian_torch)
{
	static const uint8_t px[30] = {
		105, 211, 147, 18, 113, 245, 135, 100, 108, 109, 158, 190, 11, 235, 67,
		124, 193, 183, 131, 91, 78, 155, 157, 33, 217, 85, 135, 16, 94, 14 };
	static const uint8_t want[30] = {
		142, 139, 120, 108, 135, 160, 127, 126, 117, 121, 149, 167, 120, 122, 119,
		132, 154, 162, 118, 113, 109, 116, 118, 111, 128, 115, 101, 92, 85, 76 };
	struct ts_image img = make(6, 5, 1, TS_DTYPE_U8, px), tmp = { 0 };
	ck_assert_int_eq(ts_filter_gaussian(&img, &tmp, 5, 3, 1.0f, 0.7f), 0);
	/* the documented bound: within one level of torch's float conv */
	for (int i = 0; i < 30; i++)
		ck_assert_msg(abs((int)img.data[i] - (int)want[i]) <= 1, "pixel %d: %u, torch %u",
			      i, img.data[i], want[i]);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* Against a double-precision reference with the reflect rule written out,
 * on every dtype and channel count, kernels wider than the image too
 * (torchvision refuses those; here the mirror repeats). */
static int mirror(int i, int n)
{
	if (n == 1)
		return 0;
	while (i < 0 || i >= n)
		i = i < 0 ? -i : 2 * (n - 1) - i;
	return i;
}

START_TEST(gaussian_reference)
{
	static const struct { int w, h, c, kw, kh; float s; enum ts_dtype t; } cases[] = {
		{ 17, 13, 3, 5, 5, 1.2f, TS_DTYPE_U8 },
		{ 9, 11, 1, 23, 3, 4.0f, TS_DTYPE_U8 },  /* wider than the image */
		{ 1, 1, 3, 9, 9, 2.0f, TS_DTYPE_U8 },
		{ 6, 7, 3, 7, 7, 1.5f, TS_DTYPE_U16 },
		{ 5, 4, 4, 3, 5, 0.8f, TS_DTYPE_F32 },
		{ 2, 9, 1, 1, 7, 3.0f, TS_DTYPE_U8 },
	};
	const int k = _i;
	const int W = cases[k].w, H = cases[k].h, C = cases[k].c;
	const enum ts_dtype t = cases[k].t;
	const size_t n = (size_t)W * H * C;
	double *src = malloc(sizeof(double) * n);
	struct ts_image img = make(W, H, C, t, NULL), tmp = { 0 };
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		double v = t == TS_DTYPE_U8 ? (x >> 16) % 256 : t == TS_DTYPE_U16 ? (x >> 8) % 65536
									       : ((x >> 8) % 1000) / 999.0;
		src[i] = v;
		if (t == TS_DTYPE_U8)
			img.data[i] = (uint8_t)v;
		else if (t == TS_DTYPE_U16)
			((uint16_t *)(void *)img.data)[i] = (uint16_t)v;
		else
			((float *)(void *)img.data)[i] = (float)v;
	}
	ck_assert_int_eq(ts_filter_gaussian(&img, &tmp, cases[k].kw, cases[k].kh, cases[k].s,
					    cases[k].s), 0);
	float wx[32], wy[32];
	ts_filter_gaussian_kernel(cases[k].kw, cases[k].s, wx);
	ts_filter_gaussian_kernel(cases[k].kh, cases[k].s, wy);
	/* half a level for the rounding, plus float32's error at full scale */
	const double tol = t == TS_DTYPE_F32 ? 1e-5 : t == TS_DTYPE_U16 ? 0.52 : 0.501;
	for (int y = 0; y < H; y++)
		for (int xx = 0; xx < W; xx++)
			for (int c = 0; c < C; c++) {
				double ref = 0;
				for (int i = 0; i < cases[k].kh; i++)
					for (int j = 0; j < cases[k].kw; j++)
						ref += (double)wy[i] * wx[j] *
						       src[((size_t)mirror(y + i - cases[k].kh / 2, H) * W +
							    (size_t)mirror(xx + j - cases[k].kw / 2, W)) * C + c];
				size_t e = ((size_t)y * W + xx) * C + c;
				double got = t == TS_DTYPE_U8 ? img.data[e]
					     : t == TS_DTYPE_U16 ? ((uint16_t *)(void *)img.data)[e]
								 : ((float *)(void *)img.data)[e];
				ck_assert_msg(fabs(got - ref) <= tol,
					      "case %d (%d,%d,%d): %g, reference %g", k, xx, y, c, got, ref);
			}
	free(src);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

START_TEST(gaussian_refuses)
{
	struct ts_image img = make(4, 4, 3, TS_DTYPE_U8, NULL), tmp = { 0 };
	ck_assert_int_eq(ts_filter_gaussian(&img, &tmp, 4, 3, 1.0f, 1.0f), -EINVAL);
	ck_assert_int_eq(ts_filter_gaussian(&img, &tmp, 3, 3, 0.0f, 1.0f), -EINVAL);
	ck_assert_int_eq(ts_filter_gaussian(&img, &tmp, 3, 3, 1.0f, NAN), -EINVAL);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* A fixed sigma draws nothing; a range draws one U(lo, hi) per sample,
 * the same one from the same stream. */
START_TEST(sigma_draws)
{
	struct ts_op op = { .kind = TS_OP_GAUSSIAN_BLUR, .blur.kernel_w = 3, .blur.kernel_h = 3,
			    .blur.sigma_lo = 1.5, .blur.sigma_hi = 1.5 };
	struct ts_rng rng, fresh;
	ts_rng_init(&rng, 9, 0, 0, 2);
	ts_rng_init(&fresh, 9, 0, 0, 2);
	ck_assert(ts_filter_sigma(&op, &rng) == 1.5);
	ck_assert(ts_rng_u64(&rng) == ts_rng_u64(&fresh));
	op.blur.sigma_lo = 0.1;
	op.blur.sigma_hi = 2.0;
	double sum = 0, lo = 9, hi = 0;
	int below_half = 0;
	for (uint64_t i = 0; i < 20000; i++) {
		ts_rng_init(&rng, 9, 3, i, 2);
		ts_rng_init(&fresh, 9, 3, i, 2);
		double s = ts_filter_sigma(&op, &rng);
		ck_assert(s == ts_filter_sigma(&op, &fresh));
		ck_assert(s >= 0.1 && s <= 2.0);
		sum += s;
		lo = fmin(lo, s);
		hi = fmax(hi, s);
		below_half += s < 1.05;
	}
	/* U(0.1, 2.0): mean 1.05 (sd of the mean 0.0039), the ends reached */
	ck_assert_msg(fabs(sum / 20000 - 1.05) < 0.02, "mean %g", sum / 20000);
	ck_assert(lo < 0.11 && hi > 1.99);
	ck_assert_int_gt(below_half, 10000 - 400);
	ck_assert_int_lt(below_half, 10000 + 400);
}
END_TEST

/* Every op of the family through ts_kernel_apply equals its kernel. */
START_TEST(apply_dispatch)
{
	static uint8_t px[16 * 12 * 3];
	for (size_t i = 0; i < sizeof(px); i++)
		px[i] = (uint8_t)((i * 37 + 11) % 200 + 20);
	const struct ts_op ops[] = {
		{ .kind = TS_OP_ADJUST_SHARPNESS, .color.factor = 1.9, .index = 2 },
		{ .kind = TS_OP_ADJUST_GAMMA, .color.gamma = 0.7, .color.gain = 1.1, .index = 2 },
		{ .kind = TS_OP_GAUSSIAN_BLUR, .blur.kernel_w = 5, .blur.kernel_h = 3, .blur.sigma_lo = 0.5,
		  .blur.sigma_hi = 2.5, .index = 2 },
	};
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		struct ts_image a = make(16, 12, 3, TS_DTYPE_U8, px);
		struct ts_image b = make(16, 12, 3, TS_DTYPE_U8, px), tmp = { 0 };
		struct ts_rng rng, again;
		ts_rng_init(&rng, 1, 0, 5, 2);
		ts_rng_init(&again, 1, 0, 5, 2);
		ck_assert_ptr_nonnull(ts_kernel_find(ops[k].kind));
		ck_assert_int_eq(ts_kernel_apply(&ops[k], &a, &tmp, &rng, NULL), 0);
		if (ops[k].kind == TS_OP_ADJUST_SHARPNESS)
			ts_filter_sharpness(&b, &tmp, 1.9f);
		else if (ops[k].kind == TS_OP_ADJUST_GAMMA)
			ts_color_gamma(&b, 0.7, 1.1);
		else {
			float s = (float)ts_filter_sigma(&ops[k], &again);
			ck_assert(s > 0.5f && s < 2.5f);
			ts_filter_gaussian(&b, &tmp, 5, 3, s, s);
		}
		ck_assert_mem_eq(a.data, b.data, sizeof(px));
		ck_assert(memcmp(a.data, px, sizeof(px)) != 0);
		ts_image_free(&a);
		ts_image_free(&b);
		ts_image_free(&tmp);
	}
	ck_assert_ptr_null(ts_kernel_find(TS_OP_TILE));
}
END_TEST

START_TEST(apply_refuses)
{
	struct ts_error err = { 0 };
	struct ts_rng rng;
	const uint16_t px[48] = { 0, 1, 65535, 300 };
	struct ts_image img = make(4, 4, 3, TS_DTYPE_U16, px), tmp = { 0 };
	ts_rng_init(&rng, 1, 0, 0, 0);
	struct ts_op op = { .kind = TS_OP_ADJUST_SHARPNESS, .color.factor = 2 };
	ck_assert_int_eq(ts_kernel_apply(&op, &img, &tmp, &rng, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "adjust_sharpness needs uint8 data"));
	op = (struct ts_op){ .kind = TS_OP_GAUSSIAN_BLUR, .blur.kernel_w = 3, .blur.kernel_h = 3,
			     .blur.sigma_lo = 1, .blur.sigma_hi = 1 };
	ck_assert_int_eq(ts_kernel_apply(&op, &img, &tmp, &rng, &err), 0);
	ts_image_free(&img);
	/* float32 (after normalize): a constant blurs to itself, to a
	 * rounding of the weights' sum */
	ck_assert_int_eq(ts_image_reserve(&img, 4, 4, 3, TS_DTYPE_F32), 0);
	for (int i = 0; i < 48; i++)
		((float *)(void *)img.data)[i] = -1.75f;
	ck_assert_int_eq(ts_kernel_apply(&op, &img, &tmp, &rng, &err), 0);
	ck_assert_int_eq(img.dtype, TS_DTYPE_F32);
	for (int i = 0; i < 48; i++)
		ck_assert_float_eq_tol(((float *)(void *)img.data)[i], -1.75f, 1e-6f);
	ts_image_free(&img);
	ck_assert_int_eq(ts_image_reserve(&img, 4, 4, 3, TS_DTYPE_F16), 0);
	ck_assert_int_eq(ts_kernel_apply(&op, &img, &tmp, &rng, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "gaussian_blur needs uint8, uint16 or float32"));
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* ---- the checker ---- */


START_TEST(check_plan)
{
	const char *src =
		"pipeline p =\n"
		"    synthetic([8, 8], count = 4)\n"
		"    | adjust_sharpness(2) | adjust_gamma(0.5) | adjust_gamma(2.2, gain = 0.9)\n"
		"    | gaussian_blur(5) | gaussian_blur([3, 7], sigma = 1.5)\n"
		"    | gaussian_blur(23, 0.5..3)\n"
		"    | to(float32, nchw) | batch(2)\n";
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(src, &d, &rc);
	if (rc) {
		char *t = ts_diags_render(&d);
		ck_abort_msg("%s", t);
	}
	ts_diags_fini(&d);
	ck_assert_uint_eq(p->n_ops, 7);
	ck_assert_int_eq(p->ops[0].kind, TS_OP_ADJUST_SHARPNESS);
	ck_assert(p->ops[0].color.factor == 2);
	ck_assert_int_eq(p->ops[1].kind, TS_OP_ADJUST_GAMMA);
	ck_assert(p->ops[1].color.gamma == 0.5 && p->ops[1].color.gain == 1);
	ck_assert(p->ops[2].color.gamma == 2.2 && p->ops[2].color.gain == 0.9);
	ck_assert_int_eq(p->ops[3].kind, TS_OP_GAUSSIAN_BLUR);
	ck_assert_int_eq(p->ops[3].blur.kernel_w, 5);
	ck_assert_int_eq(p->ops[3].blur.kernel_h, 5);
	/* GaussianBlur's default sigma range */
	ck_assert(p->ops[3].blur.sigma_lo == 0.1 && p->ops[3].blur.sigma_hi == 2.0);
	ck_assert_int_eq(p->ops[4].blur.kernel_w, 3);
	ck_assert_int_eq(p->ops[4].blur.kernel_h, 7);
	ck_assert(p->ops[4].blur.sigma_lo == 1.5 && p->ops[4].blur.sigma_hi == 1.5);
	ck_assert(p->ops[5].blur.sigma_lo == 0.5 && p->ops[5].blur.sigma_hi == 3);
	ck_assert_int_eq(p->ops[6].kind, TS_OP_OUTPUT);
	ck_assert_str_eq(ts_op_kind_name(TS_OP_GAUSSIAN_BLUR), "gaussian_blur");
	ck_assert_str_eq(ts_op_kind_name(TS_OP_ADJUST_SHARPNESS), "adjust_sharpness");
	ts_plan_destroy(p);

	/* uint16 pixels: gamma and blur take them */
	src = "pipeline p =\n    synthetic([8, 8], count = 4, depth = 16)\n"
	      "    | adjust_gamma(0.8) | gaussian_blur(3, 1) | batch(2)\n";
	p = compile(src, &d, &rc);
	ck_assert_int_eq(rc, 0);
	ts_diags_fini(&d);
	ck_assert_int_eq(p->ops[1].out_dtype, TS_DTYPE_U16);
	ts_plan_destroy(p);
}
END_TEST

static const struct {
	const char *stage, *pre, *msg;
	int col;
} misuses[] = {
	{ "gaussian_blur(4)", "", "parameter 'kernel_size' must be odd, got 4", 21 },
	{ "gaussian_blur([3, 6], 1)", "", "parameter 'kernel_size' must be odd, got 6", 21 },
	{ "gaussian_blur(0)", "", "parameter 'kernel_size' must be between 1 and 999, got 0", 21 },
	{ "gaussian_blur(3, sigma = 0)", "", "parameter 'sigma' must be above 0, got 0", 32 },
	{ "gaussian_blur(3, 0..2)", "", "parameter 'sigma' must be above 0, got 0", 24 },
	{ "gaussian_blur(3, -1)", "", "parameter 'sigma' must not be negative", 24 },
	{ "gaussian_blur(3, 2..1)", "", "parameter 'sigma' is an empty range", 24 },
	{ "gaussian_blur(3)", "| to(float16) ",
	  "'gaussian_blur' works on uint8, uint16 or float32 nhwc data, but the data is float16 nhwc", 7 },
	{ "gaussian_blur(3)", "| to(float32, nchw) ",
	  "'gaussian_blur' works on uint8, uint16 or float32 nhwc data, but the data is float32 nchw", 7 },
	{ "adjust_sharpness(2)", "| to(uint16) ",
	  "'adjust_sharpness' works on uint8 pixels, but the data is uint16 here", 7 },
	{ "adjust_sharpness(2)", "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ",
	  "'adjust_sharpness' works on uint8 nhwc pixels, but the data is float32", 7 },
	{ "adjust_sharpness(-1)", "", "'sharpness_factor' must not be negative", 24 },
	{ "adjust_gamma(-0.5)", "", "parameter 'gamma' must not be negative", 20 },
	{ "adjust_gamma(1, gain = 300)", "", "parameter 'gain' must be between 0 and 255", 30 },
	{ "resize(256, max_size = 256)", "", "parameter 'max_size' must be above the size 256, got 256", 30 },
	{ "resize([224, 256], max_size = 300)", "", "'max_size' bounds resize(N) only", 37 },
	{ "resize(224, 256, max_size = 300)", "", "'max_size' bounds resize(N) only", 35 },
	{ "resize(256, interp = bicubik)", "", "unknown value 'bicubik' for parameter 'interp'", 28 },
	{ "random_resized_crop(224, interp = cubic)", "", "did you mean 'bicubic'?", 41 },
	{ "adjust_gamma(2)", "| to(float32) ",
	  "'adjust_gamma' works on uint8 or uint16 nhwc pixels, but the data is float32", 7 },
};

START_TEST(check_misuse)
{
	char src[512];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([8, 8], count = 4)\n    %s\n    | %s\n"
		 "    | batch(2)\n", misuses[_i].pre, misuses[_i].stage);
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(src, &d, &rc);
	ck_assert_ptr_null(p);
	ck_assert_int_ne(rc, 0);
	char *t = ts_diags_render(&d);
	ck_assert_ptr_nonnull(t);
	char want[64];
	snprintf(want, sizeof(want), "t.ts:4:%d: error: ", misuses[_i].col);
	ck_assert_msg(strstr(t, want) && strstr(t, misuses[_i].msg),
		      "case %d: want %s...%s in:\n%s", _i, want, misuses[_i].msg, t);
	free(t);
	ts_diags_fini(&d);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("filter");
	TCase *k = tcase_create("kernels");
	tcase_add_loop_test(k, sharpness_pil, 0,
			    (int)(sizeof(sharp_cases) / sizeof(sharp_cases[0])));
	tcase_add_test(k, sharpness_identity);
	tcase_add_loop_test(k, gamma_table, 0,
			    (int)(sizeof(gamma_cases) / sizeof(gamma_cases[0])));
	tcase_add_test(k, gamma_u16);
	tcase_add_loop_test(k, gaussian_weights, 0,
			    (int)(sizeof(kernel_cases) / sizeof(kernel_cases[0])));
	tcase_add_test(k, gaussian_torch);
	tcase_add_loop_test(k, gaussian_reference, 0, 6);
	tcase_add_test(k, gaussian_refuses);
	tcase_add_test(k, sigma_draws);
	suite_add_tcase(s, k);
	TCase *a = tcase_create("apply");
	tcase_add_test(a, apply_dispatch);
	tcase_add_test(a, apply_refuses);
	suite_add_tcase(s, a);
	TCase *c = tcase_create("check");
	tcase_add_test(c, check_plan);
	tcase_add_loop_test(c, check_misuse, 0, (int)(sizeof(misuses) / sizeof(misuses[0])));
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
