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

/* Check one pipeline statement and build its plan (fused op list and
 * sample shape; serve settings and estimate come later). Errors go to
 * c->d. Returns 0 or TS_E_NOMEM; *size_reported tells whether a "no fixed
 * size" error was already given (so serve does not repeat it). */
int ts_check_pipeline(struct ts_check *c, const struct ts_ast_stmt *st,
			  struct ts_plan *plan, bool *size_reported)
{
	struct ts_shape shape = { .encoded = true, .c = 3 };
	struct ts_op *ops = NULL;
	size_t n_ops = 0;
	bool have_source = false, past_modifiers = false,
	     assumed_decode = false, size_unknown = false;
	const struct ts_ast_call *batch_call = NULL, *device_call = NULL,
				 *views_call = NULL;
	int index = 0, rc = 0, late_h = 0, late_w = 0;
	char buf[64];

	*size_reported = false;
	c->shuffled = c->sharded = false;
	plan->batch = 1;
	plan->max_out_per_in = 1;
	if (!st->calls) {
		ts_check_err(c, st->loc, NULL, "pipeline '%s' has no stages", st->name);
		return 0;
	}
	for (const struct ts_ast_call *call = st->calls; call;
	     call = call->next, index++) {
		const struct ts_opdef *def = ts_registry_find(call->name);
		struct ts_check_val vals[TS_CHECK_MAX_PARAMS] = {{0}};
		struct ts_op op = {0};
		struct ts_shape out;
		struct ts_shape_err e = {0};

		if (!def) {
			ts_check_unknown_op(c, call);
			if (index == 0)
				have_source = true; /* do not also say "no source" */
			continue;
		}
		if (def->flags & TS_OPF_OWN_ARGS)
			ts_check_bind_plugin(c, def, call, vals, &op);
		else if (!(def->flags & TS_OPF_VIEWS)) /* views binds its groups */
			ts_check_bind_args(c, def, call, vals);
		if (batch_call) {
			ts_check_err(c, batch_call->loc, "move batch(...) to the end",
			    "'batch' must be the last stage");
			batch_call = NULL;
		}
		switch (def->kind) {
		case TS_REG_SOURCE:
			if (index != 0) {
				ts_check_err(c, call->name_loc,
				    "a pipeline reads one source; write another pipeline for a second one",
				    "source '%s' must be the first stage", def->name);
				continue;
			}
			have_source = true;
			rc = def->apply(c, def, vals, call, plan, &shape);
			if (rc < 0)
				goto out;
			continue;
		case TS_REG_MODIFIER:
			if (past_modifiers || (index == 0)) {
				char hint[192];
				snprintf(hint, sizeof(hint),
					 "move %s right after the source", def->name);
				ts_check_err(c, call->name_loc, hint,
				    "'%s' must come right after the source",
				    def->name);
				continue;
			}
			rc = def->apply(c, def, vals, call, plan, &shape);
			if (rc < 0)
				goto out;
			continue;
		case TS_REG_SINK:
			past_modifiers = true;
			plan->batch = (int)ts_check_arg(def, vals, "n")->num;
			batch_call = call;
			if (!shape.encoded && (!shape.h || !shape.w) && !size_unknown) {
				ts_check_err(c, call->loc,
				    "add center_crop, resize([h, w]) or random_resized_crop before batch",
				    "'batch' needs a fixed image size, but the size varies here");
				*size_reported = true;
			}
			continue;
		case TS_REG_DEVICE:
			past_modifiers = true;
			if (views_call) {
				ts_check_err(c, call->name_loc,
				    "drop device(...): a pipeline with views finishes on the CPU",
				    "'device' cannot follow views: the device stage takes one image per sample");
				continue;
			}
			ts_check_device(c, def, vals, call, &shape, device_call,
				     &plan->device);
			device_call = call;
			continue;
		case TS_REG_TRANSFORM:
			break;
		}
		past_modifiers = true;
		if (views_call) {
			/* the views' own ops are in their groups */
			char hint[192];
			snprintf(hint, sizeof(hint),
				 "move %s into the groups of views(...) (each group's ops run on its views)",
				 def->name);
			ts_check_err(c, call->name_loc, hint,
			    "'%s' cannot follow views: views is the last transform, only batch comes after it",
			    def->name);
			continue;
		}
		if (def->flags & TS_OPF_VIEWS) {
			views_call = call;
			if (device_call) {
				ts_check_err(c, device_call->name_loc,
				    "drop device(...): a pipeline with views finishes on the CPU",
				    "'device' cannot come before views: the device stage finishes the sample");
				device_call = NULL;
			}
			if (plan->expands) {
				ts_check_err(c, call->name_loc,
				    "drop the tile, filter or plugin stage, or views",
				    "'views' cannot follow a tile, filter or plugin stage: it makes the views of one decoded image per sample");
			}
		}
		if (device_call) {
			/* the GPU stage finishes the sample: nothing after it
			 * runs on the CPU */
			ts_check_err(c, call->name_loc,
			    "move it before device(...), or drop device(...)",
			    "'%s' cannot follow device(cuda): the device stage must be the last before batch",
			    def->name);
			device_call = NULL;
		}
		if (index == 0 && !have_source) {
			ts_check_err(c, call->name_loc,
			    "start with folder(...), list(...), tar(...) or synthetic(...)",
			    "pipeline '%s' has no source", st->name);
			have_source = true;
			if (!(def->flags & TS_OPF_ENCODED))
				shape = (struct ts_shape){ .c = 3 };
		}
		op.kind = (enum ts_op_kind)def->op_kind;
		op.flags = def->flags;
		op.scratch_images = def->scratch_images;
		op.loc = call->loc;
		/* build reports its own errors; the op is still usable, but
		 * for random_choice without its alternatives, which leaves
		 * its input's size: the reported error is the cause of
		 * whatever size it has, so batch and serve do not judge it */
		if (def->build(c, def, vals, call, &shape, &op) < 0 &&
		    (def->flags & TS_OPF_ALTERNATIVES) && op.n_branches == 0 &&
		    (!shape.h || !shape.w))
			size_unknown = *size_reported = true;
		op.index = index;
		if ((def->flags & TS_OPF_ENCODED) && assumed_decode) {
			/* The missing decode was reported; this late one
			 * passes, keeping the size so errors do not cascade. */
			assumed_decode = false;
			late_h = shape.h;
			late_w = shape.w;
			shape.encoded = true;
		}
		if (!(def->flags & TS_OPF_ENCODED) && shape.encoded) {
			char hint[192];
			snprintf(hint, sizeof(hint), "add decode(rgb) before %s",
				 def->name);
			ts_check_err(c, call->name_loc, hint,
			    "'%s' needs decoded pixels, but the images are still encoded here",
			    def->name);
			shape = (struct ts_shape){ .c = 3 };
			assumed_decode = true;
		} else if ((def->flags & TS_OPF_PIXELS) &&
			   (shape.dtype == TS_DTYPE_F16 || shape.dtype == TS_DTYPE_F32 ||
			    shape.layout == TS_LAYOUT_NCHW)) {
			char hint[192];
			ts_check_shape_str(&shape, buf, sizeof(buf));
			snprintf(hint, sizeof(hint),
				 "move %s before normalize and to", def->name);
			ts_check_err(c, call->name_loc, hint,
			    "'%s' works on %s nhwc pixels, but the data is %s here",
			    def->name, (def->flags & TS_OPF_UINT8) ? "uint8" : "uint8 or uint16",
			    buf);
		} else if ((def->flags & TS_OPF_INTEGER) &&
			   (shape.dtype == TS_DTYPE_F16 || shape.dtype == TS_DTYPE_F32)) {
			char hint[192];
			snprintf(hint, sizeof(hint), "move %s before to", def->name);
			ts_check_err(c, call->name_loc, hint,
			    "'%s' must come before a conversion to %s",
			    def->name, ts_dtype_name(shape.dtype));
		}
		if (ts_check_bad_size(def, vals)) {
			/* An invalid size was reported: the op keeps the size
			 * it gets, so that nothing after it reports again. */
			op.size_h = shape.h;
			op.size_w = shape.w;
			if (!shape.h || !shape.w)
				size_unknown = *size_reported = true;
		}
		if (def->shape(&op, &shape, &out, &e) < 0) {
			ts_check_err(c, ts_check_arg_loc(def, vals, call, e.param), e.hint, "%s", e.msg);
		}
		if (late_h || late_w) {
			out.h = late_h;
			out.w = late_w;
			late_h = late_w = 0;
		}
		if (def->flags & TS_OPF_EXPANDS) {
			int64_t f = def->fanout(&op, &shape);
			plan->expands = true;
			if (f > 0 && plan->max_out_per_in > 0) {
				int64_t m = (int64_t)plan->max_out_per_in * f;
				plan->max_out_per_in = m > INT32_MAX ? 0 : (int)m;
			} else {
				plan->max_out_per_in = 0; /* unbounded */
			}
		}
		shape = out;
		op.out_h = shape.h;
		op.out_w = shape.w;
		op.out_c = shape.c;
		op.out_dtype = shape.dtype;
		op.out_layout = shape.layout;
		rc = push_op(&ops, &n_ops, &op);
		if (rc < 0) {
			free(op.plugin);
			ts_plan_branches_free(&op);
			goto out;
		}
	}
	if (!have_source)
		ts_check_err(c, st->name_loc,
		    "start with folder(...), list(...), tar(...) or synthetic(...)",
		    "pipeline '%s' has no source", st->name);
	if (shape.encoded && have_source && st->calls &&
	    ts_registry_find(st->calls->name)) {
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
	rc = ts_lower_ops(ops, n_ops, &plan->ops, &plan->n_ops);
	if (rc == 0)
		ts_plan_set_views(plan); /* views(): the slot is the views */
	ops = NULL;
	n_ops = 0;
	if (rc == 0) {
		/* OUTPUT, and the TO it ends with, write the final shape */
		struct ts_op *o = &plan->ops[plan->n_ops - 1];
		struct ts_op *to = &o->parts[o->n_parts - 1];
		o->out_h = to->out_h = shape.h;
		o->out_w = to->out_w = shape.w;
		o->out_c = to->out_c = shape.c;
		o->out_dtype = to->out_dtype = shape.dtype;
		o->out_layout = to->out_layout = shape.layout;
		if (to->index < 0) {
			to->dtype = shape.dtype;
			to->layout = shape.layout;
		}
	}
out:
	ts_plan_ops_free(ops, n_ops);
	return rc;
}
