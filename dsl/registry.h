/*
 * registry.h - the operator registry: one row per pipeline operator with
 * everything the compiler knows of it (name, kind, parameters with type,
 * default, allowed range and doc, its shape rule, how its arguments build
 * the op or set up the source, how fusion and the checker treat it, how
 * `tsrun graph` describes it), plus the table of serve settings. The rows
 * live with their operator family (ops_source.c, ops_image.c,
 * ops_sample.c; device and batch in registry.c); the checker
 * (check_*.c) reaches an operator only through its row. The man page and
 * `tsrun check --list-operators` are generated from the same rows' names.
 *
 * Internal to dsl/ and the CLI; not installed. The tables are constant
 * and every function here is thread safe.
 */
#ifndef TS_REGISTRY_H
#define TS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "plan.h"

enum ts_registry_kind {
	TS_REG_SOURCE,    /* first stage: folder, list, tar, synthetic */
	TS_REG_MODIFIER,  /* right after the source: shard, shuffle */
	TS_REG_TRANSFORM, /* per-sample operators */
	TS_REG_SINK,      /* batch: must be last */
	TS_REG_DEVICE,    /* device(cuda): GPU finishing, last before batch */
};

enum ts_param_type {
	TS_PT_INT,       /* an integer: 42, -1 */
	TS_PT_NUMBER,    /* any number: 0.5, 3/4 */
	TS_PT_STRING,    /* "text" */
	TS_PT_BOOL,      /* true | false */
	TS_PT_WORD,      /* one of .words */
	TS_PT_NUMLIST,   /* [0.485, 0.456, 0.406] (1..4 numbers) */
	TS_PT_STRLIST,   /* [".jpg", ".png"] */
	TS_PT_RANGE,     /* 0.08..1.0 */
	TS_PT_SIZE,      /* bytes: 4 GiB, 512 MiB, 0 */
	TS_PT_SIZE_PAIR, /* 224 or [224, 256] (height, width) */
	TS_PT_COUNT,     /* 8 batches | 2048 samples */
	TS_PT_THREADS,   /* auto | an integer >= 1 */
	/* the policy family (ops_policy.c) */
	TS_PT_OPS,       /* operators: flip(horizontal) | invert(), or one
			    bare name: invert */
	TS_PT_OPSLIST,   /* a list of those: [equalize, posterize(4) | invert] */
	TS_PT_NUMBERS,   /* a list of any length: [1, 2, 0.5] */
	TS_PT_SIZE_AUTO, /* a size, or auto (the decoded cache) */
};

/* One parameter of an operator, or one serve setting. */
struct ts_param {
	const char *name;
	enum ts_param_type type;
	bool positional;          /* may be given without name=, in order */
	bool required;
	const char *def;          /* the default as written in docs, or NULL */
	double def_num;           /* numeric default (INT, NUMBER, BOOL as 0/1,
				     SIZE, COUNT in the unit's count) */
	double def_lo, def_hi;    /* RANGE default */
	int def_word;             /* WORD default: index into words */
	bool has_min, has_max;
	double min, max;          /* allowed range (inclusive) for numbers,
				     range ends, list items, sizes */
	const char *const *words; /* WORD: the accepted words, NULL-ended */
	int max_items;            /* NUMLIST: most numbers, 4 when 0 (one per
				     channel), at most 8 (perspective's
				     corners) */
	bool point_ok;            /* RANGE: one number n is also taken, as n..n */
	const char *doc;          /* one line */
	const char *alias;        /* another name it is accepted by (resize's
				     interp, its name before torchvision's
				     interpolation), or NULL */
};

/* The shape of the data after a stage, as the checker tracks it. */
struct ts_shape {
	bool encoded;             /* still compressed bytes (before decode) */
	int h, w;                 /* 0 when variable */
	int c;                    /* channels */
	enum ts_dtype dtype;
	enum ts_layout layout;
	bool normalized;          /* a normalize ran (float, mean/std) */
};

/* What a shape rule reports when the input does not fit: the message,
 * an optional hint, and the parameter to point at (NULL: the call). */
struct ts_shape_err {
	const char *param;
	char msg[256];
	char hint[192];
};

/* A shape rule: given the op (already filled from its arguments) and the
 * shape before it, write the shape after it. Returns 0, or -1 with *e
 * filled (out is then still written, with a best guess, so checking can
 * go on without cascading errors). */
typedef int (*ts_shape_rule)(const struct ts_op *op, const struct ts_shape *in,
			     struct ts_shape *out, struct ts_shape_err *e);

struct ts_opdef;
struct ts_check;
struct ts_check_val;
struct ts_ast_call;

/* How lowering and the checker treat a transform (ts_opdef.flags): enum
 * ts_op_flags, in plan.h, as the op carries them into the plan. */

/* A transform's bound arguments into *op (kind and loc already set); in
 * is the shape before it. Returns -1 after reporting a cross-parameter
 * problem (the op is still usable), else 0: -1 whenever it reported, as
 * check_branch.c then drops the branch the op is in. */
typedef int (*ts_op_build)(struct ts_check *c, const struct ts_opdef *def,
			   struct ts_check_val *vals,
			   const struct ts_ast_call *call,
			   const struct ts_shape *in, struct ts_op *op);
/* A source's or modifier's bound arguments into plan (a source also
 * writes the shape it starts with). Returns 0 or TS_E_NOMEM; errors are
 * reported. */
typedef int (*ts_stage_apply)(struct ts_check *c, const struct ts_opdef *def,
			      struct ts_check_val *vals,
			      const struct ts_ast_call *call,
			      struct ts_plan *plan, struct ts_shape *shape);
/* The op as the call that would produce it, every parameter shown. */
typedef void (*ts_op_describe)(const struct ts_op *op, char *buf, size_t n);
/* A source as the call that would produce it, every parameter shown. */
typedef void (*ts_source_describe)(const struct ts_source *s, char *buf,
				   size_t n);
/* An expanding transform: the most samples it makes of one of shape in
 * (0: unbounded or unknown). */
typedef int64_t (*ts_op_fanout)(const struct ts_op *op,
				const struct ts_shape *in);

struct ts_opdef {
	const char *name;
	enum ts_registry_kind kind;
	int op_kind;              /* enum ts_op_kind for transforms, enum
				     ts_source_kind for sources; -1 else */
	const struct ts_param *params;
	size_t n_params;
	ts_shape_rule shape;      /* transforms only; NULL otherwise */
	const char *doc;          /* one line */
	unsigned flags;           /* enum ts_op_flags */
	ts_op_build build;        /* transforms */
	ts_op_describe describe;  /* transforms */
	ts_op_fanout fanout;      /* TS_OPF_EXPANDS transforms */
	ts_stage_apply apply;     /* sources and modifiers */
	ts_source_describe describe_source; /* sources */
	unsigned scratch_images;  /* transforms: image-sized buffers its kernel
				     holds beyond the image and tmp, per image
				     byte (augmix: 5, its float32 mix and its
				     chain image), for the memory estimate */
};

/* One family's rows, ended by a row whose name is NULL. */
extern const struct ts_opdef ts_ops_source[];  /* ops_source.c */
extern const struct ts_opdef ts_ops_image[];   /* ops_image.c */
extern const struct ts_opdef ts_ops_color[];   /* ops_color.c */
extern const struct ts_opdef ts_ops_filter[];  /* ops_filter.c */
extern const struct ts_opdef ts_ops_geometry[]; /* ops_geometry.c */
extern const struct ts_opdef ts_ops_sample[];  /* ops_sample.c */
extern const struct ts_opdef ts_ops_policy[];  /* ops_policy.c */
extern const struct ts_opdef ts_ops_views[];   /* ops_views.c */

/* ops_image.c: whether op is a to(). */
bool ts_ops_image_is_to(const struct ts_op *op);

/* The number of operator rows, and row i, in documentation order. */
size_t ts_registry_count(void);
const struct ts_opdef *ts_registry_at(size_t i);
/* The row named name, or NULL. */
const struct ts_opdef *ts_registry_find(const char *name);
/* The row of a transform's op kind, or NULL (the output stage has none);
 * of a source's kind. */
const struct ts_opdef *ts_registry_of_kind(int op_kind);
const struct ts_opdef *ts_registry_of_source(int source_kind);
/* The serve setting rows. */
const struct ts_param *ts_registry_serve(size_t *n);
/* The row of a parameter of def (or of the serve table when def is NULL)
 * named name (or whose alias is name), or NULL. */
const struct ts_param *ts_registry_param(const struct ts_opdef *def,
					 const char *name);
/* "an integer", "a range such as 0.08..1.0": what a type expects, for
 * "parameter 'x' expects ..." messages. */
const char *ts_registry_type_desc(enum ts_param_type t);
const char *ts_registry_kind_name(enum ts_registry_kind k);

/* For the family files: "" or "s"; a size as "224" or "[224, 256]". */
const char *ts_registry_plural(int n);
void ts_registry_size_desc(int h, int w, char *buf, size_t n);

/* Row and parameter helpers for the family files. */
#define TS_ROW_END { .name = NULL }
#define TS_ARRAY_LEN_(a) (sizeof(a) / sizeof((a)[0]))
#define P_REQ(n, t, pos, d) \
	{ .name = n, .type = t, .positional = pos, .required = true, .doc = d }
#define P_MIN(lo) .has_min = true, .min = (lo)
#define P_MAX(hi) .has_max = true, .max = (hi)

/* The common fields of a transform's row: its kind's name and number
 * from the one list (plan/ops.def), so that no row can drift from it. */
#define TS_TRANSFORM(K, p, fl, d) \
	.name = ts_op_names.K, .kind = TS_REG_TRANSFORM, .op_kind = TS_OP_##K, \
	.params = p, .n_params = TS_ARRAY_LEN_(p), .flags = fl, .doc = d
/* ... of a source's (its name and whether it yields encoded files, from
 * the list too) ... */
#define TS_SOURCE(K, p, fn, d) \
	.name = ts_source_names.K, .kind = TS_REG_SOURCE, .op_kind = TS_SRC_##K, \
	.params = p, .n_params = TS_ARRAY_LEN_(p), .apply = fn, \
	.flags = TS_SRCF_##K, .doc = d
/* ... and of a modifier's. */
#define TS_STAGE(n, k, p, fn, d) \
	.name = n, .kind = k, .op_kind = -1, .params = p, \
	.n_params = TS_ARRAY_LEN_(p), .apply = fn, .doc = d

/* For the shape rules of ops that sample 8-bit pixels (colour and
 * geometry families; their flags send float or nchw data to the checker's
 * own message): -1 with e filled when in is uint16, else 0. */
int ts_registry_need_u8(const char *name, const struct ts_shape *in,
			struct ts_shape_err *e);

/* The shape rule of an op that keeps the shape. */
int ts_registry_shape_same(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e);

/* The largest image side any stage takes or makes, in pixels. */
#define TS_REG_MAX_SIDE 65535

/* Image sizes, in pixels: as the decoders and the ring take them. */
#define P_SIZE(d) \
	{ .name = "size", .type = TS_PT_SIZE_PAIR, .positional = true, \
	  .required = true, P_MIN(1), P_MAX(TS_REG_MAX_SIDE), .doc = d }, \
	{ .name = "width", .type = TS_PT_INT, .positional = true, P_MIN(1), \
	  P_MAX(TS_REG_MAX_SIDE), .doc = "width, when size is given as the height" }

#endif
