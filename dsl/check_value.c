/*
 * check_value.c - value conversion: one argument or serve setting (let
 * names resolved) converted to its parameter's type and range-checked,
 * and the defaults of the parameters not given.
 */
#include "checker.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower.h"
#include "util.h"

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

static void type_error(struct ts_check *c, const char *what, const struct ts_param *p,
		       const struct ts_ast_value *v, struct ts_loc loc)
{
	char got[96];

	if (v->kind == TS_AST_WORD && p->type != TS_PT_WORD &&
	    !(p->type == TS_PT_THREADS || p->type == TS_PT_SIZE_AUTO)) {
		const char *s = ts_check_suggest_stmt(c->prog, TS_AST_LET, v->str);
		char hint[192];
		if (s)
			snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
		else
			snprintf(hint, sizeof(hint),
				 "%s '%s' expects %s; define the name with `let %s = ...`",
				 what, p->name, ts_registry_type_desc(p->type),
				 v->str);
		ts_check_err(c, loc, hint, "unknown name '%s'", v->str);
		return;
	}
	ts_check_err(c, loc, NULL, "%s '%s' expects %s, got %s", what, p->name,
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
	if (p->type == TS_PT_SIZE || p->type == TS_PT_SIZE_AUTO) {
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
static int check_bounds(struct ts_check *c, const char *what,
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
	else if ((p->type == TS_PT_SIZE || p->type == TS_PT_SIZE_AUTO) && x >= 0)
		ts_plan_format_size((uint64_t)x, got, sizeof(got));
	else
		fmt_num(x, got, sizeof(got));
	if (x < 0 && p->has_min && p->min == 0)
		ts_check_err(c, loc, NULL, "%s '%s' must not be negative, got %s", what,
		    p->name, got);
	else if (range[0])
		ts_check_err(c, loc, NULL, "%s '%s' %s, got %s", what, p->name, range, got);
	else
		ts_check_err(c, loc, NULL, "%s '%s': value %s out of range", what,
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

/* One conversion: the argument v (resolved) at loc, for parameter p,
 * into out. A converter returns 0, -1 after reporting, or WRONG_TYPE for
 * the caller's "expects <type>, got <value>" message. */
struct conv {
	struct ts_check *c;
	const char *what;         /* "parameter" or "setting" */
	const struct ts_param *p;
	const struct ts_ast_value *v;
	struct ts_loc loc;
	struct ts_check_val *out;
};
#define WRONG_TYPE 1

static int bounds(const struct conv *k, double x, struct ts_loc loc, const char *text)
{
	return check_bounds(k->c, k->what, k->p, x, loc, text);
}

/* The index of word in p's words, reporting an unknown one (with a
 * suggestion, or the list of words) and returning -1. */
static int find_word(const struct conv *k, bool list_all)
{
	const struct ts_param *p = k->p;
	char hint[192];
	size_t n = 0;
	for (; p->words[n]; n++)
		if (strcmp(p->words[n], k->v->str) == 0)
			return (int)n;
	const char *s = ts_diag_suggest(k->v->str, p->words, n);
	if (s || !list_all) {
		snprintf(hint, sizeof(hint), "did you mean '%s'?", s ? s : p->words[0]);
	} else {
		size_t len = (size_t)snprintf(hint, sizeof(hint), "expected one of:");
		for (size_t i = 0; i < n && len < sizeof(hint); i++)
			len += (size_t)snprintf(hint + len, sizeof(hint) - len, "%s %s",
						i ? "," : "", p->words[i]);
	}
	ts_check_err(k->c, k->loc, hint, "unknown value '%s' for %s '%s'", k->v->str,
		     k->what, p->name);
	return -1;
}

/* "expects a list of numbers, got ... in the list" for item x at loc. */
static int not_a_number_in_list(const struct conv *k, const struct ts_ast_value *x,
				struct ts_loc loc)
{
	char got[96];
	ts_check_err(k->c, loc, NULL, "%s '%s' expects a list of numbers, got %s in the list",
		     k->what, k->p->name, x ? got_desc(x, got, sizeof(got)) : "a cycle");
	return -1;
}

static int conv_number(const struct conv *k)
{
	char got[96];
	if (!plain_num(k->v))
		return WRONG_TYPE;
	if (k->p->type == TS_PT_INT && !k->v->is_int) {
		ts_check_err(k->c, k->loc, NULL, "%s '%s' expects an integer, got %s", k->what,
			     k->p->name, got_desc(k->v, got, sizeof(got)));
		return -1;
	}
	k->out->num = k->v->num;
	return bounds(k, k->v->num, k->loc, k->v->text);
}

static int conv_bool(const struct conv *k)
{
	if (k->v->kind != TS_AST_BOOL)
		return WRONG_TYPE;
	k->out->num = k->v->boolean;
	return 0;
}

static int conv_string(const struct conv *k)
{
	if (k->v->kind != TS_AST_STR)
		return WRONG_TYPE;
	k->out->str = k->v->str;
	return 0;
}

static int conv_word(const struct conv *k)
{
	if (k->v->kind != TS_AST_WORD)
		return WRONG_TYPE;
	int w = find_word(k, true);
	if (w < 0)
		return -1;
	k->out->word = w;
	return 0;
}

/* The items of a list of numbers into out (the first 8 kept). */
static int numlist_items(const struct conv *k)
{
	int rc = 0;
	struct ts_check_val *out = k->out;
	out->n_nums = 0;
	out->is_list = true;
	for (const struct ts_ast_value *it = k->v->items; it; it = it->next) {
		const struct ts_ast_value *x = ts_check_resolve(k->c, it);
		if (!x) {
			ts_check_cycle_err(k->c, it->loc, it->str);
			return -1;
		}
		if (!plain_num(x))
			return not_a_number_in_list(k, x, it->loc);
		if (bounds(k, x->num, it->loc, x->text) < 0)
			rc = -1;
		if (out->n_nums < 8) {
			out->dnums[out->n_nums] = x->num;
			if (out->n_nums < 4)
				out->nums[out->n_nums] = (float)x->num;
			out->n_nums++;
		}
	}
	return rc;
}

static int conv_numlist(const struct conv *k)
{
	const struct ts_ast_value *v = k->v;
	if (v->kind == TS_AST_WORD && k->p->words) {
		/* a list or one of the words (random_erasing's value =
		 * random): n_nums 0 and the word's index */
		int w = find_word(k, false);
		if (w < 0)
			return -1;
		k->out->word = w;
		k->out->n_nums = 0;
		return 0;
	}
	if (plain_num(v)) {
		k->out->nums[0] = (float)v->num;
		k->out->dnums[0] = v->num;
		k->out->n_nums = 1;
		return bounds(k, v->num, k->loc, v->text);
	}
	if (v->kind != TS_AST_LIST)
		return WRONG_TYPE;
	const size_t most = k->p->max_items ? (size_t)k->p->max_items : 4;
	/* one per channel: 1 to 4; a longer list of fixed meaning
	 * (perspective's 8 corner coordinates): "1 to 8" would read as any
	 * count up to 8, so only the most is named */
	if (most == 4 && (v->n_items < 1 || v->n_items > most)) {
		ts_check_err(k->c, k->loc, "give one value per channel",
			     "%s '%s' expects 1 to %zu numbers, got %zu", k->what, k->p->name,
			     most, v->n_items);
		return -1;
	}
	if (v->n_items < 1) {
		ts_check_err(k->c, k->loc, NULL, "%s '%s' expects numbers, got an empty list",
			     k->what, k->p->name);
		return -1;
	}
	if (v->n_items > most) {
		ts_check_err(k->c, k->loc, NULL, "%s '%s' expects at most %zu numbers, got %zu",
			     k->what, k->p->name, most, v->n_items);
		return -1;
	}
	return numlist_items(k);
}

static int conv_strlist(const struct conv *k)
{
	char got[96];
	const struct ts_ast_value *v = k->v;
	if (v->kind == TS_AST_STR) {
		k->out->items = v;
		k->out->n_items = 1;
		return 0;
	}
	if (v->kind != TS_AST_LIST)
		return WRONG_TYPE;
	for (const struct ts_ast_value *it = v->items; it; it = it->next)
		if (it->kind != TS_AST_STR) {
			ts_check_err(k->c, it->loc, NULL,
				     "%s '%s' expects a list of strings, got %s in the list",
				     k->what, k->p->name, got_desc(it, got, sizeof(got)));
			return -1;
		}
	k->out->items = v->items;
	k->out->n_items = v->n_items;
	return 0;
}

static int conv_range(const struct conv *k)
{
	const struct ts_ast_value *v = k->v;
	if (k->p->point_ok && plain_num(v)) {
		/* one number: the range of that point */
		k->out->lo = k->out->hi = v->num;
		return bounds(k, v->num, k->loc, v->text);
	}
	if (v->kind != TS_AST_RANGE)
		return WRONG_TYPE;
	const struct ts_ast_value *lo = ts_check_resolve(k->c, v->lo);
	const struct ts_ast_value *hi = ts_check_resolve(k->c, v->hi);
	if (!plain_num(lo) || !plain_num(hi))
		return WRONG_TYPE;
	if (bounds(k, lo->num, v->lo->loc, lo->text) < 0 ||
	    bounds(k, hi->num, v->hi->loc, hi->text) < 0)
		return -1;
	if (lo->num > hi->num) {
		ts_check_err(k->c, k->loc, "write the smaller end first",
			     "%s '%s' is an empty range: %g is above %g", k->what, k->p->name,
			     lo->num, hi->num);
		return -1;
	}
	k->out->lo = lo->num;
	k->out->hi = hi->num;
	return 0;
}

static int conv_size(const struct conv *k)
{
	char got[96];
	const struct ts_ast_value *v = k->v;
	if (v->kind != TS_AST_NUM || (v->unit && !is_size_unit(v->unit)))
		return WRONG_TYPE;
	if (!v->unit && v->num != 0) {
		char hint[192];
		snprintf(hint, sizeof(hint), "add a unit: %s MiB or %s GiB",
			 v->text ? v->text : "N", v->text ? v->text : "N");
		ts_check_err(k->c, k->loc, hint, "%s '%s' expects a size such as 4 GiB, got %s",
			     k->what, k->p->name, got_desc(v, got, sizeof(got)));
		return -1;
	}
	k->out->num = floor(v->num);
	return bounds(k, k->out->num, k->loc, v->text);
}

/* cache = 4 GiB | auto | off */
static int conv_size_auto(const struct conv *k)
{
	const struct ts_ast_value *v = k->v;
	if (v->kind == TS_AST_WORD && strcmp(v->str, "auto") == 0) {
		k->out->is_auto = true;
		k->out->num = 0;
		return 0;
	}
	if (v->kind == TS_AST_WORD && strcmp(v->str, "off") == 0) {
		k->out->num = 0;
		return 0;
	}
	if (v->kind == TS_AST_WORD) {
		ts_check_err(k->c, k->loc, "write a size such as 4 GiB, auto, or off",
			     "%s '%s' expects %s, got '%s'", k->what, k->p->name,
			     ts_registry_type_desc(k->p->type), v->str);
		return -1;
	}
	return conv_size(k);
}

static int conv_size_pair(const struct conv *k)
{
	const struct ts_ast_value *v = k->v;
	if (plain_int(v)) {
		if (bounds(k, v->num, k->loc, v->text) < 0)
			return -1;
		k->out->h = k->out->w = (int)v->num;
		return 0;
	}
	if (v->kind != TS_AST_LIST || v->n_items != 2)
		return WRONG_TYPE;
	const struct ts_ast_value *a = ts_check_resolve(k->c, v->items);
	const struct ts_ast_value *b = ts_check_resolve(k->c, v->items->next);
	if (!plain_int(a) || !plain_int(b))
		return WRONG_TYPE;
	if (bounds(k, a->num, v->items->loc, a->text) < 0 ||
	    bounds(k, b->num, v->items->next->loc, b->text) < 0)
		return -1;
	k->out->h = (int)a->num;
	k->out->w = (int)b->num;
	k->out->num = -1; /* marks the [h, w] form */
	return 0;
}

static int conv_count(const struct conv *k)
{
	char got[96];
	const struct ts_ast_value *v = k->v;
	if (v->kind != TS_AST_NUM)
		return WRONG_TYPE;
	if (!v->unit || !v->is_int ||
	    (strcmp(v->unit, "batches") != 0 && strcmp(v->unit, "batch") != 0 &&
	     strcmp(v->unit, "samples") != 0 && strcmp(v->unit, "sample") != 0)) {
		char hint[192];
		snprintf(hint, sizeof(hint), "write %s batches or %s samples",
			 v->is_int && v->text ? v->text : "8", v->is_int && v->text ? v->text : "2048");
		if (v->unit && is_size_unit(v->unit))
			snprintf(hint, sizeof(hint),
				 "ring counts samples or batches; the memory setting takes bytes");
		ts_check_err(k->c, k->loc, hint, "%s '%s' expects %s, got %s", k->what, k->p->name,
			     ts_registry_type_desc(k->p->type), got_desc(v, got, sizeof(got)));
		return -1;
	}
	k->out->samples = v->unit[0] == 's';
	k->out->num = v->num;
	return bounds(k, v->num, k->loc, v->text);
}

/* a chain, or a bare operator name (which the branch check resolves,
 * suggesting a name when it is none) */
static int conv_ops(const struct conv *k)
{
	if (k->v->kind != TS_AST_OPS && k->v->kind != TS_AST_WORD)
		return WRONG_TYPE;
	k->out->ops = k->v;
	return 0;
}

static int conv_opslist(const struct conv *k)
{
	if (k->v->kind != TS_AST_LIST)
		return WRONG_TYPE;
	k->out->items = k->v->items;
	k->out->n_items = k->v->n_items;
	return 0;
}

static int conv_numbers(const struct conv *k)
{
	int rc = 0;
	if (k->v->kind != TS_AST_LIST)
		return WRONG_TYPE;
	for (const struct ts_ast_value *it = k->v->items; it; it = it->next) {
		const struct ts_ast_value *x = ts_check_resolve(k->c, it);
		if (!plain_num(x))
			return not_a_number_in_list(k, x, it->loc);
		if (bounds(k, x->num, it->loc, x->text) < 0)
			rc = -1;
	}
	k->out->items = k->v->items;
	k->out->n_items = k->v->n_items;
	return rc;
}

static int conv_threads(const struct conv *k)
{
	if (k->v->kind == TS_AST_WORD && strcmp(k->v->str, "auto") == 0) {
		k->out->is_auto = true;
		k->out->num = 0;
		return 0;
	}
	if (!plain_int(k->v))
		return WRONG_TYPE;
	k->out->num = k->v->num;
	return bounds(k, k->v->num, k->loc, k->v->text);
}

/* One converter per parameter type (enum ts_param_type). */
static int (*const converters[])(const struct conv *) = {
	[TS_PT_INT] = conv_number,        [TS_PT_NUMBER] = conv_number,
	[TS_PT_STRING] = conv_string,     [TS_PT_BOOL] = conv_bool,
	[TS_PT_WORD] = conv_word,         [TS_PT_NUMLIST] = conv_numlist,
	[TS_PT_STRLIST] = conv_strlist,   [TS_PT_RANGE] = conv_range,
	[TS_PT_SIZE] = conv_size,         [TS_PT_SIZE_PAIR] = conv_size_pair,
	[TS_PT_SIZE_AUTO] = conv_size_auto,
	[TS_PT_COUNT] = conv_count,       [TS_PT_THREADS] = conv_threads,
	[TS_PT_OPS] = conv_ops,           [TS_PT_OPSLIST] = conv_opslist,
	[TS_PT_NUMBERS] = conv_numbers,
};

/* Convert one argument (any AST value, let names resolved) to p's type
 * into *out. Reports the problem and returns -1 when it does not fit. */
int ts_check_convert(struct ts_check *c, const char *what, const struct ts_param *p,
		   const struct ts_ast_value *raw, struct ts_check_val *out)
{
	const struct ts_ast_value *v = ts_check_resolve(c, raw);
	if (!v) {
		ts_check_cycle_err(c, raw->loc, raw->str);
		return -1;
	}
	out->given = true;
	out->loc = raw->loc;
	struct conv k = { c, what, p, v, raw->loc, out };
	size_t t = (size_t)p->type;
	assert(t < TS_ARRAY_LEN(converters) && converters[t]);
	int rc = converters[t](&k);
	if (rc == WRONG_TYPE) {
		type_error(c, what, p, v, raw->loc);
		return -1;
	}
	return rc;
}

/* Apply defaults to the parameters that were not given. */
void ts_check_defaults(const struct ts_param *params, size_t n, struct ts_check_val *vals)
{
	for (size_t i = 0; i < n; i++) {
		const struct ts_param *p = &params[i];
		struct ts_check_val *v = &vals[i];
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
