/*
 * check_branch.c - the ops inside random_apply and random_choice (the
 * policy family, ops_policy.c): a chain of calls, or one bare operator
 * name, checked from the shape before the policy as the same calls would
 * be checked in the pipeline, each a per-sample transform that runs on
 * the image in place. Agreement of the shapes (a skipped branch, the
 * other alternatives) is the policy's own rule, in ops_policy.c.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Branch ops draw from streams forked off their policy's (runtime
 * ts_rng_fork): ids from here up never meet a pipeline position. */
#define BRANCH_INDEX_BASE TS_CHECK_BRANCH_BASE

/* Whether a transform may run inside a branch; reports why not. */
static bool branch_ok(struct ts_check *c, const char *what,
		      const struct ts_opdef *def, const struct ts_ast_call *call)
{
	char hint[192];
	if (def->kind != TS_REG_TRANSFORM) {
		snprintf(hint, sizeof(hint), "move %s out of %s, into the pipeline",
			 def->name, what);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' is a %s stage: only per-sample operators run inside %s",
		    def->name, ts_registry_kind_name(def->kind), what);
		return false;
	}
	if (def->flags & TS_OPF_ENCODED) {
		snprintf(hint, sizeof(hint), "decode before %s", what);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' cannot run inside %s: the images are decoded before it",
		    def->name, what);
		return false;
	}
	if (def->flags & TS_OPF_VIEWS) {
		ts_check_err(c, call->name_loc, "write views(...) once, as the pipeline's last transform",
		    "'views' cannot run inside %s", what);
		return false;
	}
	if (def->flags & TS_OPF_EXPANDS) {
		snprintf(hint, sizeof(hint), "move %s out of %s", def->name, what);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' cannot run inside %s: it makes a variable number of samples",
		    def->name, what);
		return false;
	}
	return true;
}

/* The pipeline's input rules of a transform (check_pipeline.c says the
 * same of a stage): pixels, integers. Returns false after reporting. */
static bool input_ok(struct ts_check *c, const struct ts_opdef *def,
		     const struct ts_ast_call *call, const struct ts_shape *in)
{
	char hint[192], buf[64];
	bool flt = in->dtype == TS_DTYPE_F16 || in->dtype == TS_DTYPE_F32;
	if ((def->flags & TS_OPF_PIXELS) && (flt || in->layout == TS_LAYOUT_NCHW)) {
		ts_check_shape_str(in, buf, sizeof(buf));
		snprintf(hint, sizeof(hint), "move %s before normalize and to", def->name);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' works on %s nhwc pixels, but the data is %s here",
		    def->name, (def->flags & TS_OPF_UINT8) ? "uint8" : "uint8 or uint16",
		    buf);
		return false;
	}
	if ((def->flags & TS_OPF_INTEGER) && flt) {
		snprintf(hint, sizeof(hint), "move %s before to", def->name);
		ts_check_err(c, call->name_loc, hint,
		    "'%s' must come before a conversion to %s", def->name,
		    ts_dtype_name(in->dtype));
		return false;
	}
	return true;
}

/* Lets may bind operators and a chain may name them: `let s = invert() |
 * posterize(3)` then `flip | s`. Deeper than this is a cycle. */
#define MAX_SPLICE 16

/* The chain of calls from first on (first alone when single), appended
 * to *ops, from *shape on. */
static int check_calls(struct ts_check *c, const char *what,
		       const struct ts_ast_call *first, bool single,
		       struct ts_shape *shape, struct ts_op **ops, size_t *n_ops,
		       bool *bad, int depth)
{
	for (const struct ts_ast_call *call = first; call;
	     call = single ? NULL : call->next) {
		const struct ts_opdef *def = ts_registry_find(call->name);
		struct ts_check_val vals[TS_CHECK_MAX_PARAMS] = {{0}};
		struct ts_op op = {0};
		struct ts_shape after;
		struct ts_shape_err e = {0};

		if (!def && call->n_args == 0) {
			/* a let bound to operators, spliced in */
			struct ts_ast_value w = { .kind = TS_AST_WORD, .loc = call->name_loc,
						  .str = call->name };
			const struct ts_ast_value *v = ts_check_resolve(c, &w);
			if (v && v != &w && (v->kind == TS_AST_OPS || v->kind == TS_AST_WORD)) {
				if (depth >= MAX_SPLICE) {
					ts_check_err(c, call->name_loc,
					    "a let may not refer to itself, directly or not",
					    "let '%s' refers to itself", call->name);
					*bad = true;
					continue;
				}
				struct ts_ast_call one = { .name = v->str, .loc = v->loc,
							   .name_loc = v->loc };
				int rc = v->kind == TS_AST_OPS
						 ? check_calls(c, what, v->calls, false, shape, ops,
							       n_ops, bad, depth + 1)
						 : check_calls(c, what, &one, true, shape, ops,
							       n_ops, bad, depth + 1);
				if (rc < 0)
					return rc;
				continue;
			}
		}
		if (!def) {
			ts_check_unknown_op(c, call);
			*bad = true;
			continue;
		}
		if (!branch_ok(c, what, def, call)) {
			*bad = true;
			continue;
		}
		/* The arguments and build report their own errors, as in the
		 * pipeline (check_pipeline.c); the branch is then bad, so that
		 * its policy is not built and nothing judges the shape it
		 * leaves (a failed policy keeps its input's: random_choice's
		 * agreement, random_apply's and views' sizes would report it
		 * again). */
		if (ts_check_bind_args(c, def, call, vals) < 0)
			*bad = true;
		op.kind = (enum ts_op_kind)def->op_kind;
		op.flags = def->flags;
		op.scratch_images = def->scratch_images;
		op.loc = call->loc;
		if (def->build(c, def, vals, call, shape, &op) < 0)
			*bad = true;
		op.index = BRANCH_INDEX_BASE + ++c->branch_index;
		if (!input_ok(c, def, call, shape))
			*bad = true;
		if (ts_check_bad_size(def, vals)) {
			/* as in the pipeline: the op keeps the size it gets,
			 * so that the ops after it do not report again */
			ts_op_set_size(&op, shape->h, shape->w);
		}
		if (def->shape(&op, shape, &after, &e) < 0) {
			ts_check_err(c, ts_check_arg_loc(def, vals, call, e.param), e.hint,
			    "%s", e.msg);
			*bad = true;
		}
		if (ts_ops_image_is_to(&op) && !c->views_group &&
		    (after.dtype == TS_DTYPE_F16 || after.layout == TS_LAYOUT_NCHW)) {
			char hint[192];
			snprintf(hint, sizeof(hint),
				 "convert to float16 or nchw at the end of the pipeline, after %s",
				 what);
			ts_check_err(c, call->loc, hint,
			    "'to(%s, %s)' cannot run inside %s: its ops work on nhwc images of uint8, uint16 or float32",
			    ts_dtype_name(after.dtype), ts_layout_name(after.layout), what);
			*bad = true;
		}
		*shape = after;
		op.out_h = shape->h;
		op.out_w = shape->w;
		op.out_c = shape->c;
		op.out_dtype = shape->dtype;
		op.out_layout = shape->layout;
		struct ts_op *grown = realloc(*ops, (*n_ops + 1) * sizeof(*grown));
		if (!grown) {
			ts_plan_op_fini(&op);
			return TS_E_NOMEM;
		}
		*ops = grown;
		(*ops)[(*n_ops)++] = op;
	}
	return 0;
}

int ts_check_branch(struct ts_check *c, const char *what,
		    const struct ts_ast_value *v, const struct ts_shape *in,
		    struct ts_shape *out, struct ts_op **ops_out, size_t *n_out)
{
	struct ts_ast_call bare = {0};
	struct ts_shape shape = *in;
	struct ts_op *ops = NULL;
	size_t n_ops = 0;
	bool bad = false;
	int rc;

	*ops_out = NULL;
	*n_out = 0;
	*out = *in;
	if (v->kind == TS_AST_WORD) {
		/* one bare name: an operator without arguments */
		bare.name = v->str;
		bare.loc = bare.name_loc = v->loc;
		rc = check_calls(c, what, &bare, true, &shape, &ops, &n_ops, &bad, 0);
	} else {
		rc = check_calls(c, what, v->calls, false, &shape, &ops, &n_ops, &bad, 0);
	}
	*out = shape;
	if (rc < 0 || bad || n_ops == 0) {
		ts_plan_ops_free(ops, n_ops);
		return rc < 0 ? rc : -1;
	}
	*ops_out = ops;
	*n_out = n_ops;
	return 0;
}
