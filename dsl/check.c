/*
 * check.c - the checker: resolves every call and serve setting against
 * the registry, infers the shape after each stage, reports every error
 * (not only the first) into a ts_diags, and builds the plan of one
 * pipeline (lower.c does the fusion and the memory estimate).
 */
#include "dsl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "lower.h"
#include "registry.h"
#include "util.h"

#define MAX_PARAMS 8
#define MAX_LET_DEPTH 16

/* One argument after let resolution and conversion to its param type. */
struct val {
	bool given;
	struct ts_loc loc;
	double num;            /* INT, NUMBER, SIZE, COUNT, BOOL (0/1) */
	double lo, hi;         /* RANGE */
	int h, w;              /* SIZE_PAIR */
	int word;              /* WORD: index into words */
	const char *str;       /* STRING */
	float nums[4];         /* NUMLIST */
	int n_nums;
	const struct ts_ast_value *items; /* STRLIST: first item */
	size_t n_items;
	bool is_auto;          /* THREADS */
	bool samples;          /* COUNT: unit is samples, not batches */
	bool bad;              /* reported (invalid or missing): a stand-in */
};

struct ctx {
	const struct ts_ast_program *prog;
	struct ts_diags *d;
	bool oom;
};

static void err(struct ctx *c, struct ts_loc loc, const char *hint,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static const char *plural(int n)
{
	return n == 1 ? "" : "s";
}

/* Every error goes through here so that running out of memory while
 * reporting is remembered rather than lost. */
static void err(struct ctx *c, struct ts_loc loc, const char *hint,
		const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ts_diags_add(c->d, TS_SEV_ERROR, loc, hint && *hint ? hint : NULL,
			 "%s", msg) < 0)
		c->oom = true;
}

static const struct ts_ast_stmt *find_stmt(const struct ts_ast_program *p,
					   enum ts_ast_stmt_kind kind,
					   const char *name)
{
	for (const struct ts_ast_stmt *s = p->stmts; s; s = s->next)
		if (s->kind == kind && s->name && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* Names of the statements of one kind, for "did you mean" hints. */
static size_t stmt_names(const struct ts_ast_program *p,
			 enum ts_ast_stmt_kind kind, const char **out,
			 size_t max)
{
	size_t n = 0;
	for (const struct ts_ast_stmt *s = p->stmts; s && n < max; s = s->next)
		if (s->kind == kind && s->name)
			out[n++] = s->name;
	return n;
}

/* Follow let names: a word that names a let stands for the let's value,
 * recursively. A word that names no let is returned as is (it may be an
 * enum word such as rgb). Returns NULL for a cycle. */
static const struct ts_ast_value *resolve(const struct ctx *c,
					  const struct ts_ast_value *v)
{
	for (int depth = 0; v && v->kind == TS_AST_WORD; depth++) {
		const struct ts_ast_stmt *let;
		if (depth > MAX_LET_DEPTH)
			return NULL;
		let = find_stmt(c->prog, TS_AST_LET, v->str);
		if (!let)
			return v;
		v = let->value;
	}
	return v;
}

static const char *got_desc(const struct ts_ast_value *v, char *buf, size_t n)
{
	switch (v->kind) {
	case TS_AST_NUM:
		snprintf(buf, n, "%s", v->text ? v->text : "a number");
		if (v->unit && !v->text)
			snprintf(buf, n, "a number with unit '%s'", v->unit);
		return buf;
	case TS_AST_WORD:
		snprintf(buf, n, "the word '%s'", v->str);
		return buf;
	default:
		return ts_ast_kind_name(v->kind);
	}
}

static void type_error(struct ctx *c, const char *what, const struct ts_param *p,
		       const struct ts_ast_value *v, struct ts_loc loc)
{
	char got[96];

	if (v->kind == TS_AST_WORD && p->type != TS_PT_WORD &&
	    !(p->type == TS_PT_THREADS)) {
		const char *names[64];
		size_t n = stmt_names(c->prog, TS_AST_LET, names, 64);
		const char *s = ts_diag_suggest(v->str, names, n);
		char hint[192];
		if (s)
			snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
		else
			snprintf(hint, sizeof(hint),
				 "%s '%s' expects %s; define the name with `let %s = ...`",
				 what, p->name, ts_registry_type_desc(p->type),
				 v->str);
		err(c, loc, hint, "unknown name '%s'", v->str);
		return;
	}
	err(c, loc, NULL, "%s '%s' expects %s, got %s", what, p->name,
	    ts_registry_type_desc(p->type), got_desc(v, got, sizeof(got)));
}

static bool is_size_unit(const char *u)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
					    "KB", "MB", "GB", "TB", "kB"};
	for (size_t i = 0; i < TS_ARRAY_LEN(units); i++)
		if (strcmp(u, units[i]) == 0)
			return true;
	return false;
}

/* Whole numbers print in full (a ring bound reads 1073741824, not
 * 1.07374e+09); the rest as %g. */
static void fmt_num(double x, char *buf, size_t n)
{
	if (fabs(x) < 1e15 && x == floor(x))
		snprintf(buf, n, "%.0f", x);
	else
		snprintf(buf, n, "%g", x);
}

/* At and beyond 2^63 converting a double to int64_t is undefined (and to
 * uint64_t soon after); every parameter's bounds lie far below it. */
#define TS_CHECK_NUM_LIMIT 9223372036854775808.0 /* 2^63 */

/* "must be between 1 and 65535", "must be at least 1": p's allowed range,
 * or "" when it has none. */
static void range_phrase(const struct ts_param *p, char *buf, size_t n)
{
	char a[32], b[32];

	fmt_num(p->min, a, sizeof(a));
	fmt_num(p->max, b, sizeof(b));
	if (p->type == TS_PT_SIZE) {
		ts_plan_format_size((uint64_t)p->min, a, sizeof(a));
		ts_plan_format_size((uint64_t)p->max, b, sizeof(b));
	}
	if (p->has_min && p->has_max)
		snprintf(buf, n, "must be between %s and %s", a, b);
	else if (p->has_min)
		snprintf(buf, n, "must be at least %s", a);
	else if (p->has_max)
		snprintf(buf, n, "must be at most %s", b);
	else
		buf[0] = '\0';
}

/* Range check of one number against p's bounds; reports and returns -1.
 * text is the number as written (NULL: format x). Callers convert x to
 * an integer type only after this passed, so a value too large (or not
 * finite) for any conversion is refused first, naming the allowed range,
 * before anything converts it. */
static int check_bounds(struct ctx *c, const char *what,
			const struct ts_param *p, double x, struct ts_loc loc,
			const char *text)
{
	char range[96], got[64];
	bool huge = !isfinite(x) || fabs(x) >= TS_CHECK_NUM_LIMIT;

	if (!huge && !(p->has_min && x < p->min) && !(p->has_max && x > p->max))
		return 0;
	range_phrase(p, range, sizeof(range));
	if (text && *text && (huge || x < 0))
		snprintf(got, sizeof(got), "%s", text);
	else if (p->type == TS_PT_SIZE && x >= 0)
		ts_plan_format_size((uint64_t)x, got, sizeof(got));
	else
		fmt_num(x, got, sizeof(got));
	if (x < 0 && p->has_min && p->min == 0)
		err(c, loc, NULL, "%s '%s' must not be negative, got %s", what,
		    p->name, got);
	else if (range[0])
		err(c, loc, NULL, "%s '%s' %s, got %s", what, p->name, range, got);
	else
		err(c, loc, NULL, "%s '%s': value %s out of range", what,
		    p->name, got);
	return -1;
}

static bool plain_num(const struct ts_ast_value *v)
{
	return v && v->kind == TS_AST_NUM && !v->unit;
}

static bool plain_int(const struct ts_ast_value *v)
{
	return plain_num(v) && v->is_int;
}

/* Convert one argument (any AST value, let names resolved) to p's type
 * into *out. Reports the problem and returns -1 when it does not fit. */
static int convert(struct ctx *c, const char *what, const struct ts_param *p,
		   const struct ts_ast_value *raw, struct val *out)
{
	const struct ts_ast_value *v = resolve(c, raw);
	struct ts_loc loc = raw->loc;
	char got[96];

	if (!v) {
		err(c, loc, "a let may not refer to itself, directly or not",
		    "let '%s' refers to itself", raw->str);
		return -1;
	}
	out->given = true;
	out->loc = loc;
	switch (p->type) {
	case TS_PT_INT:
	case TS_PT_NUMBER:
		if (!plain_num(v))
			goto type;
		if (p->type == TS_PT_INT && !v->is_int) {
			err(c, loc, NULL, "%s '%s' expects an integer, got %s",
			    what, p->name, got_desc(v, got, sizeof(got)));
			return -1;
		}
		out->num = v->num;
		return check_bounds(c, what, p, v->num, loc, v->text);
	case TS_PT_BOOL:
		if (v->kind != TS_AST_BOOL)
			goto type;
		out->num = v->boolean;
		return 0;
	case TS_PT_STRING:
		if (v->kind != TS_AST_STR)
			goto type;
		out->str = v->str;
		return 0;
	case TS_PT_WORD: {
		char hint[192];
		const char *s;
		size_t n = 0;
		if (v->kind != TS_AST_WORD)
			goto type;
		for (; p->words[n]; n++)
			if (strcmp(p->words[n], v->str) == 0) {
				out->word = (int)n;
				return 0;
			}
		s = ts_diag_suggest(v->str, p->words, n);
		if (s) {
			snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
		} else {
			size_t len = (size_t)snprintf(hint, sizeof(hint),
						      "expected one of:");
			for (size_t i = 0; i < n && len < sizeof(hint); i++)
				len += (size_t)snprintf(hint + len,
							sizeof(hint) - len,
							"%s %s", i ? "," : "",
							p->words[i]);
		}
		err(c, loc, hint, "unknown value '%s' for %s '%s'", v->str,
		    what, p->name);
		return -1;
	}
	case TS_PT_NUMLIST: {
		const struct ts_ast_value *it;
		int rc = 0;
		if (plain_num(v)) {
			out->nums[0] = (float)v->num;
			out->n_nums = 1;
			return check_bounds(c, what, p, v->num, loc, v->text);
		}
		if (v->kind != TS_AST_LIST)
			goto type;
		if (v->n_items < 1 || v->n_items > 4) {
			err(c, loc, "give one value per channel",
			    "%s '%s' expects 1 to 4 numbers, got %zu", what,
			    p->name, v->n_items);
			return -1;
		}
		out->n_nums = 0;
		for (it = v->items; it; it = it->next) {
			const struct ts_ast_value *x = resolve(c, it);
			if (!plain_num(x)) {
				err(c, it->loc, NULL,
				    "%s '%s' expects a list of numbers, got %s in the list",
				    what, p->name,
				    x ? got_desc(x, got, sizeof(got)) : "a cycle");
				return -1;
			}
			if (check_bounds(c, what, p, x->num, it->loc, x->text) < 0)
				rc = -1;
			if (out->n_nums < 4)
				out->nums[out->n_nums++] = (float)x->num;
		}
		return rc;
	}
	case TS_PT_STRLIST: {
		const struct ts_ast_value *it;
		if (v->kind == TS_AST_STR) {
			out->items = v;
			out->n_items = 1;
			return 0;
		}
		if (v->kind != TS_AST_LIST)
			goto type;
		for (it = v->items; it; it = it->next)
			if (it->kind != TS_AST_STR) {
				err(c, it->loc, NULL,
				    "%s '%s' expects a list of strings, got %s in the list",
				    what, p->name, got_desc(it, got, sizeof(got)));
				return -1;
			}
		out->items = v->items;
		out->n_items = v->n_items;
		return 0;
	}
	case TS_PT_RANGE: {
		const struct ts_ast_value *lo, *hi;
		if (v->kind != TS_AST_RANGE)
			goto type;
		lo = resolve(c, v->lo);
		hi = resolve(c, v->hi);
		if (!plain_num(lo) || !plain_num(hi))
			goto type;
		if (check_bounds(c, what, p, lo->num, v->lo->loc, lo->text) < 0 ||
		    check_bounds(c, what, p, hi->num, v->hi->loc, hi->text) < 0)
			return -1;
		if (lo->num > hi->num) {
			err(c, loc, "write the smaller end first",
			    "%s '%s' is an empty range: %g is above %g", what,
			    p->name, lo->num, hi->num);
			return -1;
		}
		out->lo = lo->num;
		out->hi = hi->num;
		return 0;
	}
	case TS_PT_SIZE:
		if (v->kind != TS_AST_NUM)
			goto type;
		if (v->unit && !is_size_unit(v->unit))
			goto type;
		if (!v->unit && v->num != 0) {
			char hint[192];
			snprintf(hint, sizeof(hint),
				 "add a unit: %s MiB or %s GiB",
				 v->text ? v->text : "N", v->text ? v->text : "N");
			err(c, loc, hint, "%s '%s' expects a size such as 4 GiB, got %s",
			    what, p->name, got_desc(v, got, sizeof(got)));
			return -1;
		}
		out->num = floor(v->num);
		return check_bounds(c, what, p, out->num, loc, v->text);
	case TS_PT_SIZE_PAIR:
		if (plain_int(v)) {
			if (check_bounds(c, what, p, v->num, loc, v->text) < 0)
				return -1;
			out->h = out->w = (int)v->num;
			return 0;
		}
		if (v->kind == TS_AST_LIST && v->n_items == 2) {
			const struct ts_ast_value *a = resolve(c, v->items);
			const struct ts_ast_value *b = resolve(c, v->items->next);
			if (!plain_int(a) || !plain_int(b))
				goto type;
			if (check_bounds(c, what, p, a->num, v->items->loc, a->text) < 0 ||
			    check_bounds(c, what, p, b->num, v->items->next->loc, b->text) < 0)
				return -1;
			out->h = (int)a->num;
			out->w = (int)b->num;
			out->num = -1; /* marks the [h, w] form */
			return 0;
		}
		goto type;
	case TS_PT_COUNT:
		if (v->kind != TS_AST_NUM)
			goto type;
		if (!v->unit || !v->is_int ||
		    (strcmp(v->unit, "batches") != 0 && strcmp(v->unit, "batch") != 0 &&
		     strcmp(v->unit, "samples") != 0 && strcmp(v->unit, "sample") != 0)) {
			char hint[192];
			snprintf(hint, sizeof(hint), "write %s batches or %s samples",
				 v->is_int && v->text ? v->text : "8",
				 v->is_int && v->text ? v->text : "2048");
			if (v->unit && is_size_unit(v->unit))
				snprintf(hint, sizeof(hint),
					 "ring counts samples or batches; the memory setting takes bytes");
			err(c, loc, hint, "%s '%s' expects %s, got %s", what,
			    p->name, ts_registry_type_desc(p->type),
			    got_desc(v, got, sizeof(got)));
			return -1;
		}
		out->samples = v->unit[0] == 's';
		out->num = v->num;
		return check_bounds(c, what, p, v->num, loc, v->text);
	case TS_PT_THREADS:
		if (v->kind == TS_AST_WORD && strcmp(v->str, "auto") == 0) {
			out->is_auto = true;
			out->num = 0;
			return 0;
		}
		if (!plain_int(v))
			goto type;
		out->num = v->num;
		return check_bounds(c, what, p, v->num, loc, v->text);
	}
type:
	type_error(c, what, p, v, loc);
	return -1;
}

/* Apply defaults to the parameters that were not given. */
static void defaults(const struct ts_param *params, size_t n, struct val *vals)
{
	for (size_t i = 0; i < n; i++) {
		const struct ts_param *p = &params[i];
		struct val *v = &vals[i];
		if (v->given)
			continue;
		v->num = p->def_num;
		v->lo = p->def_lo;
		v->hi = p->def_hi;
		v->word = p->def_word;
		v->h = v->w = (int)p->def_num;
		v->is_auto = p->type == TS_PT_THREADS;
	}
}

static size_t op_names(const char **buf, size_t max)
{
	size_t k, n;
	const struct ts_opdef *ops = ts_registry_ops(&k);
	for (n = 0; n < k && n < max; n++)
		buf[n] = ops[n].name;
	return n;
}

/* Match a call's arguments to def's parameters: positional in order,
 * named by name. Every problem is reported; returns -1 if any. */
static int bind_args(struct ctx *c, const struct ts_opdef *def,
		     const struct ts_ast_call *call, struct val *vals)
{
	size_t n_pos = 0, pos = 0, n;
	bool named_seen = false;
	int rc = 0;
	const char *names[MAX_PARAMS];

	for (size_t i = 0; i < def->n_params; i++) {
		names[i] = def->params[i].name;
		if (def->params[i].positional)
			n_pos++;
	}
	for (const struct ts_ast_arg *a = call->args; a; a = a->next) {
		const struct ts_param *p = NULL;
		size_t idx;
		if (!a->name) {
			if (named_seen) {
				err(c, a->loc, "give positional arguments first",
				    "positional argument after a named one");
				rc = -1;
				continue;
			}
			if (pos >= n_pos) {
				char hint[192];
				const char *named = NULL;
				for (size_t j = 0; j < def->n_params && !named; j++)
					if (!def->params[j].positional)
						named = def->params[j].name;
				if (named)
					snprintf(hint, sizeof(hint),
						 "give the other parameters by name, e.g. %s = ...",
						 named);
				else if (def->n_params == 0)
					snprintf(hint, sizeof(hint), "write %s()", def->name);
				else
					snprintf(hint, sizeof(hint), "remove the extra argument");
				err(c, a->loc, hint,
				    "too many arguments: '%s' takes %zu positional argument%s",
				    def->name, n_pos, n_pos == 1 ? "" : "s");
				rc = -1;
				continue;
			}
			/* the pos-th positional parameter */
			for (idx = 0, n = 0; idx < def->n_params; idx++)
				if (def->params[idx].positional && n++ == pos)
					break;
			pos++;
			p = &def->params[idx];
		} else {
			named_seen = true;
			p = ts_registry_param(def, a->name);
			if (!p) {
				char hint[192];
				const char *s = ts_diag_suggest(a->name, names,
								def->n_params);
				if (s) {
					snprintf(hint, sizeof(hint),
						 "did you mean '%s'?", s);
				} else if (def->n_params == 0) {
					snprintf(hint, sizeof(hint),
						 "'%s' takes no parameters", def->name);
				} else {
					size_t len = (size_t)snprintf(hint, sizeof(hint),
								      "'%s' takes:", def->name);
					for (size_t j = 0; j < def->n_params && len < sizeof(hint); j++)
						len += (size_t)snprintf(hint + len, sizeof(hint) - len,
									"%s %s", j ? "," : "",
									def->params[j].name);
				}
				err(c, a->name_loc, hint,
				    "unknown parameter '%s' for '%s'", a->name,
				    def->name);
				rc = -1;
				continue;
			}
			idx = (size_t)(p - def->params);
		}
		if (vals[idx].given) {
			err(c, a->loc, NULL, "parameter '%s' given twice", p->name);
			rc = -1;
			continue;
		}
		if (convert(c, "parameter", p, a->value, &vals[idx]) < 0) {
			/* keep the default so shape inference goes on, and
			 * mark it given so "missing" is not reported too */
			rc = -1;
			vals[idx] = (struct val){0};
			defaults(p, 1, &vals[idx]);
			vals[idx].given = true;
			vals[idx].bad = true;
			vals[idx].loc = a->loc;
			if (p->type == TS_PT_NUMLIST)
				vals[idx].n_nums = -1; /* unknown: skip count check */
			if (p->type == TS_PT_SIZE_PAIR)
				vals[idx].h = vals[idx].w = 1;
		}
	}
	for (size_t i = 0; i < def->n_params; i++) {
		const struct ts_param *p = &def->params[i];
		if (p->required && !vals[i].given) {
			char hint[192];
			snprintf(hint, sizeof(hint), "add %s = %s", p->name,
				 ts_registry_type_desc(p->type));
			if (p->type == TS_PT_NUMLIST)
				snprintf(hint, sizeof(hint),
					 "add %s, e.g. %s(mean = [0.5, 0.5, 0.5], std = [0.5, 0.5, 0.5])",
					 p->name, def->name);
			err(c, call->loc, hint, "'%s' needs parameter '%s'",
			    def->name, p->name);
			rc = -1;
			/* a harmless stand-in keeps the rules going */
			vals[i].given = true;
			vals[i].bad = true;
			vals[i].h = vals[i].w = 1;
			vals[i].num = p->has_min ? p->min : 1;
			vals[i].n_nums = -1;
		}
	}
	defaults(def->params, def->n_params, vals);
	return rc;
}

static const struct val *V(const struct ts_opdef *def, struct val *vals,
			   const char *name)
{
	const struct ts_param *p = ts_registry_param(def, name);
	return &vals[p - def->params];
}

static struct ts_loc loc_of(const struct ts_opdef *def, struct val *vals,
			    const struct ts_ast_call *call, const char *name)
{
	const struct ts_param *p = name ? ts_registry_param(def, name) : NULL;
	if (p && vals[p - def->params].given && vals[p - def->params].loc.first_line)
		return vals[p - def->params].loc;
	return call->loc;
}

/* The op's size_h/size_w from `size` (N or [h, w]) and an optional
 * positional `width`. */
static int op_size(struct ctx *c, const struct ts_opdef *def, struct val *vals,
		   int *h, int *w)
{
	const struct val *size = V(def, vals, "size");
	const struct val *width = V(def, vals, "width");
	*h = size->h;
	*w = size->w;
	if (width->given) {
		if (size->num < 0) {
			err(c, width->loc, "give either [h, w] or h, w",
			    "width given twice: size is already [%d, %d]",
			    size->h, size->w);
			return -1;
		}
		*w = (int)width->num;
	}
	return 0;
}

/* normalize(mean, std) or device(mean =, std =) with lists of different
 * lengths: one error that gives both counts and, when the image is
 * decoded here, its channels, at the list that is wrong (the std list
 * when neither matches the channels). */
static void mean_std_counts(struct ctx *c, const char *who,
			    const struct val *mean, const struct val *std,
			    const struct ts_shape *in)
{
	const struct val *at = std;
	char hint[192];

	if (in->encoded) {
		err(c, at->loc, "give one mean and one std per channel",
		    "%s has %d mean value%s but %d std value%s", who,
		    mean->n_nums, plural(mean->n_nums), std->n_nums,
		    plural(std->n_nums));
		return;
	}
	if (std->n_nums == in->c)
		at = mean;
	snprintf(hint, sizeof(hint), "give %d value%s to both mean and std",
		 in->c, plural(in->c));
	err(c, at->loc, hint,
	    "%s has %d mean value%s and %d std value%s, but the image has %d channel%s",
	    who, mean->n_nums, plural(mean->n_nums), std->n_nums,
	    plural(std->n_nums), in->c, plural(in->c));
}

/* Fill a ts_op from the bound arguments of a transform; in is the shape
 * before it. Returns -1 after reporting a cross-parameter problem (the op
 * is still usable). */
static int build_op(struct ctx *c, const struct ts_opdef *def,
		    struct val *vals, const struct ts_ast_call *call,
		    const struct ts_shape *in, struct ts_op *op)
{
	int rc = 0;

	op->kind = (enum ts_op_kind)def->op_kind;
	op->loc = call->loc;
	switch (op->kind) {
	case TS_OP_DECODE: {
		const struct val *depth = V(def, vals, "depth");
		op->color = V(def, vals, "color")->word == 1 ? TS_COLOR_GRAY
							      : TS_COLOR_RGB;
		op->depth = (int)depth->num;
		if (op->depth != 8 && op->depth != 16) {
			err(c, depth->loc, NULL,
			    "parameter 'depth' must be 8 or 16, got %d", op->depth);
			op->depth = 8;
			rc = -1;
		}
		break;
	}
	case TS_OP_RESIZE:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		/* resize(N): shorter side; resize([h, w]) or resize(h, w): exact */
		if (V(def, vals, "size")->num >= 0 && !V(def, vals, "width")->given)
			op->size_w = 0;
		op->interp = (enum ts_interp)V(def, vals, "interp")->word;
		op->antialias = V(def, vals, "antialias")->num != 0;
		break;
	case TS_OP_CENTER_CROP:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		break;
	case TS_OP_RANDOM_CROP:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		op->padding = (int)V(def, vals, "padding")->num;
		break;
	case TS_OP_RANDOM_RESIZED_CROP:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		op->scale_lo = V(def, vals, "scale")->lo;
		op->scale_hi = V(def, vals, "scale")->hi;
		op->ratio_lo = V(def, vals, "ratio")->lo;
		op->ratio_hi = V(def, vals, "ratio")->hi;
		op->interp = (enum ts_interp)V(def, vals, "interp")->word;
		if (op->scale_hi <= 0) {
			err(c, V(def, vals, "scale")->loc, NULL,
			    "parameter 'scale' must allow a crop larger than 0");
			rc = -1;
		}
		break;
	case TS_OP_FLIP:
		op->horizontal = V(def, vals, "direction")->word == 0;
		op->p = V(def, vals, "p")->num;
		break;
	case TS_OP_COLOR_JITTER:
		op->brightness = V(def, vals, "brightness")->num;
		op->contrast = V(def, vals, "contrast")->num;
		op->saturation = V(def, vals, "saturation")->num;
		break;
	case TS_OP_GRAYSCALE: {
		const struct val *ch = V(def, vals, "channels");
		op->channels = (int)ch->num;
		op->p = V(def, vals, "p")->num;
		if (op->channels != 1 && op->channels != 3) {
			err(c, ch->loc, NULL,
			    "parameter 'channels' must be 1 or 3, got %d",
			    op->channels);
			op->channels = 1;
			rc = -1;
		}
		break;
	}
	case TS_OP_NORMALIZE: {
		const struct val *mean = V(def, vals, "mean");
		const struct val *std = V(def, vals, "std");
		if (mean->n_nums < 0 || std->n_nums < 0) {
			op->n_mean = -1; /* already reported */
			break;
		}
		if (mean->n_nums != std->n_nums) {
			mean_std_counts(c, "normalize", mean, std, in);
			op->n_mean = -1; /* reported: no channel check */
			return -1;
		}
		op->n_mean = mean->n_nums;
		for (int i = 0; i < 4; i++) {
			op->mean[i] = i < mean->n_nums ? mean->nums[i] : 0.0f;
			op->std[i] = i < std->n_nums ? std->nums[i] : 1.0f;
		}
		break;
	}
	case TS_OP_TO:
		op->dtype = (enum ts_dtype)V(def, vals, "dtype")->word;
		op->layout = (enum ts_layout)V(def, vals, "layout")->word;
		break;
	case TS_OP_TILE: {
		const struct val *stride = V(def, vals, "stride");
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		op->stride_h = stride->given ? stride->h : op->size_h;
		op->stride_w = stride->given ? stride->w : op->size_w;
		break;
	}
	case TS_OP_FILTER:
		op->threshold = V(def, vals, "threshold")->num;
		op->max_fraction = V(def, vals, "max_fraction")->num;
		break;
	case TS_OP_PLUGIN: /* bind_plugin filled op->plugin */
	case TS_OP_OUTPUT:
		break;
	}
	return rc;
}

/* Whether the op's image size (size, or its positional width) was
 * reported as invalid or missing. */
static bool bad_size(const struct ts_opdef *def, const struct val *vals)
{
	for (size_t i = 0; i < def->n_params; i++)
		if (vals[i].bad && (strcmp(def->params[i].name, "size") == 0 ||
				    strcmp(def->params[i].name, "width") == 0))
			return true;
	return false;
}

static bool is_pixel_op(enum ts_op_kind k)
{
	return k != TS_OP_NORMALIZE && k != TS_OP_TO && k != TS_OP_DECODE;
}

static void shape_str(const struct ts_shape *s, char *buf, size_t n)
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

static void free_ops(struct ts_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ops[i].fused);
		free(ops[i].parts);
		free(ops[i].plugin);
	}
	free(ops);
}

static int fill_source(struct ctx *c, const struct ts_opdef *def,
		       struct val *vals, const struct ts_ast_call *call,
		       struct ts_plan *plan, struct ts_shape *shape)
{
	struct ts_source *src = &plan->source;

	*shape = (struct ts_shape){ .encoded = true, .c = 3 };
	if (strcmp(def->name, "folder") == 0) {
		const struct val *ext = V(def, vals, "ext");
		src->kind = TS_SRC_FOLDER;
		src->path = ts_strdup(V(def, vals, "path")->str);
		if (ext->given) {
			const struct ts_ast_value *it = ext->items;
			src->exts = calloc(ext->n_items ? ext->n_items : 1, sizeof(char *));
			if (!src->exts)
				return TS_E_NOMEM;
			for (size_t i = 0; i < ext->n_items && it; i++, it = it->next) {
				char *e = ts_strdup(it->str);
				if (!e)
					return TS_E_NOMEM;
				for (char *q = e; *q; q++)
					if (*q >= 'A' && *q <= 'Z')
						*q = (char)(*q - 'A' + 'a');
				src->exts[src->n_exts++] = e;
				if (e[0] != '.') {
					err(c, it->loc, NULL,
					    "extension '%s' must start with '.'", e);
				}
			}
		} else {
			static const char *const d[] = {".jpg", ".jpeg", ".png"};
			src->exts = calloc(3, sizeof(char *));
			if (!src->exts)
				return TS_E_NOMEM;
			for (size_t i = 0; i < 3; i++) {
				if (!(src->exts[i] = ts_strdup(d[i])))
					return TS_E_NOMEM;
				src->n_exts++;
			}
		}
	} else if (strcmp(def->name, "list") == 0) {
		src->kind = TS_SRC_LIST;
		src->path = ts_strdup(V(def, vals, "path")->str);
	} else if (strcmp(def->name, "tar") == 0) {
		src->kind = TS_SRC_TAR;
		src->path = ts_strdup(V(def, vals, "pattern")->str);
	} else {
		const struct val *size = V(def, vals, "size");
		const struct val *h = V(def, vals, "height");
		const struct val *w = V(def, vals, "width");
		const struct val *depth = V(def, vals, "depth");
		src->kind = TS_SRC_SYNTHETIC;
		src->height = h->given ? (int)h->num : size->h;
		src->width = w->given ? (int)w->num : size->w;
		src->count = (int64_t)V(def, vals, "count")->num;
		src->channels = (int)V(def, vals, "channels")->num;
		src->depth = (int)depth->num;
		src->classes = (int)V(def, vals, "classes")->num;
		if (src->depth != 8 && src->depth != 16) {
			err(c, depth->loc, NULL,
			    "parameter 'depth' must be 8 or 16, got %d", src->depth);
			src->depth = 8;
		}
		*shape = (struct ts_shape){ .h = src->height, .w = src->width,
					    .c = src->channels,
					    .dtype = src->depth == 16 ? TS_DTYPE_U16
								     : TS_DTYPE_U8 };
	}
	/* A missing or mistyped path was reported already (bind_args left
	 * it NULL); only a failed copy of a given one is out of memory. */
	if (src->kind != TS_SRC_SYNTHETIC && !src->path &&
	    V(def, vals, src->kind == TS_SRC_TAR ? "pattern" : "path")->str)
		return TS_E_NOMEM;
	(void)call;
	return 0;
}

/* Check one pipeline statement and build its plan (fused op list and
 * sample shape; serve settings and estimate come later). Errors go to
 * c->d. Returns 0 or TS_E_NOMEM; *size_reported tells whether a "no fixed
 * size" error was already given (so serve does not repeat it). */
/* device(cuda [, dtype, mean, std, layout]): the GPU finishing stage. It
 * takes the uint8 nhwc samples the CPU stages write (the ring keeps those:
 * the plan's own shape is not changed) and describes what the GPU makes
 * of them in *dev. Errors are reported; dev is filled regardless. */
static void check_device(struct ctx *c, const struct ts_opdef *def,
			 struct val *vals, const struct ts_ast_call *call,
			 const struct ts_shape *shape,
			 const struct ts_ast_call *prev,
			 struct ts_plan_device *dev)
{
	const struct val *mean = V(def, vals, "mean");
	const struct val *std = V(def, vals, "std");
	char buf[64];

	if (prev)
		err(c, call->name_loc, NULL, "'device' given twice");
	*dev = (struct ts_plan_device){
		.cuda = true, .loc = call->loc,
		.dtype = V(def, vals, "dtype")->word == 1 ? TS_DTYPE_F16 : TS_DTYPE_F32,
		.layout = TS_LAYOUT_NCHW,
	};
	if (shape->encoded) {
		err(c, call->name_loc, "add decode(rgb) before device(cuda)",
		    "'device' needs decoded pixels, but the images are still encoded here");
	} else if (shape->dtype != TS_DTYPE_U8 || shape->layout != TS_LAYOUT_NHWC) {
		shape_str(shape, buf, sizeof(buf));
		err(c, call->name_loc,
		    "end the CPU stages in to(uint8, nhwc) and give normalize's mean and std to device(...)",
		    "'device' takes uint8 nhwc pixels, but the data is %s here", buf);
	}
	if (mean->given != std->given) {
		err(c, call->loc, "give both mean and std, or neither",
		    "device normalizes only with both mean and std");
	} else if (mean->given && mean->n_nums >= 0 && std->n_nums >= 0) {
		if (mean->n_nums != std->n_nums)
			mean_std_counts(c, "device", mean, std, shape);
		else if (!shape->encoded && mean->n_nums != shape->c)
			err(c, mean->loc, NULL,
			    "device has %d mean and std value%s, but the image has %d channel%s",
			    mean->n_nums, mean->n_nums == 1 ? "" : "s",
			    shape->c, shape->c == 1 ? "" : "s");
		dev->normalize = true;
		dev->n_mean = mean->n_nums;
		for (int i = 0; i < 4; i++) {
			dev->mean[i] = i < mean->n_nums ? mean->nums[i] : 0.0f;
			dev->std[i] = i < std->n_nums ? std->nums[i] : 1.0f;
		}
	}
	dev->sample_bytes = (size_t)shape->h * (size_t)shape->w *
			    (size_t)shape->c * ts_dtype_size(dev->dtype);
}

/* A plugin's own parameter as the text it receives: strings without
 * quotes, words as written, booleans as true/false, numbers in decimal
 * (sizes in bytes). Writes NULL and reports for lists and ranges. */
static const char *plugin_text(struct ctx *c, const struct ts_ast_arg *a,
			       char *buf, size_t n)
{
	const struct ts_ast_value *v = resolve(c, a->value);

	if (!v) {
		err(c, a->value->loc, "a let may not refer to itself, directly or not",
		    "let '%s' refers to itself", a->value->str);
		return NULL;
	}
	switch (v->kind) {
	case TS_AST_STR:
	case TS_AST_WORD:
		return v->str;
	case TS_AST_BOOL:
		return v->boolean ? "true" : "false";
	case TS_AST_NUM:
		if (v->is_int && !v->unit && v->text)
			return v->text;
		if (fabs(v->num) < 1e15 && v->num == floor(v->num))
			snprintf(buf, n, "%.0f", v->num);
		else
			snprintf(buf, n, "%.15g", v->num);
		return buf;
	default:
		err(c, a->value->loc,
		    "plugin parameters are passed as text: give one value per name",
		    "plugin parameter '%s' must be a number, string, word or boolean, got %s",
		    a->name, ts_ast_kind_name(v->kind));
		return NULL;
	}
}

/* plugin("path.so", key = value, ...): path (positional or named) and the
 * reserved timeout_ms bind like any operator's parameters; every other
 * named argument is the plugin's own and goes into op->plugin as text.
 * Reports every problem; op->plugin is built whenever memory allows (so
 * checking goes on), and -1 is returned after any error. */
static int bind_plugin(struct ctx *c, const struct ts_opdef *def,
		       const struct ts_ast_call *call, struct val *vals,
		       struct ts_op *op)
{
	const struct ts_param *path_p = ts_registry_param(def, "path");
	const struct ts_param *tmo_p = ts_registry_param(def, "timeout_ms");
	struct val *path = &vals[path_p - def->params];
	struct val *tmo = &vals[tmo_p - def->params];
	const struct ts_ast_arg *a;
	size_t n_own = 0, bytes = 0;
	bool named_seen = false;
	int rc = 0, pos = 0;
	char num[64];

	for (a = call->args; a; a = a->next) {
		const struct ts_param *p = NULL;
		struct val *v = NULL;
		if (!a->name) {
			if (named_seen) {
				err(c, a->loc, "give positional arguments first",
				    "positional argument after a named one");
				rc = -1;
				continue;
			}
			if (pos++ > 0) {
				err(c, a->loc, "give the plugin's parameters by name, e.g. threshold = 0.5",
				    "too many arguments: 'plugin' takes 1 positional argument");
				rc = -1;
				continue;
			}
			p = path_p;
			v = path;
		} else {
			named_seen = true;
			if (strcmp(a->name, "path") == 0) {
				p = path_p;
				v = path;
			} else if (strcmp(a->name, "timeout_ms") == 0) {
				p = tmo_p;
				v = tmo;
			}
		}
		if (p) {
			if (v->given) {
				err(c, a->loc, NULL, "parameter '%s' given twice", p->name);
				rc = -1;
			} else if (convert(c, "parameter", p, a->value, v) < 0) {
				*v = (struct val){ .given = true, .loc = a->loc,
						   .num = p->def_num };
				rc = -1;
			}
			continue;
		}
		/* one of the plugin's own */
		for (const struct ts_ast_arg *b = call->args; b != a; b = b->next)
			if (b->name && strcmp(b->name, a->name) == 0) {
				err(c, a->loc, NULL, "parameter '%s' given twice", a->name);
				rc = -1;
				break;
			}
		const char *t = plugin_text(c, a, num, sizeof(num));
		if (!t) {
			rc = -1;
			continue;
		}
		n_own++;
		bytes += strlen(a->name) + strlen(t) + 2;
	}
	if (!path->given) {
		err(c, call->loc, "write plugin(\"name.so\", ...)",
		    "'plugin' needs parameter 'path'");
		rc = -1;
	} else if (path->str && !path->str[0]) {
		err(c, path->loc, "name the plugin's .so file",
		    "parameter 'path' of 'plugin' is empty");
		rc = -1;
	}
	defaults(def->params, def->n_params, vals);

	/* One block: the struct, the two pointer arrays, then the strings. */
	const char *pathstr = path->str ? path->str : "";
	size_t head = sizeof(struct ts_op_plugin) + 2 * n_own * sizeof(char *);
	struct ts_op_plugin *pl = calloc(1, head + strlen(pathstr) + 1 + bytes);
	if (!pl) {
		c->oom = true;
		return -1;
	}
	char *at = (char *)pl + head;
	pl->names = (char **)(pl + 1);
	pl->values = pl->names + n_own;
	pl->path = strcpy(at, pathstr);
	at += strlen(pathstr) + 1;
	pl->timeout_ms = (int)tmo->num;
	for (a = call->args; a; a = a->next) {
		if (!a->name || strcmp(a->name, "path") == 0 ||
		    strcmp(a->name, "timeout_ms") == 0)
			continue;
		const struct ts_ast_value *v = resolve(c, a->value);
		if (!v || v->kind == TS_AST_LIST || v->kind == TS_AST_RANGE)
			continue; /* reported above */
		if ((size_t)pl->n_params == n_own)
			break;
		const char *t = plugin_text(c, a, num, sizeof(num));
		if (!t)
			continue;
		pl->names[pl->n_params] = strcpy(at, a->name);
		at += strlen(a->name) + 1;
		pl->values[pl->n_params++] = strcpy(at, t);
		at += strlen(t) + 1;
	}
	op->plugin = pl;
	return rc;
}

static int check_pipeline(struct ctx *c, const struct ts_ast_stmt *st,
			  struct ts_plan *plan, bool *size_reported)
{
	struct ts_shape shape = { .encoded = true, .c = 3 };
	struct ts_op *ops = NULL;
	size_t n_ops = 0;
	bool have_source = false, past_modifiers = false, shuffled = false,
	     sharded = false, assumed_decode = false, size_unknown = false;
	const struct ts_ast_call *batch_call = NULL, *device_call = NULL;
	int index = 0, rc = 0, late_h = 0, late_w = 0;
	const char *names[32];
	size_t n_names = op_names(names, 32);
	char buf[64];

	*size_reported = false;
	plan->batch = 1;
	plan->max_out_per_in = 1;
	if (!st->calls) {
		err(c, st->loc, NULL, "pipeline '%s' has no stages", st->name);
		return 0;
	}
	for (const struct ts_ast_call *call = st->calls; call;
	     call = call->next, index++) {
		const struct ts_opdef *def = ts_registry_find(call->name);
		struct val vals[MAX_PARAMS] = {{0}};
		struct ts_op op = {0};
		struct ts_shape out;
		struct ts_shape_err e = {0};

		if (!def) {
			const char *s = ts_diag_suggest(call->name, names, n_names);
			char hint[192] = "";
			if (s)
				snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
			else
				snprintf(hint, sizeof(hint),
					 "see tsrun-pipeline(5) for the operators");
			err(c, call->name_loc, hint, "unknown operator '%s'",
			    call->name);
			if (index == 0)
				have_source = true; /* do not also say "no source" */
			continue;
		}
		if (def->op_kind == TS_OP_PLUGIN)
			bind_plugin(c, def, call, vals, &op);
		else
			bind_args(c, def, call, vals);
		if (batch_call) {
			err(c, batch_call->loc, "move batch(...) to the end",
			    "'batch' must be the last stage");
			batch_call = NULL;
		}
		switch (def->kind) {
		case TS_REG_SOURCE:
			if (index != 0) {
				err(c, call->name_loc,
				    "a pipeline reads one source; write another pipeline for a second one",
				    "source '%s' must be the first stage", def->name);
				continue;
			}
			have_source = true;
			rc = fill_source(c, def, vals, call, plan, &shape);
			if (rc < 0)
				goto out;
			continue;
		case TS_REG_MODIFIER:
			if (past_modifiers || (index == 0)) {
				char hint[192];
				snprintf(hint, sizeof(hint),
					 "move %s right after the source", def->name);
				err(c, call->name_loc, hint,
				    "'%s' must come right after the source",
				    def->name);
				continue;
			}
			if (strcmp(def->name, "shuffle") == 0) {
				if (shuffled)
					err(c, call->name_loc, NULL,
					    "'shuffle' given twice");
				shuffled = true;
				plan->source.shuffle = true;
				plan->source.seed = (uint64_t)V(def, vals, "seed")->num;
			} else {
				int i = (int)V(def, vals, "index")->num;
				int n = (int)V(def, vals, "count")->num;
				if (sharded)
					err(c, call->name_loc, NULL,
					    "'shard' given twice");
				sharded = true;
				if ((i == -1) != (n == -1)) {
					err(c, call->loc,
					    "give both index and count, or neither to read them from RANK and WORLD_SIZE",
					    "shard needs both index and count");
				} else if (n != -1 && (n < 1 || i >= n)) {
					char hint[192];
					snprintf(hint, sizeof(hint),
						 "index runs from 0 to count - 1");
					err(c, loc_of(def, vals, call, "index"), hint,
					    "shard index %d is out of range for %d shard%s",
					    i, n, n == 1 ? "" : "s");
				}
				plan->source.shard_index = i;
				plan->source.shard_count = n;
			}
			continue;
		case TS_REG_SINK:
			past_modifiers = true;
			plan->batch = (int)V(def, vals, "n")->num;
			batch_call = call;
			if (!shape.encoded && (!shape.h || !shape.w) && !size_unknown) {
				err(c, call->loc,
				    "add center_crop, resize([h, w]) or random_resized_crop before batch",
				    "'batch' needs a fixed image size, but the size varies here");
				*size_reported = true;
			}
			continue;
		case TS_REG_DEVICE:
			past_modifiers = true;
			check_device(c, def, vals, call, &shape, device_call,
				     &plan->device);
			device_call = call;
			continue;
		case TS_REG_TRANSFORM:
			break;
		}
		past_modifiers = true;
		if (device_call) {
			/* the GPU stage finishes the sample: nothing after it
			 * runs on the CPU */
			err(c, call->name_loc,
			    "move it before device(...), or drop device(...)",
			    "'%s' cannot follow device(cuda): the device stage must be the last before batch",
			    def->name);
			device_call = NULL;
		}
		if (index == 0 && !have_source) {
			err(c, call->name_loc,
			    "start with folder(...), list(...), tar(...) or synthetic(...)",
			    "pipeline '%s' has no source", st->name);
			have_source = true;
			if (def->op_kind != TS_OP_DECODE)
				shape = (struct ts_shape){ .c = 3 };
		}
		build_op(c, def, vals, call, &shape, &op); /* reports its own errors */
		op.index = index;
		if (def->op_kind == TS_OP_DECODE && assumed_decode) {
			/* The missing decode was reported; this late one
			 * passes, keeping the size so errors do not cascade. */
			assumed_decode = false;
			late_h = shape.h;
			late_w = shape.w;
			shape.encoded = true;
		}
		if (def->op_kind != TS_OP_DECODE && shape.encoded) {
			char hint[192];
			snprintf(hint, sizeof(hint), "add decode(rgb) before %s",
				 def->name);
			err(c, call->name_loc, hint,
			    "'%s' needs decoded pixels, but the images are still encoded here",
			    def->name);
			shape = (struct ts_shape){ .c = 3 };
			assumed_decode = true;
		} else if (is_pixel_op(op.kind) &&
			   (shape.dtype == TS_DTYPE_F16 || shape.dtype == TS_DTYPE_F32 ||
			    shape.layout == TS_LAYOUT_NCHW)) {
			char hint[192];
			shape_str(&shape, buf, sizeof(buf));
			snprintf(hint, sizeof(hint),
				 "move %s before normalize and to", def->name);
			err(c, call->name_loc, hint,
			    "'%s' works on uint8 or uint16 nhwc pixels, but the data is %s here",
			    def->name, buf);
		} else if (op.kind == TS_OP_NORMALIZE &&
			   (shape.dtype == TS_DTYPE_F16 || shape.dtype == TS_DTYPE_F32)) {
			err(c, call->name_loc, "move normalize before to",
			    "'normalize' must come before a conversion to %s",
			    ts_dtype_name(shape.dtype));
		}
		if (bad_size(def, vals)) {
			/* An invalid size was reported: the op keeps the size
			 * it gets, so that nothing after it reports again. */
			op.size_h = shape.h;
			op.size_w = shape.w;
			if (!shape.h || !shape.w)
				size_unknown = *size_reported = true;
		}
		if (op.kind == TS_OP_NORMALIZE && op.n_mean < 0) {
			out = shape;
			out.dtype = TS_DTYPE_F32;
			out.normalized = true;
		} else if (def->shape(&op, &shape, &out, &e) < 0) {
			err(c, loc_of(def, vals, call, e.param), e.hint, "%s", e.msg);
		}
		if (late_h || late_w) {
			out.h = late_h;
			out.w = late_w;
			late_h = late_w = 0;
		}
		if (op.kind == TS_OP_TILE || op.kind == TS_OP_FILTER ||
		    op.kind == TS_OP_PLUGIN)
			plan->expands = true;
		if (op.kind == TS_OP_TILE) {
			if (shape.h && shape.w && plan->max_out_per_in > 0) {
				int64_t ny = shape.h >= op.size_h ? (shape.h - op.size_h) / op.stride_h + 1 : 0;
				int64_t nx = shape.w >= op.size_w ? (shape.w - op.size_w) / op.stride_w + 1 : 0;
				int64_t m = (int64_t)plan->max_out_per_in * ny * nx;
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
			goto out;
		}
	}
	if (!have_source)
		err(c, st->name_loc,
		    "start with folder(...), list(...), tar(...) or synthetic(...)",
		    "pipeline '%s' has no source", st->name);
	if (shape.encoded && have_source && st->calls &&
	    ts_registry_find(st->calls->name)) {
		err(c, st->name_loc, "add decode(rgb) after the source",
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
	free_ops(ops, n_ops);
	return rc;
}

static int set_str(char **dst, const char *s)
{
	char *p = ts_strdup(s);
	if (s && !p)
		return TS_E_NOMEM;
	free(*dst);
	*dst = p;
	return 0;
}

/* Longest Unix socket path, without its NUL: what sun_path holds. */
#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* socket and group: empty is never meant, and a socket path must fit a
 * socket address (bind would fail at run time). Reports and returns -1. */
static int check_path_setting(struct ctx *c, const char *name, const char *s,
			      struct ts_loc loc)
{
	size_t len = s ? strlen(s) : 0;

	if (len == 0) {
		err(c, loc,
		    strcmp(name, "socket") == 0
			    ? "name the socket file, e.g. \"/tmp/tsrun-train.sock\", or drop the setting for the default"
			    : "name a group, or drop the setting to allow the owner only",
		    "setting '%s' is empty", name);
		return -1;
	}
	if (strcmp(name, "socket") == 0 && len > SOCKET_PATH_MAX) {
		err(c, loc, "use a shorter path, e.g. in /tmp or $XDG_RUNTIME_DIR",
		    "setting 'socket' is %zu bytes long; a Unix socket path holds at most %zu",
		    len, SOCKET_PATH_MAX);
		return -1;
	}
	return 0;
}

static void plan_serve_defaults(struct ts_plan *plan)
{
	plan->epochs = 1;
	plan->ring_samples = 8 * (int64_t)(plan->batch > 0 ? plan->batch : 1);
	plan->threads = 0;
	plan->on_error = TS_ON_ERROR_FAIL;
	plan->queue_depth = 64;
	plan->memory_budget = 0;
}

/* Resolve the settings of one serve block into plan (which may be a
 * throwaway when the pipeline is undefined). Returns 0 or TS_E_NOMEM;
 * *memory_loc is the memory setting's value, for the budget error. */
static int apply_serve(struct ctx *c, const struct ts_ast_stmt *st,
		       struct ts_plan *plan, struct ts_loc *memory_loc,
		       bool *has_memory)
{
	size_t n;
	const struct ts_param *params = ts_registry_serve(&n);
	struct val vals[MAX_PARAMS] = {{0}};
	const char *names[MAX_PARAMS];

	for (size_t i = 0; i < n; i++)
		names[i] = params[i].name;
	*has_memory = false;
	for (const struct ts_ast_setting *s = st->settings; s; s = s->next) {
		const struct ts_param *p = ts_registry_param(NULL, s->name);
		size_t idx;
		if (!p) {
			const char *sug = ts_diag_suggest(s->name, names, n);
			char hint[192];
			if (sug) {
				snprintf(hint, sizeof(hint), "did you mean '%s'?", sug);
			} else {
				size_t len = (size_t)snprintf(hint, sizeof(hint),
							      "serve settings are:");
				for (size_t j = 0; j < n && len < sizeof(hint); j++)
					len += (size_t)snprintf(hint + len, sizeof(hint) - len,
								"%s %s", j ? "," : "", names[j]);
			}
			err(c, s->name_loc, hint, "unknown serve setting '%s'",
			    s->name);
			continue;
		}
		idx = (size_t)(p - params);
		if (vals[idx].given) {
			err(c, s->loc, NULL, "setting '%s' given twice", p->name);
			continue;
		}
		if (convert(c, "setting", p, s->value, &vals[idx]) < 0 ||
		    (p->type == TS_PT_STRING &&
		     check_path_setting(c, p->name, vals[idx].str,
					s->value->loc) < 0)) {
			vals[idx] = (struct val){0};
			continue;
		}
		if (strcmp(p->name, "memory") == 0) {
			*memory_loc = s->value->loc;
			*has_memory = true;
		}
	}
	defaults(params, n, vals);
	/* convert() bounded every given value (check_bounds) and the ones it
	 * refused went back to their defaults, so the conversions below are
	 * in range. */
	for (size_t i = 0; i < n; i++) {
		const char *name = params[i].name;
		struct val *v = &vals[i];
		if (strcmp(name, "socket") == 0 && v->given) {
			if (set_str(&plan->socket, v->str) < 0)
				return TS_E_NOMEM;
		} else if (strcmp(name, "group") == 0 && v->given) {
			if (set_str(&plan->group, v->str) < 0)
				return TS_E_NOMEM;
		} else if (strcmp(name, "epochs") == 0) {
			plan->epochs = (int)v->num;
		} else if (strcmp(name, "ring") == 0) {
			plan->ring_samples = (int64_t)v->num *
					     (v->samples ? 1 : plan->batch);
		} else if (strcmp(name, "memory") == 0) {
			plan->memory_budget = (uint64_t)v->num;
		} else if (strcmp(name, "threads") == 0) {
			plan->threads = v->is_auto ? 0 : (int)v->num;
		} else if (strcmp(name, "on_error") == 0) {
			plan->on_error = (enum ts_on_error)v->word;
		} else if (strcmp(name, "queue_depth") == 0) {
			plan->queue_depth = (int)v->num;
		}
	}
	if (strlen(plan->socket) > SOCKET_PATH_MAX) {
		char hint[192];
		snprintf(hint, sizeof(hint),
			 "set socket = \"...\" to a path of at most %zu bytes",
			 SOCKET_PATH_MAX);
		err(c, st->name_loc, hint,
		    "the default socket path for '%s' is %zu bytes long; a Unix socket path holds at most %zu",
		    st->name, strlen(plan->socket), SOCKET_PATH_MAX);
	}
	if (plan->ring_samples < plan->batch) {
		struct ts_loc l = st->name_loc;
		for (const struct ts_ast_setting *s = st->settings; s; s = s->next)
			if (strcmp(s->name, "ring") == 0)
				l = s->value->loc;
		err(c, l, "the ring must hold at least one batch",
		    "ring of %lld samples is smaller than the batch of %d",
		    (long long)plan->ring_samples, plan->batch);
	}
	return 0;
}

static int new_plan(const struct ts_ast_stmt *st, const char *file,
		    const char *base_dir, struct ts_plan **out)
{
	struct ts_plan *plan = calloc(1, sizeof(*plan));

	if (!plan)
		return TS_E_NOMEM;
	plan->name = ts_strdup(st->name ? st->name : "");
	plan->file = ts_strdup(file ? file : "<string>");
	plan->source.base_dir = ts_strdup(base_dir ? base_dir : ".");
	if (asprintf(&plan->socket, "/tmp/tsrun-%s.sock", st->name ? st->name : "") < 0)
		plan->socket = NULL;
	if (!plan->name || !plan->file || !plan->source.base_dir || !plan->socket) {
		ts_plan_destroy(plan);
		return TS_E_NOMEM;
	}
	*out = plan;
	return 0;
}

/* How many of the units (threads, queue slots) that make up term fit in
 * what budget leaves after the other terms. */
static uint64_t units_fit(uint64_t term, int units, uint64_t budget, uint64_t others)
{
	uint64_t per = term / (uint64_t)units;
	uint64_t room = budget > others ? budget - others : 0;
	return per ? room / per : 0;
}

/* The hint of a plan over its budget: name the term that dominates and
 * the setting that shrinks it (ring: ring, scratch: threads, io:
 * queue_depth) with the largest value that fits when the other terms stay
 * as they are, and the memory that would fit the plan as it is. */
static void budget_hint(const struct ts_plan *plan, char *hint, size_t n)
{
	uint64_t budget = plan->memory_budget;
	uint64_t ring = plan->mem_ring, scratch = plan->mem_scratch,
		 io = plan->mem_io;
	uint64_t mib = 1024 * 1024;
	char raise[64];

	snprintf(raise, sizeof(raise), "raise memory to %llu MiB",
		 (unsigned long long)((plan->mem_total + mib - 1) / mib));
	if (ring >= scratch && ring >= io) {
		uint64_t room = budget > scratch + io ? budget - scratch - io : 0;
		int64_t fit = ts_plan_ring_fit(plan, room);
		int batch = plan->batch > 0 ? plan->batch : 1;

		if (fit >= batch && fit < plan->ring_samples && batch > 1)
			snprintf(hint, n, "the ring dominates: use a smaller ring "
				 "(ring = %lld batches fits) or %s",
				 (long long)(fit / batch), raise);
		else if (fit >= batch && fit < plan->ring_samples)
			snprintf(hint, n, "the ring dominates: use a smaller ring "
				 "(ring = %lld samples fits) or %s",
				 (long long)fit, raise);
		else
			snprintf(hint, n, "the ring dominates, but even a ring of "
				 "one batch does not fit: %s", raise);
	} else if (scratch >= io) {
		int threads = plan->mem_threads > 0 ? plan->mem_threads : 1;
		uint64_t fit = units_fit(scratch, threads, budget, ring + io);

		if (fit >= 1 && fit < (uint64_t)threads)
			snprintf(hint, n, "scratch dominates: use fewer threads "
				 "(threads = %llu fits) or %s",
				 (unsigned long long)fit, raise);
		else if (threads > 1)
			snprintf(hint, n, "scratch dominates, but even threads = 1 "
				 "does not fit: %s", raise);
		else
			snprintf(hint, n, "scratch dominates and threads is "
				 "already 1: %s", raise);
	} else {
		int depth = plan->queue_depth > 0 ? plan->queue_depth : 1;
		uint64_t fit = units_fit(io, depth, budget, ring + scratch);

		if (fit >= 1 && fit < (uint64_t)depth)
			snprintf(hint, n, "io dominates: lower queue_depth "
				 "(queue_depth = %llu fits) or %s",
				 (unsigned long long)fit, raise);
		else
			snprintf(hint, n, "io dominates, but even queue_depth = 1 "
				 "does not fit: %s", raise);
	}
}

/* Budget: refuse a plan that needs more than its serve block allows, with
 * the breakdown so the user sees which part to shrink. */
static void check_budget(struct ctx *c, const struct ts_plan *plan,
			 struct ts_loc loc)
{
	char total[32], ring[32], slot[32], scratch[32], io[32], budget[32];
	char hint[192];

	if (!plan->memory_budget || plan->mem_total <= plan->memory_budget ||
	    !plan->sample_bytes)
		return;
	ts_plan_format_size(plan->mem_total, total, sizeof(total));
	ts_plan_format_size(plan->mem_ring, ring, sizeof(ring));
	ts_plan_format_size(plan->sample_bytes, slot, sizeof(slot));
	ts_plan_format_size(plan->mem_scratch, scratch, sizeof(scratch));
	ts_plan_format_size(plan->mem_io, io, sizeof(io));
	ts_plan_format_size(plan->memory_budget, budget, sizeof(budget));
	budget_hint(plan, hint, sizeof(hint));
	err(c, loc, hint,
	    "plan needs %s: ring %s (%lld samples x %s), scratch %s, io %s; budget is %s",
	    total, ring, (long long)plan->ring_samples, slot, scratch, io, budget);
}

/* plan->n_served and served_names: the pipelines the program serves, in
 * order, each once ("train, val"). Returns 0 or TS_E_NOMEM. */
static int list_served(const struct ts_ast_program *prog, struct ts_plan *plan)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n = 0;

	if (!f)
		return TS_E_NOMEM;
	for (const struct ts_ast_stmt *s = prog->stmts; s; s = s->next) {
		const struct ts_ast_stmt *t = prog->stmts;

		if (s->kind != TS_AST_SERVE || !s->name)
			continue;
		while (t != s && !(t->kind == TS_AST_SERVE && t->name &&
				   strcmp(t->name, s->name) == 0))
			t = t->next;
		if (t != s)
			continue; /* served twice: reported */
		fprintf(f, "%s%s", n++ ? ", " : "", s->name);
	}
	if (fclose(f) != 0) {
		free(buf);
		return TS_E_NOMEM;
	}
	if (n == 0) {
		free(buf);
		buf = NULL;
	}
	free(plan->served_names);
	plan->served_names = buf;
	plan->n_served = n;
	return 0;
}

/* Stable insertion sort of diagnostics [from, n) by position, so errors
 * found in different passes still read top to bottom. */
static void sort_diags(struct ts_diags *d, size_t from)
{
	for (size_t i = from + 1; i < d->n; i++) {
		struct ts_diag x = d->items[i];
		size_t j = i;
		while (j > from &&
		       (d->items[j - 1].loc.first_line > x.loc.first_line ||
			(d->items[j - 1].loc.first_line == x.loc.first_line &&
			 d->items[j - 1].loc.first_column > x.loc.first_column))) {
			d->items[j] = d->items[j - 1];
			j--;
		}
		d->items[j] = x;
	}
}

TS_EXPORT int ts_dsl_check(const struct ts_ast_program *prog,
			   const char *pipeline, const char *file,
			   const char *base_dir, struct ts_diags *d,
			   struct ts_plan **out)
{
	struct ctx c = { .prog = prog, .d = d };
	size_t first = d->n, errors_before = d->n_errors;
	const struct ts_ast_stmt *chosen = NULL;
	struct ts_plan *result = NULL;
	int rc = 0;
	char hint[192];

	/* Duplicate names. */
	for (const struct ts_ast_stmt *s = prog->stmts; s; s = s->next) {
		const struct ts_ast_stmt *prev;
		if (s->kind == TS_AST_SERVE || !s->name)
			continue;
		prev = find_stmt(prog, s->kind, s->name);
		if (prev != s) {
			snprintf(hint, sizeof(hint), "first defined at line %d",
				 prev->name_loc.first_line);
			err(&c, s->name_loc, hint, "duplicate %s name '%s'",
			    s->kind == TS_AST_LET ? "let" : "pipeline", s->name);
		}
	}

	/* Pick the pipeline to lower. */
	if (pipeline) {
		chosen = find_stmt(prog, TS_AST_PIPELINE, pipeline);
		if (!chosen) {
			const char *names[64];
			size_t n = stmt_names(prog, TS_AST_PIPELINE, names, 64);
			const char *s = ts_diag_suggest(pipeline, names, n);
			if (s)
				snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
			err(&c, (struct ts_loc){0, 0, 0, 0}, s ? hint : NULL,
			    "no pipeline named '%s'", pipeline);
		}
	} else {
		for (const struct ts_ast_stmt *s = prog->stmts; s && !chosen; s = s->next)
			if (s->kind == TS_AST_SERVE && s->name)
				chosen = find_stmt(prog, TS_AST_PIPELINE, s->name);
		for (const struct ts_ast_stmt *s = prog->stmts; s && !chosen; s = s->next)
			if (s->kind == TS_AST_PIPELINE)
				chosen = s;
		if (!chosen && !prog->stmts)
			err(&c, (struct ts_loc){0, 0, 0, 0},
			    "write `pipeline NAME = source(...) | ...`",
			    "no pipeline in this file");
		else if (!chosen)
			err(&c, (struct ts_loc){1, 1, 1, 1},
			    "write `pipeline NAME = source(...) | ...`",
			    "no pipeline in this file");
	}

	/* Every pipeline, then its serve block. */
	for (const struct ts_ast_stmt *s = prog->stmts; s; s = s->next) {
		struct ts_plan *plan = NULL;
		const struct ts_ast_stmt *serve = NULL;
		bool size_reported = false;

		if (s->kind == TS_AST_SERVE) {
			const struct ts_ast_stmt *p = find_stmt(prog, TS_AST_PIPELINE, s->name);
			const struct ts_ast_stmt *first_serve = NULL;
			for (const struct ts_ast_stmt *t = prog->stmts; t; t = t->next)
				if (t->kind == TS_AST_SERVE && strcmp(t->name, s->name) == 0) {
					first_serve = t;
					break;
				}
			if (first_serve != s) {
				snprintf(hint, sizeof(hint), "first served at line %d",
					 first_serve->name_loc.first_line);
				err(&c, s->name_loc, hint,
				    "pipeline '%s' is served twice", s->name);
			}
			if (!p) {
				const char *names[64];
				size_t n = stmt_names(prog, TS_AST_PIPELINE, names, 64);
				const char *sug = ts_diag_suggest(s->name, names, n);
				struct ts_plan *dummy = NULL;
				struct ts_loc ml;
				bool hm;
				if (sug)
					snprintf(hint, sizeof(hint), "did you mean '%s'?", sug);
				else
					snprintf(hint, sizeof(hint),
						 "define it with `pipeline %s = ...`", s->name);
				err(&c, s->name_loc, hint,
				    "serve of undefined pipeline '%s'", s->name);
				/* still check its settings */
				if ((rc = new_plan(s, file, base_dir, &dummy)) < 0)
					goto out;
				dummy->batch = 1;
				rc = apply_serve(&c, s, dummy, &ml, &hm);
				ts_plan_destroy(dummy);
				if (rc < 0)
					goto out;
			} else if (first_serve != s) {
				struct ts_plan *dummy = NULL;
				struct ts_loc ml;
				bool hm;
				if ((rc = new_plan(s, file, base_dir, &dummy)) < 0)
					goto out;
				dummy->batch = 1;
				rc = apply_serve(&c, s, dummy, &ml, &hm);
				ts_plan_destroy(dummy);
				if (rc < 0)
					goto out;
			}
			continue;
		}
		if (s->kind != TS_AST_PIPELINE || find_stmt(prog, TS_AST_PIPELINE, s->name) != s)
			continue;
		if ((rc = new_plan(s, file, base_dir, &plan)) < 0)
			goto out;
		rc = check_pipeline(&c, s, plan, &size_reported);
		if (rc < 0) {
			ts_plan_destroy(plan);
			goto out;
		}
		plan_serve_defaults(plan);
		for (const struct ts_ast_stmt *t = prog->stmts; t && !serve; t = t->next)
			if (t->kind == TS_AST_SERVE && t->name && strcmp(t->name, s->name) == 0)
				serve = t;
		if (serve) {
			struct ts_loc mem_loc = serve->name_loc;
			bool has_memory;
			plan->served = true;
			rc = apply_serve(&c, serve, plan, &mem_loc, &has_memory);
			if (rc < 0) {
				ts_plan_destroy(plan);
				goto out;
			}
			if ((!plan->height || !plan->width) && !size_reported) {
				snprintf(hint, sizeof(hint),
					 "add center_crop, resize([h, w]) or random_resized_crop to pipeline '%s'",
					 s->name);
				err(&c, serve->name_loc, hint,
				    "cannot serve '%s': its samples have no fixed size",
				    s->name);
			}
			ts_plan_estimate(plan, 0);
			check_budget(&c, plan, mem_loc);
		} else {
			ts_plan_estimate(plan, 0);
		}
		if (s == chosen && !result)
			result = plan;
		else
			ts_plan_destroy(plan);
	}
	if (c.oom) {
		rc = TS_E_NOMEM;
		goto out;
	}
	sort_diags(d, first);
	if (d->n_errors == errors_before && result &&
	    (rc = list_served(prog, result)) < 0)
		goto out;
	if (d->n_errors > errors_before || !result) {
		rc = TS_E_CHECK;
		goto out;
	}
	*out = result;
	result = NULL;
out:
	ts_plan_destroy(result);
	return rc;
}

TS_EXPORT int ts_dsl_compile(const char *src, size_t len, const char *file,
			     const char *pipeline, struct ts_diags *d,
			     struct ts_plan **out)
{
	struct ts_ast_program prog = {0};
	char *base = NULL;
	const char *slash = file ? strrchr(file, '/') : NULL;
	int rc;

	if (slash) {
		base = strndup(file, slash == file ? 1 : (size_t)(slash - file));
		if (!base)
			return TS_E_NOMEM;
	}
	rc = ts_dsl_parse(src, len, d, &prog);
	if (rc == 0)
		rc = ts_dsl_check(&prog, pipeline, file, base ? base : ".", d, out);
	ts_ast_program_destroy(&prog);
	free(base);
	return rc;
}
