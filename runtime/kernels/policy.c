/*
 * policy.c - the policy family's kernels (policy.h): random_apply,
 * random_choice, random_erasing, reached from ts_aug_apply through
 * ts_policy_apply, and random_erasing in the output stage
 * (ts_policy_erase_box and ts_policy_erase_fill, from output.c).
 */
#include "policy.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "augment.h"
#include "color.h"
#include "filter.h"
#include "geometry.h"
#include "kernel.h"
#include "trace.h"
#include "util.h"

/* ---- random_apply, random_choice ------------------------------------ */

bool ts_policy_apply_draw(const struct ts_op *op, struct ts_rng *rng)
{
	/* torchvision's RandomApply: skip when p < U; U < p applies here,
	 * so that p = 0 never does */
	return ts_rng_uniform(rng) < op->policy.p;
}

size_t ts_policy_choice_draw(const struct ts_op *op, struct ts_rng *rng)
{
	double total = 0, acc = 0;
	size_t last = 0;
	for (size_t k = 0; k < op->policy.n_branches; k++)
		total += op->policy.branches[k].weight;
	double u = ts_rng_uniform(rng) * total;
	for (size_t k = 0; k < op->policy.n_branches; k++) {
		if (op->policy.branches[k].weight <= 0)
			continue;
		acc += op->policy.branches[k].weight;
		last = k;
		if (u < acc)
			return k;
	}
	return last; /* u rounded up to the total */
}

/* The ops of one branch, in order, each on a stream forked off the
 * policy's. */
static int run_branch(const struct ts_op_branch *b, struct ts_image *img,
		      struct ts_image *tmp, const struct ts_rng *rng,
		      struct ts_error *err)
{
	for (size_t i = 0; i < b->n_ops; i++) {
		struct ts_rng r;
		ts_rng_fork(rng, (uint64_t)b->ops[i].index, &r);
		int rc = ts_kernel_apply(&b->ops[i], img, tmp, &r, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- random_erasing ------------------------------------------------- */

void ts_policy_erase_box(const struct ts_op *op, int H, int W,
			 struct ts_rng *rng, struct ts_erase_box *box)
{
	*box = (struct ts_erase_box){0};
	if (!(ts_rng_uniform(rng) < op->policy.p)) {
		ts_trace_note("random_erasing", op->index, "\"erased\": false");
		return;
	}
	const double area = (double)H * (double)W;
	const double llo = log(op->policy.ratio_lo), lhi = log(op->policy.ratio_hi);
	for (int attempt = 0; attempt < 10; attempt++) {
		double ea = area * ts_rng_range(rng, op->policy.scale_lo, op->policy.scale_hi);
		double r = exp(ts_rng_range(rng, llo, lhi));
		/* Python's round(): half to even, as rint does by default */
		int h = (int)rint(sqrt(ea * r));
		int w = (int)rint(sqrt(ea / r));
		if (!(h < H && w < W))
			continue;
		box->apply = h > 0 && w > 0;
		box->h = h;
		box->w = w;
		box->i = (int)ts_rng_below(rng, (uint64_t)(H - h + 1));
		box->j = (int)ts_rng_below(rng, (uint64_t)(W - w + 1));
		break;
	}
	if (!ts_trace_cur)
		return;
	char v[96] = "\"random\"";
	if (!op->policy.erase_random) {
		size_t at = 0;
		const int n = op->policy.n_erase > 1 ? op->policy.n_erase : 1;
		for (int c = 0; c < n && at < sizeof(v); c++)
			at += (size_t)snprintf(v + at, sizeof(v) - at, "%s%.9g",
					       c ? ", " : "[", (double)op->policy.erase_value[c]);
		if (at < sizeof(v))
			snprintf(v + at, sizeof(v) - at, "]");
	}
	if (box->apply)
		ts_trace_note("random_erasing", op->index,
			      "\"erased\": true, \"top\": %d, \"left\": %d, \"height\": %d, "
			      "\"width\": %d, \"value\": %s", box->i, box->j, box->h, box->w, v);
	else
		ts_trace_note("random_erasing", op->index, "\"erased\": false");
}

/* A standard normal draw (Box-Muller on two uniforms; the second of each
 * pair is kept in *spare). */
static float normal(struct ts_rng *rng, float *spare, bool *have)
{
	if (*have) {
		*have = false;
		return *spare;
	}
	double u1 = 1.0 - ts_rng_uniform(rng); /* (0, 1]: log is finite */
	double u2 = ts_rng_uniform(rng);
	double rad = sqrt(-2.0 * log(u1));
	*spare = (float)(rad * sin(2.0 * M_PI * u2));
	*have = true;
	return (float)(rad * cos(2.0 * M_PI * u2));
}

void ts_policy_erase_fill(const struct ts_op *op, const struct ts_erase_box *box,
			  struct ts_rng *rng, void *dst, enum ts_dtype dtype,
			  enum ts_layout layout, int C, int H, int W)
{
	float spare = 0;
	bool have = false;
	if (!box->apply)
		return;
	if (!op->policy.erase_random && dtype == TS_DTYPE_F32) {
		/* a constant into float32, the recipes' case: a run a row */
		const size_t step = layout == TS_LAYOUT_NCHW ? 1 : (size_t)C;
		for (int c = 0; c < C; c++) {
			const float v = op->policy.n_erase > 1 ? op->policy.erase_value[c]
							       : op->policy.erase_value[0];
			for (int y = box->i; y < box->i + box->h; y++) {
				float *d = (float *)dst + (layout == TS_LAYOUT_NCHW
								   ? ((size_t)c * H + y) * W + box->j
								   : ((size_t)y * W + box->j) * C + c);
				for (int x = 0; x < box->w; x++)
					d[(size_t)x * step] = v;
			}
		}
		return;
	}
	for (int c = 0; c < C; c++) {
		float v = op->policy.n_erase > 1 ? op->policy.erase_value[c] : op->policy.erase_value[0];
		for (int y = box->i; y < box->i + box->h; y++)
			for (int x = box->j; x < box->j + box->w; x++) {
				size_t di = layout == TS_LAYOUT_NCHW
						    ? ((size_t)c * H + y) * W + x
						    : ((size_t)y * W + x) * C + c;
				ts_out_store(dst, di, dtype, op->policy.erase_random
							      ? normal(rng, &spare, &have)
							      : v);
			}
	}
}

/* random_erasing on a float32 HWC image (before the output stage). */
static int erase_image(const struct ts_op *op, struct ts_image *img,
		       struct ts_rng *rng, struct ts_error *err)
{
	struct ts_erase_box box;
	if (img->dtype != TS_DTYPE_F32)
		return ts_error_set(err, TS_E_ARG,
				    "random_erasing takes a float32 image, got %s",
				    ts_dtype_name(img->dtype));
	ts_policy_erase_box(op, img->height, img->width, rng, &box);
	if (!box.apply)
		return 0;
	/* images between stages are packed (ts_image_reserve) */
	assert(img->stride == (size_t)img->width * img->channels * sizeof(float));
	ts_policy_erase_fill(op, &box, rng, img->data, TS_DTYPE_F32, TS_LAYOUT_NHWC,
			     img->channels, img->height, img->width);
	return 0;
}

/* A branch run inside policy op (its draws traced as "in" it). */
static int run_inside(const struct ts_op *op, const struct ts_op_branch *b,
		      struct ts_image *img, struct ts_image *tmp,
		      const struct ts_rng *rng, struct ts_error *err)
{
	ts_trace_enter(op->index);
	int rc = run_branch(b, img, tmp, rng, err);
	ts_trace_leave();
	return rc;
}

static int k_random_apply(const struct ts_op *op, struct ts_image *img,
			  struct ts_image *tmp, struct ts_rng *rng,
			  struct ts_error *err)
{
	if (!op->policy.n_branches)
		return 0;
	bool on = ts_policy_apply_draw(op, rng);
	ts_trace_note("random_apply", op->index, "\"applied\": %s", on ? "true" : "false");
	return on ? run_inside(op, &op->policy.branches[0], img, tmp, rng, err) : 0;
}

static int k_random_choice(const struct ts_op *op, struct ts_image *img,
			   struct ts_image *tmp, struct ts_rng *rng,
			   struct ts_error *err)
{
	if (!op->policy.n_branches)
		return 0;
	size_t k = ts_policy_choice_draw(op, rng);
	ts_trace_note("random_choice", op->index, "\"choice\": %zu", k);
	return run_inside(op, &op->policy.branches[k], img, tmp, rng, err);
}

static int k_random_erasing(const struct ts_op *op, struct ts_image *img,
			    struct ts_image *tmp, struct ts_rng *rng,
			    struct ts_error *err)
{
	return erase_image(op, img, rng, err);
}

/* random_erasing in the output stage: the box in the slot, after the
 * final pass (the checker lets only to() follow it there: it needs float
 * data, which flip and normalize refuse). */
static void t_random_erasing(const struct ts_op *op, struct ts_rng *rng,
			     struct ts_kernel_tail *t)
{
}

static void post_random_erasing(const struct ts_op *op, struct ts_rng *rng,
				void *dst, const struct ts_kernel_tail *t, int c,
				int h, int w)
{
	struct ts_erase_box box;
	ts_policy_erase_box(op, h, w, rng, &box);
	ts_policy_erase_fill(op, &box, rng, dst, t->dtype, t->layout, c, h, w);
}

/* ---- rand_augment, trivial_augment_wide, auto_augment --------------- */

const char *ts_policy_op_name(enum ts_policy_opname op)
{
	static const char *const names[TS_PA_COUNT] = {
		"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
		"Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize",
		"AutoContrast", "Equalize", "Invert",
	};
	return (unsigned)op < TS_PA_COUNT ? names[op] : "?";
}

/* torch.linspace(start, end, steps) in float32 as torch 1.13's CPU
 * kernel computes it (AVX2 build): step = (end - start) / (steps - 1);
 * element i is start + step * i below steps / 2, else end - step *
 * (steps - 1 - i), each one fused multiply-add (the kernel's scalar
 * lambda, compiled with FMA contraction); but the first steps / 16 * 16
 * elements come in vectors of 8 from a base element b, as b + k * step
 * rounded twice (Vectorized::arange). Checked against torch.linspace by
 * tests/torch-policy.py for every table. */
void ts_policy_linspace(float start, float end, int steps, float *out)
{
	if (steps == 1) {
		out[0] = start;
		return;
	}
	const float step = (end - start) / (float)(steps - 1);
	const int half = steps / 2, nv = steps / 16 * 16;
	for (int i = 0; i < steps; i++) {
		int b = i < nv ? i / 8 * 8 : i; /* the element the value comes from */
		float base = b < half ? fmaf(step, (float)b, start)
				      : fmaf(-step, (float)(steps - 1 - b), end);
		if (b == i) {
			out[i] = base;
		} else {
			/* two roundings, never contracted into one */
			volatile float prod = (float)(i - b) * step;
			out[i] = base + prod;
		}
	}
}

int ts_policy_table(enum ts_op_kind k, enum ts_policy_opname op, int bins, int w,
		    int h, float *mag, bool *is_signed)
{
	const bool wide = k == TS_OP_TRIVIAL_AUGMENT_WIDE;
	*is_signed = false;
	switch (op) {
	case TS_PA_SHEAR_X:
	case TS_PA_SHEAR_Y:
		*is_signed = true;
		ts_policy_linspace(0.0f, wide ? 0.99f : 0.3f, bins, mag);
		return bins;
	case TS_PA_TRANSLATE_X:
	case TS_PA_TRANSLATE_Y:
		*is_signed = true;
		/* 150 / 331 of the side (a Python float, then float32) */
		ts_policy_linspace(0.0f, wide ? 32.0f
				    : (float)(150.0 / 331.0 * (op == TS_PA_TRANSLATE_X ? w : h)),
			 bins, mag);
		return bins;
	case TS_PA_ROTATE:
		*is_signed = true;
		ts_policy_linspace(0.0f, wide ? 135.0f : 30.0f, bins, mag);
		return bins;
	case TS_PA_BRIGHTNESS:
	case TS_PA_COLOR:
	case TS_PA_CONTRAST:
	case TS_PA_SHARPNESS:
		*is_signed = true;
		ts_policy_linspace(0.0f, wide ? 0.99f : 0.9f, bins, mag);
		return bins;
	case TS_PA_POSTERIZE: {
		/* 8 - (arange(bins) / ((bins - 1) / 4)).round().int(): float32
		 * division, round half to even; / 6 for the wide space */
		const float d = (float)((bins - 1) / (wide ? 6.0 : 4.0));
		for (int i = 0; i < bins; i++)
			mag[i] = (float)(8 - (int)rintf((float)i / d));
		return bins;
	}
	case TS_PA_SOLARIZE:
		ts_policy_linspace(255.0f, 0.0f, bins, mag);
		return bins;
	default:
		return 0;
	}
}

/* AutoAugment's sub-policies: (op, p, magnitude bin or -1) pairs. */
struct aa_sub {
	enum ts_policy_opname op;
	float p;
	int bin;
};
#define AA(o1, p1, m1, o2, p2, m2) \
	{ { TS_PA_##o1, p1, m1 }, { TS_PA_##o2, p2, m2 } }

static const struct aa_sub aa_imagenet[25][2] = {
	AA(POSTERIZE, 0.4f, 8, ROTATE, 0.6f, 9),
	AA(SOLARIZE, 0.6f, 5, AUTOCONTRAST, 0.6f, -1),
	AA(EQUALIZE, 0.8f, -1, EQUALIZE, 0.6f, -1),
	AA(POSTERIZE, 0.6f, 7, POSTERIZE, 0.6f, 6),
	AA(EQUALIZE, 0.4f, -1, SOLARIZE, 0.2f, 4),
	AA(EQUALIZE, 0.4f, -1, ROTATE, 0.8f, 8),
	AA(SOLARIZE, 0.6f, 3, EQUALIZE, 0.6f, -1),
	AA(POSTERIZE, 0.8f, 5, EQUALIZE, 1.0f, -1),
	AA(ROTATE, 0.2f, 3, SOLARIZE, 0.6f, 8),
	AA(EQUALIZE, 0.6f, -1, POSTERIZE, 0.4f, 6),
	AA(ROTATE, 0.8f, 8, COLOR, 0.4f, 0),
	AA(ROTATE, 0.4f, 9, EQUALIZE, 0.6f, -1),
	AA(EQUALIZE, 0.0f, -1, EQUALIZE, 0.8f, -1),
	AA(INVERT, 0.6f, -1, EQUALIZE, 1.0f, -1),
	AA(COLOR, 0.6f, 4, CONTRAST, 1.0f, 8),
	AA(ROTATE, 0.8f, 8, COLOR, 1.0f, 2),
	AA(COLOR, 0.8f, 8, SOLARIZE, 0.8f, 7),
	AA(SHARPNESS, 0.4f, 7, INVERT, 0.6f, -1),
	AA(SHEAR_X, 0.6f, 5, EQUALIZE, 1.0f, -1),
	AA(COLOR, 0.4f, 0, EQUALIZE, 0.6f, -1),
	AA(EQUALIZE, 0.4f, -1, SOLARIZE, 0.2f, 4),
	AA(SOLARIZE, 0.6f, 5, AUTOCONTRAST, 0.6f, -1),
	AA(INVERT, 0.6f, -1, EQUALIZE, 1.0f, -1),
	AA(COLOR, 0.6f, 4, CONTRAST, 1.0f, 8),
	AA(EQUALIZE, 0.8f, -1, EQUALIZE, 0.6f, -1),
};

static const struct aa_sub aa_cifar10[25][2] = {
	AA(INVERT, 0.1f, -1, CONTRAST, 0.2f, 6),
	AA(ROTATE, 0.7f, 2, TRANSLATE_X, 0.3f, 9),
	AA(SHARPNESS, 0.8f, 1, SHARPNESS, 0.9f, 3),
	AA(SHEAR_Y, 0.5f, 8, TRANSLATE_Y, 0.7f, 9),
	AA(AUTOCONTRAST, 0.5f, -1, EQUALIZE, 0.9f, -1),
	AA(SHEAR_Y, 0.2f, 7, POSTERIZE, 0.3f, 7),
	AA(COLOR, 0.4f, 3, BRIGHTNESS, 0.6f, 7),
	AA(SHARPNESS, 0.3f, 9, BRIGHTNESS, 0.7f, 9),
	AA(EQUALIZE, 0.6f, -1, EQUALIZE, 0.5f, -1),
	AA(CONTRAST, 0.6f, 7, SHARPNESS, 0.6f, 5),
	AA(COLOR, 0.7f, 7, TRANSLATE_X, 0.5f, 8),
	AA(EQUALIZE, 0.3f, -1, AUTOCONTRAST, 0.4f, -1),
	AA(TRANSLATE_Y, 0.4f, 3, SHARPNESS, 0.2f, 6),
	AA(BRIGHTNESS, 0.9f, 6, COLOR, 0.2f, 8),
	AA(SOLARIZE, 0.5f, 2, INVERT, 0.0f, -1),
	AA(EQUALIZE, 0.2f, -1, AUTOCONTRAST, 0.6f, -1),
	AA(EQUALIZE, 0.2f, -1, EQUALIZE, 0.6f, -1),
	AA(COLOR, 0.9f, 9, EQUALIZE, 0.6f, -1),
	AA(AUTOCONTRAST, 0.8f, -1, SOLARIZE, 0.2f, 8),
	AA(BRIGHTNESS, 0.1f, 3, COLOR, 0.7f, 0),
	AA(SOLARIZE, 0.4f, 5, AUTOCONTRAST, 0.9f, -1),
	AA(TRANSLATE_Y, 0.9f, 9, TRANSLATE_Y, 0.7f, 9),
	AA(AUTOCONTRAST, 0.9f, -1, SOLARIZE, 0.8f, 3),
	AA(EQUALIZE, 0.8f, -1, INVERT, 0.1f, -1),
	AA(TRANSLATE_Y, 0.7f, 9, AUTOCONTRAST, 0.9f, -1),
};

static const struct aa_sub aa_svhn[25][2] = {
	AA(SHEAR_X, 0.9f, 4, INVERT, 0.2f, -1),
	AA(SHEAR_Y, 0.9f, 8, INVERT, 0.7f, -1),
	AA(EQUALIZE, 0.6f, -1, SOLARIZE, 0.6f, 6),
	AA(INVERT, 0.9f, -1, EQUALIZE, 0.6f, -1),
	AA(EQUALIZE, 0.6f, -1, ROTATE, 0.9f, 3),
	AA(SHEAR_X, 0.9f, 4, AUTOCONTRAST, 0.8f, -1),
	AA(SHEAR_Y, 0.9f, 8, INVERT, 0.4f, -1),
	AA(SHEAR_Y, 0.9f, 5, SOLARIZE, 0.2f, 6),
	AA(INVERT, 0.9f, -1, AUTOCONTRAST, 0.8f, -1),
	AA(EQUALIZE, 0.6f, -1, ROTATE, 0.9f, 3),
	AA(SHEAR_X, 0.9f, 4, SOLARIZE, 0.3f, 3),
	AA(SHEAR_Y, 0.8f, 8, INVERT, 0.7f, -1),
	AA(EQUALIZE, 0.9f, -1, TRANSLATE_Y, 0.6f, 6),
	AA(INVERT, 0.9f, -1, EQUALIZE, 0.6f, -1),
	AA(CONTRAST, 0.3f, 3, ROTATE, 0.8f, 4),
	AA(INVERT, 0.8f, -1, TRANSLATE_Y, 0.0f, 2),
	AA(SHEAR_Y, 0.7f, 6, SOLARIZE, 0.4f, 8),
	AA(INVERT, 0.6f, -1, ROTATE, 0.8f, 4),
	AA(SHEAR_Y, 0.3f, 7, TRANSLATE_X, 0.9f, 3),
	AA(SHEAR_X, 0.1f, 6, INVERT, 0.6f, -1),
	AA(SOLARIZE, 0.7f, 2, TRANSLATE_Y, 0.6f, 7),
	AA(SHEAR_Y, 0.8f, 4, INVERT, 0.8f, -1),
	AA(SHEAR_X, 0.7f, 9, TRANSLATE_Y, 0.8f, 3),
	AA(SHEAR_Y, 0.8f, 5, AUTOCONTRAST, 0.7f, -1),
	AA(SHEAR_X, 0.7f, 2, INVERT, 0.1f, -1),
};

/* The magnitude of op at bin (0 for an op without a table), signed. */
static double magnitude_at(enum ts_op_kind k, enum ts_policy_opname op, int bins,
			   int bin, int w, int h, bool *is_signed)
{
	float mag[1024];
	int n = ts_policy_table(k, op, bins, w, h, mag, is_signed);
	return n > 0 && bin >= 0 && bin < n ? (double)mag[bin] : 0.0;
}

int ts_policy_draw(const struct ts_op *op, int w, int h, struct ts_rng *rng,
		   struct ts_policy_step *steps)
{
	bool sg;
	int n = 0;
	switch (op->kind) {
	case TS_OP_RAND_AUGMENT:
		for (int i = 0; i < op->policy.num_ops && n < TS_POLICY_MAX_STEPS; i++) {
			enum ts_policy_opname o = (enum ts_policy_opname)ts_rng_below(rng, 14);
			double m = magnitude_at(op->kind, o, op->policy.num_bins, op->policy.magnitude, w, h,
						&sg);
			if (sg && ts_rng_below(rng, 2))
				m = -m;
			steps[n++] = (struct ts_policy_step){ o, m };
		}
		return n;
	case TS_OP_TRIVIAL_AUGMENT_WIDE: {
		float mag[1024];
		enum ts_policy_opname o = (enum ts_policy_opname)ts_rng_below(rng, 14);
		int nt = ts_policy_table(op->kind, o, op->policy.num_bins, w, h, mag, &sg);
		double m = nt > 0 ? (double)mag[ts_rng_below(rng, (uint64_t)nt)] : 0.0;
		if (sg && ts_rng_below(rng, 2))
			m = -m;
		steps[0] = (struct ts_policy_step){ o, m };
		return 1;
	}
	case TS_OP_AUTO_AUGMENT: {
		const struct aa_sub (*pol)[2] = op->policy.aa_policy == TS_AA_CIFAR10 ? aa_cifar10
						: op->policy.aa_policy == TS_AA_SVHN	? aa_svhn
										: aa_imagenet;
		const struct aa_sub *sub = pol[ts_rng_below(rng, 25)];
		/* torch.rand((2,)) is float32: the comparison with the
		 * Python float p is in double, as Python does it */
		float u[2];
		u[0] = (float)ts_rng_uniform(rng);
		u[1] = (float)ts_rng_uniform(rng);
		uint64_t sign[2];
		sign[0] = ts_rng_below(rng, 2);
		sign[1] = ts_rng_below(rng, 2);
		for (int i = 0; i < 2; i++) {
			if (!((double)u[i] <= (double)sub[i].p))
				continue;
			double m = magnitude_at(op->kind, sub[i].op, 10, sub[i].bin, w, h, &sg);
			if (sub[i].bin < 0)
				m = 0;
			if (sg && sign[i] == 0)
				m = -m;
			steps[n++] = (struct ts_policy_step){ sub[i].op, m };
		}
		return n;
	}
	default:
		return 0;
	}
}

/* F.affine on the image with torchvision's arguments. */
static int affine(struct ts_image *img, struct ts_image *tmp, double tx, double ty,
		  double shx, double shy, bool center0, enum ts_interp interp,
		  const uint8_t fill[4])
{
	const double t[2] = { tx, ty }, sh[2] = { shx, shy }, c0[2] = { 0, 0 };
	return ts_geometry_affine(img, tmp, 0.0, t, 1.0, sh, center0 ? c0 : NULL, interp, fill);
}

int ts_policy_apply_step(const struct ts_policy_step *s, struct ts_image *img,
			 struct ts_image *tmp, enum ts_interp interp,
			 const uint8_t fill[4], struct ts_error *err)
{
	const double m = s->magnitude;
	const double deg = 180.0 / M_PI;
	int rc = 0;
	if (img->dtype != TS_DTYPE_U8)
		return ts_error_set(err, TS_E_ARG, "%s takes uint8 pixels, got %s",
				    ts_policy_op_name(s->op), ts_dtype_name(img->dtype));
	switch (s->op) {
	case TS_PA_IDENTITY:
		break;
	case TS_PA_SHEAR_X: /* shear = degrees(atan(m)), about the top left */
		rc = affine(img, tmp, 0, 0, atan(m) * deg, 0, true, interp, fill);
		break;
	case TS_PA_SHEAR_Y:
		rc = affine(img, tmp, 0, 0, 0, atan(m) * deg, true, interp, fill);
		break;
	case TS_PA_TRANSLATE_X: /* int(magnitude): truncated */
		rc = affine(img, tmp, trunc(m), 0, 0, 0, false, interp, fill);
		break;
	case TS_PA_TRANSLATE_Y:
		rc = affine(img, tmp, 0, trunc(m), 0, 0, false, interp, fill);
		break;
	case TS_PA_ROTATE:
		rc = ts_geometry_rotate(img, tmp, m, interp, false, NULL, fill);
		break;
	case TS_PA_BRIGHTNESS:
		ts_aug_brightness(img, (float)(1.0 + m));
		break;
	case TS_PA_COLOR:
		ts_aug_saturation(img, (float)(1.0 + m));
		break;
	case TS_PA_CONTRAST:
		ts_aug_contrast(img, (float)(1.0 + m));
		break;
	case TS_PA_SHARPNESS:
		rc = ts_filter_sharpness(img, tmp, (float)(1.0 + m));
		break;
	case TS_PA_POSTERIZE:
		ts_color_posterize(img, (int)m);
		break;
	case TS_PA_SOLARIZE:
		ts_color_solarize(img, m);
		break;
	case TS_PA_AUTOCONTRAST:
		ts_color_autocontrast(img);
		break;
	case TS_PA_EQUALIZE:
		ts_color_equalize(img);
		break;
	case TS_PA_INVERT:
		ts_color_invert(img);
		break;
	default:
		return ts_error_set(err, TS_E_ARG, "unknown policy op %d", (int)s->op);
	}
	if (rc < 0)
		return ts_error_set(err, rc, "%s: %s", ts_policy_op_name(s->op),
				    rc == TS_E_NOMEM ? "out of memory" : "failed");
	return 0;
}

/* rand_augment, trivial_augment_wide, auto_augment: the draws, then the
 * ops in order. */
static int k_augment_policy(const struct ts_op *op, struct ts_image *img,
			    struct ts_image *tmp, struct ts_rng *rng,
			    struct ts_error *err)
{
	struct ts_policy_step steps[TS_POLICY_MAX_STEPS];
	uint8_t fill[4];
	int n = ts_policy_draw(op, img->width, img->height, rng, steps);
	if (ts_trace_cur) {
		/* torchvision's op names and signed magnitudes, in order */
		char list[TS_POLICY_MAX_STEPS * 64];
		size_t at = 0;
		list[0] = '\0';
		for (int i = 0; i < n && at < sizeof(list); i++)
			at += (size_t)snprintf(list + at, sizeof(list) - at,
					       "%s{\"name\": \"%s\", \"magnitude\": %.17g}",
					       i ? ", " : "", ts_policy_op_name(steps[i].op),
					       steps[i].magnitude);
		ts_trace_note(ts_op_kind_name(op->kind), op->index, "\"ops\": [%s]", list);
	}
	ts_geometry_fill_u8(op->policy.n_fill, op->policy.fill, img->channels, fill);
	for (int i = 0; i < n; i++) {
		int rc = ts_policy_apply_step(&steps[i], img, tmp, op->policy.interp, fill, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- The family's table (kernel.h) ---- */

const struct ts_kernel ts_kernels_policy[] = {
	{ .kind = TS_OP_RANDOM_APPLY, .apply = k_random_apply },
	{ .kind = TS_OP_RANDOM_CHOICE, .apply = k_random_choice },
	{ .kind = TS_OP_RANDOM_ERASING, .apply = k_random_erasing,
	  .tail = t_random_erasing, .post = post_random_erasing },
	{ .kind = TS_OP_RAND_AUGMENT, .apply = k_augment_policy },
	{ .kind = TS_OP_TRIVIAL_AUGMENT_WIDE, .apply = k_augment_policy },
	{ .kind = TS_OP_AUTO_AUGMENT, .apply = k_augment_policy },
	TS_KERNEL_END,
};
