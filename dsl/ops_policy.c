/*
 * ops_policy.c - the policy operators, named and parameterised as
 * torchvision.transforms names them: random_apply and random_choice,
 * which own ops of their own (checked by check_branch.c as the pipeline's
 * would be), random_erasing on the float tensor, and the augmentation
 * policies rand_augment, trivial_augment_wide and auto_augment.
 * Their kernels are in runtime/policy.c; augmix's (torchvision's AugMix)
 * in runtime/augmix.c.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "224x224x3 uint8 nhwc" ("?x?x3 ..." for a size known at run time),
 * "normalized 40x40x3 float32 nhwc": the normalized mark too, which
 * same_shape compares (two alternatives that differ only there read the
 * same otherwise). */
static void shape_words(const struct ts_shape *s, char *buf, size_t n)
{
	char d[64];
	const char *z = s->normalized ? "normalized " : "";
	ts_check_shape_str(s, d, sizeof(d));
	if (s->h && s->w)
		snprintf(buf, n, "%s%dx%dx%d %s", z, s->h, s->w, s->c, d);
	else
		snprintf(buf, n, "%sa variable size x%d %s", z, s->c, d);
}

static bool same_shape(const struct ts_shape *a, const struct ts_shape *b)
{
	return a->h == b->h && a->w == b->w && a->c == b->c &&
	       a->dtype == b->dtype && a->layout == b->layout &&
	       a->normalized == b->normalized;
}

/* ---- random_apply ---------------------------------------------------- */

static const struct ts_param p_random_apply[] = {
	{ .name = "ops", .type = TS_PT_OPS, .positional = true, .required = true,
	  .doc = "the operators, joined by |, applied in order or not at all" },
	{ .name = "p", .type = TS_PT_NUMBER, .positional = true, .def = "0.5",
	  .def_num = 0.5, P_MIN(0), P_MAX(1), .doc = "probability of applying them" },
};

/* random_apply keeps the shape: it checks that its ops do. */
static int build_random_apply(struct ts_check *c, const struct ts_opdef *def,
			      struct ts_check_val *vals,
			      const struct ts_ast_call *call,
			      const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *ops = ts_check_arg(def, vals, "ops");
	struct ts_shape out;
	struct ts_op *bops;
	size_t n;
	char a[96], b[96];

	op->policy.p = ts_check_arg(def, vals, "p")->num;
	if (ops->bad || !ops->ops)
		return 0; /* reported */
	int rc = ts_check_branch(c, "random_apply", ops->ops, in, &out, &bops, &n);
	if (rc == TS_E_NOMEM)
		c->oom = true;
	if (rc < 0)
		return -1;
	bool keeps = same_shape(in, &out);
	if (!keeps) {
		shape_words(in, a, sizeof(a));
		shape_words(&out, b, sizeof(b));
		ts_check_err(c, ops->loc,
		    "move the operator that changes it out of random_apply",
		    "random_apply's operators turn %s into %s, but with probability 1 - p they do not run: they must keep the shape",
		    a, b);
	}
	op->policy.branches = calloc(1, sizeof(*op->policy.branches));
	if (!op->policy.branches) {
		/* branch ops are never fused and hold no plugin: their
		 * own branches are all they own */
		for (size_t i = 0; i < n; i++)
			ts_plan_branches_free(&bops[i]);
		free(bops);
		c->oom = true;
		return -1;
	}
	op->policy.branches[0] = (struct ts_op_branch){ .ops = bops, .n_ops = n, .weight = 1 };
	op->policy.n_branches = 1;
	return keeps ? 0 : -1; /* reported; the op is whole */
}

/* The ops are shown below it, one a line (graph.c). */
static void describe_random_apply(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "random_apply(p=%g)", op->policy.p);
}

/* ---- random_choice --------------------------------------------------- */

static const struct ts_param p_random_choice[] = {
	{ .name = "ops", .type = TS_PT_OPSLIST, .positional = true, .required = true,
	  .doc = "the alternatives, each operators joined by |; one runs" },
	{ .name = "p", .type = TS_PT_NUMBERS, .positional = true, P_MIN(0), P_MAX(1e9),
	  .doc = "relative weights, one per alternative (default: all equal)" },
};

static void free_branches(struct ts_op_branch *br, size_t n)
{
	struct ts_op holder = { .flags = TS_OPF_BRANCHES,
				.policy = { .branches = br, .n_branches = n } };
	ts_plan_branches_free(&holder);
}

static int build_random_choice(struct ts_check *c, const struct ts_opdef *def,
			       struct ts_check_val *vals,
			       const struct ts_ast_call *call,
			       const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *ops = ts_check_arg(def, vals, "ops");
	const struct ts_check_val *p = ts_check_arg(def, vals, "p");
	struct ts_op_branch *br;
	struct ts_shape first = *in;
	size_t n = 0, k = 0, ref = 0;
	bool have_ref = false, bad = false;
	char a[96], b[96];

	if (ops->bad)
		return 0;
	if (ops->n_items == 0) {
		ts_check_err(c, ops->loc,
		    "give at least one alternative: random_choice([equalize, posterize(4) | invert])",
		    "random_choice has no alternatives to choose from");
		return -1;
	}
	if (p->given && !p->bad && p->n_items != ops->n_items) {
		ts_check_err(c, p->loc, "give one weight per alternative",
		    "random_choice has %zu alternative%s but %zu weight%s", ops->n_items,
		    ts_registry_plural((int)ops->n_items), p->n_items,
		    ts_registry_plural((int)p->n_items));
		bad = true;
	}
	br = calloc(ops->n_items, sizeof(*br));
	if (!br) {
		c->oom = true;
		return -1;
	}
	for (const struct ts_ast_value *it = ops->items; it; it = it->next, k++) {
		const struct ts_ast_value *v = ts_check_resolve(c, it);
		struct ts_shape out;
		if (!v || (v->kind != TS_AST_OPS && v->kind != TS_AST_WORD)) {
			ts_check_err(c, it->loc,
			    "write each alternative as operators: [flip(horizontal), posterize(4) | invert]",
			    "random_choice's alternative %zu is %s, not operators", k + 1,
			    v ? ts_ast_kind_name(v->kind) : "a let that refers to itself");
			bad = true;
			continue;
		}
		int rc = ts_check_branch(c, "random_choice", v, in, &out,
					 &br[k].ops, &br[k].n_ops);
		if (rc == TS_E_NOMEM)
			c->oom = true;
		if (rc < 0) {
			bad = true;
			continue;
		}
		br[k].weight = 1;
		n = k + 1;
		if (!have_ref) {
			first = out;
			ref = k;
			have_ref = true;
		} else if (!same_shape(&first, &out)) {
			struct ts_shape o2 = out;
			o2.normalized = first.normalized;
			shape_words(&out, a, sizeof(a));
			shape_words(&first, b, sizeof(b));
			ts_check_err(c, it->loc,
			    same_shape(&first, &o2)
				    ? "normalize in every alternative or in none (or once, after random_choice)"
				    : "end every alternative at the same size and type (e.g. with the same center_crop)",
			    "random_choice's alternative %zu gives %s, but alternative %zu gives %s: the next stage must get one shape",
			    k + 1, a, ref + 1, b);
			bad = true;
		}
	}
	if (p->given && !p->bad && !bad) {
		double sum = 0;
		k = 0;
		for (const struct ts_ast_value *it = p->items; it; it = it->next, k++) {
			br[k].weight = ts_check_resolve(c, it)->num;
			sum += br[k].weight;
		}
		if (!(sum > 0)) {
			ts_check_err(c, p->loc, "give at least one weight above 0",
			    "random_choice's weights are all 0: no alternative can be chosen");
			bad = true;
		}
	}
	if (bad) {
		free_branches(br, ops->n_items);
		return -1;
	}
	op->policy.branches = br;
	op->policy.n_branches = n;
	return 0;
}

/* The shape of the alternatives (they agree, or it was reported). */
static int shape_random_choice(const struct ts_op *op, const struct ts_shape *in,
			       struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (!op->policy.n_branches || !op->policy.branches[0].n_ops)
		return 0;
	const struct ts_op_branch *b = &op->policy.branches[0];
	const struct ts_op *last = &b->ops[b->n_ops - 1];
	out->h = last->out_h;
	out->w = last->out_w;
	out->c = last->out_c;
	out->dtype = last->out_dtype;
	out->layout = last->out_layout;
	/* Normalized when a branch op's own shape rule says so. */
	struct ts_shape s = *in, next;
	for (size_t i = 0; i < b->n_ops; i++) {
		const struct ts_opdef *d = ts_registry_of_kind(b->ops[i].kind);
		if (d && d->shape && d->shape(&b->ops[i], &s, &next, e) == 0)
			s = next;
	}
	out->normalized = out->normalized || s.normalized;
	return 0;
}

/* The alternatives are shown below it, numbered (graph.c). */
static void describe_random_choice(const struct ts_op *op, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "random_choice(p=[");
	for (size_t k = 0; k < op->policy.n_branches && at < n; k++)
		at += (size_t)snprintf(buf + at, n - at, "%s%g", k ? ", " : "",
				       op->policy.branches[k].weight);
	if (at < n)
		snprintf(buf + at, n - at, "])");
}

/* ---- random_erasing -------------------------------------------------- */

static const char *const w_erase_value[] = {"random", NULL};

static const struct ts_param p_random_erasing[] = {
	{ .name = "p", .type = TS_PT_NUMBER, .positional = true, .def = "0.5",
	  .def_num = 0.5, P_MIN(0), P_MAX(1), .doc = "probability of erasing" },
	{ .name = "scale", .type = TS_PT_RANGE, .positional = true, .def = "0.02..0.33",
	  .def_lo = 0.02, .def_hi = 0.33, P_MIN(0), P_MAX(1),
	  .doc = "erased area, as a fraction of the image's" },
	{ .name = "ratio", .type = TS_PT_RANGE, .positional = true, .def = "0.3..3.3",
	  .def_lo = 0.3, .def_hi = 3.3, P_MIN(1e-6), P_MAX(1e6),
	  .doc = "aspect ratio (height / width) of the erased box" },
	{ .name = "value", .type = TS_PT_NUMLIST, .positional = true, .def = "0",
	  .words = w_erase_value, P_MIN(-1e6), P_MAX(1e6),
	  .doc = "what it is filled with: a number, one per channel, or random (standard normal)" },
};

static int build_random_erasing(struct ts_check *c, const struct ts_opdef *def,
				struct ts_check_val *vals,
				const struct ts_ast_call *call,
				const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *scale = ts_check_arg(def, vals, "scale");
	const struct ts_check_val *ratio = ts_check_arg(def, vals, "ratio");
	const struct ts_check_val *value = ts_check_arg(def, vals, "value");

	op->policy.p = ts_check_arg(def, vals, "p")->num;
	op->policy.scale_lo = scale->lo;
	op->policy.scale_hi = scale->hi;
	op->policy.ratio_lo = ratio->lo;
	op->policy.ratio_hi = ratio->hi;
	op->policy.n_erase = 1;
	op->policy.erase_value[0] = 0;
	if (value->given && !value->bad) {
		if (value->n_nums == 0) {
			op->policy.erase_random = true;
			op->policy.n_erase = 0;
		} else {
			op->policy.n_erase = value->n_nums;
			memcpy(op->policy.erase_value, value->nums, sizeof(op->policy.erase_value));
		}
	}
	return 0;
}

/* torchvision's RandomErasing takes a tensor: here the float data after
 * normalize (or to(float32), ToTensor alone). */
static int shape_random_erasing(const struct ts_op *op, const struct ts_shape *in,
				struct ts_shape *out, struct ts_shape_err *e)
{
	char buf[64];
	*out = *in;
	if (in->dtype != TS_DTYPE_F32 && in->dtype != TS_DTYPE_F16) {
		ts_check_shape_str(in, buf, sizeof(buf));
		snprintf(e->msg, sizeof(e->msg),
			 "'random_erasing' works on the float tensor (torchvision applies RandomErasing after ToTensor and Normalize), but the data is %s here",
			 buf);
		snprintf(e->hint, sizeof(e->hint), "move random_erasing after normalize");
		return -1;
	}
	if (op->policy.n_erase > 1 && op->policy.n_erase != in->c) {
		e->param = "value";
		snprintf(e->msg, sizeof(e->msg),
			 "random_erasing has %d values, but the image has %d channel%s",
			 op->policy.n_erase, in->c, ts_registry_plural(in->c));
		snprintf(e->hint, sizeof(e->hint), "give one value, or %d", in->c);
		return -1;
	}
	return 0;
}

static void describe_random_erasing(const struct ts_op *op, char *buf, size_t n)
{
	char v[96];
	size_t at = 0;
	if (op->policy.erase_random) {
		snprintf(v, sizeof(v), "random");
	} else if (op->policy.n_erase == 1) {
		snprintf(v, sizeof(v), "%g", (double)op->policy.erase_value[0]);
	} else {
		at = (size_t)snprintf(v, sizeof(v), "[");
		for (int i = 0; i < op->policy.n_erase && at < sizeof(v); i++)
			at += (size_t)snprintf(v + at, sizeof(v) - at, "%s%g", i ? ", " : "",
					       (double)op->policy.erase_value[i]);
		if (at < sizeof(v))
			snprintf(v + at, sizeof(v) - at, "]");
	}
	snprintf(buf, n, "random_erasing(p=%g, scale=%g..%g, ratio=%g..%g, value=%s)",
		 op->policy.p, op->policy.scale_lo, op->policy.scale_hi, op->policy.ratio_lo,
		 op->policy.ratio_hi, v);
}

/* ---- rand_augment, trivial_augment_wide, auto_augment ---------------- */

static const char *const w_policy_interp[] = {"nearest", "bilinear", "bicubic", NULL};
static const char *const w_aa_policy[] = {"imagenet", "cifar10", "svhn", NULL};

#define P_POLICY_COMMON \
	{ .name = "interpolation", .type = TS_PT_WORD, .def = "nearest", .def_word = 0, \
	  .words = w_policy_interp, \
	  .doc = "nearest, bilinear or bicubic, for the geometric ops (as PIL samples)" }, \
	{ .name = "fill", .type = TS_PT_NUMLIST, .def = "0", P_MIN(0), P_MAX(255), \
	  .doc = "the colour outside the sheared, moved or rotated image: one level, or one per channel" }

/* num_magnitude_bins: torchvision's Posterize table divides by bins - 1,
 * so one bin is refused. */
#define P_BINS \
	{ .name = "num_magnitude_bins", .type = TS_PT_INT, .def = "31", .def_num = 31, \
	  P_MIN(2), P_MAX(1024), .doc = "how many magnitude levels each op's range has" }

static const struct ts_param p_rand_augment[] = {
	{ .name = "num_ops", .type = TS_PT_INT, .positional = true, .def = "2",
	  .def_num = 2, P_MIN(0), P_MAX(64), .doc = "ops applied in a row, each drawn anew" },
	{ .name = "magnitude", .type = TS_PT_INT, .positional = true, .def = "9",
	  .def_num = 9, P_MIN(0), P_MAX(1023),
	  .doc = "the magnitude bin of every op, 0 to num_magnitude_bins - 1" },
	P_BINS,
	P_POLICY_COMMON,
};

static const struct ts_param p_trivial_augment_wide[] = {
	P_BINS,
	P_POLICY_COMMON,
};

static const struct ts_param p_auto_augment[] = {
	{ .name = "policy", .type = TS_PT_WORD, .positional = true, .def = "imagenet",
	  .def_word = 0, .words = w_aa_policy,
	  .doc = "the learned policy: imagenet, cifar10 or svhn" },
	P_POLICY_COMMON,
};

/* interpolation and fill, as the geometry ops keep them */
static void take_common(const struct ts_opdef *def, struct ts_check_val *vals,
			struct ts_op *op)
{
	const struct ts_check_val *fill = ts_check_arg(def, vals, "fill");
	static const enum ts_interp interps[] = { TS_INTERP_NEAREST, TS_INTERP_BILINEAR,
						  TS_INTERP_BICUBIC };
	op->policy.interp = interps[ts_check_arg(def, vals, "interpolation")->word];
	op->policy.n_fill = fill->given && fill->n_nums > 0 ? fill->n_nums : 1;
	for (int i = 0; i < 4; i++)
		op->policy.fill[i] = fill->given && i < fill->n_nums ? fill->dnums[i] : 0.0;
}

static int build_rand_augment(struct ts_check *c, const struct ts_opdef *def,
			      struct ts_check_val *vals,
			      const struct ts_ast_call *call,
			      const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *mag = ts_check_arg(def, vals, "magnitude");
	op->policy.num_ops = (int)ts_check_arg(def, vals, "num_ops")->num;
	op->policy.magnitude = (int)mag->num;
	op->policy.num_bins = (int)ts_check_arg(def, vals, "num_magnitude_bins")->num;
	take_common(def, vals, op);
	if (!mag->bad && op->policy.magnitude >= op->policy.num_bins) {
		char hint[192];
		snprintf(hint, sizeof(hint),
			 "give a magnitude of 0 to %d, or more num_magnitude_bins",
			 op->policy.num_bins - 1);
		ts_check_err(c, ts_check_arg_loc(def, vals, call, "magnitude"), hint,
		    "magnitude %d is out of range: num_magnitude_bins = %d has bins 0 to %d",
		    op->policy.magnitude, op->policy.num_bins, op->policy.num_bins - 1);
		op->policy.magnitude = op->policy.num_bins - 1;
		return -1;
	}
	return 0;
}

static int build_trivial_augment_wide(struct ts_check *c, const struct ts_opdef *def,
				      struct ts_check_val *vals,
				      const struct ts_ast_call *call,
				      const struct ts_shape *in, struct ts_op *op)
{
	op->policy.num_bins = (int)ts_check_arg(def, vals, "num_magnitude_bins")->num;
	take_common(def, vals, op);
	return 0;
}

static int build_auto_augment(struct ts_check *c, const struct ts_opdef *def,
			      struct ts_check_val *vals,
			      const struct ts_ast_call *call,
			      const struct ts_shape *in, struct ts_op *op)
{
	op->policy.aa_policy = (enum ts_aa_policy)ts_check_arg(def, vals, "policy")->word;
	op->policy.num_bins = 10; /* AutoAugment's tables have 10 bins */
	take_common(def, vals, op);
	return 0;
}

/* The policies take uint8 L or RGB images, as torchvision's do. */
static int shape_policy(const char *name, const struct ts_op *op,
			const struct ts_shape *in, struct ts_shape *out,
			struct ts_shape_err *e)
{
	*out = *in;
	if (in->dtype == TS_DTYPE_U16) {
		snprintf(e->msg, sizeof(e->msg),
			 "'%s' works on uint8 pixels, but the data is uint16 here", name);
		snprintf(e->hint, sizeof(e->hint),
			 "decode with depth = 8, or add to(uint8) before %s", name);
		return -1;
	}
	if (in->c != 1 && in->c != 3) {
		snprintf(e->msg, sizeof(e->msg),
			 "'%s' takes 1 or 3 channels (torchvision's L or RGB), but the image has %d",
			 name, in->c);
		snprintf(e->hint, sizeof(e->hint), "decode(rgb) or decode(gray)");
		return -1;
	}
	if (op->policy.n_fill > 1 && op->policy.n_fill != in->c) {
		e->param = "fill";
		snprintf(e->msg, sizeof(e->msg),
			 "'%s' has %d fill values, but the image has %d channel%s", name,
			 op->policy.n_fill, in->c, ts_registry_plural(in->c));
		snprintf(e->hint, sizeof(e->hint), "give one value for every channel, or %d",
			 in->c);
		return -1;
	}
	return 0;
}

static int shape_rand_augment(const struct ts_op *op, const struct ts_shape *in,
			      struct ts_shape *out, struct ts_shape_err *e)
{
	return shape_policy("rand_augment", op, in, out, e);
}

static int shape_trivial_augment_wide(const struct ts_op *op, const struct ts_shape *in,
				      struct ts_shape *out, struct ts_shape_err *e)
{
	return shape_policy("trivial_augment_wide", op, in, out, e);
}

static int shape_auto_augment(const struct ts_op *op, const struct ts_shape *in,
			      struct ts_shape *out, struct ts_shape_err *e)
{
	return shape_policy("auto_augment", op, in, out, e);
}

static void common_desc(const struct ts_op *op, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "interpolation=%s, fill=%s",
				     op->policy.interp == TS_INTERP_BILINEAR  ? "bilinear"
				     : op->policy.interp == TS_INTERP_BICUBIC ? "bicubic"
									: "nearest",
				     op->policy.n_fill > 1 ? "[" : "");
	for (int i = 0; i < op->policy.n_fill && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%g", i ? ", " : "", op->policy.fill[i]);
	if (op->policy.n_fill > 1 && at < n)
		snprintf(buf + at, n - at, "]");
}

static void describe_rand_augment(const struct ts_op *op, char *buf, size_t n)
{
	char c[96];
	common_desc(op, c, sizeof(c));
	snprintf(buf, n, "rand_augment(num_ops=%d, magnitude=%d, num_magnitude_bins=%d, %s)",
		 op->policy.num_ops, op->policy.magnitude, op->policy.num_bins, c);
}

static void describe_trivial_augment_wide(const struct ts_op *op, char *buf, size_t n)
{
	char c[96];
	common_desc(op, c, sizeof(c));
	snprintf(buf, n, "trivial_augment_wide(num_magnitude_bins=%d, %s)", op->policy.num_bins, c);
}

static void describe_auto_augment(const struct ts_op *op, char *buf, size_t n)
{
	char c[96];
	common_desc(op, c, sizeof(c));
	snprintf(buf, n, "auto_augment(policy=%s, %s)", w_aa_policy[op->policy.aa_policy], c);
}

/* ---- augmix ---------------------------------------------------------- */

/* torchvision's AugMix runs its ops on uint8 tensors, where affine and
 * rotate take nearest or bilinear only: bicubic is a word here so that
 * it gets that reason, not "unknown". */
static const char *const w_augmix_interp[] = {"nearest", "bilinear", "bicubic", NULL};

static const struct ts_param p_augmix[] = {
	{ .name = "severity", .type = TS_PT_INT, .positional = true, .def = "3",
	  .def_num = 3, P_MIN(1), P_MAX(10),
	  .doc = "magnitude bins 0 to severity - 1 of each op's 10 (torchvision: 1 to 10)" },
	{ .name = "mixture_width", .type = TS_PT_INT, .positional = true, .def = "3",
	  .def_num = 3, P_MIN(1), P_MAX(16), .doc = "augmentation chains mixed" },
	{ .name = "chain_depth", .type = TS_PT_INT, .positional = true, .def = "-1",
	  .def_num = -1, P_MIN(-1), P_MAX(16),
	  .doc = "ops per chain; -1 (or 0): drawn per chain, 1 to 3" },
	{ .name = "alpha", .type = TS_PT_NUMBER, .positional = true, .def = "1.0",
	  .def_num = 1.0, P_MIN(0), P_MAX(1000),
	  .doc = "the Dirichlet and Beta parameter, above 0" },
	{ .name = "all_ops", .type = TS_PT_BOOL, .def = "true", .def_num = 1,
	  .doc = "also brightness, color, contrast and sharpness" },
	{ .name = "interpolation", .type = TS_PT_WORD, .def = "bilinear", .def_word = 1,
	  .words = w_augmix_interp, .doc = "nearest or bilinear, for the geometric ops" },
	{ .name = "fill", .type = TS_PT_NUMLIST, P_MIN(0), P_MAX(255),
	  .doc = "the colour outside the moved image: one level, or one per channel "
		 "(default: none, torchvision's fill = None)" },
};

static int build_augmix(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *alpha = ts_check_arg(def, vals, "alpha");
	const struct ts_check_val *interp = ts_check_arg(def, vals, "interpolation");
	const struct ts_check_val *fill = ts_check_arg(def, vals, "fill");
	int rc = 0;

	op->policy.augmix_severity = (int)ts_check_arg(def, vals, "severity")->num;
	op->policy.augmix_width = (int)ts_check_arg(def, vals, "mixture_width")->num;
	op->policy.augmix_depth = (int)ts_check_arg(def, vals, "chain_depth")->num;
	op->policy.augmix_alpha = alpha->num;
	op->policy.augmix_all_ops = ts_check_arg(def, vals, "all_ops")->num != 0;
	take_common(def, vals, op);
	op->policy.augmix_fill = fill->given && !fill->bad;
	if (!alpha->bad && !(op->policy.augmix_alpha > 0)) {
		ts_check_err(c, alpha->loc, "give alpha above 0 (torchvision's default is 1.0)",
		    "parameter 'alpha' must be above 0, got %g: the Dirichlet and Beta weights need it",
		    op->policy.augmix_alpha);
		op->policy.augmix_alpha = 1.0;
		rc = -1;
	}
	if (!interp->bad && op->policy.interp == TS_INTERP_BICUBIC) {
		ts_check_err(c, interp->loc, "use interpolation = bilinear (AugMix's default) or nearest",
		    "augmix runs torchvision's tensor ops, whose affine and rotate take nearest or bilinear, not bicubic");
		op->policy.interp = TS_INTERP_BILINEAR;
		rc = -1;
	}
	return rc;
}

static int shape_augmix(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	return shape_policy("augmix", op, in, out, e);
}

static void describe_augmix(const struct ts_op *op, char *buf, size_t n)
{
	char f[64] = "none";
	size_t at = 0;
	if (op->policy.augmix_fill) {
		at = (size_t)snprintf(f, sizeof(f), "%s", op->policy.n_fill > 1 ? "[" : "");
		for (int i = 0; i < op->policy.n_fill && at < sizeof(f); i++)
			at += (size_t)snprintf(f + at, sizeof(f) - at, "%s%g", i ? ", " : "",
					       op->policy.fill[i]);
		if (op->policy.n_fill > 1 && at < sizeof(f))
			snprintf(f + at, sizeof(f) - at, "]");
	}
	snprintf(buf, n,
		 "augmix(severity=%d, mixture_width=%d, chain_depth=%d, alpha=%g, all_ops=%s, interpolation=%s, fill=%s)",
		 op->policy.augmix_severity, op->policy.augmix_width, op->policy.augmix_depth,
		 op->policy.augmix_alpha,
		 op->policy.augmix_all_ops ? "true" : "false",
		 op->policy.interp == TS_INTERP_NEAREST ? "nearest" : "bilinear", f);
}

/* ---- the rows -------------------------------------------------------- */

#define POLICY (TS_OPF_PIXELS | TS_OPF_UINT8)

const struct ts_opdef ts_ops_policy[] = {
	{ TS_TRANSFORM(RANDOM_APPLY, p_random_apply, TS_OPF_BRANCHES,
		       "apply operators in order with probability p, or none"),
	  .shape = ts_registry_shape_same, .build = build_random_apply,
	  .describe = describe_random_apply },
	{ TS_TRANSFORM(RANDOM_CHOICE, p_random_choice,
		       TS_OPF_BRANCHES | TS_OPF_ALTERNATIVES,
		       "apply one of several alternatives, chosen by weight"),
	  .shape = shape_random_choice, .build = build_random_choice,
	  .describe = describe_random_choice },
	{ TS_TRANSFORM(RANDOM_ERASING, p_random_erasing,
		       TS_OPF_FUSE_OUTPUT,
		       "erase a random box of the float tensor, with probability p"),
	  .shape = shape_random_erasing, .build = build_random_erasing,
	  .describe = describe_random_erasing },
	{ TS_TRANSFORM(RAND_AUGMENT, p_rand_augment, POLICY,
		       "torchvision's RandAugment: num_ops random ops at one magnitude"),
	  .shape = shape_rand_augment, .build = build_rand_augment,
	  .describe = describe_rand_augment },
	{ TS_TRANSFORM(TRIVIAL_AUGMENT_WIDE, p_trivial_augment_wide, POLICY,
		       "torchvision's TrivialAugmentWide: one random op at a random magnitude"),
	  .shape = shape_trivial_augment_wide, .build = build_trivial_augment_wide,
	  .describe = describe_trivial_augment_wide },
	{ TS_TRANSFORM(AUTO_AUGMENT, p_auto_augment, POLICY,
		       "torchvision's AutoAugment: one of a learned policy's op pairs"),
	  .shape = shape_auto_augment, .build = build_auto_augment,
	  .describe = describe_auto_augment },
	{ TS_TRANSFORM(AUGMIX, p_augmix, POLICY,
		       "torchvision's AugMix: random op chains mixed with the image"),
	  .shape = shape_augmix, .build = build_augmix, .describe = describe_augmix,
	  .scratch_images = 5 },
	TS_ROW_END,
};
