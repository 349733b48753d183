/* test-policy.c - the policy family: operator chains as values (parse),
 * what the checker makes of random_apply, random_choice and
 * random_erasing (plan fields, branch streams, the misuses and where they
 * point), the draws over 10,000 samples against the distributions
 * torchvision samples from, the kernels (branches run, boxes filled in
 * every dtype and layout), and the same output for the same stream
 * position. The match with torchvision on real photos is
 * tests/torch-policy.py's job. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef TS_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

#include "augment.h"
#include "color.h"
#include "dsl.h"
#include "kernel.h"
#include "policy.h"
#include "augmix.h"
#include "unit-dsl.h"

#define DRAWS 10000


/* The plan of `synthetic(...) | STAGES | batch(2)`, which must compile. */
static struct ts_plan *plan_of(const char *stages, int h, int w, int c)
{
	char src[2048];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([%d, %d], count = 4, channels = %d)\n"
		 "    | %s\n    | batch(2)\n", h, w, c, stages);
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(src, &d, &rc);
	char *t = ts_diags_render(&d);
	ck_assert_msg(p && rc == 0, "%s: %s", stages, t ? t : "");
	free(t);
	ts_diags_fini(&d);
	return p;
}

static struct ts_image make_u8(int w, int h, int c)
{
	struct ts_image img = { 0 };
	ck_assert_int_eq(ts_image_reserve(&img, w, h, c, TS_DTYPE_U8), 0);
	for (size_t i = 0; i < (size_t)w * h * c; i++)
		img.data[i] = (uint8_t)(i * 37 + 11);
	return img;
}

/* Chi-square of counts against probabilities; below the bound for dof
 * degrees of freedom at about p = 0.001 (dof + 3.3 sqrt(2 dof) + 3). */
static void chi_square(const long *count, const double *prob, int k, long n,
		       const char *what)
{
	double x2 = 0;
	int dof = -1;
	for (int i = 0; i < k; i++) {
		double e = prob[i] * (double)n;
		if (e <= 0) {
			ck_assert_msg(count[i] == 0, "%s: bin %d has %ld, expected none", what,
				      i, count[i]);
			continue;
		}
		x2 += (count[i] - e) * (count[i] - e) / e;
		dof++;
	}
	double bound = dof + 3.3 * sqrt(2.0 * dof) + 3;
	ck_assert_msg(x2 < bound, "%s: chi-square %.1f over %d dof (bound %.1f)", what, x2,
		      dof, bound);
}

/* ---- parse: operators as a value ---- */

START_TEST(parse_chain)
{
	const char *src = "let s = invert() | posterize(3)\n"
			  "pipeline p = synthetic(8) | random_apply(flip(horizontal) | s, p = 0.5)"
			  " | random_choice([invert, equalize() | autocontrast])\n";
	struct ts_diags d;
	struct ts_ast_program prog = {0};
	ts_diags_init(&d, "t.ts", src, strlen(src));
	ck_assert_int_eq(ts_dsl_parse(src, strlen(src), &d, &prog), 0);
	char *t = ts_ast_format(&prog);
	ck_assert_ptr_nonnull(t);
	/* the let's chain, the argument's chain, the list's second item */
	ck_assert_msg(strstr(t, "let s") && strstr(t, "  ops 2 @1:9-1:31\n"), "%s", t);
	ck_assert_msg(strstr(t, "      ops 2 @2:42-2:61\n"), "%s", t);
	ck_assert_msg(strstr(t, "call posterize 1"), "%s", t);
	ck_assert_msg(strstr(t, "word invert"), "%s", t); /* a bare name stays a word */
	ck_assert_msg(strstr(t, "call autocontrast 0"), "%s", t);
	free(t);
	ts_ast_program_destroy(&prog);
	ts_diags_fini(&d);
}
END_TEST

/* ---- check: plans ---- */

START_TEST(check_plan)
{
	struct ts_plan *p = plan_of(
		"random_apply(color_jitter(0.4, 0.4, 0.4) | grayscale(3), p = 0.8)\n"
		"    | random_choice([invert, posterize(3) | solarize(100)], p = [1, 3])\n"
		"    | normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])\n"
		"    | random_erasing(0.25, value = [1, 2, 3])\n"
		"    | to(float16, nchw)", 16, 20, 3);
	ck_assert_uint_eq(p->n_ops, 3);
	const struct ts_op *ra = &p->ops[0], *rc = &p->ops[1], *out = &p->ops[2];
	ck_assert_int_eq(ra->kind, TS_OP_RANDOM_APPLY);
	ck_assert(ra->policy.p == 0.8);
	ck_assert_uint_eq(ra->policy.n_branches, 1);
	ck_assert_uint_eq(ra->policy.branches[0].n_ops, 2);
	ck_assert_int_eq(ra->policy.branches[0].ops[0].kind, TS_OP_COLOR_JITTER);
	ck_assert_int_eq(ra->policy.branches[0].ops[1].kind, TS_OP_GRAYSCALE);
	ck_assert_int_eq(rc->kind, TS_OP_RANDOM_CHOICE);
	ck_assert_uint_eq(rc->policy.n_branches, 2);
	ck_assert_uint_eq(rc->policy.branches[1].n_ops, 2);
	ck_assert(rc->policy.branches[0].weight == 1 && rc->policy.branches[1].weight == 3);
	/* every branch op has a stream of its own, none a pipeline position */
	int ids[4] = { ra->policy.branches[0].ops[0].index, ra->policy.branches[0].ops[1].index,
		       rc->policy.branches[0].ops[0].index, rc->policy.branches[1].ops[1].index };
	for (int i = 0; i < 4; i++) {
		ck_assert_int_ge(ids[i], 1 << 20);
		for (int j = 0; j < i; j++)
			ck_assert_int_ne(ids[i], ids[j]);
	}
	/* random_erasing joins the output stage, after normalize */
	ck_assert_int_eq(out->kind, TS_OP_OUTPUT);
	ck_assert_uint_eq(out->output.n_parts, 3);
	const struct ts_op *re = &out->output.parts[1];
	ck_assert_int_eq(re->kind, TS_OP_RANDOM_ERASING);
	ck_assert(re->policy.p == 0.25 && re->policy.scale_lo == 0.02 && re->policy.scale_hi == 0.33);
	ck_assert(re->policy.ratio_lo == 0.3 && re->policy.ratio_hi == 3.3);
	ck_assert_int_eq(re->policy.n_erase, 3);
	ck_assert(re->policy.erase_value[2] == 3.0f && !re->policy.erase_random);
	ts_plan_destroy(p);

	p = plan_of("normalize([0.5], [0.5]) | random_erasing(value = random)", 8, 8, 1);
	ck_assert(p->ops[0].output.parts[1].policy.erase_random);
	ts_plan_destroy(p);
}
END_TEST

/* tsrun graph shows the ops inside the policies below them, nested. */
START_TEST(graph_branches)
{
	struct ts_plan *p = plan_of(
		"random_choice([random_apply(invert() | posterize(2), 0.3) | flip(horizontal),"
		" random_choice([equalize, autocontrast], p = [3, 1])])", 8, 8, 3);
	char *t = ts_plan_format(p, false);
	ck_assert_ptr_nonnull(t);
	const char *want[] = {
		"\n  random_choice(p=[1, 1]) ",
		"\n    1: random_apply(p=0.3) ",
		"\n        | invert(p=1) ",
		"\n        | posterize(bits=2, p=1) ",
		"\n      | flip(horizontal, p=0.5) ",
		"\n    2: random_choice(p=[3, 1]) ",
		"\n        1: equalize(p=1) ",
		"\n        2: autocontrast(p=1) ",
	};
	const char *at = t;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *f = strstr(at, want[i]);
		ck_assert_msg(f, "no '%s' (in order) in:\n%s", want[i] + 1, t);
		at = f + 1;
	}
	free(t);
	t = ts_plan_format(p, true);
	ck_assert_msg(strstr(t, "random_choice(p=[1, 1])\\n  1: random_apply(p=0.3)\\n    | invert(p=1)"),
		      "%s", t);
	free(t);
	ts_plan_destroy(p);
}
END_TEST

/* Misuses: the message and the column it points at (line 4). */
static const struct {
	const char *pre, *stage, *msg;
	int col;
} misuses[] = {
	{ "", "random_erasing(0.5)",
	  "'random_erasing' works on the float tensor (torchvision applies RandomErasing after ToTensor and Normalize), but the data is uint8 nhwc here", 7 },
	{ "", "random_apply(resize(4), p = 0.5)",
	  "random_apply's operators turn 8x8x3 uint8 nhwc into 4x4x3 uint8 nhwc, but with probability 1 - p they do not run", 20 },
	{ "", "random_apply(normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]))",
	  "into normalized 8x8x3 float32 nhwc", 20 },
	{ "", "random_choice([])", "random_choice has no alternatives to choose from", 21 },
	{ "", "random_choice([resize(4), resize(6)])",
	  "random_choice's alternative 2 gives 6x6x3 uint8 nhwc, but alternative 1 gives 4x4x3 uint8 nhwc", 33 },
	{ "", "random_choice([invert, 3])", "random_choice's alternative 2 is a number, not operators", 30 },
	{ "", "random_choice([invert, equalize], p = [1])",
	  "random_choice has 2 alternatives but 1 weight", 45 },
	{ "", "random_choice([invert, equalize], p = [0, 0])",
	  "random_choice's weights are all 0", 45 },
	{ "", "random_choice([invert], p = [-1])", "parameter 'p' must not be negative", 36 },
	{ "", "random_apply(tile(4))", "'tile' cannot run inside random_apply: it makes a variable number of samples", 20 },
	{ "", "random_apply(decode(rgb))", "'decode' cannot run inside random_apply", 20 },
	{ "", "random_apply(batch(2))", "'batch' is a sink stage: only per-sample operators run inside random_apply", 20 },
	{ "", "random_apply(invrt)", "unknown operator 'invrt'", 20 },
	{ "", "random_apply(invert() | posterize(9))", "parameter 'bits'", 41 },
	{ "", "random_apply(s() | invert)", "unknown operator 's'", 20 },
	{ "", "random_apply(3)", "parameter 'ops' expects operators", 20 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ", "random_apply(equalize)",
	  "'equalize' works on uint8 nhwc pixels, but the data is float32 nhwc here", 20 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ",
	  "random_choice([to(float16), to(float16)])",
	  "'to(float16, nhwc)' cannot run inside random_choice", 22 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ", "random_erasing(value = [1, 2])",
	  "random_erasing has 2 values, but the image has 3 channels", 30 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ", "random_erasing(value = rnd)",
	  "unknown value 'rnd' for parameter 'value'", 30 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ", "random_erasing(scale = 0.1..1.5)",
	  "parameter 'scale' must be between 0 and 1", 35 },
	{ "", "rand_augment(2, 31)",
	  "magnitude 31 is out of range: num_magnitude_bins = 31 has bins 0 to 30", 23 },
	{ "", "rand_augment(magnitude = 10, num_magnitude_bins = 10)",
	  "magnitude 10 is out of range: num_magnitude_bins = 10 has bins 0 to 9", 32 },
	{ "", "trivial_augment_wide(num_magnitude_bins = 1)",
	  "parameter 'num_magnitude_bins' must be between 2 and 1024, got 1", 49 },
	{ "", "auto_augment(imagnet)", "unknown value 'imagnet' for parameter 'policy'", 20 },
	{ "", "rand_augment(fill = [1, 2])", "'rand_augment' has 2 fill values, but the image has 3 channels", 27 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ", "rand_augment(2, 9)",
	  "'rand_augment' works on uint8 nhwc pixels, but the data is float32 nhwc here", 7 },
	{ "| to(uint16) ", "trivial_augment_wide",
	  "'trivial_augment_wide' works on uint8 pixels, but the data is uint16 here", 7 },
	{ "| normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) ", "random_apply(auto_augment(svhn))",
	  "'auto_augment' works on uint8 nhwc pixels, but the data is float32 nhwc here", 20 },
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

/* ---- draws ---- */

START_TEST(apply_and_choice_draws)
{
	struct ts_plan *p = plan_of("random_apply(invert, p = 0.3)"
				    " | random_choice([invert, equalize, autocontrast], p = [1, 2, 1])",
				    8, 8, 3);
	long applied[2] = {0}, chosen[3] = {0};
	for (uint64_t i = 0; i < DRAWS; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 7, 0, i, (uint64_t)p->ops[0].index);
		applied[ts_policy_apply_draw(&p->ops[0], &r)]++;
		ts_rng_init(&r, 7, 0, i, (uint64_t)p->ops[1].index);
		chosen[ts_policy_choice_draw(&p->ops[1], &r)]++;
	}
	const double pa[2] = { 0.7, 0.3 }, pc[3] = { 0.25, 0.5, 0.25 };
	chi_square(applied, pa, 2, DRAWS, "random_apply p = 0.3");
	chi_square(chosen, pc, 3, DRAWS, "random_choice p = [1, 2, 1]");
	ts_plan_destroy(p);

	/* weight 0 is never chosen */
	p = plan_of("random_choice([invert, equalize], p = [0, 1])", 8, 8, 3);
	for (uint64_t i = 0; i < 1000; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 1, 0, i, 0);
		ck_assert_uint_eq(ts_policy_choice_draw(&p->ops[0], &r), 1);
	}
	ts_plan_destroy(p);
}
END_TEST

/* RandomErasing.get_params over 10,000 draws on 40 x 60: the box obeys
 * its formulas, and the first attempt's area and log-ratio are uniform
 * (their deciles, from boxes whose first attempt was accepted). */
START_TEST(erasing_draws)
{
	struct ts_plan *p = plan_of("to(float32) | random_erasing(0.5, scale = 0.02..0.33, ratio = 0.3..3.3)",
				    40, 60, 3);
	const struct ts_op *op = &p->ops[0].output.parts[1];
	const int H = 40, W = 60;
	long applied[2] = {0};
	long n_box = 0;
	for (uint64_t i = 0; i < DRAWS; i++) {
		struct ts_rng r;
		struct ts_erase_box b;
		ts_rng_init(&r, 3, 1, i, (uint64_t)op->index);
		ts_policy_erase_box(op, H, W, &r, &b);
		/* the p draw is the stream's first: replay it */
		struct ts_rng q;
		ts_rng_init(&q, 3, 1, i, (uint64_t)op->index);
		bool want = ts_rng_uniform(&q) < 0.5;
		if (!want) {
			ck_assert(!b.apply);
			applied[0]++;
			continue;
		}
		applied[1]++;
		if (!b.apply)
			continue; /* ten misses */
		n_box++;
		ck_assert_int_lt(b.h, H);
		ck_assert_int_lt(b.w, W);
		ck_assert_int_ge(b.i, 0);
		ck_assert_int_ge(b.j, 0);
		ck_assert_int_le(b.i + b.h, H);
		ck_assert_int_le(b.j + b.w, W);
		/* area and ratio within the ranges, up to the rounding of h, w */
		double area = (double)b.h * b.w / (H * W);
		ck_assert_msg(area < 0.33 * 1.25 + 0.01 && area > 0.0,
			      "area %g", area);
		double ratio = (double)b.h / b.w;
		double hmax = (b.h + 0.5) / (b.w - 0.5 > 0 ? b.w - 0.5 : 0.5);
		double hmin = (b.h - 0.5) / (b.w + 0.5);
		ck_assert_msg(hmax >= 0.3 && hmin <= 3.3, "ratio %g", ratio);
	}
	const double half[2] = { 0.5, 0.5 };
	chi_square(applied, half, 2, DRAWS, "random_erasing p = 0.5");
	ck_assert_int_gt(n_box, DRAWS / 2 - 600);
	ts_plan_destroy(p);
}
END_TEST

/* rand_augment(2, 9) over 10,000 samples: each step's op uniform over
 * RandAugment's 14, the signed ones half negative (23 outcomes); every
 * magnitude the table's bin 9 (ShearX 0.09, Rotate 9, Posterize 7,
 * Solarize 178.5 at 31 bins). */
START_TEST(rand_augment_draws)
{
	struct ts_plan *p = plan_of("rand_augment(2, 9)", 200, 224, 3);
	const struct ts_op *op = &p->ops[0];
	ck_assert_int_eq(op->kind, TS_OP_RAND_AUGMENT);
	ck_assert_int_eq(op->policy.num_ops, 2);
	ck_assert_int_eq(op->policy.magnitude, 9);
	ck_assert_int_eq(op->policy.num_bins, 31);
	ck_assert_int_eq(op->policy.interp, TS_INTERP_NEAREST);
	long count[2][TS_PA_COUNT][2];
	memset(count, 0, sizeof(count));
	for (uint64_t i = 0; i < DRAWS; i++) {
		struct ts_rng r;
		struct ts_policy_step st[TS_POLICY_MAX_STEPS];
		ts_rng_init(&r, 11, 0, i, (uint64_t)op->index);
		ck_assert_int_eq(ts_policy_draw(op, 224, 200, &r, st), 2);
		for (int k = 0; k < 2; k++) {
			ck_assert_int_lt(st[k].op, TS_PA_INVERT);
			count[k][st[k].op][st[k].magnitude < 0]++;
			double m = fabs(st[k].magnitude);
			switch (st[k].op) {
			case TS_PA_SHEAR_X: ck_assert(m == (double)0.09f); break;
			case TS_PA_ROTATE: ck_assert(m == 9.0); break;
			case TS_PA_POSTERIZE: ck_assert(st[k].magnitude == 7.0); break;
			case TS_PA_SOLARIZE: ck_assert(st[k].magnitude == 178.5); break;
			case TS_PA_IDENTITY: case TS_PA_EQUALIZE: case TS_PA_AUTOCONTRAST:
				ck_assert(st[k].magnitude == 0.0); break;
			default: break;
			}
		}
	}
	for (int k = 0; k < 2; k++) {
		long c[2 * TS_PA_COUNT];
		double pr[2 * TS_PA_COUNT];
		for (int o = 0; o < TS_PA_COUNT; o++) {
			bool sg;
			float mag[64];
			int n = ts_policy_table(TS_OP_RAND_AUGMENT, o, 31, 224, 200, mag, &sg);
			double po = o == TS_PA_INVERT ? 0 : 1.0 / 14;
			c[2 * o] = count[k][o][0];
			c[2 * o + 1] = count[k][o][1];
			pr[2 * o] = n && sg ? po / 2 : po;
			pr[2 * o + 1] = n && sg ? po / 2 : 0;
		}
		chi_square(c, pr, 2 * TS_PA_COUNT, DRAWS, "rand_augment(2, 9) step");
	}
	ts_plan_destroy(p);
}
END_TEST

/* augmix over 10,000: the Beta and Dirichlet weights sum to 1 and have
 * their means (1/2, 1/width), the depth uniform over 1..3, the op over
 * the 13, the bin over 0..severity-1 with the table's value; the same
 * position draws the same; the mixing at m = (1, 0) is the image, and
 * one chain at full weight is its op. */
START_TEST(augmix_draws)
{
	struct ts_plan *p = plan_of("augmix(severity = 4, mixture_width = 5, alpha = 0.8)", 200, 224, 3);
	const struct ts_op *op = &p->ops[0];
	ck_assert_int_eq(op->kind, TS_OP_AUGMIX);
	ck_assert_int_eq(op->policy.augmix_severity, 4);
	ck_assert_int_eq(op->policy.augmix_width, 5);
	ck_assert_int_eq(op->policy.augmix_depth, -1);
	ck_assert(op->policy.augmix_all_ops && !op->policy.augmix_fill);
	ck_assert_int_eq(op->policy.interp, TS_INTERP_BILINEAR);
	struct ts_augmix_draw *d = malloc(sizeof(*d)), *e = malloc(sizeof(*e));
	ck_assert(d && e);
	long depth[3] = { 0 }, ops[TS_AUGMIX_OPS] = { 0 }, bins[4] = { 0 }, n_ops = 0, n_bins = 0;
	double m0 = 0, w0 = 0;
	for (uint64_t i = 0; i < DRAWS; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 5, 0, i, (uint64_t)op->index);
		ts_augmix_draw(op, 224, 200, &r, d);
		ck_assert_int_eq(d->width, 5);
		ck_assert(fabs(d->m[0] + d->m[1] - 1) < 1e-6);
		double sw = 0;
		for (int k = 0; k < 5; k++)
			sw += d->w[k];
		ck_assert(fabs(sw - 1) < 1e-5);
		m0 += d->m[0];
		w0 += d->w[0];
		for (int k = 0; k < 5; k++) {
			ck_assert(d->depth[k] >= 1 && d->depth[k] <= 3);
			depth[d->depth[k] - 1]++;
			for (int j = 0; j < d->depth[k]; j++) {
				const struct ts_augmix_step *s = &d->steps[k][j];
				ops[s->index]++;
				n_ops++;
				ck_assert_int_eq(s->step.op, ts_augmix_op(s->index));
				if (s->bin >= 0) {
					ck_assert_int_lt(s->bin, 4);
					bins[s->bin]++;
					n_bins++;
				}
				if (s->step.op == TS_PA_POSTERIZE)
					ck_assert(s->step.magnitude == (s->bin < 2 ? 4.0 : 3.0));
				if (s->step.op == TS_PA_ROTATE)
					ck_assert(fabs(s->step.magnitude) == (double)(30.0f / 9 * s->bin) ||
						  fabs(fabs(s->step.magnitude) - 30.0 / 9 * s->bin) < 1e-5);
				if (s->step.op == TS_PA_EQUALIZE)
					ck_assert(s->bin == -1 && s->sign == -1 && s->step.magnitude == 0);
			}
		}
	}
	ck_assert(fabs(m0 / DRAWS - 0.5) < 0.015);
	ck_assert(fabs(w0 / DRAWS - 0.2) < 0.01);
	long total = depth[0] + depth[1] + depth[2];
	const double third[3] = { 1.0 / 3, 1.0 / 3, 1.0 / 3 }, quarter[4] = { 0.25, 0.25, 0.25, 0.25 };
	double uni[TS_AUGMIX_OPS];
	for (int i = 0; i < TS_AUGMIX_OPS; i++)
		uni[i] = 1.0 / TS_AUGMIX_OPS;
	chi_square(depth, third, 3, total, "augmix depth");
	chi_square(ops, uni, TS_AUGMIX_OPS, n_ops, "augmix op");
	chi_square(bins, quarter, 4, n_bins, "augmix bin");
	/* the same position, the same draws */
	struct ts_rng r1, r2;
	ts_rng_init(&r1, 5, 0, 17, (uint64_t)op->index);
	ts_rng_init(&r2, 5, 0, 17, (uint64_t)op->index);
	ts_augmix_draw(op, 224, 200, &r1, d);
	ts_augmix_draw(op, 224, 200, &r2, e);
	ck_assert_mem_eq(d, e, sizeof(*d));
	/* m = (1, 0): the image; one chain at weight 1 of Posterize(0): 0 */
	struct ts_image img = make_u8(224, 200, 3), tmp = { 0 }, orig = make_u8(224, 200, 3);
	struct ts_error err = { 0 };
	d->m[0] = 1.0f;
	d->m[1] = 0.0f;
	ck_assert_int_eq(ts_augmix_apply(op, d, &img, &tmp, &err), 0);
	ck_assert_mem_eq(img.data, orig.data, ts_image_bytes(&orig));
	memset(d, 0, sizeof(*d));
	d->m[1] = 1.0f;
	d->w[0] = 1.0f;
	d->width = 1;
	d->depth[0] = 1;
	d->steps[0][0].step = (struct ts_policy_step){ TS_PA_POSTERIZE, 0.0 };
	ck_assert_int_eq(ts_augmix_apply(op, d, &img, &tmp, &err), 0);
	for (size_t i = 0; i < ts_image_bytes(&img); i++)
		ck_assert_int_eq(img.data[i], 0);
	ck_assert_ptr_nonnull(ts_kernel_find(TS_OP_AUGMIX));
	ts_image_free(&img);
	ts_image_free(&orig);
	ts_image_free(&tmp);
	free(d);
	free(e);
	ts_plan_destroy(p);
}
END_TEST

/* The memory estimate counts augmix's float32 mix and chain image: five
 * image-sized buffers per worker beyond what invert holds, inside a
 * random_apply too. */
START_TEST(augmix_scratch)
{
	struct ts_plan *a = plan_of("invert", 200, 224, 3);
	struct ts_plan *b = plan_of("augmix", 200, 224, 3);
	struct ts_plan *c = plan_of("random_apply(augmix, p = 0.5)", 200, 224, 3);
	const uint64_t img = 200 * 224 * 3;
	ck_assert_int_gt(a->mem_threads, 0);
	ck_assert_uint_eq(b->mem_scratch / (uint64_t)b->mem_threads,
			  a->mem_scratch / (uint64_t)a->mem_threads + 5 * img);
	ck_assert_uint_eq(c->mem_scratch, b->mem_scratch);
	ts_plan_destroy(a);
	ts_plan_destroy(b);
	ts_plan_destroy(c);
}
END_TEST

/* trivial_augment_wide over 10,000: the op uniform, the bin of a tabled
 * op uniform over num_magnitude_bins (here 8). */
START_TEST(trivial_augment_draws)
{
	struct ts_plan *p = plan_of("trivial_augment_wide(num_magnitude_bins = 8)", 50, 60, 3);
	const struct ts_op *op = &p->ops[0];
	long ops[TS_PA_COUNT] = {0}, bins[8] = {0};
	long n_bins = 0;
	for (uint64_t i = 0; i < DRAWS; i++) {
		struct ts_rng r;
		struct ts_policy_step st[TS_POLICY_MAX_STEPS];
		ts_rng_init(&r, 2, 3, i, (uint64_t)op->index);
		ck_assert_int_eq(ts_policy_draw(op, 60, 50, &r, st), 1);
		ops[st[0].op]++;
		if (st[0].op == TS_PA_ROTATE) {
			/* linspace(0, 135, 8): bin k is 135 k / 7 */
			double k = fabs(st[0].magnitude) * 7 / 135;
			ck_assert(fabs(k - rint(k)) < 1e-4);
			bins[(int)rint(k)]++;
			n_bins++;
		}
	}
	double po[TS_PA_COUNT], pb[8];
	for (int o = 0; o < TS_PA_COUNT; o++)
		po[o] = o == TS_PA_INVERT ? 0 : 1.0 / 14;
	for (int b = 0; b < 8; b++)
		pb[b] = 1.0 / 8;
	chi_square(ops, po, TS_PA_COUNT, DRAWS, "trivial_augment_wide op");
	chi_square(bins, pb, 8, n_bins, "trivial_augment_wide Rotate bin");
	ts_plan_destroy(p);
}
END_TEST

/* auto_augment(imagenet): sub-policy 0 is (Posterize 0.4 bin 8, Rotate
 * 0.6 bin 9); over 10,000 draws Posterize(4) comes first about 0.4 / 25
 * of the time; the number of ops applied follows the table's p. */
START_TEST(auto_augment_draws)
{
	struct ts_plan *p = plan_of("auto_augment(imagenet)", 32, 32, 3);
	const struct ts_op *op = &p->ops[0];
	long applied[3] = {0};
	double pa[3] = {0};
	/* the imagenet pairs' p, as torchvision lists them */
	static const double pp[25][2] = {
		{0.4, 0.6}, {0.6, 0.6}, {0.8, 0.6}, {0.6, 0.6}, {0.4, 0.2}, {0.4, 0.8},
		{0.6, 0.6}, {0.8, 1.0}, {0.2, 0.6}, {0.6, 0.4}, {0.8, 0.4}, {0.4, 0.6},
		{0.0, 0.8}, {0.6, 1.0}, {0.6, 1.0}, {0.8, 1.0}, {0.8, 0.8}, {0.4, 0.6},
		{0.6, 1.0}, {0.4, 0.6}, {0.4, 0.2}, {0.6, 0.6}, {0.6, 1.0}, {0.6, 1.0},
		{0.8, 0.6}};
	for (int k = 0; k < 25; k++) {
		double a = pp[k][0], b = pp[k][1];
		pa[0] += (1 - a) * (1 - b) / 25;
		pa[1] += (a * (1 - b) + (1 - a) * b) / 25;
		pa[2] += a * b / 25;
	}
	for (uint64_t i = 0; i < DRAWS; i++) {
		struct ts_rng r;
		struct ts_policy_step st[TS_POLICY_MAX_STEPS];
		ts_rng_init(&r, 4, 0, i, (uint64_t)op->index);
		int n = ts_policy_draw(op, 32, 32, &r, st);
		ck_assert_int_le(n, 2);
		applied[n]++;
		for (int k = 0; k < n; k++)
			if (st[k].op == TS_PA_POSTERIZE)
				ck_assert(st[k].magnitude == 4 || st[k].magnitude == 5 ||
					  st[k].magnitude == 6);
	}
	chi_square(applied, pa, 3, DRAWS, "auto_augment(imagenet) ops applied");
	ts_plan_destroy(p);
}
END_TEST

/* ---- kernels ---- */

START_TEST(kernel_rows)
{
	const enum ts_op_kind kinds[] = { TS_OP_RANDOM_APPLY, TS_OP_RANDOM_CHOICE,
					  TS_OP_RANDOM_ERASING, TS_OP_RAND_AUGMENT,
					  TS_OP_TRIVIAL_AUGMENT_WIDE, TS_OP_AUTO_AUGMENT };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		ck_assert_ptr_nonnull(ts_kernel_find(kinds[i]));
}
END_TEST

/* Run the plan's ops before the output stage on img, at (seed, 0, index). */
static void run_middle(const struct ts_plan *p, struct ts_image *img, uint64_t index)
{
	struct ts_image tmp = {0};
	struct ts_error err = {0};
	for (size_t i = 0; i < p->n_ops && p->ops[i].kind != TS_OP_OUTPUT; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 5, 0, index, (uint64_t)p->ops[i].index);
		ck_assert_int_eq(ts_kernel_apply(&p->ops[i], img, &tmp, &r, &err), 0);
	}
	ts_image_free(&tmp);
}

/* random_apply runs its ops in order, or none: each sample's result is
 * the image itself or invert then posterize(2) of it, about as often as
 * p says; and the same index gives the same result. */
START_TEST(apply_runs_branch)
{
	struct ts_plan *p = plan_of("random_apply(invert() | posterize(2), p = 0.4)", 5, 7, 3);
	struct ts_image orig = make_u8(7, 5, 3), want = make_u8(7, 5, 3);
	ts_color_invert(&want);
	ts_color_posterize(&want, 2);
	long n[2] = {0};
	for (uint64_t i = 0; i < 2000; i++) {
		struct ts_image img = make_u8(7, 5, 3);
		run_middle(p, &img, i);
		bool same = memcmp(img.data, orig.data, ts_image_bytes(&img)) == 0;
		bool applied = memcmp(img.data, want.data, ts_image_bytes(&img)) == 0;
		ck_assert(same != applied);
		n[applied]++;
		struct ts_image again = make_u8(7, 5, 3);
		run_middle(p, &again, i);
		ck_assert_mem_eq(again.data, img.data, ts_image_bytes(&img));
		ts_image_free(&img);
		ts_image_free(&again);
	}
	const double pa[2] = { 0.6, 0.4 };
	chi_square(n, pa, 2, 2000, "random_apply(invert | posterize(2), p = 0.4)");
	ts_image_free(&orig);
	ts_image_free(&want);
	ts_plan_destroy(p);
}
END_TEST

/* random_choice runs exactly its drawn alternative; ops inside a branch
 * draw from their own stream (a flip inside does not always agree with
 * the choice's draw). */
START_TEST(choice_runs_alternative)
{
	struct ts_plan *p = plan_of("random_choice([invert, equalize, flip(horizontal, p = 0.5)])",
				    6, 9, 3);
	struct ts_image alt[3] = { make_u8(9, 6, 3), make_u8(9, 6, 3), make_u8(9, 6, 3) };
	struct ts_image orig = make_u8(9, 6, 3);
	ts_color_invert(&alt[0]);
	ts_color_equalize(&alt[1]);
	ts_aug_flip(&alt[2], true);
	long flips[2] = {0};
	for (uint64_t i = 0; i < 3000; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 5, 0, i, (uint64_t)p->ops[0].index);
		size_t k = ts_policy_choice_draw(&p->ops[0], &r);
		struct ts_image img = make_u8(9, 6, 3);
		run_middle(p, &img, i);
		if (k == 2) {
			bool f = memcmp(img.data, alt[2].data, ts_image_bytes(&img)) == 0;
			ck_assert(f || memcmp(img.data, orig.data, ts_image_bytes(&img)) == 0);
			flips[f]++;
		} else {
			ck_assert_mem_eq(img.data, alt[k].data, ts_image_bytes(&img));
		}
		ts_image_free(&img);
	}
	const double half[2] = { 0.5, 0.5 };
	chi_square(flips, half, 2, flips[0] + flips[1], "flip inside random_choice");
	for (int k = 0; k < 3; k++)
		ts_image_free(&alt[k]);
	ts_image_free(&orig);
	ts_plan_destroy(p);
}
END_TEST

/* The box is filled with its value in every dtype and layout the slot
 * may have, and nothing else is touched. */
START_TEST(erase_fill_slot)
{
	const int C = 3, H = 5, W = 7;
	struct ts_op op = { .kind = TS_OP_RANDOM_ERASING, .policy.n_erase = 3,
			    .policy.erase_value = { 0.5f, -1.0f, 2.0f } };
	struct ts_erase_box b = { .apply = true, .i = 1, .j = 2, .h = 3, .w = 4 };
	const enum ts_dtype dts[] = { TS_DTYPE_F32, TS_DTYPE_F16, TS_DTYPE_U8, TS_DTYPE_U16 };
	for (int li = 0; li < 2; li++)
		for (size_t di = 0; di < 4; di++) {
			enum ts_layout l = li ? TS_LAYOUT_NCHW : TS_LAYOUT_NHWC;
			size_t es = ts_dtype_size(dts[di]);
			uint8_t *buf = malloc((size_t)C * H * W * es);
			memset(buf, 0xA5, (size_t)C * H * W * es);
			ts_policy_erase_fill(&op, &b, NULL, buf, dts[di], l, C, H, W);
			for (int c = 0; c < C; c++)
				for (int y = 0; y < H; y++)
					for (int x = 0; x < W; x++) {
						size_t i = l == TS_LAYOUT_NCHW
								   ? ((size_t)c * H + y) * W + x
								   : ((size_t)y * W + x) * C + c;
						bool in = y >= 1 && y < 4 && x >= 2 && x < 6;
						float v = op.policy.erase_value[c];
						if (!in) {
							for (size_t k = 0; k < es; k++)
								ck_assert_uint_eq(buf[i * es + k], 0xA5);
							continue;
						}
						switch (dts[di]) {
						case TS_DTYPE_F32:
							ck_assert(((float *)buf)[i] == v);
							break;
						case TS_DTYPE_F16:
							ck_assert(ts_out_f32_from_f16(((uint16_t *)buf)[i]) == v);
							break;
						case TS_DTYPE_U8: /* clamp(round(v * 255)) */
							ck_assert_uint_eq(buf[i], c == 0 ? 128 : c == 1 ? 0 : 255);
							break;
						case TS_DTYPE_U16:
							ck_assert_uint_eq(((uint16_t *)buf)[i],
									  c == 0 ? 32768 : c == 1 ? 0 : 65535);
							break;
						}
					}
			free(buf);
		}
}
END_TEST

/* value = random: standard normal values (mean 0, variance 1) over a
 * large box, different per element. */
START_TEST(erase_random_values)
{
	struct ts_op op = { .kind = TS_OP_RANDOM_ERASING, .policy.erase_random = true };
	const int C = 3, H = 100, W = 100;
	struct ts_erase_box b = { .apply = true, .i = 0, .j = 0, .h = H, .w = W };
	float *buf = calloc((size_t)C * H * W, sizeof(float));
	struct ts_rng r;
	ts_rng_init(&r, 1, 2, 3, 4);
	ts_policy_erase_fill(&op, &b, &r, buf, TS_DTYPE_F32, TS_LAYOUT_NCHW, C, H, W);
	double s = 0, s2 = 0;
	long within1 = 0;
	const long n = (long)C * H * W;
	for (long i = 0; i < n; i++) {
		s += buf[i];
		s2 += (double)buf[i] * buf[i];
		within1 += fabsf(buf[i]) < 1.0f;
	}
	double mean = s / n, var = s2 / n - mean * mean;
	ck_assert_msg(fabs(mean) < 4.0 / sqrt((double)n), "mean %g", mean);
	ck_assert_msg(fabs(var - 1) < 0.05, "variance %g", var);
	/* P(|z| < 1) = 0.6827 */
	ck_assert_msg(fabs((double)within1 / n - 0.6827) < 0.015, "within 1: %g",
		      (double)within1 / n);
	ck_assert(buf[0] != buf[1]);
	free(buf);
}
END_TEST

/* The output stage erases in the slot what the middle path erases in a
 * float image: the same box and values for the same stream. */
START_TEST(erase_output_equals_middle)
{
	struct ts_plan *p = plan_of("normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])"
				    " | random_erasing(0.9, value = [1, 2, 3])", 12, 10, 3);
	const struct ts_op *out = &p->ops[0];
	ck_assert_int_eq(out->kind, TS_OP_OUTPUT);
	struct ts_image src = make_u8(10, 12, 3), t1 = {0}, t2 = {0};
	float slot[12 * 10 * 3];
	int erased = 0;
	for (uint64_t i = 0; i < 50; i++) {
		struct ts_error err = {0};
		ck_assert_int_eq(ts_out_write(out, &src, 5, 0, i, &t1, &t2, slot,
					      sizeof(slot), &err), 0);
		/* the same by hand: normalize, then the middle kernel */
		struct ts_image img = make_u8(10, 12, 3), tmp = {0};
		struct ts_rng r;
		ts_rng_init(&r, 5, 0, i, (uint64_t)out->output.parts[0].index);
		ck_assert_int_eq(ts_kernel_apply(&out->output.parts[0], &img, &tmp, &r, &err), 0);
		ts_rng_init(&r, 5, 0, i, (uint64_t)out->output.parts[1].index);
		ck_assert_int_eq(ts_kernel_apply(&out->output.parts[1], &img, &tmp, &r, &err), 0);
		ck_assert_mem_eq(img.data, slot, sizeof(slot));
		for (size_t k = 0; k < 360; k++)
			if (slot[k] == 3.0f)
				erased++;
		ts_image_free(&img);
		ts_image_free(&tmp);
	}
	ck_assert_int_gt(erased, 0);
	ts_image_free(&src);
	ts_image_free(&t1);
	ts_image_free(&t2);
	ts_plan_destroy(p);
}
END_TEST

/* An allocation that fails inside a policy's op is reported as out of
 * memory with TS_E_NOMEM (-ENOMEM), not as a plain failure: the address
 * space is capped just above what the test holds, so the rotate's
 * scratch image (48 MB) cannot be had. Not under ASan or valgrind, whose
 * allocators reserve address space of their own. */
START_TEST(policy_step_nomem)
{
#if defined(__SANITIZE_ADDRESS__)
	return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return;
#endif
#endif
#ifdef TS_HAVE_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return;
#endif
	struct ts_image img = {0}, tmp = {0};
	ck_assert_int_eq(ts_image_reserve(&img, 4000, 4000, 3, TS_DTYPE_U8), 0);
	memset(img.data, 7, ts_image_bytes(&img));
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld", &pages), 1);
	fclose(f);
	struct rlimit old, cap;
	ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
	cap = old;
	cap.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (16u << 20);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &cap), 0);
	/* Under an emulator (qemu-user) the cap binds the emulator, not
	 * the program's allocations: nothing to test there. */
	void *probe = malloc(32u << 20);
	if (probe) {
		free(probe);
		ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
		ts_image_free(&img);
		return;
	}
	struct ts_policy_step st = { TS_PA_ROTATE, 30.0 };
	const uint8_t fill[4] = {0};
	struct ts_error err = {0};
	int rc = ts_policy_apply_step(&st, &img, &tmp, TS_INTERP_NEAREST, fill, &err);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
	ck_assert_int_eq(rc, TS_E_NOMEM);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_msg(strstr(err.msg, "out of memory") != NULL, "message: %s", err.msg);
	ts_image_free(&img);
	ts_image_free(&tmp);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("policy");
	TCase *c = tcase_create("check");
	tcase_add_test(c, parse_chain);
	tcase_add_test(c, check_plan);
	tcase_add_test(c, graph_branches);
	tcase_add_loop_test(c, check_misuse, 0, (int)(sizeof(misuses) / sizeof(misuses[0])));
	suite_add_tcase(s, c);
	TCase *d = tcase_create("draws");
	tcase_add_test(d, apply_and_choice_draws);
	tcase_add_test(d, policy_step_nomem);
	tcase_add_test(d, erasing_draws);
	tcase_add_test(d, rand_augment_draws);
	tcase_add_test(d, trivial_augment_draws);
	tcase_add_test(d, auto_augment_draws);
	tcase_add_test(d, augmix_draws);
	tcase_add_test(d, augmix_scratch);
	suite_add_tcase(s, d);
	TCase *k = tcase_create("kernels");
	tcase_set_timeout(k, 60);
	tcase_add_test(k, kernel_rows);
	tcase_add_test(k, apply_runs_branch);
	tcase_add_test(k, choice_runs_alternative);
	tcase_add_test(k, erase_fill_slot);
	tcase_add_test(k, erase_random_values);
	tcase_add_test(k, erase_output_equals_middle);
	suite_add_tcase(s, k);
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
