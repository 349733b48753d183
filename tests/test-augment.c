/* test-augment.c - augment kernels and the fused output stage on tiny
 * images with hand-computed torchvision/PIL values. The bit-exactness on
 * real photos is tests/torch-equal.py's job. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "registry.h"
#include "unit-dsl.h"

static struct ts_image make_u8(int w, int h, int c, const uint8_t *px)
{
	struct ts_image img = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, w, h, c, TS_DTYPE_U8), 0);
	if (px)
		memcpy(img.data, px, (size_t)w * h * c);
	return img;
}

/* ---- boxes ---- */

static const struct {
	int w, h, size_h, size_w, ow, oh, max_size;
} resize_dims_cases[] = {
	{ 500, 375, 256, 0, 341, 256, 0 },  /* int(256 * 500 / 375) = 341 */
	{ 375, 500, 256, 0, 256, 341, 0 },
	{ 333, 500, 256, 0, 256, 384, 0 },  /* 384.38 truncated */
	{ 256, 256, 256, 0, 256, 256, 0 },
	{ 100, 10, 20, 0, 200, 20, 0 },
	{ 640, 480, 100, 50, 50, 100, 0 },  /* exact size: width 50, height 100 */
	/* max_size: torchvision's _compute_resized_output_size gives these */
	{ 500, 375, 256, 0, 300, 225, 300 },
	{ 375, 500, 256, 0, 225, 300, 300 },
	{ 1000, 100, 50, 0, 400, 40, 400 },
	{ 100, 1000, 50, 0, 5, 51, 51 },
	{ 256, 256, 256, 0, 256, 256, 300 },   /* within the bound */
	{ 640, 480, 100, 0, 133, 100, 1000 },
	{ 100000, 1, 10, 0, 11, 1, 11 },       /* torchvision's 0 (a failure) is 1 */
};

START_TEST(resize_dims)
{
	struct ts_op op = { .kind = TS_OP_RESIZE,
			    .resize.size_h = resize_dims_cases[_i].size_h,
			    .resize.size_w = resize_dims_cases[_i].size_w,
			    .resize.max_size = resize_dims_cases[_i].max_size };
	int ow = -1, oh = -1;
	ts_aug_resize_dims(resize_dims_cases[_i].w, resize_dims_cases[_i].h, &op.resize,
			   &ow, &oh);
	ck_assert_int_eq(ow, resize_dims_cases[_i].ow);
	ck_assert_int_eq(oh, resize_dims_cases[_i].oh);
}
END_TEST

static const struct {
	int w, h, cw, ch, x, y;
} center_cases[] = {
	{ 400, 350, 224, 224, 88, 63 },
	{ 401, 351, 224, 224, 88, 64 },  /* round(88.5) = 88, round(63.5) = 64 */
	{ 225, 227, 224, 224, 0, 2 },    /* round(0.5) = 0, round(1.5) = 2 */
	{ 10, 10, 12, 13, -1, -1 },      /* padding (2 // 2, 3 // 2) */
	{ 11, 10, 12, 10, 0, 0 },        /* pad left 1 // 2 = 0 */
	{ 5, 20, 9, 4, -2, 8 },
};

START_TEST(center_box)
{
	int x = 99, y = 99;
	ts_aug_center_box(center_cases[_i].w, center_cases[_i].h,
			  center_cases[_i].cw, center_cases[_i].ch, &x, &y);
	ck_assert_int_eq(x, center_cases[_i].x);
	ck_assert_int_eq(y, center_cases[_i].y);
}
END_TEST

/* A scale range of one value and a ratio of 1 makes the box size
 * computable by hand; the corner uses the 3rd and 4th draws. */
START_TEST(rrc_box_first_attempt)
{
	struct ts_op op = { .kind = TS_OP_RANDOM_RESIZED_CROP, .crop.scale_lo = 0.25,
			    .crop.scale_hi = 0.25, .crop.ratio_lo = 1.0, .crop.ratio_hi = 1.0 };
	struct ts_rng r, copy;
	int x, y, cw, ch;
	ts_rng_init(&r, 9, 1, 2, 3);
	copy = r;
	ts_aug_rrc_box(100, 80, &op.crop, &r, &x, &y, &cw, &ch);
	/* area 2000, side round(sqrt(2000)) = round(44.72) = 45 */
	ck_assert_int_eq(cw, 45);
	ck_assert_int_eq(ch, 45);
	(void)ts_rng_uniform(&copy);
	(void)ts_rng_uniform(&copy);
	ck_assert_int_eq(y, (int)ts_rng_below(&copy, 80 - 45 + 1));
	ck_assert_int_eq(x, (int)ts_rng_below(&copy, 100 - 45 + 1));
}
END_TEST

/* A header of 2147483647 x 1: the candidate sides do not fit an int,
 * and must be compared before any conversion (UBSan caught the
 * float-to-int overflow); the box still lies inside the image. */
START_TEST(rrc_box_huge)
{
	struct ts_op op = { .kind = TS_OP_RANDOM_RESIZED_CROP, .crop.scale_lo = 0.08,
			    .crop.scale_hi = 1.0, .crop.ratio_lo = 3.0 / 4, .crop.ratio_hi = 4.0 / 3 };
	struct ts_rng r;
	int x, y, cw, ch;
	ts_rng_init(&r, 1, 0, 0, 0);
	ts_aug_rrc_box(2147483647, 1, &op.crop, &r, &x, &y, &cw, &ch);
	ck_assert(cw > 0 && ch > 0 && x >= 0 && y >= 0);
	ck_assert((long long)x + cw <= 2147483647LL && y + ch <= 1);
}
END_TEST

/* A ratio of 4 with this scale range needs w = 2 h and fits on a wide
 * image: check the box follows the drawn numbers exactly. */
START_TEST(rrc_box_follows_draws)
{
	struct ts_op op = { .crop.scale_lo = 0.08, .crop.scale_hi = 1.0, .crop.ratio_lo = 3.0 / 4,
			    .crop.ratio_hi = 4.0 / 3 };
	for (uint64_t idx = 0; idx < 200; idx++) {
		struct ts_rng r, c;
		int x, y, cw, ch;
		ts_rng_init(&r, 1, 0, idx, 4);
		c = r;
		ts_aug_rrc_box(500, 375, &op.crop, &r, &x, &y, &cw, &ch);
		/* Recompute torchvision's loop from the same draws. */
		int ex = -1, ey = -1, ew = 0, eh = 0;
		for (int a = 0; a < 10 && ew == 0; a++) {
			double area = 500.0 * 375 * ts_rng_range(&c, 0.08, 1.0);
			double ar = exp(ts_rng_range(&c, log(3.0 / 4), log(4.0 / 3)));
			int w = (int)rint(sqrt(area * ar)), h = (int)rint(sqrt(area / ar));
			if (w > 0 && w <= 500 && h > 0 && h <= 375) {
				ey = (int)ts_rng_below(&c, (uint64_t)(375 - h + 1));
				ex = (int)ts_rng_below(&c, (uint64_t)(500 - w + 1));
				ew = w;
				eh = h;
			}
		}
		ck_assert_int_ne(ew, 0);
		ck_assert_int_eq(cw, ew);
		ck_assert_int_eq(ch, eh);
		ck_assert_int_eq(x, ex);
		ck_assert_int_eq(y, ey);
		ck_assert(x >= 0 && y >= 0 && x + cw <= 500 && y + ch <= 375);
	}
}
END_TEST

/* Scale 2 never fits: the center-crop fallback clamped to the ratio. */
static const struct {
	int w, h, x, y, cw, ch;
} rrc_fallback_cases[] = {
	{ 300, 100, 83, 0, 133, 100 },  /* 3 > 4/3: w = round(100 * 4/3) */
	{ 100, 300, 0, 83, 100, 133 },  /* 1/3 < 3/4: h = round(100 / 0.75) */
	{ 120, 100, 0, 0, 120, 100 },   /* within range: whole image */
};

START_TEST(rrc_box_fallback)
{
	struct ts_op op = { .crop.scale_lo = 2.0, .crop.scale_hi = 2.0, .crop.ratio_lo = 3.0 / 4,
			    .crop.ratio_hi = 4.0 / 3 };
	struct ts_rng r;
	int x, y, cw, ch;
	ts_rng_init(&r, 1, 2, 3, 4);
	ts_aug_rrc_box(rrc_fallback_cases[_i].w, rrc_fallback_cases[_i].h, &op.crop, &r,
		       &x, &y, &cw, &ch);
	ck_assert_int_eq(x, rrc_fallback_cases[_i].x);
	ck_assert_int_eq(y, rrc_fallback_cases[_i].y);
	ck_assert_int_eq(cw, rrc_fallback_cases[_i].cw);
	ck_assert_int_eq(ch, rrc_fallback_cases[_i].ch);
	/* 10 attempts of 2 draws each, nothing more. */
	struct ts_rng c;
	ts_rng_init(&c, 1, 2, 3, 4);
	for (int i = 0; i < 20; i++)
		(void)ts_rng_u64(&c);
	ck_assert_uint_eq(ts_rng_u64(&r), ts_rng_u64(&c));
}
END_TEST

START_TEST(random_crop_box_padding)
{
	struct ts_op op = { .kind = TS_OP_RANDOM_CROP, .crop.size_w = 32, .crop.size_h = 32,
			    .crop.padding = 4 };
	bool seen_lo = false, seen_hi = false;
	for (uint64_t i = 0; i < 500; i++) {
		struct ts_rng r, c;
		int x, y;
		ts_rng_init(&r, 3, 0, i, 1);
		c = r;
		ts_aug_random_crop_box(32, 32, &op.crop, &r, &x, &y);
		ck_assert_int_eq(y, (int)ts_rng_below(&c, 9) - 4);
		ck_assert_int_eq(x, (int)ts_rng_below(&c, 9) - 4);
		seen_lo |= x == -4;
		seen_hi |= x == 4;
	}
	ck_assert(seen_lo && seen_hi);
	/* Same size, no padding: the whole image, no draw. */
	struct ts_op same = { .crop.size_w = 10, .crop.size_h = 7 };
	struct ts_rng r;
	int x = 5, y = 5;
	ts_rng_init(&r, 0, 0, 0, 0);
	ts_aug_random_crop_box(10, 7, &same.crop, &r, &x, &y);
	ck_assert_int_eq(x, 0);
	ck_assert_int_eq(y, 0);
	ck_assert_uint_eq(r.ctr, 0);
}
END_TEST

START_TEST(tile_grid)
{
	struct ts_op op = { .tile.size_w = 64, .tile.size_h = 32, .tile.stride_w = 32, .tile.stride_h = 32 };
	int nx, ny;
	ts_aug_tile_grid(200, 100, &op.tile, &nx, &ny);
	ck_assert_int_eq(nx, 5); /* 0,32,64,96,128 (+64 <= 200) */
	ck_assert_int_eq(ny, 3);
	ts_aug_tile_grid(63, 100, &op.tile, &nx, &ny);
	ck_assert_int_eq(nx, 0);
}
END_TEST

/* ---- kernels ---- */

START_TEST(crop_padding)
{
	const uint8_t px[] = { 1, 2, 3, 4, 5, 6 }; /* 3x2 gray */
	struct ts_image in = make_u8(3, 2, 1, px), out = { 0 };
	ck_assert_int_eq(ts_aug_crop(&in, &out, -1, -1, 5, 4), 0);
	const uint8_t want[] = { 0, 0, 0, 0, 0, 0, 1, 2, 3, 0,
				 0, 4, 5, 6, 0, 0, 0, 0, 0, 0 };
	ck_assert_int_eq(out.width, 5);
	ck_assert_int_eq(out.height, 4);
	ck_assert_mem_eq(out.data, want, sizeof(want));
	/* Entirely outside: all zeros. */
	ck_assert_int_eq(ts_aug_crop(&in, &out, 10, 0, 2, 2), 0);
	const uint8_t zeros[4] = { 0 };
	ck_assert_mem_eq(out.data, zeros, 4);
	/* Inside. */
	ck_assert_int_eq(ts_aug_crop(&in, &out, 1, 1, 2, 1), 0);
	ck_assert_uint_eq(out.data[0], 5);
	ck_assert_uint_eq(out.data[1], 6);
	ts_image_free(&in);
	ts_image_free(&out);
}
END_TEST

START_TEST(flip_rgb)
{
	const uint8_t px[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9,
			       10, 11, 12, 13, 14, 15, 16, 17, 18 }; /* 3x2 RGB */
	struct ts_image img = make_u8(3, 2, 3, px);
	ts_aug_flip(&img, true);
	const uint8_t h[] = { 7, 8, 9, 4, 5, 6, 1, 2, 3,
			      16, 17, 18, 13, 14, 15, 10, 11, 12 };
	ck_assert_mem_eq(img.data, h, sizeof(h));
	ts_aug_flip(&img, true);
	ts_aug_flip(&img, false);
	const uint8_t v[] = { 10, 11, 12, 13, 14, 15, 16, 17, 18,
			      1, 2, 3, 4, 5, 6, 7, 8, 9 };
	ck_assert_mem_eq(img.data, v, sizeof(v));
	ts_image_free(&img);
}
END_TEST

START_TEST(flip_u16)
{
	struct ts_image img = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, 3, 1, 1, TS_DTYPE_U16), 0);
	uint16_t *p = (uint16_t *)(void *)img.data;
	p[0] = 1000;
	p[1] = 2000;
	p[2] = 65535;
	ts_aug_flip(&img, true);
	ck_assert_uint_eq(p[0], 65535);
	ck_assert_uint_eq(p[1], 2000);
	ck_assert_uint_eq(p[2], 1000);
	ts_image_free(&img);
}
END_TEST

/* Left-right flip of every pixel size the kernel specialises (u8 with 1,
 * 3 and 4 channels, f32 RGB) and the others, odd and even widths, rows
 * with padding past the pixels, against the mirror by index. */
static const struct {
	int c;
	enum ts_dtype t;
} flip_px_cases[] = {
	{ 1, TS_DTYPE_U8 },  { 2, TS_DTYPE_U8 },  { 3, TS_DTYPE_U8 },
	{ 4, TS_DTYPE_U8 },  { 3, TS_DTYPE_U16 }, { 1, TS_DTYPE_F32 },
	{ 3, TS_DTYPE_F32 }, { 4, TS_DTYPE_F32 },
};

START_TEST(flip_every_size)
{
	const int C = flip_px_cases[_i].c;
	const size_t px = (size_t)C * ts_dtype_size(flip_px_cases[_i].t);
	for (int w = 1; w <= 9; w++) {
		struct ts_image img = { 0 };
		ck_assert_int_eq(ts_image_reserve(&img, w, 3, C, flip_px_cases[_i].t), 0);
		/* a stride past the row: the padding must stay as it is */
		img.stride = (size_t)w * px + 5;
		uint8_t *buf = malloc(img.stride * 3), *want = malloc(img.stride * 3);
		ck_assert_ptr_nonnull(buf);
		ck_assert_ptr_nonnull(want);
		for (size_t i = 0; i < img.stride * 3; i++)
			buf[i] = (uint8_t)(i * 7 + 1);
		for (int y = 0; y < 3; y++) {
			memcpy(want + y * img.stride, buf + y * img.stride, img.stride);
			for (int x = 0; x < w; x++)
				memcpy(want + y * img.stride + (size_t)x * px,
				       buf + y * img.stride + (size_t)(w - 1 - x) * px, px);
		}
		uint8_t *own = img.data;
		img.data = buf;
		ts_aug_flip(&img, true);
		ck_assert_mem_eq(buf, want, img.stride * 3);
		img.data = own;
		free(buf);
		free(want);
		ts_image_free(&img);
	}
}
END_TEST

/* PIL's L = (19595 R + 38470 G + 7471 B + 32768) >> 16. */
static const struct {
	uint8_t r, g, b, l;
} gray_cases[] = {
	{ 255, 0, 0, 76 }, { 0, 255, 0, 150 }, { 0, 0, 255, 29 },
	{ 255, 255, 255, 255 }, { 0, 0, 0, 0 }, { 10, 200, 30, 124 },
};

START_TEST(grayscale_weights)
{
	const uint8_t px[] = { gray_cases[_i].r, gray_cases[_i].g, gray_cases[_i].b };
	struct ts_image in = make_u8(1, 1, 3, px), out = { 0 };
	ck_assert_int_eq(ts_aug_grayscale(&in, &out, 1), 0);
	ck_assert_int_eq(out.channels, 1);
	ck_assert_uint_eq(out.data[0], gray_cases[_i].l);
	ck_assert_int_eq(ts_aug_grayscale(&in, &out, 3), 0);
	for (int c = 0; c < 3; c++)
		ck_assert_uint_eq(out.data[c], gray_cases[_i].l);
	ts_image_free(&in);
	ts_image_free(&out);
}
END_TEST

/* Hand-computed PIL coefficients: 4 -> 2 bilinear has support 2, weights
 * (3/7, 3/7, 1/7) and (1/7, 3/7, 3/7); box averages pairs. */
START_TEST(resize_values)
{
	const uint8_t px[] = { 0, 100, 200, 255 };
	struct ts_image in = make_u8(4, 1, 1, px), out = { 0 };
	ck_assert_int_eq(ts_aug_resize(&in, &out, 2, 1, TS_INTERP_BILINEAR, true), 0);
	ck_assert_uint_eq(out.data[0], 71);  /* 500 / 7 = 71.4 */
	ck_assert_uint_eq(out.data[1], 209); /* 366.25 / 1.75 = 209.3 */
	ck_assert_int_eq(ts_aug_resize(&in, &out, 2, 1, TS_INTERP_AREA, true), 0);
	ck_assert_uint_eq(out.data[0], 50);
	ck_assert_uint_eq(out.data[1], 228); /* 227.5 rounds up */
	ck_assert_int_eq(ts_aug_resize(&in, &out, 2, 1, TS_INTERP_NEAREST, true), 0);
	ck_assert_uint_eq(out.data[0], 100); /* floor(0.5 * 2) = 1 */
	ck_assert_uint_eq(out.data[1], 255);
	ts_image_free(&in);
	ts_image_free(&out);
}
END_TEST

/* A constant image stays constant through any resize, in every dtype. */
static const struct {
	int w, h, ow, oh;
	enum ts_interp m;
} const_cases[] = {
	{ 37, 23, 10, 9, TS_INTERP_BILINEAR }, { 5, 4, 41, 33, TS_INTERP_BILINEAR },
	{ 37, 23, 10, 9, TS_INTERP_AREA }, { 37, 23, 50, 7, TS_INTERP_NEAREST },
	{ 300, 1, 3, 1, TS_INTERP_BILINEAR }, { 1, 1, 4, 4, TS_INTERP_BILINEAR },
};

START_TEST(resize_constant)
{
	static const enum ts_dtype dts[] = { TS_DTYPE_U8, TS_DTYPE_U16, TS_DTYPE_F32 };
	for (size_t d = 0; d < 3; d++) {
		struct ts_image in = { 0 }, out = { 0 };
		int w = const_cases[_i].w, h = const_cases[_i].h;
		ck_assert_int_eq(ts_image_reserve(&in, w, h, 3, dts[d]), 0);
		for (size_t k = 0; k < (size_t)w * h * 3; k++) {
			if (dts[d] == TS_DTYPE_U8)
				in.data[k] = 173;
			else if (dts[d] == TS_DTYPE_U16)
				((uint16_t *)(void *)in.data)[k] = 44444;
			else
				((float *)(void *)in.data)[k] = 0.3f;
		}
		ck_assert_int_eq(ts_aug_resize(&in, &out, const_cases[_i].ow,
					       const_cases[_i].oh, const_cases[_i].m, true), 0);
		ck_assert_int_eq(out.width, const_cases[_i].ow);
		ck_assert_int_eq(out.height, const_cases[_i].oh);
		ck_assert_int_eq(out.dtype, dts[d]);
		for (size_t k = 0; k < (size_t)out.width * out.height * 3; k++) {
			if (dts[d] == TS_DTYPE_U8)
				ck_assert_uint_eq(out.data[k], 173);
			else if (dts[d] == TS_DTYPE_U16)
				ck_assert_uint_eq(((uint16_t *)(void *)out.data)[k], 44444);
			else
				ck_assert_float_eq_tol(((float *)(void *)out.data)[k], 0.3f, 1e-6);
		}
		ts_image_free(&in);
		ts_image_free(&out);
	}
}
END_TEST

/* ts_aug_resize_window on the region ts_aug_resize_span gives is
 * ts_aug_resize of the whole image cropped, byte for byte, in every dtype
 * and interpolation, up and down, with windows at the edges and inside;
 * a region short of a tap is refused. */
START_TEST(resize_window_is_crop)
{
	static const enum ts_dtype dts[] = { TS_DTYPE_U8, TS_DTYPE_U16, TS_DTYPE_F32 };
	static const struct { int w, h, rw, rh; enum ts_interp m; bool aa; } cs[] = {
		{ 415, 377, 282, 256, TS_INTERP_BILINEAR, true },
		{ 131, 97, 300, 220, TS_INTERP_BILINEAR, true },
		{ 200, 150, 61, 150, TS_INTERP_AREA, true },
		{ 200, 150, 200, 77, TS_INTERP_BILINEAR, false },
		{ 97, 211, 97, 211, TS_INTERP_BILINEAR, true },
		{ 415, 377, 282, 256, TS_INTERP_BICUBIC, true },   /* negative lobes */
		{ 131, 97, 300, 220, TS_INTERP_LANCZOS, true },
		{ 200, 150, 77, 150, TS_INTERP_LANCZOS, false },
	};
	unsigned seed = 12345;
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++)
		for (size_t d = 0; d < 3; d++)
			for (int chn = 1; chn <= 3; chn += 2) {
				struct ts_image src = { 0 }, full = { 0 }, win = { 0 };
				ck_assert_int_eq(ts_image_reserve(&src, cs[c].w, cs[c].h, chn, dts[d]), 0);
				size_t n = (size_t)cs[c].w * cs[c].h * chn;
				for (size_t k = 0; k < n; k++) {
					seed = seed * 1103515245u + 12345u;
					unsigned v = (seed >> 16) & 0xff;
					if (dts[d] == TS_DTYPE_U8)
						src.data[k] = (uint8_t)v;
					else if (dts[d] == TS_DTYPE_U16)
						((uint16_t *)(void *)src.data)[k] = (uint16_t)(v * 257u);
					else
						((float *)(void *)src.data)[k] = (float)v / 255.0f;
				}
				ck_assert_int_eq(ts_aug_resize(&src, &full, cs[c].rw, cs[c].rh,
							       cs[c].m, cs[c].aa), 0);
				const int wins[][4] = {
					{ 0, 0, cs[c].rw, cs[c].rh }, { 0, 0, 1, 1 },
					{ cs[c].rw / 3, cs[c].rh / 4, cs[c].rw / 2, cs[c].rh / 2 },
					{ cs[c].rw - 5, cs[c].rh - 3, 5, 3 },
				};
				const size_t px = (size_t)chn * ts_dtype_size(dts[d]);
				for (size_t k = 0; k < 4; k++) {
					struct ts_aug_window a = {
						.full_w = cs[c].w, .full_h = cs[c].h,
						.rw = cs[c].rw, .rh = cs[c].rh, .ox = wins[k][0],
						.oy = wins[k][1], .ow = wins[k][2], .oh = wins[k][3],
					};
					int x0, x1, y0, y1;
					ts_aug_resize_span(a.full_w, a.rw, cs[c].m, cs[c].aa, a.ox, a.ow, &x0, &x1);
					ts_aug_resize_span(a.full_h, a.rh, cs[c].m, cs[c].aa, a.oy, a.oh, &y0, &y1);
					ck_assert(0 <= x0 && x0 < x1 && x1 <= a.full_w);
					ck_assert(0 <= y0 && y0 < y1 && y1 <= a.full_h);
					/* the region as a view into the source */
					struct ts_image reg = src;
					reg.data += (size_t)y0 * src.stride + (size_t)x0 * px;
					reg.width = x1 - x0;
					reg.height = y1 - y0;
					a.in_x = x0;
					a.in_y = y0;
					ck_assert_int_eq(ts_aug_resize_window(&reg, &win, &a, cs[c].m, cs[c].aa), 0);
					ck_assert_int_eq(win.width, a.ow);
					ck_assert_int_eq(win.height, a.oh);
					for (int y = 0; y < a.oh; y++)
						ck_assert_msg(memcmp(win.data + (size_t)y * win.stride,
								     full.data + (size_t)(a.oy + y) * full.stride +
								     (size_t)a.ox * px, (size_t)a.ow * px) == 0,
							      "case %zu dtype %zu c%d window %zu row %d differs",
							      c, d, chn, k, y);
					/* one column short of the region: refused, not read */
					if (x1 - x0 > 1 && (x0 > 0 || x1 < a.full_w) && a.rw != a.full_w) {
						reg.width--;
						if (x0 > 0) {
							reg.data += px;
							a.in_x++;
						}
						ck_assert_int_eq(ts_aug_resize_window(&reg, &win, &a, cs[c].m,
										      cs[c].aa), -EINVAL);
					}
				}
				ts_image_free(&src);
				ts_image_free(&full);
				ts_image_free(&win);
			}
}
END_TEST

/* PIL blend: brightness 0.5 of 201 is (uint8)(100.5) = 100; above 1 it
 * clips. Contrast blends with the rounded mean of L. */
START_TEST(color_adjust_values)
{
	const uint8_t px[] = { 201, 0, 255, 10, 20, 30 };
	struct ts_image img = make_u8(2, 1, 3, px);
	ts_aug_brightness(&img, 0.5f);
	const uint8_t half[] = { 100, 0, 127, 5, 10, 15 };
	ck_assert_mem_eq(img.data, half, 6);
	memcpy(img.data, px, 6);
	ts_aug_brightness(&img, 2.0f);
	const uint8_t twice[] = { 255, 0, 255, 20, 40, 60 };
	ck_assert_mem_eq(img.data, twice, 6);
	/* L of the pixels: (201,0,255) -> 89, (10,20,30) -> 18; mean 53.5 ->
	 * int(54.0) = 54. Factor 0: every value becomes 54. */
	memcpy(img.data, px, 6);
	ts_aug_contrast(&img, 0.0f);
	for (int k = 0; k < 6; k++)
		ck_assert_uint_eq(img.data[k], 54);
	/* Saturation 0: each pixel its L. */
	memcpy(img.data, px, 6);
	ts_aug_saturation(&img, 0.0f);
	const uint8_t sat[] = { 89, 89, 89, 18, 18, 18 };
	ck_assert_mem_eq(img.data, sat, 6);
	ts_image_free(&img);
}
END_TEST

START_TEST(filter_keep)
{
	uint8_t px[10];
	for (int k = 0; k < 10; k++)
		px[k] = k < 5 ? 255 : 0;
	struct ts_image img = make_u8(10, 1, 1, px);
	struct ts_op f = { .kind = TS_OP_FILTER, .filter.threshold = 0.5, .filter.max_fraction = 0.4 };
	ck_assert(!ts_aug_filter_keep(&f, &img));
	f.filter.max_fraction = 0.5;
	ck_assert(ts_aug_filter_keep(&f, &img));
	ts_image_free(&img);
}
END_TEST

/* ---- float16 ---- */

static const struct {
	float f;
	uint16_t h;
} f16_cases[] = {
	{ 0.0f, 0x0000 }, { -0.0f, 0x8000 }, { 1.0f, 0x3c00 }, { -2.0f, 0xc000 },
	{ 65504.0f, 0x7bff }, { 65519.0f, 0x7bff }, { 65520.0f, 0x7c00 },
	{ 1e10f, 0x7c00 }, { -1e10f, 0xfc00 }, { INFINITY, 0x7c00 },
	{ -INFINITY, 0xfc00 }, { 0x1p-24f, 0x0001 }, { 0x1p-25f, 0x0000 },
	{ 0x1.8p-25f, 0x0001 }, { 0x1.8p-24f, 0x0002 }, /* tie: 1.5 -> 2 */
	{ 0x1p-14f, 0x0400 }, { 0x1.ffap-15f, 0x03ff }, /* below the tie */
	{ 0x1.ffcp-15f, 0x0400 }, /* tie: up to even */ { 0x1.ffep-15f, 0x0400 },
	{ 1.0f + 0x1p-11f, 0x3c00 }, /* tie to even, down */
	{ 1.0f + 0x3p-11f, 0x3c02 }, /* tie to even, up */
	{ 0.1f, 0x2e66 }, { 1e-8f, 0x0000 }, { 2.1179039478302f, 0x403c },
};

START_TEST(f16_values)
{
	ck_assert_uint_eq(ts_out_f16_from_f32(f16_cases[_i].f), f16_cases[_i].h);
}
END_TEST

START_TEST(f16_nan_and_roundtrip)
{
	uint16_t n = ts_out_f16_from_f32(NAN);
	ck_assert_uint_eq(n & 0x7c00, 0x7c00);
	ck_assert_uint_ne(n & 0x03ff, 0);
	ck_assert(isnan(ts_out_f32_from_f16(n)));
	/* Every non-NaN half survives half -> float -> half. */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue;
		ck_assert_uint_eq(ts_out_f16_from_f32(ts_out_f32_from_f16((uint16_t)h)), h);
	}
	ck_assert_float_eq(ts_out_f32_from_f16(0x3555), 0x1.554p-2f);
}
END_TEST

/* ---- output stage ---- */

static struct ts_op part(enum ts_op_kind k, int index)
{
	struct ts_op op = { .kind = k, .index = index };
	if (k == TS_OP_FLIP)
		op.flip.p = 1.0;
	else if (k == TS_OP_RESIZE)
		op.resize.antialias = true;
	return op;
}

/* 2x1 RGB through normalize(mean .5, std .25) and to(float32, nchw):
 * element (c, y, x) = (v / 255 - .5) / .25 in float32. */
START_TEST(output_normalize_nchw)
{
	const uint8_t px[] = { 0, 51, 255, 128, 200, 7 };
	struct ts_image in = make_u8(2, 1, 3, px), t1 = { 0 }, t2 = { 0 };
	struct ts_op parts[2] = { part(TS_OP_NORMALIZE, 1), part(TS_OP_TO, 2) };
	parts[0].norm.n_mean = 3;
	for (int c = 0; c < 3; c++) {
		parts[0].norm.mean[c] = 0.5f;
		parts[0].norm.std[c] = 0.25f;
	}
	parts[1].to.dtype = TS_DTYPE_F32;
	parts[1].to.layout = TS_LAYOUT_NCHW;
	struct ts_op out = { .kind = TS_OP_OUTPUT, .output.parts = parts, .output.n_parts = 2 };
	float dst[6];
	ck_assert_int_eq(ts_out_write(&out, &in, 1, 0, 0, &t1, &t2, dst, sizeof(dst), NULL), 0);
	for (int c = 0; c < 3; c++)
		for (int x = 0; x < 2; x++) {
			volatile float u = (float)px[x * 3 + c] / 255.0f;
			volatile float d = u - 0.5f;
			float want = d / 0.25f;
			ck_assert_float_eq(dst[c * 2 + x], want);
		}
	ck_assert_float_eq(dst[0], -2.0f);
	ck_assert_float_eq(dst[4], 2.0f); /* c 2, x 0: 255 */
	ts_image_free(&in);
	ts_image_free(&t1);
	ts_image_free(&t2);
}
END_TEST

/* Layouts and dtypes without normalize: uint8 is the identity (NCHW
 * planes), float32 is v / 255, float16 its rounding, with a flip. */
START_TEST(output_layouts_dtypes)
{
	const uint8_t px[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }; /* 2x2 RGB */
	struct ts_image in = make_u8(2, 2, 3, px), t1 = { 0 }, t2 = { 0 };
	struct ts_op parts[2] = { part(TS_OP_FLIP, 1), part(TS_OP_TO, 2) };
	parts[0].flip.horizontal = true;
	parts[1].to.dtype = TS_DTYPE_U8;
	parts[1].to.layout = TS_LAYOUT_NCHW;
	struct ts_op out = { .kind = TS_OP_OUTPUT, .output.parts = parts, .output.n_parts = 2 };
	uint8_t u8[12];
	ck_assert_int_eq(ts_out_write(&out, &in, 1, 0, 0, &t1, &t2, u8, 12, NULL), 0);
	const uint8_t want[] = { 4, 1, 10, 7, 5, 2, 11, 8, 6, 3, 12, 9 };
	ck_assert_mem_eq(u8, want, 12);

	parts[1].to.dtype = TS_DTYPE_F32;
	parts[1].to.layout = TS_LAYOUT_NHWC;
	float f[12];
	ck_assert_int_eq(ts_out_write(&out, &in, 1, 0, 0, &t1, &t2, f, sizeof(f), NULL), 0);
	ck_assert_float_eq(f[0], 4.0f / 255.0f);
	ck_assert_float_eq(f[3], 1.0f / 255.0f);
	ck_assert_float_eq(f[11], 9.0f / 255.0f);

	parts[1].to.dtype = TS_DTYPE_F16;
	uint16_t h[12];
	ck_assert_int_eq(ts_out_write(&out, &in, 1, 0, 0, &t1, &t2, h, sizeof(h), NULL), 0);
	for (int k = 0; k < 12; k++)
		ck_assert_uint_eq(h[k], ts_out_f16_from_f32(f[k]));

	/* A wrong slot size is refused. */
	struct ts_error err = { 0 };
	ck_assert_int_eq(ts_out_write(&out, &in, 1, 0, 0, &t1, &t2, h, 10, &err), TS_E_ARG);
	ck_assert_int_eq(err.code, TS_E_ARG);
	ts_image_free(&in);
	ts_image_free(&t1);
	ts_image_free(&t2);
}
END_TEST

/* Resize + center crop through the output stage equals the kernels run
 * one by one. */
START_TEST(output_matches_kernels)
{
	struct ts_image in = { 0 }, a = { 0 }, b = { 0 }, t1 = { 0 }, t2 = { 0 };
	ck_assert_int_eq(ts_image_reserve(&in, 61, 47, 3, TS_DTYPE_U8), 0);
	for (size_t k = 0; k < ts_image_bytes(&in); k++)
		in.data[k] = (uint8_t)(k * 7919 % 251);
	struct ts_op parts[3] = { part(TS_OP_RESIZE, 1), part(TS_OP_CENTER_CROP, 2),
				  part(TS_OP_TO, 3) };
	parts[0].resize.size_h = 32; /* shorter side 32: 41x32 */
	parts[1].crop.size_w = parts[1].crop.size_h = 30;
	parts[2].to.dtype = TS_DTYPE_U8;
	struct ts_op out = { .kind = TS_OP_OUTPUT, .output.parts = parts, .output.n_parts = 3 };
	uint8_t dst[30 * 30 * 3];
	ck_assert_int_eq(ts_out_write(&out, &in, 1, 0, 0, &t1, &t2, dst, sizeof(dst), NULL), 0);
	ck_assert_int_eq(ts_aug_resize(&in, &a, 41, 32, TS_INTERP_BILINEAR, true), 0);
	ck_assert_int_eq(ts_aug_crop(&a, &b, 6, 1, 30, 30), 0); /* round(5.5) = 6 */
	ck_assert_mem_eq(dst, b.data, sizeof(dst));
	ts_image_free(&in);
	ts_image_free(&a);
	ts_image_free(&b);
	ts_image_free(&t1);
	ts_image_free(&t2);
}
END_TEST

/* ---- determinism of ts_kernel_apply ---- */

static void run_chain(uint64_t index, struct ts_image *img)
{
	struct ts_image tmp = { 0 };
	struct ts_op ops[4] = { part(TS_OP_RANDOM_RESIZED_CROP, 1), part(TS_OP_FLIP, 2),
				part(TS_OP_COLOR_JITTER, 3), part(TS_OP_NORMALIZE, 4) };
	ops[0].crop.size_w = ops[0].crop.size_h = 24;
	ops[0].crop.scale_lo = 0.08;
	ops[0].crop.scale_hi = 1.0;
	ops[0].crop.ratio_lo = 0.75;
	ops[0].crop.ratio_hi = 4.0 / 3;
	ops[1].flip.horizontal = true;
	ops[1].flip.p = 0.5;
	ops[2].jitter.brightness = ops[2].jitter.contrast = ops[2].jitter.saturation = 0.4;
	ops[3].norm.n_mean = 1;
	ops[3].norm.mean[0] = 0.5f;
	ops[3].norm.std[0] = 0.5f;
	ck_assert_int_eq(ts_image_reserve(img, 64, 48, 3, TS_DTYPE_U8), 0);
	for (size_t k = 0; k < ts_image_bytes(img); k++)
		img->data[k] = (uint8_t)(k * 31 % 256);
	for (int i = 0; i < 4; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 42, 7, index, (uint64_t)ops[i].index);
		ck_assert_int_eq(ts_kernel_apply(&ops[i], img, &tmp, &r, NULL), 0);
	}
	ts_image_free(&tmp);
}

START_TEST(apply_deterministic)
{
	struct ts_image a = { 0 }, b = { 0 }, c = { 0 };
	run_chain(5, &a);
	run_chain(5, &b);
	ck_assert_int_eq(a.dtype, TS_DTYPE_F32);
	ck_assert_int_eq(a.width, 24);
	ck_assert_mem_eq(a.data, b.data, ts_image_bytes(&a));
	bool differs = false;
	for (uint64_t i = 6; i < 10 && !differs; i++) {
		run_chain(i, &c);
		differs = memcmp(a.data, c.data, ts_image_bytes(&a)) != 0;
	}
	ck_assert(differs);
	ts_image_free(&a);
	ts_image_free(&b);
	ts_image_free(&c);
}
END_TEST

START_TEST(apply_rejects_unknown)
{
	struct ts_image img = make_u8(2, 2, 1, NULL), tmp = { 0 };
	struct ts_op op = part(TS_OP_DECODE, 0);
	struct ts_rng r;
	struct ts_error err = { 0 };
	ts_rng_init(&r, 0, 0, 0, 0);
	ck_assert_int_eq(ts_kernel_apply(&op, &img, &tmp, &r, &err), TS_E_ARG);
	ck_assert_int_eq(err.code, TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "decode"));
	ts_image_free(&img);
}
END_TEST

/* The class of bug where an operator reaches a shared kernel without the
 * fields it reads (random_resized_crop resampled with antialias false,
 * the zeroed op's, while resize set it): every operator the decode can
 * fuse (the crop family, a box each), compiled from the language with its
 * defaults, names in its box the filter torchvision samples with on PIL
 * (bilinear, antialiased) whenever it resamples, and its kernel applies
 * exactly that resample, on its own and as the output stage's part. A new
 * crop operator is covered by its row's flag alone. */
START_TEST(every_crop_resamples_as_pil)
{
	int resampling = 0;
	for (size_t r = 0; r < ts_registry_count(); r++) {
		const struct ts_opdef *def = ts_registry_at(r);
		if (!(def->flags & TS_OPF_FUSE_DECODE))
			continue;
		char src[256];
		snprintf(src, sizeof(src), "pipeline p = synthetic(4, width = 96, height = 80) "
			 "| %s([16, 16]) | batch(1)\n", def->name);
		struct ts_diags d;
		int rc;
		struct ts_plan *plan = compile(src, &d, &rc);
		ck_assert_msg(rc == 0 && plan, "%s: does not compile", def->name);
		const struct ts_op *op = NULL;
		for (size_t i = 0; i < plan->n_ops && !op; i++) {
			const struct ts_op *o = &plan->ops[i];
			if ((int)o->kind == def->op_kind)
				op = o;
			for (size_t j = 0; ts_op_is_output(o) && j < o->output.n_parts && !op; j++)
				if ((int)o->output.parts[j].kind == def->op_kind)
					op = &o->output.parts[j];
		}
		ck_assert_msg(op != NULL, "%s: not in its plan", def->name);
		const struct ts_kernel *k = ts_kernel_find(op->kind);
		ck_assert_msg(k && k->box, "%s: no box hook", def->name);
		struct ts_kernel_box b;
		struct ts_rng rng;
		ts_rng_init(&rng, 1, 0, 3, (uint64_t)op->index);
		k->box(op, 96, 80, &rng, &b);
		if (b.tw > 0) {
			resampling++;
			ck_assert_msg(b.antialias, "%s: resamples without antialias", def->name);
			ck_assert_msg(b.interp == TS_INTERP_BILINEAR, "%s: interpolation %d",
				      def->name, (int)b.interp);
			/* its kernel: the box resampled so, nothing else */
			struct ts_image img = { 0 }, tmp = { 0 }, want = { 0 };
			ck_assert_int_eq(ts_image_reserve(&img, 96, 80, 3, TS_DTYPE_U8), 0);
			for (size_t i = 0; i < ts_image_bytes(&img); i++)
				img.data[i] = (uint8_t)((i * 131 + i / 288 * 7) % 251);
			struct ts_image view = ts_image_view(&img, b.x, b.y, b.cw, b.ch);
			ck_assert_int_eq(ts_aug_resize(&view, &want, b.tw, b.th,
						       TS_INTERP_BILINEAR, true), 0);
			ts_rng_init(&rng, 1, 0, 3, (uint64_t)op->index);
			ck_assert_int_eq(ts_kernel_apply(op, &img, &tmp, &rng, NULL), 0);
			ck_assert_int_eq(img.width, want.width);
			ck_assert_int_eq(img.height, want.height);
			for (int y = 0; y < want.height; y++)
				ck_assert_mem_eq(img.data + (size_t)y * img.stride,
						 want.data + (size_t)y * want.stride,
						 (size_t)want.width * 3);
			ts_image_free(&img);
			ts_image_free(&tmp);
			ts_image_free(&want);
		}
		ts_plan_destroy(plan);
		ts_diags_fini(&d);
	}
	ck_assert_int_ge(resampling, 2); /* resize and random_resized_crop at least */
}
END_TEST

static Suite *augment_suite(void)
{
	Suite *s = suite_create("augment");
	TCase *tc = tcase_create("boxes");
	tcase_add_loop_test(tc, resize_dims, 0, (int)(sizeof(resize_dims_cases) / sizeof(resize_dims_cases[0])));
	tcase_add_loop_test(tc, center_box, 0, (int)(sizeof(center_cases) / sizeof(center_cases[0])));
	tcase_add_test(tc, rrc_box_first_attempt);
	tcase_add_test(tc, rrc_box_huge);
	tcase_add_test(tc, rrc_box_follows_draws);
	tcase_add_loop_test(tc, rrc_box_fallback, 0, (int)(sizeof(rrc_fallback_cases) / sizeof(rrc_fallback_cases[0])));
	tcase_add_test(tc, random_crop_box_padding);
	tcase_add_test(tc, tile_grid);
	tcase_add_test(tc, every_crop_resamples_as_pil);
	suite_add_tcase(s, tc);

	tc = tcase_create("kernels");
	tcase_add_test(tc, crop_padding);
	tcase_add_test(tc, flip_rgb);
	tcase_add_test(tc, flip_u16);
	tcase_add_loop_test(tc, flip_every_size, 0, (int)(sizeof(flip_px_cases) / sizeof(flip_px_cases[0])));
	tcase_add_loop_test(tc, grayscale_weights, 0, (int)(sizeof(gray_cases) / sizeof(gray_cases[0])));
	tcase_add_test(tc, resize_values);
	tcase_add_loop_test(tc, resize_constant, 0, (int)(sizeof(const_cases) / sizeof(const_cases[0])));
	tcase_add_test(tc, resize_window_is_crop);
	tcase_add_test(tc, color_adjust_values);
	tcase_add_test(tc, filter_keep);
	suite_add_tcase(s, tc);

	tc = tcase_create("float16");
	tcase_add_loop_test(tc, f16_values, 0, (int)(sizeof(f16_cases) / sizeof(f16_cases[0])));
	tcase_add_test(tc, f16_nan_and_roundtrip);
	suite_add_tcase(s, tc);

	tc = tcase_create("output");
	tcase_add_test(tc, output_normalize_nchw);
	tcase_add_test(tc, output_layouts_dtypes);
	tcase_add_test(tc, output_matches_kernels);
	suite_add_tcase(s, tc);

	tc = tcase_create("apply");
	tcase_add_test(tc, apply_deterministic);
	tcase_add_test(tc, apply_rejects_unknown);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(augment_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	ts_aug_scratch_free();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
