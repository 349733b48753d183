/* test-geometry.c - the geometry family: its kernels on tiny images with
 * the values torchvision 0.14 gives on PIL images (the match on real
 * photos is tests/torch-geometry.py's job), the matrices and rotated
 * sizes of dsl/geom.c, the random ops' draws (ranges, distributions,
 * determinism per stream position), ts_geometry_apply's refusals, and what the
 * checker makes of the operators' text (plan fields, the misuses and
 * where they point). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "dsl.h"
#include "geom.h"
#include "geometry.h"
#include "unit-dsl.h"

static struct ts_image make_u8(int w, int h, int c, const uint8_t *px)
{
	struct ts_image img = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, w, h, c, TS_DTYPE_U8), 0);
	if (px)
		memcpy(img.data, px, (size_t)w * h * c);
	return img;
}

/* The 4 x 3 gray image the references below were computed from:
 * 5 + 17 i in row-major order. */
static struct ts_image grid(void)
{
	uint8_t px[12];
	for (int i = 0; i < 12; i++)
		px[i] = (uint8_t)(5 + 17 * i);
	return make_u8(4, 3, 1, px);
}

static const uint8_t fill9[4] = { 9, 9, 9, 9 };

static void assert_image(const struct ts_image *img, int w, int h,
			 const uint8_t *want)
{
	ck_assert_int_eq(img->width, w);
	ck_assert_int_eq(img->height, h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w * img->channels; x++)
			ck_assert_msg(img->data[(size_t)y * img->stride + x] ==
					      want[y * w * img->channels + x],
				      "at row %d byte %d: %u, want %u", y, x,
				      img->data[(size_t)y * img->stride + x],
				      want[y * w * img->channels + x]);
}

/* ---- rotate and affine, against F.rotate / F.affine on PIL ---------- */

static const struct {
	double angle;
	enum ts_interp interp;
	bool expand;
	int w, h;
	uint8_t want[12];
} rotate_cases[] = {
	/* not square, no expand: Pillow's affine path, not a transpose */
	{ 90, TS_INTERP_NEAREST, false, 4, 3,
	  { 56, 124, 192, 9, 39, 107, 175, 9, 22, 90, 158, 9 } },
	/* the transposes */
	{ 90, TS_INTERP_NEAREST, true, 3, 4,
	  { 56, 124, 192, 39, 107, 175, 22, 90, 158, 5, 73, 141 } },
	{ 180, TS_INTERP_BILINEAR, false, 4, 3,
	  { 192, 175, 158, 141, 124, 107, 90, 73, 56, 39, 22, 5 } },
	{ -90, TS_INTERP_NEAREST, true, 3, 4,
	  { 141, 73, 5, 158, 90, 22, 175, 107, 39, 192, 124, 56 } },
	{ 30, TS_INTERP_NEAREST, false, 4, 3,
	  { 9, 39, 39, 124, 5, 90, 107, 192, 73, 158, 158, 9 } },
	{ 30, TS_INTERP_BILINEAR, false, 4, 3,
	  { 9, 31, 72, 116, 25, 74, 122, 171, 80, 124, 165, 9 } },
	{ 30, TS_INTERP_BICUBIC, false, 4, 3,
	  { 9, 24, 68, 112, 21, 65, 131, 175, 84, 128, 172, 9 } },
	{ 720, TS_INTERP_BILINEAR, false, 4, 3,
	  { 5, 22, 39, 56, 73, 90, 107, 124, 141, 158, 175, 192 } },
};

START_TEST(rotate_pil)
{
	struct ts_image img = grid(), tmp = { 0 };
	ck_assert_int_eq(ts_geometry_rotate(&img, &tmp, rotate_cases[_i].angle,
				       rotate_cases[_i].interp, rotate_cases[_i].expand,
				       NULL, fill9), 0);
	assert_image(&img, rotate_cases[_i].w, rotate_cases[_i].h, rotate_cases[_i].want);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* Image.rotate(expand = True)'s sizes: a 4 x 3 at 30 degrees is 6 x 5;
 * photos' sizes too. */
START_TEST(rotate_sizes)
{
	static const struct { int w, h; double a; int ow, oh; } c[] = {
		{ 4, 3, 30, 6, 5 }, { 333, 251, 30, 415, 385 }, { 224, 224, 45, 318, 318 },
		{ 333, 251, 90, 251, 333 }, { 333, 251, 0, 333, 251 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		double m[6];
		int ow, oh;
		ts_geom_rotate(c[i].w, c[i].h, c[i].a, NULL, true, m, &ow, &oh);
		ck_assert_int_eq(ow, c[i].ow);
		ck_assert_int_eq(oh, c[i].oh);
	}
	/* a centre given: never a transpose, the size kept without expand */
	double m[6], center[2] = { 2, 1.5 };
	int ow, oh;
	ck_assert_int_eq(ts_geom_rotate(4, 3, 90, center, false, m, &ow, &oh),
			 TS_GEOM_MATRIX);
	ck_assert_int_eq(ow, 4);
	ck_assert_int_eq(oh, 3);
	ck_assert_int_eq(ts_geom_rotate(4, 3, -270, NULL, true, m, &ow, &oh),
			 TS_GEOM_ROT90);
}
END_TEST

START_TEST(affine_pil)
{
	static const struct {
		double angle, t[2], scale, shear[2];
		bool origin;
		uint8_t want[12];
	} c[] = {
		/* scale only: Pillow's scale table */
		{ 0, { 0, 0 }, 2, { 0, 0 }, false,
		  { 90, 90, 107, 107, 90, 90, 107, 107, 158, 158, 175, 175 } },
		/* RandAugment's ShearX: about the origin */
		{ 0, { 0, 0 }, 1, { 20, 0 }, true,
		  { 5, 22, 39, 56, 90, 107, 124, 9, 158, 175, 192, 9 } },
		/* its TranslateX / Y */
		{ 0, { 1, -1 }, 1, { 0, 0 }, false,
		  { 9, 73, 90, 107, 9, 141, 158, 175, 9, 9, 9, 9 } },
	};
	const double origin[2] = { 0, 0 };
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ts_image img = grid(), tmp = { 0 };
		ck_assert_int_eq(ts_geometry_affine(&img, &tmp, c[i].angle, c[i].t, c[i].scale,
					       c[i].shear, c[i].origin ? origin : NULL,
					       TS_INTERP_NEAREST, fill9), 0);
		assert_image(&img, 4, 3, c[i].want);
		ts_image_free(&img);
		ts_image_free(&tmp);
	}
}
END_TEST

/* Each channel samples alike, and the fill is per channel. */
START_TEST(affine_channels)
{
	uint8_t px[4 * 3 * 3];
	for (int i = 0; i < 12; i++) {
		px[3 * i] = (uint8_t)(5 + 17 * i);
		px[3 * i + 1] = (uint8_t)(255 - (5 + 17 * i));
		px[3 * i + 2] = 7;
	}
	struct ts_image img = make_u8(4, 3, 3, px), tmp = { 0 };
	const uint8_t fill[4] = { 1, 2, 3, 0 };
	ck_assert_int_eq(ts_geometry_rotate(&img, &tmp, 30, TS_INTERP_BILINEAR, false, NULL,
				       fill), 0);
	const uint8_t want0[12] = { 9, 31, 72, 116, 25, 74, 122, 171, 80, 124, 165, 9 };
	for (int i = 0; i < 12; i++) {
		const uint8_t *p = img.data + (size_t)(i / 4) * img.stride + (size_t)(i % 4) * 3;
		if (want0[i] == 9) { /* outside: the fill */
			ck_assert_uint_eq(p[0], 1);
			ck_assert_uint_eq(p[1], 2);
			ck_assert_uint_eq(p[2], 3);
		} else {
			ck_assert_uint_eq(p[0], want0[i]);
			ck_assert_uint_eq(p[2], 7);
			/* 255 - v blends to 255 - v, truncated: within 1 */
			ck_assert_int_le(abs((int)p[1] - (255 - (int)want0[i])), 1);
		}
	}
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* The fixed-point nearest engine against Pillow's affine_fixed written
 * out pixel by pixel (the position tested against the input at every
 * output pixel): maps that step forwards and backwards in x and y, cross
 * the input's edges at every phase, and miss it altogether, on 1, 3 and 4
 * channels. */
static int32_t fix16_ref(double v)
{
	return (int32_t)floor(v * 65536.0 + 0.5);
}

static void affine_fixed_ref(const struct ts_image *src, uint8_t *out, int ow, int oh,
			     const double a[6], const uint8_t fill[4])
{
	const int C = src->channels;
	int32_t a0 = fix16_ref(a[0]), a1 = fix16_ref(a[1]), a3 = fix16_ref(a[3]),
		a4 = fix16_ref(a[4]);
	int32_t a2 = fix16_ref(a[2] + a[0] * 0.5 + a[1] * 0.5);
	int32_t a5 = fix16_ref(a[5] + a[3] * 0.5 + a[4] * 0.5);
	for (int y = 0; y < oh; y++) {
		int32_t xx = a2, yy = a5;
		for (int x = 0; x < ow; x++) {
			uint8_t *o = out + ((size_t)y * ow + x) * C;
			int xin = xx >> 16, yin = yy >> 16;
			if (xin >= 0 && xin < src->width && yin >= 0 && yin < src->height)
				memcpy(o, src->data + (size_t)yin * src->stride + (size_t)xin * C,
				       (size_t)C);
			else
				memcpy(o, fill, (size_t)C);
			xx += a0;
			yy += a3;
		}
		a2 += a1;
		a5 += a4;
	}
}

START_TEST(affine_nearest_runs)
{
	uint32_t seed = 77u + (uint32_t)_i;
	const uint8_t fill[4] = { 11, 22, 33, 44 };
	for (int t = 0; t < 200; t++) {
		seed = seed * 1103515245u + 12345u;
		const int C = (int[]){ 1, 3, 4 }[(seed >> 8) % 3];
		const int W = 1 + (int)((seed >> 12) % 37), H = 1 + (int)((seed >> 20) % 29);
		const int ow = 1 + (int)((seed >> 3) % 41), oh = 1 + (int)((seed >> 17) % 23);
		double a[6];
		for (int k = 0; k < 6; k++) {
			seed = seed * 1103515245u + 12345u;
			double u = (double)(seed >> 8) / 16777216.0 - 0.5; /* [-0.5, 0.5) */
			/* steps up to 2.5 either way, offsets past both edges */
			a[k] = k == 2 ? u * 3 * W : k == 5 ? u * 3 * H : u * 5;
		}
		if (t % 7 == 0)
			a[1] = 0; /* a row-constant x step: the shears' case */
		if (a[1] == 0 && a[3] == 0)
			a[3] = 0.01; /* not the per-column table engine */
		struct ts_image src = { 0 }, dst = { 0 };
		ck_assert_int_eq(ts_image_reserve(&src, W, H, C, TS_DTYPE_U8), 0);
		for (int y = 0; y < H; y++)
			for (int i = 0; i < W * C; i++)
				src.data[(size_t)y * src.stride + i] = (uint8_t)(y * 31 + i * 7 + 1);
		uint8_t *want = malloc((size_t)ow * oh * C);
		ck_assert_ptr_nonnull(want);
		affine_fixed_ref(&src, want, ow, oh, a, fill);
		ck_assert_int_eq(ts_geometry_transform_affine(&src, &dst, ow, oh, a, TS_INTERP_NEAREST,
							 fill), 0);
		for (int y = 0; y < oh; y++)
			if (memcmp(dst.data + (size_t)y * dst.stride, want + (size_t)y * ow * C,
				   (size_t)ow * C) != 0)
				ck_abort_msg("case %d: %dx%dx%d -> %dx%d, row %d differs", t, W, H, C,
					     ow, oh, y);
		free(want);
		ts_image_free(&src);
		ts_image_free(&dst);
	}
}
END_TEST

/* Whole-pixel translations (RandAugment's TranslateX/Y) are the image
 * shifted, the fill where nothing maps, for shifts past either edge. */
START_TEST(affine_translate_runs)
{
	const uint8_t fill[4] = { 9, 8, 7, 6 };
	const int W = 13, H = 6, C = 3;
	struct ts_image src = { 0 }, dst = { 0 };
	ck_assert_int_eq(ts_image_reserve(&src, W, H, C, TS_DTYPE_U8), 0);
	for (int y = 0; y < H; y++)
		for (int i = 0; i < W * C; i++)
			src.data[(size_t)y * src.stride + i] = (uint8_t)(y * 40 + i + 10);
	const int shifts[][2] = { { 0, 0 }, { 3, 0 }, { -5, 2 }, { 12, -1 }, { -13, 0 }, { 20, 3 } };
	for (size_t t = 0; t < sizeof(shifts) / sizeof(shifts[0]); t++) {
		const int tx = shifts[t][0], ty = shifts[t][1];
		const double m[6] = { 1, 0, -tx, 0, 1, -ty };
		ck_assert_int_eq(ts_geometry_transform_affine(&src, &dst, W, H, m, TS_INTERP_NEAREST,
							 fill), 0);
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				for (int c = 0; c < C; c++) {
					const int sx = x - tx, sy = y - ty;
					const uint8_t want =
						sx >= 0 && sx < W && sy >= 0 && sy < H
							? src.data[(size_t)sy * src.stride + (size_t)sx * C + c]
							: fill[c];
					ck_assert_uint_eq(dst.data[(size_t)y * dst.stride + (size_t)x * C + c],
							  want);
				}
	}
	ts_image_free(&src);
	ts_image_free(&dst);
}
END_TEST

/* The perspective through its own corners is the identity; the
 * coefficients map each endpoint onto its startpoint. */
START_TEST(perspective_coefficients)
{
	const double s[8] = { 0, 0, 99, 0, 99, 79, 0, 79 };
	const double e[8] = { 10, 4, 90, 0, 97, 70, 3, 75 };
	double c[8];
	ck_assert_int_eq(ts_geom_perspective(s, s, c), 0);
	const double id[8] = { 1, 0, 0, 0, 1, 0, 0, 0 };
	for (int i = 0; i < 8; i++)
		ck_assert_double_eq_tol(c[i], id[i], 1e-12);
	ck_assert_int_eq(ts_geom_perspective(s, e, c), 0);
	for (int k = 0; k < 4; k++) {
		const double x = e[2 * k], y = e[2 * k + 1];
		const double d = c[6] * x + c[7] * y + 1;
		ck_assert_double_eq_tol((c[0] * x + c[1] * y + c[2]) / d, s[2 * k], 1e-9);
		ck_assert_double_eq_tol((c[3] * x + c[4] * y + c[5]) / d, s[2 * k + 1], 1e-9);
	}
	/* three corners on a line: no solution */
	const double bad[8] = { 0, 0, 5, 0, 10, 0, 0, 5 };
	ck_assert_int_eq(ts_geom_perspective(s, bad, c), -1);
	struct ts_image img = grid(), tmp = { 0 };
	ck_assert_int_eq(ts_geometry_perspective(&img, &tmp, s, bad, TS_INTERP_BILINEAR, fill9),
			 TS_E_ARG);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

/* Degenerate maps sample nothing and crash nothing: a shear of 90
 * degrees (coordinates past int's range), a warp whose horizon crosses
 * the image (NaN and infinite coordinates), for every interpolation. */
START_TEST(degenerate_maps)
{
	static const enum ts_interp in[] = { TS_INTERP_NEAREST, TS_INTERP_BILINEAR,
					     TS_INTERP_BICUBIC };
	for (int k = 0; k < 3; k++) {
		struct ts_image img = grid(), tmp = { 0 };
		const double t[2] = { 0, 0 }, sh[2] = { 90, 0 };
		ck_assert_int_eq(ts_geometry_affine(&img, &tmp, 0, t, 1, sh, NULL, in[k], fill9), 0);
		ck_assert_int_eq(img.width, 4);
		/* a bow tie: the corners crossed */
		const double s[8] = { 0, 0, 3, 0, 3, 2, 0, 2 };
		const double e[8] = { 0, 0, 3, 2, 3, 0, 0, 2 };
		ck_assert_int_eq(ts_geometry_perspective(&img, &tmp, s, e, in[k], fill9), 0);
		ck_assert_int_eq(img.height, 3);
		ts_image_free(&img);
		ts_image_free(&tmp);
	}
}
END_TEST

/* ---- pad and erase --------------------------------------------------- */

static const struct {
	enum ts_pad_mode mode;
	uint8_t want[17];
} pad_cases[] = {
	/* np.pad([1, 2, 3], 7, mode) */
	{ TS_PAD_CONSTANT, { 4, 4, 4, 4, 4, 4, 4, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4 } },
	{ TS_PAD_EDGE, { 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3 } },
	{ TS_PAD_REFLECT, { 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2 } },
	{ TS_PAD_SYMMETRIC, { 1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3 } },
};

START_TEST(pad_modes)
{
	const uint8_t px[] = { 1, 2, 3 };
	struct ts_image img = make_u8(3, 1, 1, px), tmp = { 0 };
	const int pad[4] = { 7, 0, 7, 0 };
	const double fill[4] = { 4.9, 0, 0, 0 }; /* int(): 4 */
	ck_assert_int_eq(ts_geometry_pad(&img, &tmp, pad, pad_cases[_i].mode, fill), 0);
	assert_image(&img, 17, 1, pad_cases[_i].want);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

START_TEST(pad_crop_and_u16)
{
	struct ts_image img = grid(), tmp = { 0 };
	const double fill[4] = { 200, 0, 0, 0 };
	/* crop one column on the left, pad one row at the bottom */
	const int pad[4] = { -1, 0, 0, 1 };
	ck_assert_int_eq(ts_geometry_pad(&img, &tmp, pad, TS_PAD_CONSTANT, fill), 0);
	const uint8_t want[] = { 22, 39, 56, 90, 107, 124, 158, 175, 192, 200, 200, 200 };
	assert_image(&img, 3, 4, want);
	/* cropping it all away is refused */
	const int all[4] = { -2, 0, -1, 0 };
	ck_assert_int_eq(ts_geometry_pad(&img, &tmp, all, TS_PAD_EDGE, fill), TS_E_ARG);
	ts_image_free(&img);

	struct ts_image w = { 0 };
	ck_assert_int_eq(ts_image_reserve(&w, 2, 1, 1, TS_DTYPE_U16), 0);
	((uint16_t *)(void *)w.data)[0] = 1000;
	((uint16_t *)(void *)w.data)[1] = 60000;
	const int p1[4] = { 1, 0, 1, 0 };
	const double f16[4] = { 65535, 0, 0, 0 };
	ck_assert_int_eq(ts_geometry_pad(&w, &tmp, p1, TS_PAD_CONSTANT, f16), 0);
	const uint16_t *r = (const uint16_t *)(const void *)w.data;
	ck_assert_uint_eq(r[0], 65535);
	ck_assert_uint_eq(r[1], 1000);
	ck_assert_uint_eq(r[2], 60000);
	ck_assert_uint_eq(r[3], 65535);
	ck_assert_int_eq(ts_geometry_pad(&w, &tmp, p1, TS_PAD_REFLECT, f16), 0);
	r = (const uint16_t *)(const void *)w.data;
	ck_assert_uint_eq(r[0], 1000);  /* reflect of [65535, 1000, 60000, 65535] */
	ck_assert_uint_eq(r[5], 60000);
	ts_image_free(&w);
	ts_image_free(&tmp);
}
END_TEST

START_TEST(erase_box)
{
	struct ts_image img = grid();
	const double v[4] = { 3.7, 0, 0, 0 };
	/* clipped at the right and bottom edges, as a slice is */
	ts_geometry_erase(&img, 1, 2, 10, 10, v);
	const uint8_t want[] = { 5, 22, 39, 56, 73, 90, 3, 3, 141, 158, 3, 3 };
	assert_image(&img, 4, 3, want);
	ts_image_free(&img);

	struct ts_image f = { 0 };
	ck_assert_int_eq(ts_image_reserve(&f, 3, 2, 2, TS_DTYPE_F32), 0);
	memset(f.data, 0, ts_image_bytes(&f));
	const double fv[4] = { -1.5, 0.25, 0, 0 };
	ts_geometry_erase(&f, 0, 1, 1, 1, fv);
	const float *r = (const float *)(const void *)f.data;
	ck_assert(r[2] == -1.5f && r[3] == 0.25f);
	ck_assert(r[0] == 0 && r[4] == 0 && r[8] == 0);
	ts_image_free(&f);
}
END_TEST

/* ---- the random ops' draws ------------------------------------------ */


/* The plan of one op on an 80 x 60 synthetic image. */
static struct ts_plan *plan_of(const char *stage)
{
	char src[512];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([60, 80], count = 4)\n    | %s\n"
		 "    | resize([8, 8]) | batch(2)\n", stage);
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(src, &d, &rc);
	if (rc) {
		char *t = ts_diags_render(&d);
		ck_abort_msg("%s", t);
	}
	ts_diags_fini(&d);
	return p;
}

START_TEST(rotation_draws)
{
	struct ts_plan *p = plan_of("random_rotation([-10, 30])");
	const struct ts_op *op = &p->ops[0];
	double sum = 0, lo = 1e9, hi = -1e9;
	const int n = 20000;
	for (int i = 0; i < n; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 7, 0, (uint64_t)i, (uint64_t)op->index);
		double a = ts_geometry_rotation_draw(op, &r);
		ck_assert(a >= -10 && a < 30);
		sum += a;
		lo = fmin(lo, a);
		hi = fmax(hi, a);
	}
	/* uniform: the mean within 4 standard errors (40 / sqrt(12 n)) */
	ck_assert_double_eq_tol(sum / n, 10, 4 * 40 / sqrt(12.0 * n));
	ck_assert(lo < -9.9 && hi > 29.9);
	ts_plan_destroy(p);
	p = plan_of("random_rotation(15)");
	ck_assert(p->ops[0].geo.degrees[0] == -15 && p->ops[0].geo.degrees[1] == 15);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(affine_draws)
{
	struct ts_plan *p = plan_of(
		"random_affine(5, translate = [0.1, 0.2], scale = 0.8..1.2, shear = [1, 2, -4, -3])");
	const struct ts_op *op = &p->ops[0];
	const int n = 20000;
	int tx_hist[17] = { 0 };
	double ssum = 0;
	for (int i = 0; i < n; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 1, 2, (uint64_t)i, (uint64_t)op->index);
		struct ts_geometry_affine_draw a;
		ts_geometry_affine_draw(op, 80, 60, &r, &a);
		ck_assert(a.angle >= -5 && a.angle < 5);
		/* whole pixels, |tx| <= 0.1 * 80, |ty| <= 0.2 * 60 */
		ck_assert(a.translate[0] == rint(a.translate[0]));
		ck_assert(fabs(a.translate[0]) <= 8 && fabs(a.translate[1]) <= 12);
		tx_hist[(int)a.translate[0] + 8]++;
		ck_assert(a.scale >= 0.8 && a.scale < 1.2);
		ssum += a.scale;
		ck_assert(a.shear[0] >= 1 && a.shear[0] < 2);
		ck_assert(a.shear[1] >= -4 && a.shear[1] < -3);
	}
	ck_assert_double_eq_tol(ssum / n, 1.0, 4 * 0.4 / sqrt(12.0 * n));
	/* rounding U(-8, 8): the ends get half a bin, the others one */
	for (int k = 1; k < 16; k++)
		ck_assert_double_eq_tol(tx_hist[k] / (double)n, 1 / 16.0, 0.006);
	ck_assert_double_eq_tol(tx_hist[0] / (double)n, 1 / 32.0, 0.005);
	ts_plan_destroy(p);
	/* nothing but the angle is drawn when nothing else is given */
	p = plan_of("random_affine([3, 4])");
	struct ts_rng r;
	ts_rng_init(&r, 1, 0, 0, 0);
	struct ts_geometry_affine_draw a;
	ts_geometry_affine_draw(&p->ops[0], 80, 60, &r, &a);
	ck_assert(a.translate[0] == 0 && a.translate[1] == 0 && a.scale == 1 &&
		  a.shear[0] == 0 && a.shear[1] == 0);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(perspective_draws)
{
	struct ts_plan *p = plan_of("random_perspective(0.5, p = 0.25)");
	const struct ts_op *op = &p->ops[0];
	const int n = 20000;
	int applied = 0;
	for (int i = 0; i < n; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 3, 0, (uint64_t)i, (uint64_t)op->index);
		double s[8], e[8];
		if (!ts_geometry_perspective_draw(op, 80, 60, &r, s, e))
			continue;
		applied++;
		/* half sides 40 and 30: moves of 0..20 and 0..15 */
		ck_assert(s[2] == 79 && s[5] == 59);
		ck_assert(e[0] >= 0 && e[0] <= 20 && e[1] >= 0 && e[1] <= 15);
		ck_assert(e[2] >= 59 && e[2] <= 79 && e[3] >= 0 && e[3] <= 15);
		ck_assert(e[4] >= 59 && e[4] <= 79 && e[5] >= 44 && e[5] <= 59);
		ck_assert(e[6] >= 0 && e[6] <= 20 && e[7] >= 44 && e[7] <= 59);
		for (int k = 0; k < 8; k++)
			ck_assert(e[k] == floor(e[k]));
	}
	ck_assert_double_eq_tol(applied / (double)n, 0.25, 0.012);
	ts_plan_destroy(p);
}
END_TEST

/* The same stream position draws the same; another one, not. */
START_TEST(draws_deterministic)
{
	struct ts_plan *p = plan_of("random_affine(30, scale = 0.5..2)");
	struct ts_rng a, b, c;
	ts_rng_init(&a, 9, 1, 5, (uint64_t)p->ops[0].index);
	ts_rng_init(&b, 9, 1, 5, (uint64_t)p->ops[0].index);
	ts_rng_init(&c, 9, 1, 6, (uint64_t)p->ops[0].index);
	struct ts_geometry_affine_draw da, db, dc;
	ts_geometry_affine_draw(&p->ops[0], 80, 60, &a, &da);
	ts_geometry_affine_draw(&p->ops[0], 80, 60, &b, &db);
	ts_geometry_affine_draw(&p->ops[0], 80, 60, &c, &dc);
	ck_assert(memcmp(&da, &db, sizeof(da)) == 0);
	ck_assert(da.angle != dc.angle);
	ts_plan_destroy(p);
}
END_TEST

/* ---- ts_kernel_apply ---------------------------------------------------- */

START_TEST(apply_dispatch)
{
	struct ts_plan *p = plan_of("rotate(90, expand = true) | pad([1, 2]) | erase(0, 0, 1, 1, 250)");
	struct ts_image img = { 0 }, tmp = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, 80, 60, 3, TS_DTYPE_U8), 0);
	memset(img.data, 100, ts_image_bytes(&img));
	struct ts_error err = { 0 };
	for (int i = 0; i < 3; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 0, 0, 0, (uint64_t)p->ops[i].index);
		ck_assert_int_eq(ts_kernel_apply(&p->ops[i], &img, &tmp, &r, &err), 0);
	}
	/* 60 x 80, padded by 1 left and right, 2 top and bottom */
	ck_assert_int_eq(img.width, 62);
	ck_assert_int_eq(img.height, 84);
	ck_assert_uint_eq(img.data[0], 250);
	ck_assert_uint_eq(img.data[3], 0);
	ck_assert_uint_eq(img.data[2 * img.stride + 3], 100);
	/* the checker's shape agrees with what ran */
	ck_assert_int_eq(p->ops[1].out_w, 62);
	ck_assert_int_eq(p->ops[1].out_h, 84);
	ts_image_free(&img);
	ts_image_free(&tmp);
	ts_plan_destroy(p);
}
END_TEST

/* random_perspective(1.0) on small images draws corners three of which
 * lie on one line (1% of the draws at 32x32, always at 1x1): the sample
 * is kept as it is, never an error that stops the run (found by the
 * recipe audit: a 32 px recipe stopped after 202 images). */
START_TEST(perspective_degenerate_draw)
{
	struct ts_plan *p = plan_of("random_perspective(1.0, p = 1)");
	const struct ts_op *op = &p->ops[0];
	const int sizes[] = { 1, 2, 3, 32 };
	int degenerate = 0;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		const int n = sizes[k];
		for (int i = 0; i < 2000; i++) {
			struct ts_image img = { 0 }, tmp = { 0 };
			struct ts_error err = { 0 };
			struct ts_rng r, d;
			double start[8], end[8], c[8];
			ck_assert_int_eq(ts_image_reserve(&img, n, n, 3, TS_DTYPE_U8), 0);
			memset(img.data, 77, ts_image_bytes(&img));
			ts_rng_init(&r, 3, 0, (uint64_t)i, (uint64_t)op->index);
			d = r;
			ck_assert(ts_geometry_perspective_draw(op, n, n, &d, start, end));
			const bool degen = ts_geom_perspective(start, end, c) < 0;
			degenerate += degen;
			ck_assert_int_eq(ts_kernel_apply(op, &img, &tmp, &r, &err), 0);
			ck_assert_int_eq(img.width, n);
			ck_assert_int_eq(img.height, n);
			if (degen)
				for (size_t b = 0; b < ts_image_bytes(&img); b++)
					ck_assert_uint_eq(img.data[b], 77);
			ts_image_free(&img);
			ts_image_free(&tmp);
		}
	}
	ck_assert_int_gt(degenerate, 2000);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(apply_refuses)
{
	struct ts_plan *p = plan_of("rotate(10)");
	struct ts_image img = { 0 }, tmp = { 0 };
	struct ts_error err = { 0 };
	struct ts_rng r;
	ts_rng_init(&r, 0, 0, 0, 0);
	ck_assert_int_eq(ts_image_reserve(&img, 4, 4, 1, TS_DTYPE_U16), 0);
	ck_assert_int_eq(ts_kernel_apply(&p->ops[0], &img, &tmp, &r, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "rotate needs uint8"));
	ts_plan_destroy(p);
	p = plan_of("pad(-20)"); /* fits 80 x 60, not 40 x 40 */
	ck_assert_int_eq(ts_image_reserve(&img, 40, 40, 1, TS_DTYPE_U8), 0);
	ck_assert_int_eq(ts_kernel_apply(&p->ops[0], &img, &tmp, &r, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "pad crops the whole 40x40 image"));
	ts_image_free(&img);
	ts_image_free(&tmp);
	ts_plan_destroy(p);
}
END_TEST

/* ---- the checker ---- */

START_TEST(check_plan)
{
	const char *src =
		"pipeline p =\n"
		"    synthetic([8, 10], count = 4)\n"
		"    | rotate(30, interpolation = bilinear, expand = true, fill = [1, 2, 3])\n"
		"    | affine(-5, [2, 3], 1.5, [0.3], center = [1, 2])\n"
		"    | pad([1, 2, 3, 4], 7, symmetric)\n"
		"    | random_rotation(10) | random_affine([1, 2], shear = 3)\n"
		"    | random_perspective | erase(1, 2, 3, 4, [0, 1, 2])\n"
		"    | perspective([0, 0, 13, 0, 13, 17, 0, 17], [1.5, 2, 12, 0, 13, 17, 0, 16],\n"
		"                  interpolation = bicubic)\n"
		"    | to(float32, nchw) | batch(2)\n";
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(src, &d, &rc);
	if (rc) {
		char *t = ts_diags_render(&d);
		ck_abort_msg("%s", t);
	}
	ts_diags_fini(&d);
	ck_assert_uint_eq(p->n_ops, 9);
	const struct ts_op *o = p->ops;
	ck_assert_int_eq(o[0].kind, TS_OP_ROTATE);
	ck_assert(o[0].geo.angle == 30 && o[0].geo.expand && o[0].geo.interp == TS_INTERP_BILINEAR);
	ck_assert_int_eq(o[0].geo.n_fill, 3);
	ck_assert(o[0].geo.fill[2] == 3);
	/* Image.rotate(30, expand = True) of 10 x 8 */
	ck_assert_int_eq(o[0].out_w, 14);
	ck_assert_int_eq(o[0].out_h, 12);
	ck_assert_int_eq(o[1].kind, TS_OP_AFFINE);
	ck_assert(o[1].geo.translate[0] == 2 && o[1].geo.translate[1] == 3);
	ck_assert(o[1].geo.scale == 1.5 && o[1].geo.interp == TS_INTERP_NEAREST);
	/* [s] is [s, s], unrounded */
	ck_assert(o[1].geo.shear[0] == 0.3 && o[1].geo.shear[1] == 0.3);
	ck_assert(o[1].geo.has_center && o[1].geo.center[1] == 2);
	ck_assert_int_eq(o[2].kind, TS_OP_PAD);
	ck_assert_int_eq(o[2].geo.pad_mode, TS_PAD_SYMMETRIC);
	ck_assert_int_eq(o[2].out_w, 14 + 4);
	ck_assert_int_eq(o[2].out_h, 12 + 6);
	ck_assert_int_eq(o[3].kind, TS_OP_RANDOM_ROTATION);
	ck_assert(o[3].geo.degrees[0] == -10 && o[3].geo.degrees[1] == 10);
	ck_assert_int_eq(o[4].kind, TS_OP_RANDOM_AFFINE);
	ck_assert(o[4].geo.degrees[0] == 1 && o[4].geo.degrees[1] == 2);
	ck_assert_int_eq(o[4].geo.n_shear, 2);
	ck_assert(o[4].geo.shear_range[0] == -3 && !o[4].geo.has_scale &&
		  !o[4].geo.has_translate);
	ck_assert_int_eq(o[5].kind, TS_OP_RANDOM_PERSPECTIVE);
	ck_assert(o[5].geo.p == 0.5 && o[5].geo.distortion == 0.5 &&
		  o[5].geo.interp == TS_INTERP_BILINEAR);
	ck_assert_int_eq(o[6].kind, TS_OP_ERASE);
	ck_assert_int_eq(o[6].geo.erase_w, 4);
	ck_assert_int_eq(o[7].kind, TS_OP_PERSPECTIVE);
	ck_assert(o[7].geo.end[0] == 1.5 && o[7].geo.start[5] == 17 &&
		  o[7].geo.interp == TS_INTERP_BICUBIC);
	ck_assert_int_eq(o[8].kind, TS_OP_OUTPUT);
	ck_assert_str_eq(ts_op_kind_name(TS_OP_RANDOM_PERSPECTIVE), "random_perspective");
	ts_plan_destroy(p);
}
END_TEST

/* One misuse each: the message and the column it points at. */
static const struct {
	const char *stage, *pre, *msg;
	int col;
} misuses[] = {
	{ "rotate(10)", "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ",
	  "'rotate' works on uint8 nhwc pixels, but the data is float32 nhwc here", 7 },
	{ "affine(10)", "| to(uint16) ",
	  "'affine' works on uint8 pixels, but the data is uint16 here", 7 },
	{ "rotate(10, fill = [1, 2])", "",
	  "'rotate' has 2 fill values, but the image has 3 channels", 25 },
	{ "rotate(10, fill = 300)", "", "parameter 'fill' must be between 0 and 255, got 300", 25 },
	{ "rotate(10, interpolation = area)", "", "unknown value 'area' for parameter 'interpolation'", 34 },
	{ "rotate(10, center = [1])", "", "parameter 'center' expects 2 numbers, got 1", 27 },
	{ "affine(10, translate = [1, 2, 3])", "", "parameter 'translate' expects 2 numbers, got 3", 30 },
	{ "affine(10, scale = 0)", "", "parameter 'scale' must be between 0.001 and 1000", 26 },
	{ "affine(10, shear = [1, 2, 3])", "", "parameter 'shear' expects 1 or 2 numbers, got 3", 26 },
	{ "pad([1, 2, 3])", "", "parameter 'padding' expects 1, 2 or 4 numbers, got 3", 11 },
	{ "pad(1.5)", "", "parameter 'padding' expects whole pixels, got 1.5", 11 },
	{ "pad(-4)", "", "pad of the 8x8 image by [-4, -4, -4, -4] crops all of it", 11 },
	{ "pad(2, fill = 256)", "", "pad's fill 256 is above 255, the largest uint8 level", 21 },
	{ "pad(2, padding_mode = wrap)", "", "unknown value 'wrap' for parameter 'padding_mode'", 29 },
	{ "pad(2)", "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ",
	  "'pad' works on uint8 or uint16 nhwc pixels, but the data is float32 nhwc here", 7 },
	{ "erase(0, 0, 2, 2, 1.5)", "", "erase's value 1.5 is not a uint8 level", 25 },
	{ "erase(9, 0, 2, 2)", "", "erase's box at row 9, column 0 is outside the 8x8 image", 13 },
	{ "erase(0, 0, 2, 2, [1, 2])", "", "'erase' has 2 value values, but the image has 3 channels", 25 },
	{ "erase(0, 0, 2, 2)", "| to(float32, nchw) ",
	  "'erase' works on nhwc uint8, uint16 or float32 data, but the data is float32 nchw here", 7 },
	{ "erase(-1, 0, 2, 2)", "", "parameter 'i' must not be negative", 13 },
	{ "random_rotation(-5)", "", "parameter 'degrees' must not be negative as one number, got -5", 23 },
	{ "random_rotation([5, 1])", "", "parameter 'degrees' expects one number or [lo, hi]", 23 },
	{ "random_affine(5, translate = [0.5, 2])", "", "parameter 'translate' must be between 0 and 1, got 2", 42 },
	{ "random_affine(5, shear = [1, 2, 3])", "", "parameter 'shear' expects 1, 2 or 4 numbers, got 3", 32 },
	{ "random_affine(5, shear = [3, 2])", "", "parameter 'shear' has an empty range: 3 is above 2", 32 },
	{ "random_affine(5, scale = 0..2)", "", "parameter 'scale' must be between 0.001 and 1000", 32 },
	{ "random_perspective(1.5)", "", "parameter 'distortion_scale' must be between 0 and 1, got 1.5", 26 },
	{ "perspective([0, 0, 7, 0, 7, 7, 0, 7], [0, 0, 7, 0, 7, 7])", "",
	  "parameter 'endpoints' expects 8 numbers, got 6", 45 },
	{ "perspective([0, 0, 7, 0, 7, 7, 0, 7, 1], [0, 0, 7, 0, 7, 7, 0, 7])", "",
	  "parameter 'startpoints' expects at most 8 numbers, got 9", 19 },
	{ "perspective([0, 0, 7, 0, 7, 7, 0, 7], [0, 0, 3, 0, 7, 0, 0, 7])", "",
	  "perspective's corners do not make a quadrilateral", 45 },
	{ "perspective([0, 0, 7, 0, 7, 7, 0, 7], [0, 0, 7, 0, 7, 7, 0, 7], fill = [1, 2])", "",
	  "'perspective' has 2 fill values, but the image has 3 channels", 78 },
	{ "random_rotation(10, expand = true)", "", "batch", 7 },
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
	snprintf(want, sizeof(want), "t.ts:%d:%d: error: ",
		 strcmp(misuses[_i].msg, "batch") ? 4 : 5, misuses[_i].col);
	ck_assert_msg(strstr(t, want) && strstr(t, misuses[_i].msg),
		      "case %d: want %s...%s in:\n%s", _i, want, misuses[_i].msg, t);
	free(t);
	ts_diags_fini(&d);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("geometry");
	TCase *k = tcase_create("kernels");
	tcase_add_loop_test(k, rotate_pil, 0,
			    (int)(sizeof(rotate_cases) / sizeof(rotate_cases[0])));
	tcase_add_test(k, rotate_sizes);
	tcase_add_test(k, affine_pil);
	tcase_add_test(k, affine_channels);
	tcase_add_loop_test(k, affine_nearest_runs, 0, 4);
	tcase_add_test(k, affine_translate_runs);
	tcase_add_test(k, perspective_coefficients);
	tcase_add_test(k, degenerate_maps);
	tcase_add_loop_test(k, pad_modes, 0, (int)(sizeof(pad_cases) / sizeof(pad_cases[0])));
	tcase_add_test(k, pad_crop_and_u16);
	tcase_add_test(k, erase_box);
	suite_add_tcase(s, k);
	TCase *r = tcase_create("draws");
	tcase_add_test(r, rotation_draws);
	tcase_add_test(r, affine_draws);
	tcase_add_test(r, perspective_draws);
	tcase_add_test(r, draws_deterministic);
	suite_add_tcase(s, r);
	TCase *a = tcase_create("apply");
	tcase_add_test(a, apply_dispatch);
	tcase_add_test(a, apply_refuses);
	tcase_add_test(a, perspective_degenerate_draw);
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
