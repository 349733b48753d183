/*
 * test-preview.c - the library side of `tsrun preview`: values back to
 * display levels (grid.c) for every dtype, layout and channel count; the
 * bitmap font (font.c); PNG output read back with libpng (pngwrite.c); and
 * pictures of synthetic pipelines (preview.c): layout, cells, caption,
 * stages, refusals. tests/preview.py checks the pictures against a real
 * trainer.
 */
#include <check.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "augment.h"
#include "dsl.h"
#include "font.h"
#include "grid.h"
#include "pngwrite.h"
#include "policy.h"
#include "preview.h"
#include "rng.h"

static char root[64];

static struct ts_plan *compile(const char *text)
{
	struct ts_diags d;
	struct ts_plan *pl = NULL;
	ts_diags_init(&d, "t.ts", text, strlen(text));
	int rc = ts_dsl_compile(text, strlen(text), "t.ts", NULL, &d, &pl);
	ck_assert_msg(rc == 0, "compile failed: %s", d.n ? d.items[0].msg : "?");
	ts_diags_fini(&d);
	return pl;
}

static const uint8_t *px(const struct ts_image *img, int x, int y)
{
	return img->data + (size_t)y * img->stride + (size_t)x * 3;
}

/* ---- grid: values to levels ------------------------------------------- */

START_TEST(u8_layouts_and_channels)
{
	/* 2x3 image, 3 channels: NHWC and the same in NCHW give one picture. */
	uint8_t hwc[2 * 3 * 3], chw[3 * 2 * 3];
	for (int y = 0; y < 2; y++)
		for (int x = 0; x < 3; x++)
			for (int c = 0; c < 3; c++) {
				uint8_t v = (uint8_t)(y * 100 + x * 30 + c * 7);
				hwc[(y * 3 + x) * 3 + c] = v;
				chw[(c * 2 + y) * 3 + x] = v;
			}
	struct ts_grid_values v = {.map = TS_GRID_DIRECT};
	struct ts_image a = {0}, b = {0};
	ck_assert_int_eq(ts_grid_to_rgb(hwc, 2, 3, 3, TS_DTYPE_U8, TS_LAYOUT_NHWC, &v, &a), 0);
	ck_assert_int_eq(ts_grid_to_rgb(chw, 2, 3, 3, TS_DTYPE_U8, TS_LAYOUT_NCHW, &v, &b), 0);
	ck_assert_int_eq(a.width, 3);
	ck_assert_int_eq(a.height, 2);
	for (int y = 0; y < 2; y++)
		for (int x = 0; x < 3; x++) {
			ck_assert(memcmp(px(&a, x, y), &hwc[(y * 3 + x) * 3], 3) == 0);
			ck_assert(memcmp(px(&b, x, y), &hwc[(y * 3 + x) * 3], 3) == 0);
		}
	/* 1 channel: gray; 2: the first one gray; 4: the first three. */
	uint8_t g[6] = {0, 50, 100, 150, 200, 255};
	ck_assert_int_eq(ts_grid_to_rgb(g, 2, 3, 1, TS_DTYPE_U8, TS_LAYOUT_NHWC, &v, &a), 0);
	for (int i = 0; i < 6; i++)
		for (int c = 0; c < 3; c++)
			ck_assert_uint_eq(px(&a, i % 3, i / 3)[c], g[i]);
	uint8_t ga[4] = {10, 99, 20, 99};
	ck_assert_int_eq(ts_grid_to_rgb(ga, 1, 2, 2, TS_DTYPE_U8, TS_LAYOUT_NHWC, &v, &a), 0);
	ck_assert_uint_eq(px(&a, 1, 0)[2], 20);
	uint8_t rgba[4] = {1, 2, 3, 4};
	ck_assert_int_eq(ts_grid_to_rgb(rgba, 1, 1, 4, TS_DTYPE_U8, TS_LAYOUT_NHWC, &v, &a), 0);
	ck_assert(memcmp(px(&a, 0, 0), rgba, 3) == 0);
	ck_assert_int_eq(ts_grid_to_rgb(rgba, 1, 1, 5, TS_DTYPE_U8, TS_LAYOUT_NHWC, &v, &a),
			 TS_E_ARG);
	ts_image_free(&a);
	ts_image_free(&b);
}
END_TEST

START_TEST(u16_f16_f32)
{
	struct ts_image a = {0};
	struct ts_grid_values v = {.map = TS_GRID_U16};
	/* (x + 128) / 257: what to(uint8) of a uint16 image gives */
	uint16_t w[4] = {128, 129, 65535, 257 * 100 + 129};
	ck_assert_int_eq(ts_grid_to_rgb(w, 1, 4, 1, TS_DTYPE_U16, TS_LAYOUT_NHWC, &v, &a), 0);
	ck_assert_uint_eq(px(&a, 0, 0)[0], 0);
	ck_assert_uint_eq(px(&a, 1, 0)[0], 1);
	ck_assert_uint_eq(px(&a, 2, 0)[0], 255);
	ck_assert_uint_eq(px(&a, 3, 0)[0], 101);
	/* float in [0, 1]: round(x * 255), clamped; NaN black */
	v.map = TS_GRID_UNIT;
	float f[5] = {0.0f, 0.5f, 1.0f, 2.0f, NAN};
	ck_assert_int_eq(ts_grid_to_rgb(f, 1, 5, 1, TS_DTYPE_F32, TS_LAYOUT_NHWC, &v, &a), 0);
	ck_assert_uint_eq(px(&a, 1, 0)[0], 128);
	ck_assert_uint_eq(px(&a, 2, 0)[0], 255);
	ck_assert_uint_eq(px(&a, 3, 0)[0], 255);
	ck_assert_uint_eq(px(&a, 4, 0)[0], 0);
	uint16_t h[2] = {ts_out_f16_from_f32(0.25f), ts_out_f16_from_f32(-1.0f)};
	ck_assert_int_eq(ts_grid_to_rgb(h, 1, 2, 1, TS_DTYPE_F16, TS_LAYOUT_NHWC, &v, &a), 0);
	ck_assert_uint_eq(px(&a, 0, 0)[0], 64);
	ck_assert_uint_eq(px(&a, 1, 0)[0], 0);
	/* normalized: back through x * std + mean, per channel, NCHW */
	v = (struct ts_grid_values){.map = TS_GRID_UNNORM, .n = 3,
				    .mean = {0.485f, 0.456f, 0.406f},
				    .std = {0.229f, 0.224f, 0.225f}};
	uint8_t want[3] = {12, 200, 255};
	float n[3];
	for (int c = 0; c < 3; c++)
		n[c] = ((float)want[c] / 255.0f - v.mean[c]) / v.std[c];
	ck_assert_int_eq(ts_grid_to_rgb(n, 1, 1, 3, TS_DTYPE_F32, TS_LAYOUT_NCHW, &v, &a), 0);
	ck_assert(memcmp(px(&a, 0, 0), want, 3) == 0);
	ts_image_free(&a);
}
END_TEST

/* Which mapping a plan's samples get. */
static const struct {
	const char *ops;
	enum ts_grid_map map;
	float mean0;
} maps[] = {
	{"| decode(rgb) | center_crop(8)", TS_GRID_DIRECT, 0},
	{"| decode(gray, depth = 16) | center_crop(8)", TS_GRID_U16, 0},
	{"| decode(gray, depth = 16) | center_crop(8) | to(uint8)", TS_GRID_DIRECT, 0},
	{"| decode(rgb) | center_crop(8) | to(float16)", TS_GRID_UNIT, 0},
	{"| decode(rgb) | center_crop(8) | normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2])",
	 TS_GRID_UNNORM, 0.5f},
	{"| decode(rgb) | center_crop(8) | normalize([0.1, 0.4, 0.3], [0.2, 0.2, 0.2]) "
	 "| to(float16, nchw)", TS_GRID_UNNORM, 0.1f},
};

START_TEST(map_of_plan)
{
	char text[512];
	snprintf(text, sizeof(text), "pipeline p = folder(\"%s\") %s | batch(2)\n", root,
		 maps[_i].ops);
	struct ts_plan *pl = compile(text);
	struct ts_grid_values v;
	ts_grid_values_of(pl, NULL, &v);
	ck_assert_msg(v.map == maps[_i].map, "%s: map %d, want %d", maps[_i].ops, v.map,
		      maps[_i].map);
	if (v.map == TS_GRID_UNNORM) {
		ck_assert_int_eq(v.n, 3);
		ck_assert(v.mean[0] == maps[_i].mean0);
		char buf[256];
		ts_grid_values_describe(&v, pl->dtype, buf, sizeof(buf));
		ck_assert_ptr_nonnull(strstr(buf, "un-normalized"));
	}
	ts_plan_destroy(pl);
}
END_TEST

/* A normalize inside random_choice: without a sample, the branches count
 * where they agree (the same mean and std) and per_sample is set where
 * they do not; with one, its draw picks the branch, as the kernel's does
 * (policy.c): over 64 samples, both branches, each as the draw says. */
START_TEST(map_of_policy)
{
	char text[512];
	snprintf(text, sizeof(text), "pipeline p = folder(\"%s\") | decode(rgb) | center_crop(8) "
		 "| random_choice([normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), "
		 "normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2])]) | batch(2)\n", root);
	struct ts_plan *pl = compile(text);
	struct ts_grid_values v;
	ts_grid_values_of(pl, NULL, &v);
	ck_assert(v.map == TS_GRID_UNNORM && !v.per_sample && v.mean[0] == 0.5f);
	ts_plan_destroy(pl);

	snprintf(text, sizeof(text), "pipeline p = folder(\"%s\") | decode(rgb) | center_crop(8) "
		 "| random_choice([normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), "
		 "normalize([0.1, 0.4, 0.3], [0.2, 0.2, 0.2])]) | batch(2)\n", root);
	pl = compile(text);
	ts_grid_values_of(pl, NULL, &v);
	ck_assert(v.per_sample);
	const struct ts_op *rc = NULL;
	for (size_t i = 0; i < pl->n_ops; i++)
		if (pl->ops[i].kind == TS_OP_RANDOM_CHOICE)
			rc = &pl->ops[i];
	ck_assert_ptr_nonnull(rc);
	int seen[2] = {0, 0};
	for (uint64_t index = 0; index < 64; index++) {
		struct ts_grid_sample gs = {.seed = pl->source.seed, .epoch = 1, .index = index};
		struct ts_rng r;
		ts_rng_init(&r, gs.seed, gs.epoch, gs.index, (uint64_t)rc->index);
		size_t k = ts_policy_choice_draw(rc, &r);
		ts_grid_values_of(pl, &gs, &v);
		ck_assert(v.map == TS_GRID_UNNORM && !v.per_sample);
		ck_assert(v.mean[0] == (k == 0 ? 0.5f : 0.1f));
		seen[k]++;
	}
	ck_assert(seen[0] > 0 && seen[1] > 0);
	ts_plan_destroy(pl);
}
END_TEST

/* ---- font --------------------------------------------------------------- */

START_TEST(font_metrics_and_clipping)
{
	ck_assert_int_eq(ts_font_width(0, 1), 0);
	ck_assert_int_eq(ts_font_width(1, 1), TS_FONT_W);
	ck_assert_int_eq(ts_font_width(3, 2), (2 * TS_FONT_ADVANCE + TS_FONT_W) * 2);
	for (int px_ = 0; px_ < 200; px_++) {
		size_t n = ts_font_fit(px_, 1);
		ck_assert_int_le(ts_font_width(n, 1), px_);
		ck_assert_int_gt(ts_font_width(n + 1, 1), px_);
	}
	struct ts_image c = {0};
	ck_assert_int_eq(ts_image_reserve(&c, 12, 10, 3, TS_DTYPE_U8), 0);
	memset(c.data, 0, ts_image_bytes(&c));
	const uint8_t ink[3] = {255, 0, 0};
	/* 'T': the top row is all ink, then the middle column. */
	ts_font_draw(&c, 1, 1, "T", 1, ink, 1);
	int inked = 0;
	for (int y = 0; y < 10; y++)
		for (int x = 0; x < 12; x++)
			inked += px(&c, x, y)[0] == 255;
	ck_assert_int_eq(inked, 5 + 6);
	for (int x = 1; x <= 5; x++)
		ck_assert_uint_eq(px(&c, x, 1)[0], 255);
	ck_assert_uint_eq(px(&c, 3, 7)[0], 255);
	ck_assert_uint_eq(px(&c, 0, 0)[0], 0);
	/* off the canvas, partly or wholly, and unknown bytes: no write
	 * outside (ASan and valgrind watch), '?' for the byte */
	ts_font_draw(&c, -3, -4, "\x01\xff~", 3, ink, 3);
	ts_font_draw(&c, 10, 8, "WW", 2, ink, 2);
	ts_font_draw(&c, 500, 500, "x", 1, ink, 1);
	ts_image_free(&c);
}
END_TEST

/* ---- png ---------------------------------------------------------------- */

START_TEST(png_round_trip)
{
	struct ts_image img = {0};
	ck_assert_int_eq(ts_image_reserve(&img, 7, 5, 3, TS_DTYPE_U8), 0);
	for (size_t i = 0; i < ts_image_bytes(&img); i++)
		img.data[i] = (uint8_t)(i * 37);
	char path[128];
	snprintf(path, sizeof(path), "%s/a.png", root);
	struct ts_error err = {0};
	ck_assert_msg(ts_pngwrite_file(&img, path, "caption text", &err) == 0, "%s", err.msg);
	png_image r = {.version = PNG_IMAGE_VERSION};
	ck_assert(png_image_begin_read_from_file(&r, path));
	ck_assert_int_eq(r.width, 7);
	ck_assert_int_eq(r.height, 5);
	r.format = PNG_FORMAT_RGB;
	uint8_t back[7 * 5 * 3];
	ck_assert(png_image_finish_read(&r, NULL, back, 0, NULL));
	ck_assert(memcmp(back, img.data, sizeof(back)) == 0);
	/* no temporary file left beside it */
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld-0", path, (long)getpid());
	ck_assert_int_ne(access(tmp, F_OK), 0);
	/* a link planted at the temporary name is not written through: the
	 * next name is taken, and the link's target is untouched */
	char target[160];
	snprintf(target, sizeof(target), "%s/target", root);
	FILE *tf = fopen(target, "w");
	ck_assert_ptr_nonnull(tf);
	fputs("keep", tf);
	fclose(tf);
	ck_assert_int_eq(symlink(target, tmp), 0);
	ck_assert_msg(ts_pngwrite_file(&img, path, NULL, &err) == 0, "%s", err.msg);
	struct stat st;
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	ck_assert_int_eq(lstat(tmp, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	unlink(tmp);
	snprintf(path, sizeof(path), "%s/no/such/dir/a.png", root);
	ck_assert_int_lt(ts_pngwrite_file(&img, path, NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot write"));
	struct ts_image gray = {0};
	ck_assert_int_eq(ts_image_reserve(&gray, 2, 2, 1, TS_DTYPE_U8), 0);
	ck_assert_int_eq(ts_pngwrite_file(&gray, path, NULL, &err), TS_E_ARG);
	ts_image_free(&gray);
	ts_image_free(&img);
}
END_TEST

/* ---- pictures ------------------------------------------------------------ */

static const char *synth =
	"pipeline s = synthetic([24, 40], count = 30, classes = 5)\n"
	"    | flip(horizontal)\n"
	"    | normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])\n"
	"    | to(float32, nchw)\n"
	"    | batch(4)\n";

START_TEST(grid_layout)
{
	struct ts_plan *pl = compile(synth);
	struct ts_preview *p = NULL;
	struct ts_error err = {0};
	struct ts_preview_opts o = {.samples = 5, .start_epoch = 2, .start_index = 27,
				    .threads = 2};
	ck_assert_msg(ts_preview_make(pl, &o, &p, &err) == 0, "%s", err.msg);
	const struct ts_image *img = ts_preview_image(p);
	/* 5 samples: 3 columns, 2 rows of 40x24, no labels */
	ck_assert_int_eq(img->width, 2 * TS_PREVIEW_MARGIN + 3 * 40 + 2 * TS_PREVIEW_GAP);
	ck_assert_int_eq(img->height, 2 * TS_PREVIEW_MARGIN + 2 * 24 + TS_PREVIEW_GAP);
	const struct ts_preview_cell *cells;
	ck_assert_uint_eq(ts_preview_cells(p, &cells), 5);
	static const uint64_t ep[] = {2, 2, 2, 3, 3}, ix[] = {27, 28, 29, 0, 1};
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_eq(cells[i].epoch, ep[i]);
		ck_assert_uint_eq(cells[i].index, ix[i]);
		ck_assert_int_eq(cells[i].x, TS_PREVIEW_MARGIN + (i % 3) * (40 + TS_PREVIEW_GAP));
		ck_assert_int_eq(cells[i].y, TS_PREVIEW_MARGIN + (i / 3) * (24 + TS_PREVIEW_GAP));
		ck_assert_int_eq(cells[i].stage, -1);
		ck_assert_ptr_null(cells[i].path);
		ck_assert_ptr_null(cells[i].class_name);
	}
	ck_assert_ptr_nonnull(strstr(ts_preview_caption(p), "un-normalized"));
	/* the last row's empty cell stays background */
	const uint8_t *bg = px(img, img->width - TS_PREVIEW_MARGIN - 1,
			       img->height - TS_PREVIEW_MARGIN - 1);
	ck_assert_uint_eq(bg[0], bg[1]);
	ts_preview_destroy(p);

	/* With labels: cells at least 96 wide, a band under each, a caption. */
	o.labels = true;
	ck_assert_int_eq(ts_preview_make(pl, &o, &p, &err), 0);
	img = ts_preview_image(p);
	ck_assert_int_eq(img->width, 2 * TS_PREVIEW_MARGIN + 3 * TS_PREVIEW_MIN_CELL +
				     2 * TS_PREVIEW_GAP);
	ts_preview_cells(p, &cells);
	ck_assert_int_eq(cells[0].x, TS_PREVIEW_MARGIN + (TS_PREVIEW_MIN_CELL - 40) / 2);
	ck_assert_int_gt(cells[0].y, TS_PREVIEW_MARGIN + 2 * TS_FONT_LINE);
	ck_assert_int_eq(cells[3].y - cells[0].y,
			 24 + TS_PREVIEW_BAND_LINES * TS_FONT_LINE + 2 + TS_PREVIEW_GAP);
	ts_preview_destroy(p);
	ts_plan_destroy(pl);
}
END_TEST

START_TEST(same_for_any_threads)
{
	struct ts_plan *pl = compile(synth);
	struct ts_preview *a = NULL, *b = NULL;
	struct ts_preview_opts o = {.samples = 9, .start_index = 3, .labels = true};
	o.threads = 1;
	ck_assert_int_eq(ts_preview_make(pl, &o, &a, NULL), 0);
	o.threads = 4;
	ck_assert_int_eq(ts_preview_make(pl, &o, &b, NULL), 0);
	const struct ts_image *x = ts_preview_image(a), *y = ts_preview_image(b);
	ck_assert_int_eq(x->width, y->width);
	ck_assert_int_eq(x->height, y->height);
	ck_assert(memcmp(x->data, y->data, ts_image_bytes(x)) == 0);
	ts_preview_destroy(a);
	ts_preview_destroy(b);
	ts_plan_destroy(pl);
}
END_TEST

START_TEST(stages_columns)
{
	struct ts_plan *pl = compile("pipeline s = synthetic([64, 80], count = 10)\n"
				     "    | random_crop(32)\n"
				     "    | color_jitter(brightness = 0.5)\n"
				     "    | flip(vertical)\n"
				     "    | to(float32)\n"
				     "    | batch(2)\n");
	struct ts_preview *p = NULL;
	struct ts_error err = {0};
	struct ts_preview_opts o = {.samples = 3, .stages = true, .labels = true};
	ck_assert_msg(ts_preview_make(pl, &o, &p, &err) == 0, "%s", err.msg);
	const char *const *names;
	size_t k = ts_preview_stages(p, &names);
	ck_assert_uint_eq(k, pl->n_ops);
	ck_assert_str_eq(names[0], "random_crop");
	ck_assert_str_eq(names[1], "color_jitter");
	ck_assert_str_eq(names[k - 1], "output: flip+to");
	const struct ts_preview_cell *cells;
	ck_assert_uint_eq(ts_preview_cells(p, &cells), 3 * k);
	for (size_t i = 0; i < 3 * k; i++) {
		ck_assert_int_eq(cells[i].stage, (int)(i % k));
		ck_assert_uint_eq(cells[i].index, i / k);
		/* every stage here is 32x32 but the box is at least 64 */
		ck_assert_int_eq(cells[i].width, 32);
		ck_assert_int_eq(cells[i].src_width, 32);
	}
	ck_assert_int_eq(cells[k - 1].dtype, TS_DTYPE_F32);
	ck_assert_int_eq(cells[0].dtype, TS_DTYPE_U8);
	ts_preview_destroy(p);
	ts_plan_destroy(pl);
}
END_TEST

/* A stage larger than the final sample is scaled down to fit it. */
START_TEST(stages_scale_down)
{
	struct ts_plan *pl = compile("pipeline s = synthetic([300, 200], count = 4)\n"
				     "    | resize(120)\n"
				     "    | color_jitter(contrast = 0.5)\n"
				     "    | center_crop(100)\n"
				     "    | batch(2)\n");
	struct ts_preview *p = NULL;
	struct ts_preview_opts o = {.samples = 1, .stages = true};
	struct ts_error err = {0};
	ck_assert_msg(ts_preview_make(pl, &o, &p, &err) == 0, "%s", err.msg);
	const struct ts_preview_cell *cells;
	ck_assert_uint_eq(ts_preview_cells(p, &cells), 3);
	/* resize(120) of 200 wide x 300 high: 120 x 180, shown 66 x 100 */
	ck_assert_int_eq(cells[0].src_width, 120);
	ck_assert_int_eq(cells[0].src_height, 180);
	ck_assert_int_eq(cells[0].height, 100);
	ck_assert_int_eq(cells[0].width, 66);
	ck_assert_int_eq(cells[2].width, 100);
	ck_assert_int_eq(cells[2].src_width, 100);
	ts_preview_destroy(p);
	ts_plan_destroy(pl);
}
END_TEST

START_TEST(refusals)
{
	struct ts_plan *pl = compile(synth);
	struct ts_preview *p = NULL;
	struct ts_error err = {0};
	struct ts_preview_opts o = {.samples = 0};
	ck_assert_int_eq(ts_preview_make(pl, &o, &p, &err), TS_E_ARG);
	o.samples = TS_PREVIEW_MAX_SAMPLES + 1;
	ck_assert_int_eq(ts_preview_make(pl, &o, &p, &err), TS_E_ARG);
	/* over a (small) size limit: refused before running, with the size */
	o.samples = 16;
	o.max_bytes = 10000;
	ck_assert_int_eq(ts_preview_make(pl, &o, &p, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "would be 190x126 pixels"));
	ck_assert_ptr_null(p);
	/* the engine's own: past the end of an epoch */
	o.max_bytes = 0;
	o.start_index = 30;
	ck_assert_int_eq(ts_preview_make(pl, &o, &p, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "past the end"));
	ts_plan_destroy(pl);
	ts_preview_destroy(NULL);
}
END_TEST

static Suite *preview_suite(void)
{
	Suite *s = suite_create("preview");
	TCase *tc = tcase_create("grid");
	tcase_add_test(tc, u8_layouts_and_channels);
	tcase_add_test(tc, u16_f16_f32);
	tcase_add_loop_test(tc, map_of_plan, 0, (int)(sizeof(maps) / sizeof(maps[0])));
	tcase_add_test(tc, map_of_policy);
	suite_add_tcase(s, tc);
	tc = tcase_create("font");
	tcase_add_test(tc, font_metrics_and_clipping);
	suite_add_tcase(s, tc);
	tc = tcase_create("png");
	tcase_add_test(tc, png_round_trip);
	suite_add_tcase(s, tc);
	tc = tcase_create("picture");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, grid_layout);
	tcase_add_test(tc, same_for_any_threads);
	tcase_add_test(tc, stages_columns);
	tcase_add_test(tc, stages_scale_down);
	tcase_add_test(tc, refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/ts-preview-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	SRunner *sr = srunner_create(preview_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
