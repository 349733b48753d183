/*
 * registry.h - the operator registry: one table row per pipeline operator
 * (name, kind, parameters with type, default and allowed range, and a
 * shape rule), plus the table of serve settings. The checker (check.c)
 * resolves call arguments against these rows; the man page and
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
	const char *doc;          /* one line */
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

struct ts_opdef {
	const char *name;
	enum ts_registry_kind kind;
	int op_kind;              /* enum ts_op_kind for transforms; -1 else */
	const struct ts_param *params;
	size_t n_params;
	ts_shape_rule shape;      /* transforms only; NULL otherwise */
	const char *doc;          /* one line */
};

/* The operator rows, in documentation order. */
const struct ts_opdef *ts_registry_ops(size_t *n);
/* The row named name, or NULL. */
const struct ts_opdef *ts_registry_find(const char *name);
/* The serve setting rows. */
const struct ts_param *ts_registry_serve(size_t *n);
/* The row of a parameter of def (or of the serve table when def is NULL)
 * named name, or NULL. */
const struct ts_param *ts_registry_param(const struct ts_opdef *def,
					 const char *name);
/* "an integer", "a range such as 0.08..1.0": what a type expects, for
 * "parameter 'x' expects ..." messages. */
const char *ts_registry_type_desc(enum ts_param_type t);
const char *ts_registry_kind_name(enum ts_registry_kind k);

#endif
