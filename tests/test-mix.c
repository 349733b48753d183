/* test-mix.c - libtsclient's label mixing (ts_client_mix_*): parameter
 * checks, determinism by (seed, epoch, index), in place against out of
 * place, NHWC against NCHW, odd batches, label smoothing alone, the
 * draws' distributions (Beta moments, prob, switch_prob, min/max boxes).
 * tests/mixup.py compares the results with timm's algorithm in torch and
 * the Python and C clients with each other. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tsclient.h"

/* The expected blends are rounded as the library rounds them: no fused
 * multiply-add (aarch64 has one, and GCC contracts by default). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

enum { N = 6, C = 3, H = 9, W = 7, K = 5 };
/* the smoothed one-hot of 0.1 over K classes, as timm computes it */
#define OFF (0.1 / K)
#define ON (1 - 0.1 + OFF)

struct fixture {
	float in[N * C * H * W];
	int32_t labels[N];
	struct ts_batch b;
};

static void fixture_init(struct fixture *f, int layout)
{
	for (size_t i = 0; i < sizeof(f->in) / sizeof(f->in[0]); i++)
		f->in[i] = (float)((i * 2654435761u) % 1000) / 997.0f - 0.3f;
	for (int i = 0; i < N; i++)
		f->labels[i] = (i * 3) % K;
	memset(&f->b, 0, sizeof(f->b));
	f->b.data = f->in;
	f->b.n = N;
	f->b.labels = f->labels;
	f->b.height = H;
	f->b.width = W;
	f->b.channels = C;
	f->b.dtype = TS_DTYPE_F32;
	f->b.layout = layout;
	f->b.sample_bytes = C * H * W * sizeof(float);
	f->b.epoch = 2;
	f->b.index = 48;
}

static struct ts_client_mix both(int mode)
{
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	m.mixup_alpha = 0.8;
	m.cutmix_alpha = 1.0;
	m.mode = mode;
	m.label_smoothing = 0.1;
	m.num_classes = K;
	m.seed = 11;
	return m;
}

/* ---- parameters ---- */

static void set_num_classes(struct ts_client_mix *m) { m->num_classes = 0; }
static void set_mixup(struct ts_client_mix *m) { m->mixup_alpha = -1; }
static void set_mixup_nan(struct ts_client_mix *m) { m->mixup_alpha = NAN; }
static void set_cutmix(struct ts_client_mix *m) { m->cutmix_alpha = INFINITY; }
static void set_minmax(struct ts_client_mix *m) { m->cutmix_min = 0.8; m->cutmix_max = 0.3; }
static void set_minmax_big(struct ts_client_mix *m) { m->cutmix_min = 0.2; m->cutmix_max = 1.5; }
static void set_prob(struct ts_client_mix *m) { m->prob = 1.5; }
static void set_switch(struct ts_client_mix *m) { m->switch_prob = -0.1; }
static void set_smooth(struct ts_client_mix *m) { m->label_smoothing = 2; }
static void set_mode(struct ts_client_mix *m) { m->mode = 7; }

static const struct {
	void (*set)(struct ts_client_mix *);
	const char *says;
} bad_params[] = {
	{ set_num_classes, "num_classes must be set" },
	{ set_mixup, "mixup_alpha = -1" },
	{ set_mixup_nan, "mixup_alpha = nan" },
	{ set_cutmix, "cutmix_alpha = inf" },
	{ set_minmax, "cutmix_minmax = (0.8, 0.3)" },
	{ set_minmax_big, "cutmix_minmax = (0.2, 1.5)" },
	{ set_prob, "prob = 1.5 is outside 0 .. 1" },
	{ set_switch, "switch_prob = -0.1" },
	{ set_smooth, "label_smoothing = 2" },
	{ set_mode, "mode 7 is not one of" },
};

START_TEST(bad_parameter)
{
	struct ts_client_mix m = both(TS_CLIENT_MIX_BATCH);
	bad_params[_i].set(&m);
	struct ts_error err = { 0 };
	ck_assert_int_eq(ts_client_mix_check(&m, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, bad_params[_i].says), "'%s' lacks '%s'", err.msg,
		      bad_params[_i].says);
	struct fixture f;
	fixture_init(&f, TS_LAYOUT_NCHW);
	float out[N * C * H * W], t[N * K];
	ck_assert_int_eq(ts_client_mix_batch(&m, &f.b, out, t, &err), TS_E_ARG);
}
END_TEST

START_TEST(defaults_are_timms)
{
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	ck_assert(m.mixup_alpha == 1.0 && m.cutmix_alpha == 0 && m.cutmix_max == 0);
	/* timm.data.Mixup: label_smoothing=0.1, num_classes=1000 */
	ck_assert(m.prob == 1.0 && m.switch_prob == 0.5 && m.label_smoothing == 0.1);
	ck_assert_int_eq(m.num_classes, 1000);
	ck_assert_int_eq(m.mode, TS_CLIENT_MIX_BATCH);
	ck_assert_int_eq(m.correct_lam, 1);
	ck_assert_int_eq(m.enabled, 1);
	ck_assert_int_eq(ts_client_mix_check(&m, NULL), 0);
	struct ts_error err;
	m.num_classes = 0;
	ck_assert_int_eq(ts_client_mix_check(&m, &err), TS_E_ARG); /* num_classes */
}
END_TEST

START_TEST(bad_batch)
{
	struct ts_client_mix m = both(TS_CLIENT_MIX_ELEM);
	struct fixture f;
	fixture_init(&f, TS_LAYOUT_NCHW);
	float out[N * C * H * W], t[N * K];
	for (size_t i = 0; i < N * K; i++)
		t[i] = -7;
	memcpy(out, f.in, sizeof(out));
	struct ts_error err = { 0 };
	f.labels[3] = K; /* one past the last class */
	ck_assert_int_eq(ts_client_mix_batch(&m, &f.b, out, t, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "sample 3 of the batch (epoch 2, index 51) has label 5"),
		      "%s", err.msg);
	ck_assert(memcmp(out, f.in, sizeof(out)) == 0);
	for (size_t i = 0; i < N * K; i++)
		ck_assert(t[i] == -7);
	f.labels[3] = -1;
	ck_assert_int_eq(ts_client_mix_batch(&m, &f.b, out, t, &err), TS_E_ARG);
	f.labels[3] = 0;
	f.b.dtype = TS_DTYPE_U8;
	ck_assert_int_eq(ts_client_mix_batch(&m, &f.b, out, t, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "not float32"), "%s", err.msg);
	f.b.dtype = TS_DTYPE_F32;
	f.b.n = 0;
	ck_assert_int_eq(ts_client_mix_batch(&m, &f.b, out, t, &err), TS_E_ARG);
	ck_assert_int_eq(ts_client_mix_params(&m, &f.b, NULL, &err), TS_E_ARG);
}
END_TEST

/* ---- determinism ---- */

static void mix(const struct ts_client_mix *m, const struct ts_batch *b, float *out, float *t)
{
	struct ts_error err = { 0 };
	int rc = ts_client_mix_batch(m, b, out, t, &err);
	ck_assert_msg(rc == 0, "mix: %s", err.msg);
}

START_TEST(same_position_same_bytes)
{
	struct ts_client_mix m = both(_i);
	struct fixture f;
	fixture_init(&f, TS_LAYOUT_NCHW);
	float a[N * C * H * W], b[N * C * H * W], ta[N * K], tb[N * K];
	mix(&m, &f.b, a, ta);
	mix(&m, &f.b, b, tb);
	ck_assert(memcmp(a, b, sizeof(a)) == 0 && memcmp(ta, tb, sizeof(ta)) == 0);
	ck_assert(memcmp(a, f.in, sizeof(a)) != 0); /* something was mixed */
	/* each key component changes the draws */
	struct ts_batch k = f.b;
	int differ = 0;
	for (int c = 0; c < 3; c++) {
		struct ts_client_mix m2 = m;
		k = f.b;
		if (c == 0)
			m2.seed++;
		else if (c == 1)
			k.epoch++;
		else
			k.index += N;
		mix(&m2, &k, b, tb);
		differ += memcmp(a, b, sizeof(a)) != 0;
	}
	ck_assert_int_eq(differ, 3);
}
END_TEST

START_TEST(in_place_is_out_of_place)
{
	struct ts_client_mix m = both(_i);
	for (int layout = 0; layout < 2; layout++) {
		struct fixture f;
		fixture_init(&f, layout);
		float out[N * C * H * W], t1[N * K], t2[N * K];
		for (uint64_t idx = 0; idx < 40 * N; idx += N) {
			fixture_init(&f, layout);
			f.b.index = idx;
			mix(&m, &f.b, out, t1);
			f.b.data = f.in;
			mix(&m, &f.b, f.in, t2); /* in place */
			ck_assert(memcmp(out, f.in, sizeof(out)) == 0);
			ck_assert(memcmp(t1, t2, sizeof(t1)) == 0);
		}
	}
}
END_TEST

/* An NHWC batch mixes as the same batch in NCHW, transposed. */
START_TEST(nhwc_is_nchw)
{
	struct ts_client_mix m = both(_i);
	struct fixture f, g;
	fixture_init(&f, TS_LAYOUT_NCHW);
	fixture_init(&g, TS_LAYOUT_NHWC);
	for (int i = 0; i < N; i++)
		for (int c = 0; c < C; c++)
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++)
					g.in[((i * H + y) * W + x) * C + c] =
						f.in[((i * C + c) * H + y) * W + x];
	float a[N * C * H * W], b[N * C * H * W], ta[N * K], tb[N * K];
	int boxes = 0;
	for (uint64_t idx = 0; idx < 30 * N; idx += N) {
		f.b.index = g.b.index = idx;
		mix(&m, &f.b, a, ta);
		mix(&m, &g.b, b, tb);
		ck_assert(memcmp(ta, tb, sizeof(ta)) == 0);
		for (int i = 0; i < N; i++)
			for (int c = 0; c < C; c++)
				for (int y = 0; y < H; y++)
					for (int x = 0; x < W; x++)
						ck_assert(a[((i * C + c) * H + y) * W + x] ==
							  b[((i * H + y) * W + x) * C + c]);
		struct ts_client_mix_sample p[N];
		ck_assert_int_eq(ts_client_mix_params(&m, &f.b, p, NULL), 0);
		boxes += p[0].op == TS_CLIENT_MIX_BOX;
	}
	ck_assert_int_gt(boxes, 0);
}
END_TEST

/* ---- semantics ---- */

/* Blend and box pixels, and the targets, recomputed from the draws. */
START_TEST(pixels_from_params)
{
	struct ts_client_mix m = both(_i);
	struct fixture f;
	fixture_init(&f, TS_LAYOUT_NCHW);
	float out[N * C * H * W], t[N * K];
	double off = OFF, on = ON;
	for (uint64_t idx = 0; idx < 50 * N; idx += N) {
		f.b.index = idx;
		struct ts_client_mix_sample p[N];
		ck_assert_int_eq(ts_client_mix_params(&m, &f.b, p, NULL), 0);
		mix(&m, &f.b, out, t);
		for (int i = 0; i < N; i++) {
			int j = (int)p[i].partner;
			ck_assert_int_eq(j, N - 1 - i);
			for (int c = 0; c < C; c++)
				for (int y = 0; y < H; y++)
					for (int x = 0; x < W; x++) {
						size_t o = (size_t)((c * H + y) * W + x);
						float a = f.in[i * C * H * W + o];
						float b = f.in[j * C * H * W + o], want = a;
						if (p[i].op == TS_CLIENT_MIX_BLEND) {
							float u = a * p[i].lam, v = b * p[i].lam_partner;
							want = u + v;
						} else if (p[i].op == TS_CLIENT_MIX_BOX &&
							   y >= p[i].y0 && y < p[i].y1 &&
							   x >= p[i].x0 && x < p[i].x1) {
							want = b;
						}
						ck_assert(out[i * C * H * W + o] == want);
					}
			double sum = 0;
			for (int k = 0; k < K; k++) {
				float y1 = (float)(k == f.labels[i] ? on : off);
				float y2 = (float)(k == f.labels[j] ? on : off);
				float u = y1 * p[i].lam, v = y2 * p[i].lam_partner;
				ck_assert(t[i * K + k] == u + v);
				sum += t[i * K + k];
			}
			ck_assert(fabs(sum - 1) < 1e-5);
			if (p[i].op == TS_CLIENT_MIX_BOX && m.correct_lam) {
				double area = (double)(p[i].y1 - p[i].y0) * (p[i].x1 - p[i].x0);
				ck_assert(fabs(p[i].lam - (1 - area / (H * W))) < 1e-6);
			}
		}
	}
}
END_TEST

START_TEST(odd_batch_middle_unchanged)
{
	struct ts_client_mix m = both(_i);
	m.prob = 1;
	struct fixture f;
	fixture_init(&f, TS_LAYOUT_NCHW);
	f.b.n = 5;
	float out[N * C * H * W], t[N * K];
	for (uint64_t idx = 0; idx < 20; idx++) {
		f.b.index = idx * 5;
		mix(&m, &f.b, out, t);
		size_t per = C * H * W;
		ck_assert(memcmp(out + 2 * per, f.in + 2 * per, per * sizeof(float)) == 0);
		for (int k = 0; k < K; k++)
			ck_assert(t[2 * K + k] == (float)(k == f.labels[2] ? ON : OFF));
	}
}
END_TEST

/* Both alphas 0, or enabled 0: images as they are, smoothed one-hots. */
START_TEST(smoothing_alone)
{
	struct ts_client_mix m = both(_i % 3);
	if (_i < 3) {
		m.mixup_alpha = 0;
		m.cutmix_alpha = 0;
	} else {
		m.enabled = 0;
	}
	struct fixture f;
	fixture_init(&f, TS_LAYOUT_NCHW);
	float out[N * C * H * W], t[N * K];
	mix(&m, &f.b, out, t);
	ck_assert(memcmp(out, f.in, sizeof(out)) == 0);
	for (int i = 0; i < N; i++)
		for (int k = 0; k < K; k++)
			ck_assert(t[i * K + k] == (float)(k == f.labels[i] ? ON : OFF));
	m.label_smoothing = 0;
	mix(&m, &f.b, out, t);
	for (int i = 0; i < N; i++)
		for (int k = 0; k < K; k++)
			ck_assert(t[i * K + k] == (k == f.labels[i] ? 1.0f : 0.0f));
}
END_TEST

/* ---- distributions ---- */

static struct ts_batch shape_only(size_t n, int h, int w, uint64_t index)
{
	struct ts_batch b;
	memset(&b, 0, sizeof(b));
	b.n = n;
	b.height = h;
	b.width = w;
	b.channels = 3;
	b.index = index;
	return b;
}

/* Batch-mode Mixup lam ~ Beta(a, a): mean 1/2, variance 1/(4(2a+1)). */
START_TEST(beta_moments)
{
	static const double alphas[] = { 0.2, 0.8, 1.0, 2.5 };
	double a = alphas[_i];
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	m.mixup_alpha = a;
	m.num_classes = 10;
	const int draws = 20000;
	double s = 0, s2 = 0;
	for (int d = 0; d < draws; d++) {
		struct ts_batch b = shape_only(2, 8, 8, (uint64_t)d * 2);
		struct ts_client_mix_sample p[2];
		ck_assert_int_eq(ts_client_mix_params(&m, &b, p, NULL), 0);
		/* a lam of exactly 1 (in double) leaves the batch as it is */
		ck_assert(p[0].op == TS_CLIENT_MIX_BLEND ||
			  (p[0].op == TS_CLIENT_MIX_NONE && p[0].lam == 1));
		ck_assert(p[0].lam >= 0 && p[0].lam <= 1);
		s += p[0].lam;
		s2 += (double)p[0].lam * p[0].lam;
	}
	double mean = s / draws, var = s2 / draws - mean * mean;
	double want_var = 1 / (4 * (2 * a + 1));
	ck_assert_msg(fabs(mean - 0.5) < 0.01, "alpha %g: mean %g", a, mean);
	ck_assert_msg(fabs(var - want_var) < 0.05 * want_var, "alpha %g: variance %g, want %g",
		      a, var, want_var);
}
END_TEST

START_TEST(tiny_alpha_is_zero_or_one)
{
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	m.mixup_alpha = 0.001;
	m.num_classes = 2;
	m.mode = TS_CLIENT_MIX_ELEM;
	int extreme = 0;
	for (int d = 0; d < 2000; d++) {
		struct ts_batch b = shape_only(4, 8, 8, (uint64_t)d * 4);
		struct ts_client_mix_sample p[4];
		ck_assert_int_eq(ts_client_mix_params(&m, &b, p, NULL), 0);
		for (int i = 0; i < 4; i++) {
			ck_assert(p[i].lam >= 0 && p[i].lam <= 1);
			extreme += p[i].lam < 1e-3 || p[i].lam > 1 - 1e-3;
		}
	}
	ck_assert_int_gt(extreme, 7900);
}
END_TEST

/* prob and switch_prob: the share of batches mixed, and of CutMix. */
START_TEST(prob_and_switch)
{
	struct ts_client_mix m = both(TS_CLIENT_MIX_ELEM);
	m.prob = 0.6;
	m.switch_prob = 0.3;
	int none = 0, box = 0, total = 0;
	for (int d = 0; d < 2000; d++) {
		struct ts_batch b = shape_only(8, 32, 32, (uint64_t)d * 8);
		struct ts_client_mix_sample p[8];
		ck_assert_int_eq(ts_client_mix_params(&m, &b, p, NULL), 0);
		for (int i = 0; i < 8; i++) {
			none += p[i].op == TS_CLIENT_MIX_NONE;
			box += p[i].op == TS_CLIENT_MIX_BOX;
			total++;
		}
	}
	double mixed = 1 - (double)none / total, cut = (double)box / (total - none);
	ck_assert_msg(fabs(mixed - 0.6) < 0.02, "mixed %g", mixed);
	ck_assert_msg(fabs(cut - 0.3) < 0.02, "cutmix %g", cut);
}
END_TEST

/* cutmix_minmax: box sides in [min, max) of the image's, inside it, lam
 * its area's complement; the square-ratio box of lam otherwise. */
START_TEST(boxes)
{
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	m.mixup_alpha = 0;
	m.num_classes = 3;
	m.cutmix_min = 0.2;
	m.cutmix_max = 0.8;
	int hmin = 1000, hmax = 0;
	for (int d = 0; d < 3000; d++) {
		struct ts_batch b = shape_only(2, 50, 40, (uint64_t)d * 2);
		struct ts_client_mix_sample p[2];
		ck_assert_int_eq(ts_client_mix_params(&m, &b, p, NULL), 0);
		ck_assert_int_eq(p[0].op, TS_CLIENT_MIX_BOX);
		int bh = p[0].y1 - p[0].y0, bw = p[0].x1 - p[0].x0;
		ck_assert(bh >= 10 && bh < 40 && bw >= 8 && bw < 32);
		ck_assert(p[0].y0 >= 0 && p[0].y1 <= 50 && p[0].x0 >= 0 && p[0].x1 <= 40);
		ck_assert(fabs(p[0].lam - (1 - bh * bw / 2000.0)) < 1e-6);
		hmin = bh < hmin ? bh : hmin;
		hmax = bh > hmax ? bh : hmax;
	}
	ck_assert_int_eq(hmin, 10);
	ck_assert_int_eq(hmax, 39);
	/* the ratio box, lam uncorrected: unclipped sides 2 * (int(h * sqrt(1 - lam)) / 2) */
	m.cutmix_min = m.cutmix_max = 0;
	m.cutmix_alpha = 1;
	m.correct_lam = 0;
	int whole = 0;
	for (int d = 0; d < 3000; d++) {
		struct ts_batch b = shape_only(2, 50, 40, (uint64_t)d * 2);
		struct ts_client_mix_sample p[2];
		ck_assert_int_eq(ts_client_mix_params(&m, &b, p, NULL), 0);
		double r = sqrt(1 - (double)p[0].lam);
		int ch = (int)(50 * r) / 2 * 2, cw = (int)(40 * r) / 2 * 2;
		int bh = p[0].y1 - p[0].y0, bw = p[0].x1 - p[0].x0;
		ck_assert(bh <= ch + 1 && bw <= cw + 1);
		if (p[0].y0 > 0 && p[0].y1 < 50 && p[0].x0 > 0 && p[0].x1 < 40) {
			ck_assert(abs(bh - ch) <= 1 && abs(bw - cw) <= 1);
			whole++;
		}
	}
	ck_assert_int_gt(whole, 300);
}
END_TEST

/* Sized structs (libtsrun(3)): ts_client_mix_init writes no byte past
 * the size its caller passes; a shorter (older) struct is read up to its
 * size, the defaults taken for the rest; an unset size, or a newer one
 * that sets a field this library does not know, is refused by name. */
START_TEST(sized_mix)
{
	union { struct ts_client_mix m; unsigned char b[sizeof(struct ts_client_mix) + 16]; } u;
	size_t old = offsetof(struct ts_client_mix, seed);
	struct ts_error err = {0};
	memset(&u, 0xaa, sizeof(u));
	ts_client_mix_init_size(&u.m, old);
	ck_assert_uint_eq(u.m.size, old);
	ck_assert_uint_eq(u.m.num_classes, 1000);
	for (size_t i = old; i < sizeof(u.b); i++)
		ck_assert_msg(u.b[i] == 0xaa, "byte %zu past the caller's size written", i);
	/* seed and enabled lie past the size: garbage there is not read */
	ck_assert_int_eq(ts_client_mix_check(&u.m, &err), 0);
	u.m.size = 0;
	ck_assert_int_eq(ts_client_mix_check(&u.m, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "struct ts_client_mix: its size field is 0") &&
		      strstr(err.msg, "ts_client_mix_init"), "%s", err.msg);
	/* a bad value past the size is not read: num_classes 0 is refused
	 * only when the caller's struct has it */
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	m.num_classes = 0;
	m.size = offsetof(struct ts_client_mix, num_classes);
	ck_assert_int_eq(ts_client_mix_check(&m, &err), 0);
	m.size = sizeof(m);
	ck_assert_int_eq(ts_client_mix_check(&m, &err), TS_E_ARG);
	/* newer: 8 bytes more */
	struct { struct ts_client_mix m; uint64_t newer; } big;
	ts_client_mix_init(&big.m);
	big.m.size = sizeof(big);
	big.newer = 1;
	ck_assert_int_eq(ts_client_mix_check(&big.m, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "from a newer header"), "%s", err.msg);
	big.newer = 0;
	ck_assert_int_eq(ts_client_mix_check(&big.m, &err), 0);
}
END_TEST

static Suite *mix_suite(void)
{
	Suite *s = suite_create("mix");
	TCase *tc = tcase_create("parameters");
	tcase_add_loop_test(tc, bad_parameter, 0, (int)(sizeof(bad_params) / sizeof(bad_params[0])));
	tcase_add_test(tc, defaults_are_timms);
	tcase_add_test(tc, bad_batch);
	tcase_add_test(tc, sized_mix);
	suite_add_tcase(s, tc);
	tc = tcase_create("determinism");
	tcase_add_loop_test(tc, same_position_same_bytes, 0, 3);
	tcase_add_loop_test(tc, in_place_is_out_of_place, 0, 3);
	tcase_add_loop_test(tc, nhwc_is_nchw, 0, 3);
	suite_add_tcase(s, tc);
	tc = tcase_create("semantics");
	tcase_add_loop_test(tc, pixels_from_params, 0, 3);
	tcase_add_loop_test(tc, odd_batch_middle_unchanged, 0, 3);
	tcase_add_loop_test(tc, smoothing_alone, 0, 6);
	suite_add_tcase(s, tc);
	tc = tcase_create("distributions");
	tcase_add_loop_test(tc, beta_moments, 0, 4);
	tcase_add_test(tc, tiny_alpha_is_zero_or_one);
	tcase_add_test(tc, prob_and_switch);
	tcase_add_test(tc, boxes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mix_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
