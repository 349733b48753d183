/* plan.c - names of plan enums, and freeing a plan. */
#include "plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

TS_EXPORT size_t ts_dtype_size(enum ts_dtype t)
{
	switch (t) {
	case TS_DTYPE_U8: return 1;
	case TS_DTYPE_U16: return 2;
	case TS_DTYPE_F16: return 2;
	case TS_DTYPE_F32: return 4;
	}
	return 0;
}

TS_EXPORT const char *ts_dtype_name(enum ts_dtype t)
{
	switch (t) {
	case TS_DTYPE_U8: return "uint8";
	case TS_DTYPE_U16: return "uint16";
	case TS_DTYPE_F16: return "float16";
	case TS_DTYPE_F32: return "float32";
	}
	return "?";
}

TS_EXPORT const char *ts_layout_name(enum ts_layout l)
{
	return l == TS_LAYOUT_NCHW ? "nchw" : "nhwc";
}

const struct ts_op_name_table ts_op_names = {
#define TS_OP(k, name) .k = name,
#include "ops.def"
#undef TS_OP
};

const struct ts_source_name_table ts_source_names = {
#define TS_SOURCE_KIND(k, name, encoded) .k = name,
#include "ops.def"
#undef TS_SOURCE_KIND
};

/* Indexed by kind: every member of the name tables, in the list's order. */
static const char *const op_name_of[] = {
#define TS_OP(k, name) ts_op_names.k,
#include "ops.def"
#undef TS_OP
};

static const struct {
	const char *name;
	bool encoded;
} source_of[] = {
#define TS_SOURCE_KIND(k, name, encoded) { ts_source_names.k, encoded },
#include "ops.def"
#undef TS_SOURCE_KIND
};

TS_EXPORT const char *ts_op_kind_name(enum ts_op_kind k)
{
	size_t i = (size_t)k;
	return i < sizeof(op_name_of) / sizeof(op_name_of[0]) ? op_name_of[i] : "?";
}

const char *ts_source_kind_name(enum ts_source_kind k)
{
	size_t i = (size_t)k;
	return i < sizeof(source_of) / sizeof(source_of[0]) ? source_of[i].name : "?";
}

bool ts_source_kind_encoded(enum ts_source_kind k)
{
	size_t i = (size_t)k;
	return i < sizeof(source_of) / sizeof(source_of[0]) && source_of[i].encoded;
}

bool ts_op_is_output(const struct ts_op *op)
{
	return op->kind == TS_OP_OUTPUT;
}

bool ts_op_expands(const struct ts_op *op)
{
	return (op->flags & TS_OPF_EXPANDS) != 0;
}

/* Sizes print with binary units; one decimal unless the value is whole,
 * so "64 MiB" and "1.3 GiB" both read naturally. */
void ts_plan_format_size(uint64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < TS_ARRAY_LEN(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%" PRIu64 " B", bytes);
	else if (v >= 100.0 || v - (double)(uint64_t)v < 0.05 ||
		 v - (double)(uint64_t)v >= 0.95)
		snprintf(buf, n, "%.0f %s", v, units[u]);
	else
		snprintf(buf, n, "%.1f %s", v, units[u]);
}

/* resize, crop and tile share their first two fields, so that the
 * checker can set the size of any of them (ts_op_set_size) */
_Static_assert(offsetof(struct ts_op_crop, size_h) == offsetof(struct ts_op_resize, size_h) &&
	       offsetof(struct ts_op_crop, size_w) == offsetof(struct ts_op_resize, size_w) &&
	       offsetof(struct ts_op_tile, size_h) == offsetof(struct ts_op_resize, size_h) &&
	       offsetof(struct ts_op_tile, size_w) == offsetof(struct ts_op_resize, size_w),
	       "resize, crop and tile begin with size_h, size_w");

void ts_op_set_size(struct ts_op *op, int h, int w)
{
	op->resize.size_h = h;
	op->resize.size_w = w;
}

const struct ts_op_norm *ts_op_norm(const struct ts_op *op)
{
	return op->kind == TS_OP_NORMALIZE ? &op->norm : NULL;
}

/* Where op keeps its branches (the policy's or views' member), NULL for
 * an op without. */
static struct ts_op_branch **branches_at(struct ts_op *op, size_t **n)
{
	if (op->flags & TS_OPF_BRANCHES) {
		*n = &op->policy.n_branches;
		return &op->policy.branches;
	}
	if (op->flags & TS_OPF_VIEWS) {
		*n = &op->views.n_branches;
		return &op->views.branches;
	}
	return NULL;
}

struct ts_op_branch *ts_op_branches(const struct ts_op *op, size_t *n)
{
	size_t *np;
	struct ts_op_branch **b = branches_at((struct ts_op *)op, &np);
	*n = b ? *np : 0;
	return b ? *b : NULL;
}

struct ts_op *ts_op_fused(const struct ts_op *op)
{
	return (op->flags & TS_OPF_ENCODED) ? op->decode.fused : NULL;
}

struct ts_op *ts_op_parts(const struct ts_op *op, size_t *n)
{
	bool out = ts_op_is_output(op);
	*n = out ? op->output.n_parts : 0;
	return out ? op->output.parts : NULL;
}

/* Free what op owns: its fused op, parts, plugin and branches. */
static void op_fini(struct ts_op *op)
{
	struct ts_op *f = ts_op_fused(op);
	if (f) {
		op_fini(f);
		free(f);
		op->decode.fused = NULL;
	}
	size_t np;
	struct ts_op *parts = ts_op_parts(op, &np);
	for (size_t i = 0; i < np; i++)
		op_fini(&parts[i]);
	free(parts);
	if (parts) {
		op->output.parts = NULL;
		op->output.n_parts = 0;
	}
	free(op->plugin);
	op->plugin = NULL;
	ts_plan_branches_free(op);
}

void ts_plan_op_fini(struct ts_op *op)
{
	op_fini(op);
}

void ts_plan_ops_free(struct ts_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		op_fini(&ops[i]);
	free(ops);
}

void ts_plan_branches_free(struct ts_op *op)
{
	size_t *n;
	struct ts_op_branch **b = branches_at(op, &n);
	if (!b)
		return;
	for (size_t k = 0; k < *n; k++) {
		for (size_t i = 0; i < (*b)[k].n_ops; i++)
			op_fini(&(*b)[k].ops[i]);
		free((*b)[k].ops);
	}
	free(*b);
	*b = NULL;
	*n = 0;
}

TS_EXPORT void ts_plan_destroy(struct ts_plan *plan)
{
	if (!plan)
		return;
	free(plan->name);
	free(plan->file);
	free(plan->source.path);
	for (size_t i = 0; i < plan->source.n_exts; i++)
		free(plan->source.exts[i]);
	free(plan->source.exts);
	free(plan->source.base_dir);
	for (size_t i = 0; i < plan->n_ops; i++)
		op_fini(&plan->ops[i]);
	free(plan->ops);
	free(plan->socket);
	free(plan->group);
	free(plan->metrics);
	free(plan->served_names);
	free(plan);
}

bool ts_plan_same_sample(const struct ts_plan *a, const struct ts_plan *b)
{
	return a->height == b->height && a->width == b->width &&
	       a->channels == b->channels && a->dtype == b->dtype &&
	       a->layout == b->layout && a->sample_bytes == b->sample_bytes &&
	       a->n_views == b->n_views &&
	       memcmp(a->views, b->views, (size_t)a->n_views * sizeof(a->views[0])) == 0;
}

/* views(): splitmix64's finaliser of seed + v + 1 (the runtime's
 * ts_rng_mix64; dsl/ keeps its own copy, being libc only). */
uint64_t ts_plan_view_seed(uint64_t seed, int v)
{
	uint64_t z = seed + (uint64_t)v + 1 + 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

bool ts_plan_same_device(const struct ts_plan *a, const struct ts_plan *b)
{
	const struct ts_plan_device *x = &a->device, *y = &b->device;
	if (x->cuda != y->cuda)
		return false;
	if (!x->cuda)
		return true;
	if (x->dtype != y->dtype || x->layout != y->layout || x->normalize != y->normalize ||
	    x->n_mean != y->n_mean)
		return false;
	for (int c = 0; c < x->n_mean && c < 4; c++)
		if (x->mean[c] != y->mean[c] || x->std[c] != y->std[c])
			return false;
	return true;
}

void ts_plan_op_to(struct ts_op *to, const struct ts_op *last, enum ts_layout layout)
{
	*to = (struct ts_op){ .kind = TS_OP_TO, .index = -1 };
	if (!last)
		return;
	to->loc = last->loc;
	to->to.dtype = last->out_dtype;
	to->to.layout = layout;
	to->out_h = last->out_h;
	to->out_w = last->out_w;
	to->out_c = last->out_c;
	to->out_dtype = last->out_dtype;
	to->out_layout = layout;
}

int ts_plan_prefix_init(struct ts_plan_prefix *pre, const struct ts_plan *plan,
			size_t keep)
{
	if (keep < 1 || keep >= plan->n_ops)
		return TS_E_ARG;
	for (size_t i = 0; i < keep; i++)
		if (ts_op_is_output(&plan->ops[i]) || ts_op_expands(&plan->ops[i]) ||
		    (plan->ops[i].flags & TS_OPF_VIEWS)) /* views(): several images */
			return TS_E_ARG;
	struct ts_op *ops = calloc(keep + 1, sizeof(*ops));
	if (!ops)
		return TS_E_NOMEM;
	memcpy(ops, plan->ops, keep * sizeof(*ops));
	const struct ts_op *last = &plan->ops[keep - 1];
	memset(pre, 0, sizeof(*pre));
	pre->plan = *plan;
	/* The OUTPUT of a plan always ends in a TO naming the dtype and
	 * layout (lower.h): here the stage's own, so nothing is converted. */
	ts_plan_op_to(&pre->out_part, last, TS_LAYOUT_NHWC);
	ops[keep] = (struct ts_op){
		.kind = TS_OP_OUTPUT, .index = -1, .loc = last->loc,
		.output = { .parts = &pre->out_part, .n_parts = 1 },
		.out_h = last->out_h, .out_w = last->out_w, .out_c = last->out_c,
		.out_dtype = last->out_dtype, .out_layout = TS_LAYOUT_NHWC,
	};
	pre->plan.ops = ops;
	pre->plan.n_ops = keep + 1;
	pre->plan.height = 0;
	pre->plan.width = 0;
	pre->plan.channels = last->out_c;
	pre->plan.dtype = last->out_dtype;
	pre->plan.layout = TS_LAYOUT_NHWC;
	pre->plan.sample_bytes = 0;
	pre->plan.expands = false;
	pre->plan.max_out_per_in = 1;
	pre->plan.device = (struct ts_plan_device){0};
	pre->plan.n_views = 0;
	return 0;
}

void ts_plan_prefix_fini(struct ts_plan_prefix *pre)
{
	if (!pre)
		return;
	free(pre->plan.ops);
	pre->plan.ops = NULL;
	pre->plan.n_ops = 0;
}
