/* test-resample.c - the resample kernels (runtime/resample*.c) and their
 * dispatch (runtime/simd.c): every vector path gives the generic C path's
 * bytes, through ts_aug_resize on real resize geometries (views, odd
 * widths, rows shorter than a vector, large downscales, up-scales) and
 * through the raw passes with arbitrary weights (sums that clip at both
 * ends); the dispatch picks the best path of this CPU, honours
 * TSRUN_SIMD and refuses what the CPU lacks. PIL exactness of the generic
 * path is tests/torch-equal.py's job (run there under every path too). */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "augment.h"
#include "resample.h"
#include "simd.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t next_u32(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return (uint32_t)(x >> 16);
}

static const enum ts_simd_isa all_isas[] = { TS_SIMD_SSE41, TS_SIMD_AVX2, TS_SIMD_NEON };

/* ---- dispatch ---- */

static enum ts_simd_isa expected_best(void)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		return TS_SIMD_AVX2;
	if (__builtin_cpu_supports("sse4.1"))
		return TS_SIMD_SSE41;
	return TS_SIMD_GENERIC;
#elif defined(__aarch64__)
	return TS_SIMD_NEON;
#else
	return TS_SIMD_GENERIC;
#endif
}

/* In a fresh child (the choice is made once per process): the ISA
 * TSRUN_SIMD=value gives, or -1. */
static int isa_with_env(const char *value)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (value)
			setenv("TSRUN_SIMD", value, 1);
		else
			unsetenv("TSRUN_SIMD");
		_exit((int)ts_simd_isa());
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(dispatch_this_cpu)
{
	ck_assert_int_eq(isa_with_env(NULL), expected_best());
	ck_assert_int_eq(isa_with_env("generic"), TS_SIMD_GENERIC);
	/* Unknown or unsupported names fall back to the best path. */
	ck_assert_int_eq(isa_with_env("avx9"), expected_best());
#if defined(__x86_64__)
	ck_assert_int_eq(isa_with_env("neon"), expected_best());
	if (__builtin_cpu_supports("sse4.1"))
		ck_assert_int_eq(isa_with_env("sse4.1"), TS_SIMD_SSE41);
	ck_assert(ts_simd_supported(TS_SIMD_AVX2) == (bool)__builtin_cpu_supports("avx2"));
	ck_assert(!ts_simd_supported(TS_SIMD_NEON));
	ck_assert_int_eq(ts_simd_force(TS_SIMD_NEON), -ENOTSUP);
#endif
	ck_assert(ts_simd_supported(TS_SIMD_GENERIC));
	ck_assert_int_eq(ts_simd_force(TS_SIMD_GENERIC), 0);
	ck_assert_int_eq(ts_simd_isa(), TS_SIMD_GENERIC);
	ck_assert_int_eq(ts_simd_force(expected_best()), 0);
	ck_assert_int_eq(ts_simd_isa(), expected_best());
	ck_assert_str_eq(ts_simd_isa_name(TS_SIMD_AVX2), "avx2");
	ck_assert_str_eq(ts_simd_isa_name(TS_SIMD_SSE41), "sse4.1");
	ck_assert_str_eq(ts_simd_isa_name(TS_SIMD_GENERIC), "generic");
}
END_TEST

/* ---- ts_aug_resize under every path ---- */

static const struct {
	int w, h, ow, oh, c, pad_x, pad_y;
	enum ts_interp interp;
	bool antialias;
} resize_cases[] = {
	{ 413, 377, 224, 224, 3, 0, 0, TS_INTERP_BILINEAR, true },   /* downscale both */
	{ 97, 61, 224, 224, 3, 0, 0, TS_INTERP_BILINEAR, true },     /* upscale both */
	{ 500, 333, 256, 170, 3, 7, 5, TS_INTERP_BILINEAR, true },   /* a view (RRC box) */
	{ 331, 224, 224, 224, 3, 0, 0, TS_INTERP_BILINEAR, true },   /* horizontal only */
	{ 224, 301, 224, 224, 3, 3, 0, TS_INTERP_BILINEAR, true },   /* vertical only */
	{ 2000, 1500, 37, 29, 3, 0, 0, TS_INTERP_BILINEAR, true },   /* ksize ~ 109 */
	{ 5, 4, 3, 2, 3, 0, 0, TS_INTERP_BILINEAR, true },           /* rows < 16 bytes */
	{ 7, 9, 5, 11, 3, 0, 0, TS_INTERP_BILINEAR, true },          /* 15-byte rows */
	{ 1, 1, 224, 224, 3, 0, 0, TS_INTERP_BILINEAR, true },
	{ 300, 200, 1, 1, 3, 0, 0, TS_INTERP_BILINEAR, true },
	{ 411, 383, 224, 224, 3, 0, 0, TS_INTERP_BILINEAR, false },  /* no antialias */
	{ 411, 383, 129, 131, 3, 0, 0, TS_INTERP_AREA, true },       /* box filter */
	{ 403, 389, 224, 224, 1, 0, 0, TS_INTERP_BILINEAR, true },   /* gray */
	{ 203, 189, 113, 97, 4, 1, 1, TS_INTERP_BILINEAR, true },    /* 4 channels */
	{ 641, 480, 320, 240, 3, 0, 0, TS_INTERP_BILINEAR, true },   /* exactly 2x */
	/* negative lobes: sums that clip at 0 and 255 in both passes */
	{ 413, 377, 224, 224, 3, 0, 0, TS_INTERP_BICUBIC, true },
	{ 97, 61, 224, 224, 3, 2, 1, TS_INTERP_BICUBIC, true },     /* upscale, a view */
	{ 2000, 1500, 37, 29, 3, 0, 0, TS_INTERP_BICUBIC, true },   /* ksize ~ 217 */
	{ 7, 9, 5, 11, 3, 0, 0, TS_INTERP_BICUBIC, true },
	{ 331, 224, 224, 224, 3, 0, 0, TS_INTERP_LANCZOS, true },   /* horizontal only */
	{ 224, 301, 224, 224, 3, 3, 0, TS_INTERP_LANCZOS, true },   /* vertical only */
	{ 500, 333, 256, 170, 3, 7, 5, TS_INTERP_LANCZOS, true },
	{ 61, 97, 300, 200, 3, 0, 0, TS_INTERP_LANCZOS, true },     /* upscale */
	{ 5, 4, 3, 2, 3, 0, 0, TS_INTERP_LANCZOS, true },
	{ 403, 389, 224, 224, 1, 0, 0, TS_INTERP_BICUBIC, true },   /* gray */
	{ 411, 383, 224, 224, 3, 0, 0, TS_INTERP_BICUBIC, false },  /* no antialias */
	{ 869, 97, 224, 61, 3, 0, 0, TS_INTERP_BILINEAR, true },     /* 3.9x: AVX2 table, */
	{ 1003, 97, 224, 61, 3, 0, 0, TS_INTERP_BILINEAR, true },    /* 4.5x: per pixel */
	{ 229, 40, 224, 40, 3, 5, 1, TS_INTERP_BILINEAR, true },     /* taps at the row's end */
};

/* An image in a buffer of exactly its size (the view ends at the buffer's
 * end, so a kernel reading past the last pixel is seen by ASan). */
static uint8_t *noise_view(struct ts_image *v, int w, int h, int c, int pad_x,
			   int pad_y, bool smooth)
{
	size_t stride = (size_t)(w + pad_x) * c;
	size_t bytes = stride * (size_t)(h + pad_y);
	uint8_t *buf = malloc(bytes);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < bytes; i++)
		buf[i] = smooth ? (uint8_t)((i / (size_t)c) * 7 + (i % c) * 50 + (next_u32() & 7))
				: (uint8_t)next_u32();
	memset(v, 0, sizeof(*v));
	v->width = w;
	v->height = h;
	v->channels = c;
	v->dtype = TS_DTYPE_U8;
	v->stride = stride;
	/* The window at the bottom right: its last byte is the buffer's. */
	v->data = buf + (size_t)pad_y * stride + (size_t)pad_x * c;
	return buf;
}

static void assert_same(const struct ts_image *a, const struct ts_image *b,
			const char *what)
{
	ck_assert_int_eq(a->width, b->width);
	ck_assert_int_eq(a->height, b->height);
	for (int y = 0; y < a->height; y++) {
		const uint8_t *ra = a->data + (size_t)y * a->stride;
		const uint8_t *rb = b->data + (size_t)y * b->stride;
		for (size_t i = 0; i < (size_t)a->width * a->channels; i++)
			if (ra[i] != rb[i])
				ck_abort_msg("%s: row %d byte %zu: %u, generic %u", what, y, i,
					     ra[i], rb[i]);
	}
}

START_TEST(resize_every_path)
{
	const int k = _i / 2;
	const bool smooth = _i % 2;
	struct ts_image in;
	uint8_t *buf = noise_view(&in, resize_cases[k].w, resize_cases[k].h,
				  resize_cases[k].c, resize_cases[k].pad_x,
				  resize_cases[k].pad_y, smooth);
	struct ts_image ref = { 0 }, got = { 0 };
	ck_assert_int_eq(ts_simd_force(TS_SIMD_GENERIC), 0);
	ck_assert_int_eq(ts_aug_resize(&in, &ref, resize_cases[k].ow, resize_cases[k].oh,
				       resize_cases[k].interp, resize_cases[k].antialias), 0);
	int tried = 0;
	for (size_t j = 0; j < sizeof(all_isas) / sizeof(all_isas[0]); j++) {
		if (ts_simd_force(all_isas[j]) != 0)
			continue;
		tried++;
		ck_assert_int_eq(ts_aug_resize(&in, &got, resize_cases[k].ow, resize_cases[k].oh,
					       resize_cases[k].interp, resize_cases[k].antialias), 0);
		assert_same(&got, &ref, ts_simd_isa_name(all_isas[j]));
	}
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		ck_assert_int_eq(tried, 2);
#endif
	ts_simd_force(expected_best());
	ts_image_free(&ref);
	ts_image_free(&got);
	free(buf);
}
END_TEST

/* ---- the raw passes with arbitrary weights ---- */

/* Random weights (negative ones included) whose sums still fit int32 as
 * Pillow's do, so clipping at 0 and at 255 both happen. */
static void random_weights(int n_out, int in_size, int ksize, int *bounds,
			   int32_t *w)
{
	for (int i = 0; i < n_out; i++) {
		int n = 1 + (int)(next_u32() % (uint32_t)ksize);
		if (n > in_size)
			n = in_size;
		int x0 = (int)(next_u32() % (uint32_t)(in_size - n + 1));
		bounds[2 * i] = x0;
		bounds[2 * i + 1] = n;
		const int32_t span = (int32_t)((1 << 22) / n);
		for (int t = 0; t < ksize; t++)
			w[(size_t)i * ksize + t] = t < n ? (int32_t)(next_u32() % (uint32_t)(2 * span)) - span / 3 : 0;
	}
}

START_TEST(passes_arbitrary_weights)
{
	static const int sizes[][4] = { /* in_w, rows, ow, ksize */
		{ 50, 7, 40, 9 }, { 5, 3, 17, 5 }, { 300, 4, 224, 3 }, { 64, 2, 3, 64 },
		{ 16, 16, 16, 1 }, { 33, 5, 31, 4 },
		/* the vertical 32-byte step's most pairs (8) and one past */
		{ 40, 3, 20, 16 }, { 40, 3, 20, 17 },
	};
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		const int in_w = sizes[z][0], rows = sizes[z][1], ow = sizes[z][2], ks = sizes[z][3];
		for (int C = 1; C <= 4; C++) {
			struct ts_image src;
			uint8_t *buf = noise_view(&src, in_w, rows, C, 0, 0, false);
			int *bh = malloc(sizeof(int) * 2 * (size_t)ow);
			int32_t *wh = malloc(sizeof(int32_t) * (size_t)ow * ks);
			size_t dstride = (size_t)ow * C;
			uint8_t *ref = malloc(dstride * rows), *got = malloc(dstride * rows);
			random_weights(ow, in_w, ks, bh, wh);
			ts_simd_force(TS_SIMD_GENERIC);
			ts_resample_h_u8(src.data, src.stride, rows, in_w, C, ref, dstride, ow,
					 ks, bh, wh, 0);
			/* every path, with and without the prefetch of a cold
			 * source (a hint: the same bytes) */
			for (size_t j = 0; j < 2 * sizeof(all_isas) / sizeof(all_isas[0]); j++) {
				const size_t isa = j / 2;
				const int ahead = j % 2 ? TS_RESAMPLE_AHEAD : 0;
				if (ts_simd_force(all_isas[isa]) != 0)
					continue;
				memset(got, 0xa5, dstride * rows);
				ts_resample_h_u8(src.data, src.stride, rows, in_w, C, got, dstride,
						 ow, ks, bh, wh, ahead);
				ck_assert_msg(memcmp(got, ref, dstride * rows) == 0,
					      "h %s: %dx%d -> %d, C %d, ksize %d, ahead %d",
					      ts_simd_isa_name(all_isas[isa]), in_w, rows, ow, C, ks,
					      ahead);
			}
			/* Vertical: rows of in_w * C bytes, oh = ow outputs. */
			const int n_el = in_w * C, oh = ow;
			int *bv = malloc(sizeof(int) * 2 * (size_t)oh);
			int32_t *wv = malloc(sizeof(int32_t) * (size_t)oh * ks);
			struct ts_image col;
			uint8_t *cbuf = noise_view(&col, in_w, ks + 3, C, 0, 0, false);
			uint8_t *vref = malloc((size_t)n_el * oh), *vgot = malloc((size_t)n_el * oh);
			random_weights(oh, ks + 3, ks, bv, wv);
			ts_simd_force(TS_SIMD_GENERIC);
			ts_resample_v_u8(col.data, col.stride, n_el, vref, (size_t)n_el, oh, ks, bv, wv);
			for (size_t j = 0; j < sizeof(all_isas) / sizeof(all_isas[0]); j++) {
				if (ts_simd_force(all_isas[j]) != 0)
					continue;
				memset(vgot, 0x5a, (size_t)n_el * oh);
				ts_resample_v_u8(col.data, col.stride, n_el, vgot, (size_t)n_el, oh,
						 ks, bv, wv);
				ck_assert_msg(memcmp(vgot, vref, (size_t)n_el * oh) == 0,
					      "v %s: %d bytes, %d rows, ksize %d",
					      ts_simd_isa_name(all_isas[j]), n_el, oh, ks);
			}
			free(buf);
			free(cbuf);
			free(bh);
			free(wh);
			free(bv);
			free(wv);
			free(ref);
			free(got);
			free(vref);
			free(vgot);
		}
	}
	ts_simd_force(expected_best());
}
END_TEST

/* The AVX2 horizontal table (resample_kernels.h) with arbitrary weights
 * (negative ones included, sums that clip both ways) on bounds that grow
 * as a resize's do, by 0.4 to 4.3 pixels an output: blocks by table, the
 * row's end blocks by vector (reading past the row) in every row but the
 * last and in plain C in the last (the buffer ends there: ASan and
 * valgrind see any read past it), and rows in pairs and alone. */
START_TEST(h_table_arbitrary_weights)
{
	static const double steps[] = { 0.4, 1.0, 1.7, 2.6, 3.9, 4.3 };
	for (size_t z = 0; z < sizeof(steps) / sizeof(steps[0]); z++)
		for (int rows = 1; rows <= 4; rows++) {
			const int ow = 53 + (int)z * 11, ks = 2 + (int)(steps[z] * 2) + (int)z % 2;
			const int in_w = (int)(steps[z] * ow) + ks + 1;
			struct ts_image src;
			uint8_t *buf = noise_view(&src, in_w, rows, 3, 0, 0, false);
			int *bh = malloc(sizeof(int) * 2 * (size_t)ow);
			int32_t *wh = malloc(sizeof(int32_t) * (size_t)ow * ks);
			random_weights(ow, in_w, ks, bh, wh);
			for (int i = 0; i < ow; i++) {
				/* growing first taps; counts kept inside the row */
				int x0 = (int)(steps[z] * i);
				if (x0 + bh[2 * i + 1] > in_w)
					x0 = in_w - bh[2 * i + 1];
				bh[2 * i] = x0;
			}
			size_t dstride = (size_t)ow * 3;
			uint8_t *ref = malloc(dstride * rows), *got = malloc(dstride * rows);
			ts_simd_force(TS_SIMD_GENERIC);
			ts_resample_h_u8(src.data, src.stride, rows, in_w, 3, ref, dstride, ow, ks,
					 bh, wh, 0);
			for (size_t j = 0; j < sizeof(all_isas) / sizeof(all_isas[0]); j++) {
				if (ts_simd_force(all_isas[j]) != 0)
					continue;
				memset(got, 0xa5, dstride * rows);
				ts_resample_h_u8(src.data, src.stride, rows, in_w, 3, got, dstride, ow,
						 ks, bh, wh, (int)j % 2 ? TS_RESAMPLE_AHEAD : 0);
				ck_assert_msg(memcmp(got, ref, dstride * rows) == 0,
					      "h %s: step %.1f, %d rows, ow %d, ksize %d",
					      ts_simd_isa_name(all_isas[j]), steps[z], rows, ow, ks);
			}
			free(buf);
			free(bh);
			free(wh);
			free(ref);
			free(got);
		}
	ts_simd_force(expected_best());
}
END_TEST

/* The clip of the generic path itself, at the edges Pillow's clip8 has:
 * a sum of 2^30 or more is 255, one at or below 0 is 0. */
START_TEST(generic_clip_edges)
{
	const uint8_t px[2] = { 255, 255 };
	const int bounds[2] = { 0, 2 };
	/* 255 * (w0 + w1) + 2^21 against 2^30: w0 + w1 = 2^22 + 8 gives
	 * 255 * 2^22 + 2040 + 2^21 < 2^30 -> 255 by the shift as well. */
	const int32_t w_hi[2] = { 1 << 21, (1 << 21) + 8 }, w_neg[2] = { -(1 << 20), 1000 };
	uint8_t d = 0;
	for (size_t j = 0; j < 4; j++) {
		enum ts_simd_isa isa = j == 0 ? TS_SIMD_GENERIC : all_isas[j - 1];
		if (ts_simd_force(isa) != 0)
			continue;
		ts_resample_h_u8(px, 2, 1, 2, 1, &d, 1, 1, 2, bounds, w_hi, 0);
		ck_assert_int_eq(d, 255);
		ts_resample_h_u8(px, 2, 1, 2, 1, &d, 1, 1, 2, bounds, w_neg, 0);
		ck_assert_int_eq(d, 0);
		ts_resample_v_u8(px, 1, 1, &d, 1, 1, 2, bounds, w_hi);
		ck_assert_int_eq(d, 255);
		ts_resample_v_u8(px, 1, 1, &d, 1, 1, 2, bounds, w_neg);
		ck_assert_int_eq(d, 0);
	}
	ts_simd_force(expected_best());
}
END_TEST

static Suite *resample_suite(void)
{
	Suite *s = suite_create("resample");
	TCase *tc = tcase_create("dispatch");
	tcase_add_test(tc, dispatch_this_cpu);
	suite_add_tcase(s, tc);
	tc = tcase_create("exact");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, resize_every_path, 0,
			    (int)(2 * sizeof(resize_cases) / sizeof(resize_cases[0])));
	tcase_add_test(tc, passes_arbitrary_weights);
	tcase_add_test(tc, h_table_arbitrary_weights);
	tcase_add_test(tc, generic_clip_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(resample_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	ts_aug_scratch_free();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
