/*
 * checker.h - the checker's parts, shared by dsl/check*.c only: the context
 * every error goes through, an argument after conversion, and one entry
 * point per concern (values, arguments, device, pipelines, serve
 * settings); the operator families (ops_*.c) build their ops with the
 * argument functions. Not used outside dsl/.
 */
#ifndef TS_CHECKER_H
#define TS_CHECKER_H

#include <stdbool.h>
#include <stddef.h>

#include "dsl.h"
#include "registry.h"

#define TS_CHECK_MAX_PARAMS 16

/* One argument after let resolution and conversion to its param type. */
struct ts_check_val {
	bool given;
	struct ts_loc loc;
	double num;            /* INT, NUMBER, SIZE, COUNT, BOOL (0/1) */
	double lo, hi;         /* RANGE */
	int h, w;              /* SIZE_PAIR */
	int word;              /* WORD: index into words */
	const char *str;       /* STRING */
	float nums[4];         /* NUMLIST */
	int n_nums;
	double dnums[8];       /* NUMLIST, unrounded (the geometry ops' angles;
				  up to the parameter's max_items) */
	bool is_list;          /* NUMLIST: written as a list, not one number */
	const struct ts_ast_value *items; /* STRLIST: first item */
	size_t n_items;
	bool is_auto;          /* THREADS */
	bool samples;          /* COUNT: unit is samples, not batches */
	bool bad;              /* reported (invalid or missing): a stand-in */
	/* the policy family: OPS, the chain (TS_AST_OPS) or bare name
	 * (TS_AST_WORD) with lets followed; OPSLIST and NUMBERS use items
	 * and n_items (the list's, lets not yet followed). */
	const struct ts_ast_value *ops;
};

/* Branch ops (random_apply's, random_choice's) draw from streams forked
 * off their policy's (runtime ts_rng_fork), numbered from here up in the
 * order check_branch.c checks them, so that they never meet a pipeline
 * position. */
#define TS_CHECK_BRANCH_BASE (1 << 20)

/* One ts_dsl_check call: the program, where errors go, and whether
 * reporting one ran out of memory. */
struct ts_check_entry;
struct ts_check {
	const struct ts_ast_program *prog;
	struct ts_diags *d;
	struct ts_check_entry *names; /* check_names.c: statements by name */
	size_t names_mask;
	bool oom;
	bool shuffled, sharded;   /* in the pipeline being checked */
	int branch_index;         /* the policy family: the last RNG stream id
				     given to a branch op (check_branch.c) */
	bool views_group;         /* checking a views() group (ops_views.c):
				     its ops may end in the sample's to() */
};

/* check.c: report an error (remembering out of memory in c->oom); the
 * names of the statements of one kind. */
void ts_check_err(struct ts_check *c, struct ts_loc loc, const char *hint,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* check_pipeline.c: "unknown operator" at a call's name, with the
 * closest of the registry's operators as a hint. */
void ts_check_unknown_op(struct ts_check *c, const struct ts_ast_call *call);
/* check.c: the name of a statement of that kind closest to word, or NULL. */
const char *ts_check_suggest_stmt(const struct ts_ast_program *p,
				  enum ts_ast_stmt_kind kind, const char *word);

/* check_names.c: the index of c->prog's statements by kind and name,
 * with every let resolved (0 or TS_E_NOMEM; freed by _free, which may be
 * called on a context whose build failed); the first statement of a kind
 * with a name (NULL: none); a value with let names followed (NULL for a
 * let in or leading to a cycle); the error for such a let, naming the
 * cycle. Lookups are O(1): the checker stays linear in the file's size. */
int ts_check_names_build(struct ts_check *c);
void ts_check_names_free(struct ts_check *c);
const struct ts_ast_stmt *ts_check_find(const struct ts_check *c,
					enum ts_ast_stmt_kind kind,
					const char *name);
const struct ts_ast_value *ts_check_resolve(const struct ts_check *c,
					    const struct ts_ast_value *v);
void ts_check_cycle_err(struct ts_check *c, struct ts_loc loc, const char *name);

/* check_value.c: convert one argument or setting to p's type (what is
 * "parameter" or "setting", for messages); fill the defaults of the
 * parameters not given. */
int ts_check_convert(struct ts_check *c, const char *what,
		     const struct ts_param *p, const struct ts_ast_value *raw,
		     struct ts_check_val *out);
void ts_check_defaults(const struct ts_param *params, size_t n,
		       struct ts_check_val *vals);

/* check_args.c: bind a call's arguments to def's parameters; a plugin
 * call's (path, timeout_ms and its own, into op->plugin); the bound value
 * of the parameter called name, and where it was written. */
int ts_check_bind_args(struct ts_check *c, const struct ts_opdef *def,
		       const struct ts_ast_call *call, struct ts_check_val *vals);
int ts_check_bind_plugin(struct ts_check *c, const struct ts_opdef *def,
			 const struct ts_ast_call *call,
			 struct ts_check_val *vals, struct ts_op *op);
const struct ts_check_val *ts_check_arg(const struct ts_opdef *def,
					struct ts_check_val *vals,
					const char *name);
struct ts_loc ts_check_arg_loc(const struct ts_opdef *def,
			       struct ts_check_val *vals,
			       const struct ts_ast_call *call, const char *name);
/* ... the image size of an op from `size` (N or [h, w]) and an optional
 * positional `width` (-1 after reporting both forms given); the error
 * for mean and std lists of different lengths (normalize, device). */
int ts_check_arg_size(struct ts_check *c, const struct ts_opdef *def,
		      struct ts_check_val *vals, int *h, int *w);
void ts_check_mean_std_counts(struct ts_check *c, const char *who,
			      const struct ts_check_val *mean,
			      const struct ts_check_val *std,
			      const struct ts_shape *in);

/* check_branch.c (the policy family): the ops of one branch of
 * random_apply or random_choice (what, for messages: "random_apply"),
 * written as v (a chain, or one bare operator name), checked from shape
 * *in as a pipeline's transforms are; *out is the shape after them. On
 * success *ops (malloc'd, n_ops >= 1) holds them, each with a stream id
 * of its own. Errors are reported; returns 0, -1 (reported: *ops NULL)
 * or TS_E_NOMEM. */
int ts_check_branch(struct ts_check *c, const char *what,
		    const struct ts_ast_value *v, const struct ts_shape *in,
		    struct ts_shape *out, struct ts_op **ops, size_t *n_ops);

/* check_device.c: the device(cuda) stage into *dev. */
void ts_check_device(struct ts_check *c, const struct ts_opdef *def,
		     struct ts_check_val *vals, const struct ts_ast_call *call,
		     const struct ts_shape *shape,
		     const struct ts_ast_call *prev,
		     struct ts_plan_device *dev);

/* check_pipeline.c: one pipeline statement into plan; a shape as
 * "uint8 nhwc" or "encoded bytes". */
int ts_check_pipeline(struct ts_check *c, const struct ts_ast_stmt *st,
		      struct ts_plan *plan, bool *size_reported);
void ts_check_shape_str(const struct ts_shape *s, char *buf, size_t n);
/* check_pipeline.c: whether a call's image size (size, or its positional
 * width) was reported as invalid or missing (the op then keeps the size
 * it gets, in the pipeline and in a branch). */
bool ts_check_bad_size(const struct ts_opdef *def, const struct ts_check_val *vals);

/* ops_views.c: plan->views and sample_bytes from the pipeline's views
 * op, when it has one (n_views 0 otherwise). */
void ts_plan_set_views(struct ts_plan *plan);

/* check_serve.c: the settings of one serve block into plan; the defaults
 * of a plan without one. */
int ts_check_serve(struct ts_check *c, const struct ts_ast_stmt *st,
		   struct ts_plan *plan, struct ts_loc *memory_loc,
		   bool *has_memory);
void ts_check_serve_defaults(struct ts_plan *plan);

#endif
