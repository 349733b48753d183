/*
 * check_pipeline.c - one pipeline statement: every stage resolved against
 * the registry in order, the shape inferred after each, the stage order
 * rules enforced, and the op list lowered into the plan.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"

/* Whether the op's image size (size, or its positional width) was
 * reported as invalid or missing. */
bool ts_check_bad_size(const struct ts_opdef *def, const struct ts_check_val *vals)
{
	for (size_t i = 0; i < def->n_params; i++)
		if (vals[i].bad && (strcmp(def->params[i].name, "size") == 0 ||
				    strcmp(def->params[i].name, "width") == 0))
			return true;
	return false;
}

void ts_check_shape_str(const struct ts_shape *s, char *buf, size_t n)
{
	if (s->encoded) {
		snprintf(buf, n, "encoded bytes");
		return;
	}
	snprintf(buf, n, "%s %s", ts_dtype_name(s->dtype), ts_layout_name(s->layout));
}

/* Grow-by-one append to a malloc'd op array. */
static int push_op(struct ts_op **ops, size_t *n, const struct ts_op *op)
{
	struct ts_op *p = realloc(*ops, (*n + 1) * sizeof(*p));
	if (!p)
		return TS_E_NOMEM;
	p[*n] = *op;
	*ops = p;
	(*n)++;
	return 0;
}

/* Every operator of the registry is a candidate for the hint. */
void ts_check_unknown_op(struct ts_check *c, const struct ts_ast_call *call)
{
	struct ts_diag_suggester sg;
	ts_diag_suggest_begin(&sg, call->name);
	for (size_t i = 0, k = ts_registry_count(); i < k; i++)
		ts_diag_suggest_offer(&sg, ts_registry_at(i)->name);
	const char *s = ts_diag_suggest_end(&sg);
	char hint[192];
	if (s)
		snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
	else
		snprintf(hint, sizeof(hint), "see tsrun-pipeline(5) for the operators");
	ts_check_err(c, call->name_loc, hint, "unknown operator '%s'", call->name);
}

/* The state of one pipeline's walk over its stages: the shape so far, the
 * ops built, and what the order rules need to remember. */
struct walk {
	struct ts_check *c;
	const struct ts_ast_stmt *st;
	struct ts_plan *plan;
	bool *size_reported;
	struct ts_shape shape;
	struct ts_op *ops;
	size_t n_ops;
	bool have_source, past_modifiers, assumed_decode, size_unknown;
	const struct ts_ast_call *batch_call, *device_call, *views_call;
	int index;
	int late_h, late_w;       /* a late decode's size, kept for the next op */
	struct ts_op op;          /* the transform being built */
};

/* A stage of the kind of a registry row: returns 0, or TS_E_NOMEM. */
typedef int (*stage_fn)(struct walk *w, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call);

static int stage_source(struct walk *w, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call)
{
	if (w->index != 0) {
		ts_check_err(w->c, call->name_loc,
		    "a pipeline reads one source; write another pipeline for a second one",
		    "source '%s' must be the first stage", def->name);
		return 0;
	}
	w->have_source = true;
	int rc = def->apply(w->c, def, vals, call, w->plan, &w->shape);
	return rc < 0 ? rc : 0;
}

static int stage_modifier(struct walk *w, const struct ts_opdef *def,
			  struct ts_check_val *vals, const struct ts_ast_call *call)
{
	if (w->past_modifiers || w->index == 0) {
		char hint[192];
		snprintf(hint, sizeof(hint), "move %s right after the source", def->name);
		ts_check_err(w->c, call->name_loc, hint,
		    "'%s' must come right after the source", def->name);
		return 0;
	}
	int rc = def->apply(w->c, def, vals, call, w->plan, &w->shape);
	return rc < 0 ? rc : 0;
}

static int stage_sink(struct walk *w, const struct ts_opdef *def,
		      struct ts_check_val *vals, const struct ts_ast_call *call)
{
	w->past_modifiers = true;
	w->plan->batch = (int)ts_check_arg(def, vals, "n")->num;
	w->batch_call = call;
	if (!w->shape.encoded && (!w->shape.h || !w->shape.w) && !w->size_unknown) {
		ts_check_err(w->c, call->loc,
		    "add center_crop, resize([h, w]) or random_resized_crop before batch",
		    "'batch' needs a fixed image size, but the size varies here");
		*w->size_reported = true;
	}
	return 0;
}

static int stage_device(struct walk *w, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call)
{
	w->past_modifiers = true;
	if (w->views_call) {
		ts_check_err(w->c, call->name_loc,
		    "drop device(...): a pipeline with views finishes on the CPU",
		    "'device' cannot follow views: the device stage takes one image per sample");
		return 0;
	}
	ts_check_device(w->c, def, vals, call, &w->shape, w->device_call, &w->plan->device);
	w->device_call = call;
	return 0;
}

/* Where a transform may stand: not after views or device, and a source
 * first. Returns false when the stage is to be passed over. */
static bool transform_order(struct walk *w, const struct ts_opdef *def,
			    const struct ts_ast_call *call)
{
	struct ts_check *c = w->c;
	if (w->views_call) {
		/* the views' own ops are in their groups */
		char hint[192];
		snprintf(hint, sizeof(hint),
			 "move %s into the groups of views(...) (each group's ops run on its views)",
			 def->name);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' cannot follow views: views is the last transform, only batch comes after it",
		    def->name);
		return false;
	}
	if (def->flags & TS_OPF_VIEWS) {
		w->views_call = call;
		if (w->device_call) {
			ts_check_err(c, w->device_call->name_loc,
			    "drop device(...): a pipeline with views finishes on the CPU",
			    "'device' cannot come before views: the device stage finishes the sample");
			w->device_call = NULL;
		}
		if (w->plan->expands)
			ts_check_err(c, call->name_loc,
			    "drop the tile, filter or plugin stage, or views",
			    "'views' cannot follow a tile, filter or plugin stage: it makes the views of one decoded image per sample");
	}
	if (w->device_call) {
		/* the GPU stage finishes the sample: nothing after it runs
		 * on the CPU */
		ts_check_err(c, call->name_loc,
		    "move it before device(...), or drop device(...)",
		    "'%s' cannot follow device(cuda): the device stage must be the last before batch",
		    def->name);
		w->device_call = NULL;
	}
	if (w->index == 0 && !w->have_source) {
		ts_check_err(c, call->name_loc,
		    "start with folder(...), list(...), tar(...) or synthetic(...)",
		    "pipeline '%s' has no source", w->st->name);
		w->have_source = true;
		if (!(def->flags & TS_OPF_ENCODED))
			w->shape = (struct ts_shape){ .c = 3 };
	}
	return true;
}

/* What a transform takes: decoded pixels, and by its flags pixels
 * before normalize and to, or integers before a float conversion. */
static void transform_input(struct walk *w, const struct ts_opdef *def,
			    const struct ts_ast_call *call)
{
	struct ts_check *c = w->c;
	struct ts_shape *shape = &w->shape;
	char hint[192], buf[64];
	if ((def->flags & TS_OPF_ENCODED) && w->assumed_decode) {
		/* The missing decode was reported; this late one passes,
		 * keeping the size so errors do not cascade. */
		w->assumed_decode = false;
		w->late_h = shape->h;
		w->late_w = shape->w;
		shape->encoded = true;
	}
	if (!(def->flags & TS_OPF_ENCODED) && shape->encoded) {
		snprintf(hint, sizeof(hint), "add decode(rgb) before %s", def->name);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' needs decoded pixels, but the images are still encoded here",
		    def->name);
		*shape = (struct ts_shape){ .c = 3 };
		w->assumed_decode = true;
	} else if ((def->flags & TS_OPF_PIXELS) &&
		   (shape->dtype == TS_DTYPE_F16 || shape->dtype == TS_DTYPE_F32 ||
		    shape->layout == TS_LAYOUT_NCHW)) {
		ts_check_shape_str(shape, buf, sizeof(buf));
		snprintf(hint, sizeof(hint), "move %s before normalize and to", def->name);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' works on %s nhwc pixels, but the data is %s here",
		    def->name, (def->flags & TS_OPF_UINT8) ? "uint8" : "uint8 or uint16", buf);
	} else if ((def->flags & TS_OPF_INTEGER) &&
		   (shape->dtype == TS_DTYPE_F16 || shape->dtype == TS_DTYPE_F32)) {
		snprintf(hint, sizeof(hint), "move %s before to", def->name);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' must come before a conversion to %s",
		    def->name, ts_dtype_name(shape->dtype));
	}
}

/* An expanding op (tile, filter, plugin): the plan's fan-out. */
static void transform_fanout(struct walk *w, const struct ts_opdef *def,
			     const struct ts_op *op)
{
	struct ts_plan *plan = w->plan;
	int64_t f = def->fanout(op, &w->shape);
	plan->expands = true;
	if (f > 0 && plan->max_out_per_in > 0) {
		int64_t m = (int64_t)plan->max_out_per_in * f;
		plan->max_out_per_in = m > INT32_MAX ? 0 : (int)m;
	} else {
		plan->max_out_per_in = 0; /* unbounded */
	}
}

static int stage_transform(struct walk *w, const struct ts_opdef *def,
			   struct ts_check_val *vals, const struct ts_ast_call *call)
{
	struct ts_check *c = w->c;
	struct ts_op *op = &w->op;
	struct ts_shape out;
	struct ts_shape_err e = {0};

	w->past_modifiers = true;
	if (!transform_order(w, def, call)) {
		free(op->plugin); /* bound, never built */
		op->plugin = NULL;
		return 0;
	}
	op->kind = (enum ts_op_kind)def->op_kind;
	op->flags = def->flags;
	op->scratch_images = def->scratch_images;
	op->loc = call->loc;
	/* build reports its own errors; the op is still usable, but for
	 * random_choice without its alternatives, which leaves its input's
	 * size: the reported error is the cause of whatever size it has, so
	 * batch and serve do not judge it */
	if (def->build(c, def, vals, call, &w->shape, op) < 0 &&
	    (def->flags & TS_OPF_ALTERNATIVES) && op->policy.n_branches == 0 &&
	    (!w->shape.h || !w->shape.w))
		w->size_unknown = *w->size_reported = true;
	op->index = w->index;
	transform_input(w, def, call);
	if (ts_check_bad_size(def, vals)) {
		/* An invalid size was reported: the op keeps the size it
		 * gets, so that nothing after it reports again. */
		ts_op_set_size(op, w->shape.h, w->shape.w);
		if (!w->shape.h || !w->shape.w)
			w->size_unknown = *w->size_reported = true;
	}
	if (def->shape(op, &w->shape, &out, &e) < 0)
		ts_check_err(c, ts_check_arg_loc(def, vals, call, e.param), e.hint, "%s", e.msg);
	if (w->late_h || w->late_w) {
		out.h = w->late_h;
		out.w = w->late_w;
		w->late_h = w->late_w = 0;
	}
	if (def->flags & TS_OPF_EXPANDS)
		transform_fanout(w, def, op);
	w->shape = out;
	op->out_h = out.h;
	op->out_w = out.w;
	op->out_c = out.c;
	op->out_dtype = out.dtype;
	op->out_layout = out.layout;
	return push_op(&w->ops, &w->n_ops, op);
}

static const stage_fn stages[] = {
	[TS_REG_SOURCE] = stage_source,
	[TS_REG_MODIFIER] = stage_modifier,
	[TS_REG_TRANSFORM] = stage_transform,
	[TS_REG_SINK] = stage_sink,
	[TS_REG_DEVICE] = stage_device,
};

/* The end of the walk: the missing source or decode, the sample shape,
 * the lowered op list (whose OUTPUT and its final TO write that shape). */
static int finish_plan(struct walk *w)
{
	struct ts_check *c = w->c;
	const struct ts_ast_stmt *st = w->st;
	struct ts_plan *plan = w->plan;
	struct ts_shape shape = w->shape;
	if (!w->have_source)
		ts_check_err(c, st->name_loc,
		    "start with folder(...), list(...), tar(...) or synthetic(...)",
		    "pipeline '%s' has no source", st->name);
	if (shape.encoded && w->have_source && st->calls && ts_registry_find(st->calls->name)) {
		ts_check_err(c, st->name_loc, "add decode(rgb) after the source",
		    "pipeline '%s' never decodes its images", st->name);
		shape = (struct ts_shape){ .c = 3 };
	}
	plan->height = shape.h;
	plan->width = shape.w;
	plan->channels = shape.c;
	plan->dtype = shape.dtype;
	plan->layout = shape.layout;
	plan->sample_bytes = (size_t)shape.h * (size_t)shape.w * (size_t)shape.c *
			     ts_dtype_size(shape.dtype);
	int rc = ts_lower_ops(w->ops, w->n_ops, &plan->ops, &plan->n_ops);
	w->ops = NULL; /* lowering took them */
	w->n_ops = 0;
	if (rc < 0)
		return rc;
	ts_plan_set_views(plan); /* views(): the slot is the views */
	/* OUTPUT, and the TO it ends with, write the final shape */
	struct ts_op *o = &plan->ops[plan->n_ops - 1];
	struct ts_op *to = &o->output.parts[o->output.n_parts - 1];
	o->out_h = to->out_h = shape.h;
	o->out_w = to->out_w = shape.w;
	o->out_c = to->out_c = shape.c;
	o->out_dtype = to->out_dtype = shape.dtype;
	o->out_layout = to->out_layout = shape.layout;
	if (to->index < 0) {
		to->to.dtype = shape.dtype;
		to->to.layout = shape.layout;
	}
	return 0;
}

/* Check one pipeline statement and build its plan (fused op list and
 * sample shape; serve settings and estimate come later). Errors go to
 * c->d. Returns 0 or TS_E_NOMEM; *size_reported tells whether a "no fixed
 * size" error was already given (so serve does not repeat it). */
int ts_check_pipeline(struct ts_check *c, const struct ts_ast_stmt *st,
			  struct ts_plan *plan, bool *size_reported)
{
	struct walk w = { .c = c, .st = st, .plan = plan, .size_reported = size_reported,
			  .shape = { .encoded = true, .c = 3 } };
	int rc = 0;

	*size_reported = false;
	c->shuffled = c->sharded = false;
	plan->batch = 1;
	plan->max_out_per_in = 1;
	if (!st->calls) {
		ts_check_err(c, st->loc, NULL, "pipeline '%s' has no stages", st->name);
		return 0;
	}
	for (const struct ts_ast_call *call = st->calls; call; call = call->next, w.index++) {
		const struct ts_opdef *def = ts_registry_find(call->name);
		struct ts_check_val vals[TS_CHECK_MAX_PARAMS] = {{0}};
		struct ts_op *op = &w.op;

		if (!def) {
			ts_check_unknown_op(c, call);
			if (w.index == 0)
				w.have_source = true; /* do not also say "no source" */
			continue;
		}
		*op = (struct ts_op){0};
		if (def->flags & TS_OPF_OWN_ARGS)
			ts_check_bind_plugin(c, def, call, vals, op);
		else if (!(def->flags & TS_OPF_VIEWS)) /* views binds its groups */
			ts_check_bind_args(c, def, call, vals);
		if (w.batch_call) {
			ts_check_err(c, w.batch_call->loc, "move batch(...) to the end",
			    "'batch' must be the last stage");
			w.batch_call = NULL;
		}
		rc = stages[def->kind](&w, def, vals, call);
		if (rc < 0) {
			if (def->kind == TS_REG_TRANSFORM)
				ts_plan_op_fini(op);
			break;
		}
	}
	if (rc == 0)
		rc = finish_plan(&w);
	ts_plan_ops_free(w.ops, w.n_ops);
	return rc;
}
