/* test-color.c - the colour family: its kernels on tiny images with
 * values computed by hand from ImageOps' / ImageEnhance's arithmetic (the
 * match on real photos is tests/torch-color.py's job), the probability p
 * and its determinism, color_jitter's draws (hue included),
 * the colour rows of the kernel table and their refusals, and what the checker
 * makes of the operators' text (plan fields, no fusion, the misuses and
 * where they point). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "color.h"
#include "dsl.h"
#include "unit-dsl.h"

static struct ts_image make_u8(int w, int h, int c, const uint8_t *px)
{
	struct ts_image img = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, w, h, c, TS_DTYPE_U8), 0);
	if (px)
		memcpy(img.data, px, (size_t)w * h * c);
	return img;
}

/* ---- the table-driven kernels ---- */

START_TEST(invert_levels)
{
	const uint8_t px[] = { 0, 1, 128, 255, 77, 200 };
	const uint8_t want[] = { 255, 254, 127, 0, 178, 55 };
	struct ts_image img = make_u8(2, 1, 3, px);
	ts_color_invert(&img);
	ck_assert_mem_eq(img.data, want, sizeof(want));
	ts_image_free(&img);
}
END_TEST

/* 183 = 0b10110111 keeps its top bits. */
static const uint8_t posterize_want[9] = { 0, 128, 128, 160, 176, 176, 180, 182, 183 };

START_TEST(posterize_bits)
{
	const int bits = _i;
	const uint8_t px[] = { 183, 255, 0 };
	struct ts_image img = make_u8(3, 1, 1, px);
	ts_color_posterize(&img, bits);
	ck_assert_uint_eq(img.data[0], posterize_want[bits]);
	ck_assert_uint_eq(img.data[1], (255u >> (8 - bits)) << (8 - bits));
	ck_assert_uint_eq(img.data[2], 0);
	ts_image_free(&img);
}
END_TEST

static const struct {
	double threshold;
	uint8_t want[5]; /* of 0, 127, 128, 200, 255 */
} solarize_cases[] = {
	{ 128, { 0, 127, 127, 55, 0 } },
	{ 127.5, { 0, 127, 127, 55, 0 } },
	{ 127, { 0, 128, 127, 55, 0 } },
	{ 0, { 255, 128, 127, 55, 0 } },   /* everything at or above 0 */
	{ 255, { 0, 127, 128, 200, 0 } },  /* only 255 */
	{ 254.9, { 0, 127, 128, 200, 0 } },
};

START_TEST(solarize_threshold)
{
	const uint8_t px[] = { 0, 127, 128, 200, 255 };
	struct ts_image img = make_u8(5, 1, 1, px);
	ts_color_solarize(&img, solarize_cases[_i].threshold);
	ck_assert_mem_eq(img.data, solarize_cases[_i].want, 5);
	ts_image_free(&img);
}
END_TEST

START_TEST(autocontrast_per_channel)
{
	/* channel 0: 10..30 stretched (s = 12.75); channel 1: 0..255
	 * already; channel 2: one level, unchanged */
	const uint8_t px[] = { 10, 0, 5, 20, 255, 5, 30, 128, 5 };
	const uint8_t want[] = { 0, 0, 5, 127, 255, 5, 255, 128, 5 };
	struct ts_image img = make_u8(3, 1, 3, px);
	ts_color_autocontrast(&img);
	ck_assert_mem_eq(img.data, want, sizeof(want));
	ts_image_free(&img);

	/* 50..150: s = 2.55 in double, 100 -> int(254.99999999999997 -
	 * 127.49999999999999) = 127, 120 -> 178 */
	const uint8_t g[] = { 50, 100, 150, 120 };
	const uint8_t gw[] = { 0, 127, 255, 178 };
	img = make_u8(4, 1, 1, g);
	ts_color_autocontrast(&img);
	ck_assert_mem_eq(img.data, gw, sizeof(gw));
	ts_image_free(&img);
}
END_TEST

START_TEST(equalize_steps)
{
	/* 255 pixels each of 0, 100, 200, 255: step = (1020 - 255) // 255
	 * = 3, n from 1: 0 -> 0, 100 -> 256 // 3 = 85, 200 -> 511 // 3 =
	 * 170, 255 -> 766 // 3 = 255 */
	static uint8_t px[1020];
	const uint8_t lv[4] = { 0, 100, 200, 255 }, want[4] = { 0, 85, 170, 255 };
	for (int i = 0; i < 1020; i++)
		px[i] = lv[i / 255];
	struct ts_image img = make_u8(1020, 1, 1, px);
	ts_color_equalize(&img);
	for (int i = 0; i < 1020; i++)
		ck_assert_uint_eq(img.data[i], want[i / 255]);
	ts_image_free(&img);

	/* 300 x 0, 300 x 1, 10 x 255: step 2, 255 -> 601 // 2 = 300,
	 * clipped to 255 as Image.point clips */
	static uint8_t q[610];
	for (int i = 0; i < 610; i++)
		q[i] = i < 300 ? 0 : i < 600 ? 1 : 255;
	img = make_u8(610, 1, 1, q);
	ts_color_equalize(&img);
	ck_assert_uint_eq(img.data[0], 0);
	ck_assert_uint_eq(img.data[300], 150);
	ck_assert_uint_eq(img.data[609], 255);
	ts_image_free(&img);

	/* too few pixels for a step (16 // 255 = 0) and one level: kept */
	const uint8_t s[] = { 10, 10, 10, 20, 20, 30, 30, 30, 30, 30, 200, 200,
			      250, 250, 250, 250 };
	img = make_u8(4, 4, 1, s);
	ts_color_equalize(&img);
	ck_assert_mem_eq(img.data, s, sizeof(s));
	ts_image_free(&img);
}
END_TEST

/* PIL's numbers (F.adjust_hue on a PIL image of these six pixels): the
 * 8-bit HSV round trip, gray kept, the turn modulo 256. */
static const struct {
	double factor;
	uint8_t want[18];
} hue_cases[] = {
	{ 0.25, { 78, 200, 50, 10, 91, 200, 255, 0, 132, 128, 128, 128, 0, 255, 120, 3, 1, 3 } },
	{ -0.1, { 200, 50, 85, 104, 200, 10, 0, 150, 255, 128, 128, 128, 255, 102, 0, 1, 3, 3 } },
	{ 0.5, { 50, 152, 200, 200, 10, 184, 255, 246, 0, 128, 128, 128, 0, 6, 255, 3, 2, 1 } },
};

START_TEST(hue_turn)
{
	const uint8_t px[] = { 200, 100, 50, 10, 200, 30, 0, 0, 255, 128, 128, 128,
			       255, 255, 0, 1, 2, 3 };
	struct ts_image img = make_u8(6, 1, 3, px);
	ts_color_hue(&img, hue_cases[_i].factor);
	ck_assert_mem_eq(img.data, hue_cases[_i].want, sizeof(px));
	ts_image_free(&img);
	/* one channel: unchanged, as PIL's L images are */
	img = make_u8(6, 1, 1, px);
	ts_color_hue(&img, hue_cases[_i].factor);
	ck_assert_mem_eq(img.data, px, 6);
	ts_image_free(&img);
}
END_TEST

/* ---- color_jitter's draws (ColorJitter.get_params) ---- */

START_TEST(jitter_params)
{
	struct ts_op op = { .kind = TS_OP_COLOR_JITTER, .jitter.brightness = 0.4,
			    .jitter.contrast = 0.2, .jitter.saturation = 1.0, .jitter.hue = 0.1 };
	int orders[24] = { 0 };
	double hue_sum = 0.0;
	int hue_low = 0;
	for (uint64_t i = 0; i < 24000; i++) {
		struct ts_rng rng;
		int order[4];
		float f[3];
		double hue;
		ts_rng_init(&rng, 5, 2, i, 1);
		ts_aug_jitter_params(&op, &rng, order, f, &hue);
		/* a permutation, counted by its Lehmer code */
		int seen = 0, code = 0;
		for (int k = 0; k < 4; k++) {
			ck_assert(order[k] >= 0 && order[k] < 4 && !(seen & (1 << order[k])));
			int smaller = 0;
			for (int j = k + 1; j < 4; j++)
				smaller += order[j] < order[k];
			code = code * (4 - k) + smaller;
			seen |= 1 << order[k];
		}
		orders[code]++;
		ck_assert(f[0] >= 0.6f && f[0] <= 1.4f);
		ck_assert(f[1] >= 0.8f && f[1] <= 1.2f);
		ck_assert(f[2] >= 0.0f && f[2] <= 2.0f); /* max(0, 1 - 1) */
		ck_assert(hue >= -0.1 && hue <= 0.1);
		hue_sum += hue;
		hue_low += hue < -0.05;
	}
	/* 24 orders, 1000 each expected (sd 31) */
	for (int k = 0; k < 24; k++)
		ck_assert_msg(orders[k] > 850 && orders[k] < 1150, "order %d: %d", k, orders[k]);
	/* U(-0.1, 0.1): mean 0 (sd of the mean 0.0004), a quarter below -0.05 */
	ck_assert(hue_sum / 24000 > -0.002 && hue_sum / 24000 < 0.002);
	ck_assert_int_gt(hue_low, 6000 - 300);
	ck_assert_int_lt(hue_low, 6000 + 300);

	/* without hue: the three are shuffled, hue stays last and unused */
	op.jitter.hue = 0;
	for (uint64_t i = 0; i < 100; i++) {
		struct ts_rng rng;
		int order[4];
		float f[3];
		double hue;
		ts_rng_init(&rng, 5, 2, i, 1);
		ts_aug_jitter_params(&op, &rng, order, f, &hue);
		ck_assert_int_eq(order[3], 3);
		ck_assert(hue == 0.0);
	}
}
END_TEST

/* color_jitter applies exactly its draws, in their order. */
START_TEST(jitter_applies_draws)
{
	static uint8_t px[32 * 32 * 3];
	for (int i = 0; i < 32 * 32 * 3; i++)
		px[i] = (uint8_t)((i * 53 + 7) % 230 + 10);
	struct ts_op op = { .kind = TS_OP_COLOR_JITTER, .jitter.brightness = 0.4,
			    .jitter.contrast = 0.4, .jitter.saturation = 0.4, .jitter.hue = 0.5 };
	for (uint64_t i = 0; i < 20; i++) {
		struct ts_image a = make_u8(32, 32, 3, px), b = make_u8(32, 32, 3, px);
		struct ts_rng rng;
		int order[4];
		float f[3];
		double hue;
		ts_rng_init(&rng, 9, 0, i, 2);
		ck_assert_int_eq(ts_aug_color_jitter(&a, &op, &rng), 0);
		ts_rng_init(&rng, 9, 0, i, 2);
		ts_aug_jitter_params(&op, &rng, order, f, &hue);
		for (int k = 0; k < 4; k++) {
			if (order[k] == 0)
				ts_aug_brightness(&b, f[0]);
			else if (order[k] == 1)
				ts_aug_contrast(&b, f[1]);
			else if (order[k] == 2)
				ts_aug_saturation(&b, f[2]);
			else
				ts_color_hue(&b, hue);
		}
		ck_assert_mem_eq(a.data, b.data, sizeof(px));
		ts_image_free(&a);
		ts_image_free(&b);
	}
}
END_TEST

/* ---- the colour rows of the kernel table: probability, determinism, refusals ---- */

static struct ts_op color_op(enum ts_op_kind k, double p)
{
	struct ts_op op = { .kind = k, .color.p = p, .color.bits = 4, .color.level = 128,
			    .color.factor = 1.5, .index = 3 };
	return op;
}

START_TEST(apply_probability)
{
	struct ts_op op = color_op(TS_OP_INVERT, 0.3);
	int applied = 0;
	for (uint64_t i = 0; i < 4000; i++) {
		uint8_t px = 10;
		struct ts_image img = make_u8(1, 1, 1, &px);
		struct ts_rng rng, again;
		ts_rng_init(&rng, 42, 1, i, 3);
		ck_assert_int_eq(ts_kernel_apply(&op, &img, NULL, &rng, NULL), 0);
		ck_assert(img.data[0] == 10 || img.data[0] == 245);
		/* the same stream decides the same way */
		ts_rng_init(&again, 42, 1, i, 3);
		ck_assert_int_eq(img.data[0] == 245, ts_rng_uniform(&again) < 0.3);
		applied += img.data[0] == 245;
		ts_image_free(&img);
	}
	/* binomial(4000, 0.3): mean 1200, sd 29 */
	ck_assert_int_gt(applied, 1200 - 150);
	ck_assert_int_lt(applied, 1200 + 150);

	/* p = 0 never, p = 1 always (and draws nothing) */
	for (int p = 0; p <= 1; p++) {
		op.color.p = p;
		uint8_t px = 10;
		struct ts_image img = make_u8(1, 1, 1, &px);
		struct ts_rng rng, fresh;
		ts_rng_init(&rng, 7, 0, 0, 3);
		ts_rng_init(&fresh, 7, 0, 0, 3);
		ck_assert_int_eq(ts_kernel_apply(&op, &img, NULL, &rng, NULL), 0);
		ck_assert_uint_eq(img.data[0], p ? 245 : 10);
		if (p)
			ck_assert(ts_rng_uniform(&rng) == ts_rng_uniform(&fresh));
		ts_image_free(&img);
	}
}
END_TEST

/* The colour family's row of kind k, or NULL. */
static const struct ts_kernel *in_color(enum ts_op_kind k)
{
	for (const struct ts_kernel *r = ts_kernels_color; r->apply; r++)
		if (r->kind == k)
			return r;
	return NULL;
}

/* Every op of the family through ts_kernel_apply equals its kernel, and
 * its row is in the colour family's table. */
START_TEST(apply_dispatch)
{
	static const enum ts_op_kind kinds[] = {
		TS_OP_INVERT, TS_OP_POSTERIZE, TS_OP_SOLARIZE, TS_OP_AUTOCONTRAST,
		TS_OP_EQUALIZE, TS_OP_ADJUST_BRIGHTNESS, TS_OP_ADJUST_CONTRAST,
		TS_OP_ADJUST_SATURATION, TS_OP_ADJUST_HUE };
	/* 32 x 32, levels 20..219: every op changes it (equalize needs
	 * more than 255 pixels a channel for a step) */
	static uint8_t px[32 * 32 * 3];
	for (int i = 0; i < 32 * 32 * 3; i++)
		px[i] = (uint8_t)((i * 37 + 11) % 200 + 20);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct ts_op op = color_op(kinds[k], 1.0);
		if (kinds[k] == TS_OP_ADJUST_HUE)
			op.color.factor = 1.5 / 4;
		struct ts_image a = make_u8(32, 32, 3, px), b = make_u8(32, 32, 3, px);
		struct ts_image tmp = { 0 };
		struct ts_rng rng;
		ts_rng_init(&rng, 1, 0, 0, 3);
		ck_assert_ptr_eq(ts_kernel_find(kinds[k]), in_color(kinds[k]));
		ck_assert_int_eq(ts_kernel_apply(&op, &a, &tmp, &rng, NULL), 0);
		switch (kinds[k]) {
		case TS_OP_INVERT: ts_color_invert(&b); break;
		case TS_OP_POSTERIZE: ts_color_posterize(&b, 4); break;
		case TS_OP_SOLARIZE: ts_color_solarize(&b, 128); break;
		case TS_OP_AUTOCONTRAST: ts_color_autocontrast(&b); break;
		case TS_OP_EQUALIZE: ts_color_equalize(&b); break;
		case TS_OP_ADJUST_BRIGHTNESS: ts_aug_brightness(&b, 1.5f); break;
		case TS_OP_ADJUST_CONTRAST: ts_aug_contrast(&b, 1.5f); break;
		case TS_OP_ADJUST_HUE: ts_color_hue(&b, 1.5 / 4); break;
		default: ts_aug_saturation(&b, 1.5f); break;
		}
		ck_assert_mem_eq(a.data, b.data, sizeof(px));
		ck_assert(memcmp(a.data, px, sizeof(px)) != 0);
		ts_image_free(&a);
		ts_image_free(&b);
		ts_image_free(&tmp);
	}
	ck_assert_ptr_null(in_color(TS_OP_FLIP));
}
END_TEST

START_TEST(apply_refuses)
{
	struct ts_error err = { 0 };
	struct ts_rng rng;
	struct ts_image img = { 0 };
	ts_rng_init(&rng, 1, 0, 0, 0);
	ck_assert_int_eq(ts_image_reserve(&img, 2, 2, 3, TS_DTYPE_U16), 0);
	struct ts_op op = color_op(TS_OP_EQUALIZE, 1.0);
	ck_assert_int_eq(ts_kernel_apply(&op, &img, NULL, &rng, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "equalize needs uint8"));
	op.kind = TS_OP_TILE;
	ck_assert_int_eq(ts_kernel_apply(&op, &img, NULL, &rng, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "tile is not a per-image op"));
	ts_image_free(&img);
}
END_TEST

/* ---- the checker ---- */


START_TEST(check_plan)
{
	const char *src =
		"pipeline p =\n"
		"    synthetic([8, 8], count = 4)\n"
		"    | invert(p = 0.25) | posterize(3) | solarize(threshold = 99.5)\n"
		"    | autocontrast | equalize(p = 0.5) | adjust_brightness(1.25)\n"
		"    | adjust_contrast(contrast_factor = 0) | adjust_saturation(2)\n"
		"    | adjust_hue(-0.25)\n"
		"    | to(float32, nchw) | batch(2)\n";
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(src, &d, &rc);
	if (rc) {
		char *t = ts_diags_render(&d);
		ck_abort_msg("%s", t);
	}
	ts_diags_fini(&d);
	/* eight stages of their own, then the output (to) */
	ck_assert_uint_eq(p->n_ops, 10);
	ck_assert_int_eq(p->ops[0].kind, TS_OP_INVERT);
	ck_assert(p->ops[0].color.p == 0.25);
	ck_assert_int_eq(p->ops[1].kind, TS_OP_POSTERIZE);
	ck_assert_int_eq(p->ops[1].color.bits, 3);
	ck_assert(p->ops[1].color.p == 1.0);
	ck_assert_int_eq(p->ops[2].kind, TS_OP_SOLARIZE);
	ck_assert(p->ops[2].color.level == 99.5);
	ck_assert_int_eq(p->ops[3].kind, TS_OP_AUTOCONTRAST);
	ck_assert_int_eq(p->ops[4].kind, TS_OP_EQUALIZE);
	ck_assert(p->ops[4].color.p == 0.5);
	ck_assert_int_eq(p->ops[5].kind, TS_OP_ADJUST_BRIGHTNESS);
	ck_assert(p->ops[5].color.factor == 1.25);
	ck_assert_int_eq(p->ops[6].kind, TS_OP_ADJUST_CONTRAST);
	ck_assert(p->ops[6].color.factor == 0);
	ck_assert_int_eq(p->ops[7].kind, TS_OP_ADJUST_SATURATION);
	ck_assert(p->ops[7].color.factor == 2);
	ck_assert_int_eq(p->ops[8].kind, TS_OP_ADJUST_HUE);
	ck_assert(p->ops[8].color.factor == -0.25);
	ck_assert_int_eq(p->ops[9].kind, TS_OP_OUTPUT);
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(p->ops[i].out_dtype, TS_DTYPE_U8);
	ck_assert_str_eq(ts_op_kind_name(TS_OP_ADJUST_SATURATION), "adjust_saturation");
	ts_plan_destroy(p);
}
END_TEST

/* One misuse each: the message and the column it points at. */
static const struct {
	const char *stage, *pre, *msg;
	int col;
} misuses[] = {
	{ "posterize(0)", "", "parameter 'bits' must be between 1 and 8, got 0", 17 },
	{ "posterize(9)", "", "parameter 'bits' must be between 1 and 8, got 9", 17 },
	{ "posterize(2.5)", "", "'bits' expects an integer", 17 },
	{ "solarize(256)", "", "parameter 'threshold' must be between 0 and 255, got 256", 16 },
	{ "solarize(-1)", "", "parameter 'threshold' must not be negative", 16 },
	{ "invert(p = 1.5)", "", "parameter 'p' must be between 0 and 1, got 1.5", 18 },
	{ "adjust_brightness(-0.1)", "", "'brightness_factor' must not be negative", 25 },
	{ "adjust_contrast(300)", "", "'contrast_factor' must be between 0 and 255", 23 },
	{ "adjust_saturation()", "", "'adjust_saturation' needs parameter 'saturation_factor'", 7 },
	{ "equalize", "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ",
	  "'equalize' works on uint8 nhwc pixels, but the data is float32 nhwc here", 7 },
	{ "autocontrast", "| to(uint8, nchw) ",
	  "'autocontrast' works on uint8 nhwc pixels, but the data is uint8 nchw here", 7 },
	{ "invert", "| to(uint16) ",
	  "'invert' works on uint8 pixels, but the data is uint16 here", 7 },
	{ "adjust_saturation(0.5)", "| grayscale(1) ",
	  "'adjust_saturation' needs 3 channels, but the image has 1", 7 },
	{ "adjust_hue(0.6)", "", "parameter 'hue_factor' must be between -0.5 and 0.5, got 0.6", 18 },
	{ "adjust_hue(0.1)", "| grayscale(1) ",
	  "'adjust_hue' needs 3 channels, but the image has 1", 7 },
	{ "color_jitter(hue = 0.1)", "| grayscale(1) ",
	  "hue needs 3 channels, but the image has 1", 26 },
	{ "color_jitter(hue = -0.1)", "", "parameter 'hue' must not be negative", 26 },
	{ "color_jitter(0.1, hue = 0.1)", "| to(uint16) ",
	  "hue works on uint8 pixels, but the data is uint16 here", 31 },
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
	Suite *s = suite_create("color");
	TCase *k = tcase_create("kernels");
	tcase_add_test(k, invert_levels);
	tcase_add_loop_test(k, posterize_bits, 1, 9);
	tcase_add_loop_test(k, solarize_threshold, 0,
			    (int)(sizeof(solarize_cases) / sizeof(solarize_cases[0])));
	tcase_add_test(k, autocontrast_per_channel);
	tcase_add_test(k, equalize_steps);
	tcase_add_loop_test(k, hue_turn, 0, (int)(sizeof(hue_cases) / sizeof(hue_cases[0])));
	tcase_add_test(k, jitter_params);
	tcase_add_test(k, jitter_applies_draws);
	suite_add_tcase(s, k);
	TCase *a = tcase_create("apply");
	tcase_add_test(a, apply_probability);
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
