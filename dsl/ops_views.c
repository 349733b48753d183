/*
 * ops_views.c - views(2 = ops, 6 = ops): several augmented views of each
 * decoded image (the multi-crop recipes of DINO, SwAV, SimCLR). Each
 * argument is a group, a view count in the place of a parameter name and
 * the operators every view of the group runs on its own copy of the
 * image; the group's ops are checked as a policy branch's are
 * (check_branch.c), may end in the sample's to(), must end at a fixed
 * size, and are lowered as a pipeline's tail (ending in an OUTPUT that
 * writes the view into its part of the slot). The engine's side is
 * runtime/engine_views.c; the stage rules (views last, no tile, filter,
 * plugin or device with it) are check_pipeline.c's.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "util.h"

#define VIEWS_EXAMPLE "views(2 = random_resized_crop(224) | flip, 6 = random_resized_crop(96) | flip)"

static void free_groups(struct ts_op_branch *br, size_t n)
{
	struct ts_op holder = { .flags = TS_OPF_VIEWS,
				.views = { .branches = br, .n_branches = n } };
	ts_plan_branches_free(&holder);
}

/* The view count written as the argument's name: 1..TS_PLAN_MAX_VIEWS,
 * or 0 after reporting. */
static int group_count(struct ts_check *c, const struct ts_ast_arg *a, size_t k)
{
	char *end = NULL;
	long n;
	if (!a->name) {
		ts_check_err(c, a->loc, "write each group as COUNT = operators: " VIEWS_EXAMPLE,
		    "views' group %zu has no view count", k + 1);
		return 0;
	}
	if (a->name[0] < '0' || a->name[0] > '9') {
		ts_check_err(c, a->name_loc, "write each group as COUNT = operators: " VIEWS_EXAMPLE,
		    "views takes groups of views (COUNT = operators), not a parameter '%s'",
		    a->name);
		return 0;
	}
	n = strtol(a->name, &end, 10);
	if (*end || n < 1 || n > TS_PLAN_MAX_VIEWS) {
		ts_check_err(c, a->name_loc, "give a whole number of views from 1 to 32",
		    "view count %s is not a whole number from 1 to %d", a->name,
		    TS_PLAN_MAX_VIEWS);
		return 0;
	}
	return (int)n;
}

/* A policy's ops inside a group (and theirs), numbered as check_branch.c
 * numbers them (each after its own) from *n on. */
static void number_nested(struct ts_op *op, int *n)
{
	size_t nb;
	struct ts_op_branch *br = ts_op_branches(op, &nb);
	for (size_t b = 0; b < nb; b++)
		for (size_t j = 0; j < br[b].n_ops; j++) {
			number_nested(&br[b].ops[j], n);
			br[b].ops[j].index = TS_CHECK_BRANCH_BASE + ++*n;
		}
}

/* One group's ops from shape in, lowered into *br; -1 after reporting,
 * TS_E_NOMEM. base: the branch stream ids given before views. */
static int build_group(struct ts_check *c, const struct ts_ast_arg *a, size_t k,
		       int count, const struct ts_shape *in, int base,
		       struct ts_op_branch *br)
{
	const struct ts_ast_value *v = ts_check_resolve(c, a->value);
	struct ts_shape out;
	struct ts_op *ops, *low;
	size_t n, n_low;
	char s[64];

	if (!v || (v->kind != TS_AST_OPS && v->kind != TS_AST_WORD)) {
		ts_check_err(c, a->value->loc,
		    "write the group's operators joined by |: 2 = random_resized_crop(224) | flip",
		    "views' group %zu is %s, not operators", k + 1,
		    v ? ts_ast_kind_name(v->kind) : "a let that refers to itself");
		return -1;
	}
	c->views_group = true;
	/* -1 when an op of the group reported (check_branch.c: its error is
	 * the cause, not the size a failed policy leaves) */
	int rc = ts_check_branch(c, "views", v, in, &out, &ops, &n);
	c->views_group = false;
	if (rc < 0)
		return rc;
	if (!out.h || !out.w) {
		ts_check_shape_str(&out, s, sizeof(s));
		ts_check_err(c, a->value->loc,
		    "end it with random_resized_crop(N), center_crop(N) or resize([h, w])",
		    "views' group %zu ends at a variable size (%s): every view of a group has one fixed shape",
		    k + 1, s);
		ts_plan_ops_free(ops, n);
		return -1;
	}
	/* Streams: the group's op j (from 0) at j, moved to the views op's
	 * position + j by ts_plan_set_views, so that the ops written in
	 * place of views(...) draw the same under the view's seed
	 * (tsrun-pipeline(5), VIEWS). */
	int nested = base;
	for (size_t j = 0; j < n; j++) {
		ops[j].index = (int)j;
		/* and the ops of a policy among them as the same chain in the
		 * pipeline would number them: from those before views on */
		number_nested(&ops[j], &nested);
	}
	if (ts_lower_ops(ops, n, &low, &n_low) < 0)
		return TS_E_NOMEM;
	/* The OUTPUT, and the TO it ends with, write the view's shape (as
	 * check_pipeline.c does for the pipeline's). */
	struct ts_op *o = &low[n_low - 1];
	struct ts_op *to = &o->output.parts[o->output.n_parts - 1];
	o->out_h = to->out_h = out.h;
	o->out_w = to->out_w = out.w;
	o->out_c = to->out_c = out.c;
	o->out_dtype = to->out_dtype = out.dtype;
	o->out_layout = to->out_layout = out.layout;
	if (to->index < 0) {
		to->to.dtype = out.dtype;
		to->to.layout = out.layout;
	}
	*br = (struct ts_op_branch){ .ops = low, .n_ops = n_low, .weight = 1, .views = count };
	return 0;
}

static int build_views(struct ts_check *c, const struct ts_opdef *def,
		       struct ts_check_val *vals, const struct ts_ast_call *call,
		       const struct ts_shape *in, struct ts_op *op)
{
	size_t n_groups = 0, k = 0;
	int total = 0, base = c->branch_index;
	bool bad = false;

	(void)def;
	(void)vals;
	for (const struct ts_ast_arg *a = call->args; a; a = a->next)
		n_groups++;
	if (n_groups == 0) {
		ts_check_err(c, call->loc, "give each group as COUNT = operators: " VIEWS_EXAMPLE,
		    "views has no groups of views");
		return -1;
	}
	if (in->encoded)
		return -1; /* "needs decoded pixels" is check_pipeline.c's */
	struct ts_op_branch *br = calloc(n_groups, sizeof(*br));
	if (!br) {
		c->oom = true;
		return -1;
	}
	for (const struct ts_ast_arg *a = call->args; a; a = a->next, k++) {
		int count = group_count(c, a, k);
		if (!count) {
			bad = true;
			continue;
		}
		total += count;
		int rc = build_group(c, a, k, count, in, base, &br[k]);
		if (rc == TS_E_NOMEM)
			c->oom = true;
		if (rc < 0)
			bad = true;
	}
	if (total > TS_PLAN_MAX_VIEWS) {
		ts_check_err(c, call->loc, "make at most 32 views of an image",
		    "views makes %d views of each image, more than %d", total,
		    TS_PLAN_MAX_VIEWS);
		bad = true;
	}
	if (bad) {
		free_groups(br, n_groups);
		return -1;
	}
	op->views.branches = br;
	op->views.n_branches = n_groups;
	return 0;
}

/* After views: view 0's shape (the plan's sample is all of them, laid
 * out by ts_plan_set_views). Without groups (reported), a stand-in of
 * one fixed pixel, so that batch does not report a variable size. */
static int shape_views(const struct ts_op *op, const struct ts_shape *in,
		       struct ts_shape *out, struct ts_shape_err *e)
{
	(void)e;
	*out = *in;
	if (!op->views.n_branches) {
		out->h = out->h ? out->h : 1;
		out->w = out->w ? out->w : 1;
		return 0;
	}
	const struct ts_op_branch *b = &op->views.branches[0];
	const struct ts_op *last = &b->ops[b->n_ops - 1];
	out->h = last->out_h;
	out->w = last->out_w;
	out->c = last->out_c;
	out->dtype = last->out_dtype;
	out->layout = last->out_layout;
	out->normalized = false;
	return 0;
}

/* The groups are shown below it (graph.c). */
static void describe_views(const struct ts_op *op, char *buf, size_t n)
{
	int total = 0;
	for (size_t k = 0; k < op->views.n_branches; k++)
		total += op->views.branches[k].views;
	snprintf(buf, n, "views(%d in %zu group%s)", total, op->views.n_branches,
		 ts_registry_plural((int)op->views.n_branches));
}

const struct ts_opdef ts_ops_views[] = {
	{ .name = ts_op_names.VIEWS, .kind = TS_REG_TRANSFORM, .op_kind = TS_OP_VIEWS,
	  .params = NULL, .n_params = 0, .shape = shape_views,
	  .flags = TS_OPF_VIEWS, .build = build_views, .describe = describe_views,
	  .doc = "several augmented views of each image, decoded once: views(2 = ops, 6 = ops)" },
	TS_ROW_END,
};

static void shift_index(struct ts_op *op, int base)
{
	if (op->index >= 0)
		op->index += base;
	size_t np;
	struct ts_op *parts = ts_op_parts(op, &np);
	for (size_t i = 0; i < np; i++)
		shift_index(&parts[i], base);
}

/* The slot's layout: the views one after another, group by group, each
 * at an offset that is a multiple of its element size and the sample a
 * multiple of the largest, so that every sample's float16 and float32
 * views are aligned for the kernels that write them as such (a uint8
 * view of 75 bytes first put a float32 view at an odd address); the
 * groups' ops numbered from the views op's position. */
void ts_plan_set_views(struct ts_plan *plan)
{
	struct ts_op *vo = NULL;
	size_t off = 0, align = 1;
	plan->n_views = 0;
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].flags & TS_OPF_VIEWS)
			vo = &plan->ops[i];
	if (!vo || !vo->views.n_branches)
		return;
	for (size_t g = 0; g < vo->views.n_branches; g++) {
		const struct ts_op_branch *b = &vo->views.branches[g];
		const struct ts_op *last = &b->ops[b->n_ops - 1];
		for (size_t j = 0; j < b->n_ops; j++)
			shift_index(&b->ops[j], vo->index);
		for (int v = 0; v < b->views && plan->n_views < TS_PLAN_MAX_VIEWS; v++) {
			struct ts_plan_view *pv = &plan->views[plan->n_views++];
			pv->height = last->out_h;
			pv->width = last->out_w;
			pv->channels = last->out_c;
			pv->dtype = last->out_dtype;
			pv->layout = last->out_layout;
			pv->group = (int)g;
			size_t el = ts_dtype_size(pv->dtype);
			off = ts_round_up(off, el);
			align = el > align ? el : align;
			pv->offset = off;
			pv->bytes = (size_t)pv->height * (size_t)pv->width *
				    (size_t)pv->channels * el;
			off += pv->bytes;
		}
	}
	plan->sample_bytes = ts_round_up(off, align);
}
