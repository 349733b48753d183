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
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "util.h"

/* ---- random_apply, random_choice ------------------------------------ */

bool ts_policy_apply_draw(const struct ts_op *op, struct ts_rng *rng)
{
	/* torchvision's RandomApply: skip when p < U; U < p applies here,
	 * so that p = 0 never does */
	return ts_rng_uniform(rng) < op->p;
}

size_t ts_policy_choice_draw(const struct ts_op *op, struct ts_rng *rng)
{
	double total = 0, acc = 0;
	size_t last = 0;
	for (size_t k = 0; k < op->n_branches; k++)
		total += op->branches[k].weight;
	double u = ts_rng_uniform(rng) * total;
	for (size_t k = 0; k < op->n_branches; k++) {
		if (op->branches[k].weight <= 0)
			continue;
		acc += op->branches[k].weight;
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
	if (!(ts_rng_uniform(rng) < op->p))
		return;
	const double area = (double)H * (double)W;
	const double llo = log(op->ratio_lo), lhi = log(op->ratio_hi);
	for (int attempt = 0; attempt < 10; attempt++) {
		double ea = area * ts_rng_range(rng, op->scale_lo, op->scale_hi);
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
		return;
	}
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

/* One float as the output stage stores it in dtype (output.c's store). */
static void store(void *dst, size_t i, enum ts_dtype dt, float v)
{
	switch (dt) {
	case TS_DTYPE_F32:
		((float *)dst)[i] = v;
		break;
	case TS_DTYPE_F16:
		((uint16_t *)dst)[i] = ts_out_f16_from_f32(v);
		break;
	case TS_DTYPE_U8:
		v = rintf(v * 255.0f);
		((uint8_t *)dst)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
		break;
	case TS_DTYPE_U16:
		v = rintf(v * 65535.0f);
		((uint16_t *)dst)[i] = (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
		break;
	}
}

void ts_policy_erase_fill(const struct ts_op *op, const struct ts_erase_box *box,
			  struct ts_rng *rng, void *dst, enum ts_dtype dtype,
			  enum ts_layout layout, int C, int H, int W)
{
	float spare = 0;
	bool have = false;
	if (!box->apply)
		return;
	for (int c = 0; c < C; c++) {
		float v = op->n_erase > 1 ? op->erase_value[c] : op->erase_value[0];
		for (int y = box->i; y < box->i + box->h; y++)
			for (int x = box->j; x < box->j + box->w; x++) {
				size_t di = layout == TS_LAYOUT_NCHW
						    ? ((size_t)c * H + y) * W + x
						    : ((size_t)y * W + x) * C + c;
				store(dst, di, dtype, op->erase_random
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

static int k_random_apply(const struct ts_op *op, struct ts_image *img,
			  struct ts_image *tmp, struct ts_rng *rng,
			  struct ts_error *err)
{
	if (!op->n_branches || !ts_policy_apply_draw(op, rng))
		return 0;
	return run_branch(&op->branches[0], img, tmp, rng, err);
}

static int k_random_choice(const struct ts_op *op, struct ts_image *img,
			   struct ts_image *tmp, struct ts_rng *rng,
			   struct ts_error *err)
{
	if (!op->n_branches)
		return 0;
	return run_branch(&op->branches[ts_policy_choice_draw(op, rng)], img, tmp,
			  rng, err);
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

/* ---- The family's table (kernel.h) ---- */

const struct ts_kernel ts_kernels_policy[] = {
	{ .kind = TS_OP_RANDOM_APPLY, .apply = k_random_apply },
	{ .kind = TS_OP_RANDOM_CHOICE, .apply = k_random_choice },
	{ .kind = TS_OP_RANDOM_ERASING, .apply = k_random_erasing,
	  .tail = t_random_erasing, .post = post_random_erasing },
	TS_KERNEL_END,
};
