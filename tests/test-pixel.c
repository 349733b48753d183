/* test-pixel.c - the uint8 row kernels of the colour and filter families
 * (runtime/pixel*.c) under every vector path this CPU runs and the generic
 * one: the generic rows against the formulas written out here (PIL's
 * ImagingBlend, the 3x3 sharpness kernel in its order, the L weights),
 * and every vector path bit for bit against the generic one, for row
 * lengths that leave tails and factors inside and outside [0, 1]. Each
 * row ends where its buffer ends, so a kernel reading past it is seen by
 * ASan. (PIL itself is tests/torch-color.py's and torch-filter.py's.) */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "color.h"
#include "image.h"
#include "pixel.h"
#include "simd.h"

static const enum ts_simd_isa isas[] = { TS_SIMD_GENERIC, TS_SIMD_SSE41, TS_SIMD_AVX2,
					  TS_SIMD_NEON };
#define N_ISAS (sizeof(isas) / sizeof(isas[0]))

static const size_t lengths[] = { 0, 1, 3, 15, 16, 17, 31, 32, 33, 47, 48, 100, 673 };
#define N_LEN (sizeof(lengths) / sizeof(lengths[0]))

static const float alphas[] = { -0.6f, 0.0f, 0.27f, 0.5f, 1.0f, 1.27f, 1.9f, 3.5f, 0.73f };
#define N_ALPHA (sizeof(alphas) / sizeof(alphas[0]))

static uint8_t *random_bytes(size_t n, uint32_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
	if (n > 2) {
		p[0] = 0;
		p[1] = 255;
	}
	return p;
}

static void force(enum ts_simd_isa isa)
{
	ck_assert_int_eq(ts_simd_force(isa), 0);
}

/* PIL's ImagingBlend, written out: a + alpha (b - a) in float,
 * truncated, clipped to 0..255 when alpha is outside [0, 1]. */
static uint8_t blend_ref(int a, int b, float alpha)
{
	float t = (float)a + alpha * (float)(b - a);
	if (alpha < 0.0f || alpha > 1.0f)
		t = t < 0.0f ? 0.0f : t > 255.0f ? 255.0f : t;
	return (uint8_t)(int)t;
}

static uint8_t gray_ref(const uint8_t *p)
{
	return (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

/* One kernel call on a copy of src under isa; the result, malloc'd. */
enum op { BLEND_CONST, BLEND_ROW, MASK, SOLARIZE, GRAY, COLOR3 };

static uint8_t *run(enum ts_simd_isa isa, enum op op, const uint8_t *src,
		    const uint8_t *other, size_t n, float alpha, int k)
{
	force(isa);
	uint8_t *r = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(r);
	memcpy(r, src, n);
	switch (op) {
	case BLEND_CONST:
		ts_px_blend_const(r, n, k, alpha);
		break;
	case BLEND_ROW:
		ts_px_blend_row(r, other, n, alpha);
		break;
	case MASK:
		ts_px_mask(r, n, (uint8_t)k, (uint8_t)(k >> 8));
		break;
	case SOLARIZE:
		ts_px_solarize(r, n, k);
		break;
	case GRAY:
		/* n / 3 pixels of src into r */
		ts_px_gray(r, src, n / 3, 3);
		break;
	case COLOR3:
		ts_px_color3(r, n / 3, alpha);
		break;
	}
	return r;
}

/* Every ISA this CPU runs against the generic path, which is against
 * the reference. */
static void check_paths(enum op op, const uint8_t *src, const uint8_t *other, size_t n,
			float alpha, int k, const uint8_t *want, size_t nwant)
{
	uint8_t *gen = run(TS_SIMD_GENERIC, op, src, other, n, alpha, k);
	ck_assert_mem_eq(gen, want, nwant);
	for (size_t i = 1; i < N_ISAS; i++) {
		if (!ts_simd_supported(isas[i]))
			continue;
		uint8_t *got = run(isas[i], op, src, other, n, alpha, k);
		if (memcmp(got, gen, nwant) != 0)
			ck_abort_msg("op %d on %s: n %zu alpha %g k %d differs from generic",
				     (int)op, ts_simd_isa_name(isas[i]), n, (double)alpha, k);
		free(got);
	}
	free(gen);
}

START_TEST(blends)
{
	const size_t n = lengths[_i];
	uint8_t *src = random_bytes(n, 7u + (uint32_t)_i), *deg = random_bytes(n, 99u);
	uint8_t *want = malloc(n ? n : 1);
	const int consts[] = { 0, 77, 128, 255 };
	for (size_t a = 0; a < N_ALPHA; a++) {
		for (size_t c = 0; c < 4; c++) {
			for (size_t i = 0; i < n; i++)
				want[i] = blend_ref(consts[c], src[i], alphas[a]);
			check_paths(BLEND_CONST, src, NULL, n, alphas[a], consts[c], want, n);
		}
		for (size_t i = 0; i < n; i++)
			want[i] = blend_ref(deg[i], src[i], alphas[a]);
		check_paths(BLEND_ROW, src, deg, n, alphas[a], 0, want, n);
	}
	free(src);
	free(deg);
	free(want);
	force(ts_simd_supported(TS_SIMD_AVX2) ? TS_SIMD_AVX2 : TS_SIMD_GENERIC);
}
END_TEST

START_TEST(masks_and_solarize)
{
	const size_t n = lengths[_i];
	uint8_t *src = random_bytes(n, 3u + (uint32_t)_i), *want = malloc(n ? n : 1);
	/* and | xor << 8: posterize to 1, 4, 7 bits, invert, identity */
	const int masks[] = { 0x80, 0xf0, 0xfe, 0xffff, 0xff };
	for (size_t m = 0; m < 5; m++) {
		for (size_t i = 0; i < n; i++)
			want[i] = (uint8_t)((src[i] & (masks[m] & 0xff)) ^ (masks[m] >> 8));
		check_paths(MASK, src, NULL, n, 0, masks[m], want, n);
	}
	const int ts[] = { -3, 0, 1, 77, 128, 129, 200, 255, 256, 300 };
	for (size_t t = 0; t < sizeof(ts) / sizeof(ts[0]); t++) {
		for (size_t i = 0; i < n; i++)
			want[i] = (uint8_t)(src[i] >= ts[t] ? 255 - src[i] : src[i]);
		check_paths(SOLARIZE, src, NULL, n, 0, ts[t], want, n);
	}
	free(src);
	free(want);
}
END_TEST

START_TEST(gray_and_color)
{
	/* pixels: 0 .. 224, and past color3's chunk of 256 */
	const size_t npx = _i < (int)N_LEN ? lengths[_i] : 257 + 300 * (size_t)(_i - N_LEN);
	const size_t n = 3 * npx;
	uint8_t *src = random_bytes(n, 11u + (uint32_t)_i), *want = malloc(n ? n : 1);
	for (size_t x = 0; x < npx; x++)
		want[x] = gray_ref(src + 3 * x);
	check_paths(GRAY, src, NULL, n, 0, 0, want, npx);
	for (size_t a = 0; a < N_ALPHA; a++) {
		for (size_t x = 0; x < npx; x++) {
			int g = gray_ref(src + 3 * x);
			for (int c = 0; c < 3; c++)
				want[3 * x + c] = blend_ref(g, src[3 * x + c], alphas[a]);
		}
		check_paths(COLOR3, src, NULL, n, alphas[a], 0, want, n);
	}
	free(src);
	free(want);
}
END_TEST

/* The sharpness kernel written out in PIL's order (filter.c's). */
static uint8_t sharp_ref(const uint8_t *up, const uint8_t *mid, const uint8_t *dn, size_t C)
{
	volatile float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
	volatile float ss = 0.5f, t;
	t = (float)dn[-(ptrdiff_t)C] * k1;
	t = t + (float)dn[0] * k1;
	t = t + (float)dn[C] * k1;
	ss = ss + t;
	t = (float)mid[-(ptrdiff_t)C] * k1;
	t = t + (float)mid[0] * k5;
	t = t + (float)mid[C] * k1;
	ss = ss + t;
	t = (float)up[-(ptrdiff_t)C] * k1;
	t = t + (float)up[0] * k1;
	t = t + (float)up[C] * k1;
	ss = ss + t;
	float v = ss;
	return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

START_TEST(sharpen)
{
	const size_t m = lengths[_i];
	for (size_t C = 1; C <= 4; C++) {
		const size_t w = m + 2 * C;
		uint8_t *up = random_bytes(w, 1u + (uint32_t)C), *mid = random_bytes(w, 2u),
			*dn = random_bytes(w, 3u + (uint32_t)(m * C));
		uint8_t *want = malloc(m ? m : 1), *gen = malloc(m ? m : 1);
		for (size_t j = 0; j < m; j++)
			want[j] = sharp_ref(up + C + j, mid + C + j, dn + C + j, C);
		force(TS_SIMD_GENERIC);
		ts_px_sharpen_row(gen, up + C, mid + C, dn + C, C, m);
		ck_assert_mem_eq(gen, want, m);
		for (size_t i = 1; i < N_ISAS; i++) {
			if (!ts_simd_supported(isas[i]))
				continue;
			uint8_t *got = malloc(m ? m : 1);
			force(isas[i]);
			ts_px_sharpen_row(got, up + C, mid + C, dn + C, C, m);
			if (memcmp(got, gen, m) != 0)
				ck_abort_msg("sharpen on %s: m %zu C %zu differs from generic",
					     ts_simd_isa_name(isas[i]), m, C);
			free(got);
		}
		free(up);
		free(mid);
		free(dn);
		free(want);
		free(gen);
	}
}
END_TEST

/* Nearest sampling of a line of positions through an RGB source: the
 * generic path against the positions written out, every path against it;
 * lines that end on the source's last pixel (the gather must not read
 * past it: the buffer ends there, for ASan), forwards, backwards, along
 * a row, down a column. */
START_TEST(gather3)
{
	uint32_t seed = 5u + (uint32_t)_i;
	for (int t = 0; t < 60; t++) {
		seed = seed * 1103515245u + 12345u;
		const int W = 1 + (int)((seed >> 8) % 50), H = 1 + (int)((seed >> 16) % 40);
		const size_t stride = (size_t)W * 3 + (seed >> 4) % 5;
		const size_t bytes = (size_t)(H - 1) * stride + (size_t)W * 3;
		/* the source's last byte the last before a page no access may
		 * touch (ASan does not see inside a gather) */
		const size_t page = (size_t)sysconf(_SC_PAGESIZE);
		const size_t span = (bytes + page - 1) / page * page + page;
		uint8_t *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				    -1, 0);
		ck_assert(map != MAP_FAILED);
		ck_assert_int_eq(mprotect(map + span - page, page, PROT_NONE), 0);
		uint8_t *src = map + span - page - bytes, *fill = random_bytes(bytes, seed);
		memcpy(src, fill, bytes);
		free(fill);
		const int n = 1 + (int)((seed >> 20) % 70);
		int32_t p[4]; /* x0, y0, x1, y1 in 16.16, all inside */
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			p[k] = (int32_t)((seed >> 4) % (uint32_t)(((k & 1) ? H : W) << 16));
		}
		if (t % 5 == 0) { /* to the last pixel */
			p[2] = (W << 16) - 1;
			p[3] = (H << 16) - 1;
		}
		if (t % 7 == 1)
			p[3] = p[1]; /* along a row */
		const int32_t ax = n > 1 ? (p[2] - p[0]) / (n - 1) : 0;
		const int32_t ay = n > 1 ? (p[3] - p[1]) / (n - 1) : 0;
		uint8_t *want = malloc((size_t)n * 3), *gen = malloc((size_t)n * 3);
		for (int k = 0; k < n; k++) {
			int32_t x = p[0] + k * ax, y = p[1] + k * ay;
			memcpy(want + 3 * k, src + (size_t)(y >> 16) * stride + (size_t)(x >> 16) * 3, 3);
		}
		force(TS_SIMD_GENERIC);
		ts_px_gather3(gen, src, stride, bytes, p[0], p[1], ax, ay, n);
		ck_assert_mem_eq(gen, want, (size_t)n * 3);
		for (size_t i = 1; i < N_ISAS; i++) {
			if (!ts_simd_supported(isas[i]))
				continue;
			uint8_t *got = malloc((size_t)n * 3);
			force(isas[i]);
			ts_px_gather3(got, src, stride, bytes, p[0], p[1], ax, ay, n);
			if (memcmp(got, gen, (size_t)n * 3) != 0)
				ck_abort_msg("gather3 on %s: case %d (%dx%d, n %d) differs from generic",
					     ts_simd_isa_name(isas[i]), t, W, H, n);
			free(got);
		}
		munmap(map, span);
		free(want);
		free(gen);
	}
}
END_TEST

/* The RGB row mirror on every path against the mirror by index, for
 * every width up to past a few vector steps; the bytes around the row
 * stay as they were. */
START_TEST(flip3)
{
	for (size_t i = 0; i < N_ISAS; i++) {
		if (!ts_simd_supported(isas[i]))
			continue;
		force(isas[i]);
		for (size_t w = 0; w <= 64; w++) {
			uint8_t *buf = random_bytes(3 * w + 2, (uint32_t)(w + 31 * i)), *want = malloc(3 * w + 2);
			memcpy(want, buf, 3 * w + 2);
			for (size_t x = 0; x < w; x++)
				memcpy(want + 1 + 3 * x, buf + 1 + 3 * (w - 1 - x), 3);
			ts_px_flip3(buf + 1, w);
			if (memcmp(buf, want, 3 * w + 2) != 0)
				ck_abort_msg("flip3 on %s: width %zu", ts_simd_isa_name(isas[i]), w);
			free(buf);
			free(want);
		}
	}
}
END_TEST

/* adjust_hue's vector rows against the C path (color.c's to_hsv and
 * from_hsv, which tests/torch-color.py holds to PIL): every third level
 * of each channel (every RGB value with TS_EXHAUSTIVE=1 in the
 * environment), rows of 221 (27 steps and a tail), at shifts that wrap. */
START_TEST(hue)
{
	const int stepc = getenv("TS_EXHAUSTIVE") ? 1 : 3;
	const int levels = (255 + stepc) / stepc;
	const size_t npx = (size_t)levels * levels * levels;
	const int W = 221, H = (int)((npx + W - 1) / W); /* a tail of 5 a row */
	struct ts_image src = { 0 }, gen = { 0 }, got = { 0 };
	ck_assert_int_eq(ts_image_reserve(&src, W, H, 3, TS_DTYPE_U8), 0);
	size_t k = 0;
	for (int r = 0; r < 256; r += stepc)
		for (int g = 0; g < 256; g += stepc)
			for (int b = 0; b < 256; b += stepc, k++) {
				uint8_t *p = src.data + (k / W) * src.stride + (k % W) * 3;
				p[0] = (uint8_t)r;
				p[1] = (uint8_t)g;
				p[2] = (uint8_t)b;
			}
	for (; k < (size_t)W * H; k++) /* the last row's rest */
		memset(src.data + (k / W) * src.stride + (k % W) * 3, (int)(k & 255), 3);
	const double factors[] = { 0.0, 0.004, 0.1, -0.25, 0.5, -0.5, 0.49 };
	for (size_t f = 0; f < sizeof(factors) / sizeof(factors[0]); f++) {
		ck_assert_int_eq(ts_image_reserve(&gen, W, H, 3, TS_DTYPE_U8), 0);
		for (int y = 0; y < H; y++)
			memcpy(gen.data + (size_t)y * gen.stride, src.data + (size_t)y * src.stride,
			       (size_t)W * 3);
		force(TS_SIMD_GENERIC);
		ts_color_hue(&gen, factors[f]);
		for (size_t i = 1; i < N_ISAS; i++) {
			if (!ts_simd_supported(isas[i]))
				continue;
			ck_assert_int_eq(ts_image_reserve(&got, W, H, 3, TS_DTYPE_U8), 0);
			for (int y = 0; y < H; y++)
				memcpy(got.data + (size_t)y * got.stride,
				       src.data + (size_t)y * src.stride, (size_t)W * 3);
			force(isas[i]);
			ts_color_hue(&got, factors[f]);
			for (int y = 0; y < H; y++)
				if (memcmp(got.data + (size_t)y * got.stride,
					   gen.data + (size_t)y * gen.stride, (size_t)W * 3) != 0)
					ck_abort_msg("hue %g on %s: row %d differs from generic",
						     factors[f], ts_simd_isa_name(isas[i]), y);
		}
	}
	ts_image_free(&src);
	ts_image_free(&gen);
	ts_image_free(&got);
}
END_TEST

/* Each channel's smallest and largest value, on every path, against a
 * scan: rows of every tail (and row padding, which must not count), bounds
 * carried in. */
START_TEST(minmax)
{
	const size_t npx = lengths[_i], H = 3;
	for (int C = 1; C <= 4; C++) {
		const size_t stride = npx * (size_t)C + 7;
		uint8_t *r = random_bytes(stride * H, 17u + (uint32_t)(_i * C));
		/* few levels, so that the carried-in bounds win sometimes; the
		 * padding out of range */
		for (size_t k = 0; k < stride * H; k++)
			r[k] = k % stride < npx * (size_t)C ? (uint8_t)(60 + r[k] % 100) : (k & 1) * 255;
		uint8_t want_lo[4] = { 90, 200, 255, 70 }, want_hi[4] = { 140, 0, 100, 255 };
		for (size_t k = 0; k < stride * H; k++) {
			if (k % stride >= npx * (size_t)C)
				continue;
			const int c = (int)(k % stride % (size_t)C);
			if (r[k] < want_lo[c])
				want_lo[c] = r[k];
			if (r[k] > want_hi[c])
				want_hi[c] = r[k];
		}
		for (size_t i = 0; i < N_ISAS; i++) {
			if (!ts_simd_supported(isas[i]))
				continue;
			force(isas[i]);
			uint8_t lo[4] = { 90, 200, 255, 70 }, hi[4] = { 140, 0, 100, 255 };
			ts_px_minmax(r, stride, npx, H, C, lo, hi);
			if (memcmp(lo, want_lo, (size_t)C) || memcmp(hi, want_hi, (size_t)C))
				ck_abort_msg("minmax on %s: %zu pixels of %d channels",
					     ts_simd_isa_name(isas[i]), npx, C);
		}
		free(r);
	}
}
END_TEST

/* Rounding corners of the blend: values whose sum lands on or next to a
 * whole number, and the clips at both ends. */
START_TEST(blend_known_values)
{
	ck_assert_uint_eq(ts_px_blend1(100, 50, 0.5f), 75);
	ck_assert_uint_eq(ts_px_blend1(0, 200, 1.3f), 255);
	ck_assert_uint_eq(ts_px_blend1(10, 0, 1.5f), 0);
	ck_assert_uint_eq(ts_px_blend1(0, 7, 0.73f), 5);	 /* 5.11 truncated */
	ck_assert_uint_eq(ts_px_blend1(128, 255, -0.6f), 51); /* 128 - 76.2 */
	for (size_t i = 0; i < N_ISAS; i++) {
		if (!ts_simd_supported(isas[i]))
			continue;
		force(isas[i]);
		uint8_t r[32];
		for (int k = 0; k < 32; k++)
			r[k] = (uint8_t)(k * 8);
		ts_px_blend_const(r, 32, 0, 1.3f);
		for (int k = 0; k < 32; k++)
			ck_assert_uint_eq(r[k], blend_ref(0, k * 8, 1.3f));
	}
}
END_TEST

/* The kernels follow the instruction set simd.h says is in use. */
START_TEST(dispatch)
{
	unsetenv("TSRUN_SIMD");
	enum ts_simd_isa best = TS_SIMD_GENERIC;
	for (size_t i = 1; i < N_ISAS; i++)
		if (ts_simd_supported(isas[i]))
			best = isas[i];
	force(best);
	ck_assert_int_eq(ts_simd_isa(), best);
#if defined(__x86_64__)
	/* every x86-64 this runs on in CI has SSE4.1 */
	ck_assert(ts_simd_supported(TS_SIMD_SSE41));
#endif
}
END_TEST

static Suite *pixel_suite(void)
{
	Suite *s = suite_create("pixel");
	TCase *tc = tcase_create("exact");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, blends, 0, (int)N_LEN);
	tcase_add_loop_test(tc, masks_and_solarize, 0, (int)N_LEN);
	tcase_add_loop_test(tc, gray_and_color, 0, (int)N_LEN + 2);
	tcase_add_loop_test(tc, sharpen, 0, (int)N_LEN);
	tcase_add_loop_test(tc, gather3, 0, 8);
	tcase_add_test(tc, flip3);
	tcase_add_test(tc, hue);
	tcase_add_loop_test(tc, minmax, 0, (int)N_LEN);
	tcase_add_test(tc, blend_known_values);
	tcase_add_test(tc, dispatch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pixel_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
