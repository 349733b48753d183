/*
 * grid.c - output values to 8-bit display levels (grid.h).
 */
#include "grid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "augment.h"
#include "policy.h"
#include "rng.h"
#include "util.h"

/* A walk through the ops in run order: the dtype written last, whether
 * it holds normalized values, the mean and std of the normalize. */
struct state {
	enum ts_dtype t;
	bool normalized;
	int n;
	float mean[4], std[4];
};

struct walk {
	const struct ts_grid_sample *s;
	bool known;         /* s, and no tile before: draws can be replayed */
	bool varies;        /* outcomes of a policy differed (no draw) */
};

static bool same_state(const struct state *a, const struct state *b)
{
	if (a->t != b->t || a->normalized != b->normalized)
		return false;
	return !a->normalized || (a->n == b->n && !memcmp(a->mean, b->mean, sizeof(a->mean)) &&
				  !memcmp(a->std, b->std, sizeof(a->std)));
}

static void scan(const struct ts_op *op, const struct ts_rng *parent, struct walk *w,
		 struct state *st);

static void scan_branch(const struct ts_op_branch *b, const struct ts_rng *rng,
			struct walk *w, struct state *st)
{
	for (size_t i = 0; i < b->n_ops; i++)
		scan(&b->ops[i], rng, w, st);
}

/* random_apply, random_choice: the branch the sample drew, its stream
 * as the policy kernels (policy.c) have it: the sample's own for a
 * policy of the plan, forked off its policy's for one inside a branch.
 * Without a draw to replay, every outcome (for random_apply, also none),
 * kept where they all agree. */
static void scan_policy(const struct ts_op *op, const struct ts_rng *parent,
			struct walk *w, struct state *st)
{
	struct ts_rng r;
	const bool alternatives = (op->flags & TS_OPF_ALTERNATIVES) != 0; /* random_choice */
	if (w->known) {
		if (parent)
			ts_rng_fork(parent, (uint64_t)op->index, &r);
		else
			ts_rng_init(&r, w->s->seed, w->s->epoch, w->s->index, (uint64_t)op->index);
		if (alternatives)
			scan_branch(&op->policy.branches[ts_policy_choice_draw(op, &r)], &r, w, st);
		else if (ts_policy_apply_draw(op, &r))
			scan_branch(&op->policy.branches[0], &r, w, st);
		return;
	}
	struct state first = *st;
	bool have = !alternatives; /* random_apply not applied: as it is */
	for (size_t k = 0; k < op->policy.n_branches; k++) {
		if (alternatives && op->policy.branches[k].weight <= 0)
			continue;
		struct state o = *st;
		scan_branch(&op->policy.branches[k], NULL, w, &o);
		if (!have)
			first = o;
		else if (!same_state(&first, &o))
			w->varies = true;
		have = true;
	}
	*st = first;
}

/* Walk one op (its fused op, output parts and policy branches included)
 * in run order: the dtype each writes, and the mean and std of one that
 * normalizes (has them). An integer dtype after a normalize holds
 * clamped normalized levels (to(uint8)): shown as they are, like any
 * integer sample. */
static void scan(const struct ts_op *op, const struct ts_rng *parent, struct walk *w,
		 struct state *st)
{
	const struct ts_op_norm *norm = ts_op_norm(op);
	if (norm && norm->n_mean > 0) {
		st->n = norm->n_mean;
		memcpy(st->mean, norm->mean, sizeof(st->mean));
		memcpy(st->std, norm->std, sizeof(st->std));
		st->normalized = true;
	}
	if ((op->flags & TS_OPF_BRANCHES) && op->policy.n_branches)
		scan_policy(op, parent, w, st);
	if (!ts_op_is_output(op)) {
		st->t = op->out_dtype;
		if (st->t == TS_DTYPE_U8 || st->t == TS_DTYPE_U16)
			st->normalized = false;
	}
	if (ts_op_expands(op))
		w->known = false; /* a tile's outputs draw under streams of their own */
	size_t np;
	const struct ts_op *parts = ts_op_parts(op, &np);
	if (ts_op_fused(op))
		scan(ts_op_fused(op), parent, w, st);
	for (size_t i = 0; i < np; i++)
		scan(&parts[i], parent, w, st);
}

void ts_grid_values_of(const struct ts_plan *plan, const struct ts_grid_sample *s,
		       struct ts_grid_values *v)
{
	struct state st = {.t = TS_DTYPE_U8};
	struct walk w = {.s = s, .known = s != NULL};
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < plan->n_ops; i++)
		scan(&plan->ops[i], NULL, &w, &st);
	v->n = st.n;
	memcpy(v->mean, st.mean, sizeof(v->mean));
	memcpy(v->std, st.std, sizeof(v->std));
	v->per_sample = w.varies;
	if (st.t == TS_DTYPE_U8)
		v->map = TS_GRID_DIRECT;
	else if (st.t == TS_DTYPE_U16)
		v->map = TS_GRID_U16;
	else
		v->map = st.normalized ? TS_GRID_UNNORM : TS_GRID_UNIT;
}

static void list(const float *x, int n, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%g", i ? ", " : "", (double)x[i]);
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

void ts_grid_values_describe(const struct ts_grid_values *v, enum ts_dtype dtype,
			     char *buf, size_t n)
{
	char m[64], s[64];
	if (v->per_sample) {
		snprintf(buf, n, "%s samples shown as the random_apply or random_choice branch "
			 "each drew leaves them: un-normalized, (x * std + mean) * 255, by the mean "
			 "and std of the normalize it ran", ts_dtype_name(dtype));
		return;
	}
	switch (v->map) {
	case TS_GRID_DIRECT:
		snprintf(buf, n, "%s samples shown as they are", ts_dtype_name(dtype));
		break;
	case TS_GRID_U16:
		snprintf(buf, n, "uint16 samples shown as 8-bit: (x + 128) / 257");
		break;
	case TS_GRID_UNIT:
		snprintf(buf, n, "%s samples shown as x * 255", ts_dtype_name(dtype));
		break;
	case TS_GRID_UNNORM:
		list(v->mean, v->n, m, sizeof(m));
		list(v->std, v->n, s, sizeof(s));
		snprintf(buf, n, "%s samples shown un-normalized: (x * std + mean) * 255, "
			 "mean %s, std %s", ts_dtype_name(dtype), m, s);
		break;
	}
}

static inline uint8_t level(float x)
{
	/* NaN (a float plugin's output, say) shows black */
	if (!(x > 0.0f))
		return 0;
	if (x >= 255.0f)
		return 255;
	return (uint8_t)rintf(x);
}

/* Element c of pixel (y, x) as a display level. */
static uint8_t value(const void *data, int h, int w, int ch, enum ts_dtype t,
		     enum ts_layout l, const struct ts_grid_values *v, int y, int x, int c)
{
	size_t i = l == TS_LAYOUT_NCHW ? ((size_t)c * (size_t)h + (size_t)y) * (size_t)w + (size_t)x
				       : ((size_t)y * (size_t)w + (size_t)x) * (size_t)ch + (size_t)c;
	float f;
	switch (t) {
	case TS_DTYPE_U8:
		return ((const uint8_t *)data)[i];
	case TS_DTYPE_U16: {
		uint16_t u = ((const uint16_t *)data)[i];
		return (uint8_t)((u + 128u) / 257u);
	}
	case TS_DTYPE_F16:
		f = ts_out_f32_from_f16(((const uint16_t *)data)[i]);
		break;
	default:
		f = ((const float *)data)[i];
		break;
	}
	if (v->map == TS_GRID_UNNORM && c < v->n) {
		/* two roundings in float32, as a trainer's x * std + mean */
		float u = f * v->std[c];
		u = u + v->mean[c];
		return level(u * 255.0f);
	}
	return level(f * 255.0f);
}

int ts_grid_to_rgb(const void *data, int height, int width, int channels,
		   enum ts_dtype dtype, enum ts_layout layout,
		   const struct ts_grid_values *v, struct ts_image *out)
{
	if (!data || height <= 0 || width <= 0 || channels < 1 || channels > 4)
		return TS_E_ARG;
	if (ts_image_reserve(out, width, height, 3, TS_DTYPE_U8))
		return TS_E_NOMEM;
	for (int y = 0; y < height; y++) {
		uint8_t *row = out->data + (size_t)y * out->stride;
		for (int x = 0; x < width; x++) {
			uint8_t px[3];
			if (channels < 3) {
				px[0] = value(data, height, width, channels, dtype, layout, v, y, x, 0);
				px[1] = px[2] = px[0];
			} else {
				for (int c = 0; c < 3; c++)
					px[c] = value(data, height, width, channels, dtype, layout,
						      v, y, x, c);
			}
			memcpy(row + (size_t)x * 3, px, 3);
		}
	}
	return 0;
}
