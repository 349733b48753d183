/* ast.c - constructors, destructors and a text dump of the syntax tree. */
#include "ast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static struct ts_ast_value *value_new(enum ts_ast_value_kind kind,
				      struct ts_loc loc)
{
	struct ts_ast_value *v = calloc(1, sizeof(*v));

	if (v) {
		v->kind = kind;
		v->loc = loc;
	}
	return v;
}

struct ts_ast_value *ts_ast_num(struct ts_loc loc, double num, bool is_int,
				const char *text)
{
	struct ts_ast_value *v = value_new(TS_AST_NUM, loc);

	if (!v)
		return NULL;
	v->num = num;
	v->is_int = is_int;
	v->text = ts_strdup(text ? text : "");
	if (!v->text) {
		free(v);
		return NULL;
	}
	return v;
}

/* Multiplier of a unit word: sizes become bytes, counts stay as written. */
static double unit_scale(const char *unit)
{
	static const struct {
		const char *name;
		double scale;
	} units[] = {
		{"B", 1.0},
		{"KB", 1e3},
		{"MB", 1e6},
		{"GB", 1e9},
		{"KiB", 1024.0},
		{"MiB", 1024.0 * 1024.0},
		{"GiB", 1024.0 * 1024.0 * 1024.0},
	};

	for (size_t i = 0; i < TS_ARRAY_LEN(units); i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].scale;
	return 1.0; /* batches, samples */
}

/* Replace v->text with prefix + text + suffix. */
static int retext(struct ts_ast_value *v, const char *prefix,
		  const char *suffix)
{
	char *t;

	if (asprintf(&t, "%s%s%s", prefix, v->text ? v->text : "", suffix) < 0)
		return -1;
	free(v->text);
	v->text = t;
	return 0;
}

struct ts_ast_value *ts_ast_num_unit(struct ts_ast_value *num,
				     const char *unit, struct ts_loc loc)
{
	char suffix[32];

	if (!num || !unit)
		goto fail;
	snprintf(suffix, sizeof(suffix), " %s", unit);
	num->unit = strdup(unit);
	if (!num->unit || retext(num, "", suffix) < 0)
		goto fail;
	num->num *= unit_scale(unit);
	num->loc = loc;
	return num;
fail:
	ts_ast_value_destroy(num);
	return NULL;
}

struct ts_ast_value *ts_ast_neg(struct ts_loc loc, struct ts_ast_value *num)
{
	if (!num)
		return NULL;
	if (retext(num, "-", "") < 0) {
		ts_ast_value_destroy(num);
		return NULL;
	}
	num->num = -num->num;
	num->loc = loc;
	return num;
}

struct ts_ast_value *ts_ast_frac(struct ts_loc loc, struct ts_ast_value *a,
				 struct ts_ast_value *b)
{
	char *t = NULL;

	if (!a || !b || asprintf(&t, "%s/%s", a->text, b->text) < 0)
		goto fail;
	free(a->text);
	a->text = t;
	a->num = a->num / b->num;
	a->is_int = false;
	a->loc = loc;
	ts_ast_value_destroy(b);
	return a;
fail:
	ts_ast_value_destroy(a);
	ts_ast_value_destroy(b);
	return NULL;
}

/* Values that own a string (STR, WORD) share this. */
static struct ts_ast_value *value_with_str(enum ts_ast_value_kind kind,
					   struct ts_loc loc, const char *s)
{
	struct ts_ast_value *v = value_new(kind, loc);

	if (!v)
		return NULL;
	v->str = strdup(s ? s : "");
	if (!v->str) {
		free(v);
		return NULL;
	}
	return v;
}

struct ts_ast_value *ts_ast_str(struct ts_loc loc, const char *s)
{
	return value_with_str(TS_AST_STR, loc, s);
}

struct ts_ast_value *ts_ast_word(struct ts_loc loc, const char *id)
{
	return value_with_str(TS_AST_WORD, loc, id);
}

struct ts_ast_value *ts_ast_bool(struct ts_loc loc, bool b)
{
	struct ts_ast_value *v = value_new(TS_AST_BOOL, loc);

	if (v)
		v->boolean = b;
	return v;
}

struct ts_ast_value *ts_ast_list(struct ts_loc loc, struct ts_ast_value *first)
{
	struct ts_ast_value *v = value_new(TS_AST_LIST, loc);

	if (!v) {
		ts_ast_value_destroy(first);
		return NULL;
	}
	v->items = first;
	for (struct ts_ast_value *it = first; it; it = it->next)
		v->n_items++;
	return v;
}

struct ts_ast_value *ts_ast_ops(struct ts_loc loc, struct ts_ast_call *first)
{
	struct ts_ast_value *v = value_new(TS_AST_OPS, loc);

	if (!v) {
		ts_ast_call_destroy(first);
		return NULL;
	}
	v->calls = first;
	for (struct ts_ast_call *c = first; c; c = c->next)
		v->n_calls++;
	return v;
}

struct ts_ast_value *ts_ast_range(struct ts_loc loc, struct ts_ast_value *lo,
				  struct ts_ast_value *hi)
{
	struct ts_ast_value *v = NULL;

	if (lo && hi)
		v = value_new(TS_AST_RANGE, loc);
	if (!v) {
		ts_ast_value_destroy(lo);
		ts_ast_value_destroy(hi);
		return NULL;
	}
	v->lo = lo;
	v->hi = hi;
	return v;
}

struct ts_ast_value *ts_ast_value_append(struct ts_ast_value *head,
					 struct ts_ast_value *v)
{
	struct ts_ast_value *last = head;

	if (!head)
		return v;
	while (last->next)
		last = last->next;
	last->next = v;
	return head;
}

struct ts_ast_arg *ts_ast_arg(struct ts_loc loc, const char *name,
			      struct ts_loc name_loc, struct ts_ast_value *v)
{
	struct ts_ast_arg *a = v ? calloc(1, sizeof(*a)) : NULL;

	if (!a)
		goto fail;
	a->loc = loc;
	a->name_loc = name_loc;
	a->value = v;
	if (name) {
		a->name = strdup(name);
		if (!a->name) {
			free(a);
			goto fail;
		}
	}
	return a;
fail:
	ts_ast_value_destroy(v);
	return NULL;
}

struct ts_ast_arg *ts_ast_arg_append(struct ts_ast_arg *head,
				     struct ts_ast_arg *a)
{
	struct ts_ast_arg *last = head;

	if (!head)
		return a;
	while (last->next)
		last = last->next;
	last->next = a;
	return head;
}

struct ts_ast_call *ts_ast_call(struct ts_loc loc, const char *name,
				struct ts_loc name_loc, struct ts_ast_arg *args)
{
	struct ts_ast_call *c = calloc(1, sizeof(*c));

	if (!c)
		goto fail;
	c->name = strdup(name ? name : "");
	if (!c->name) {
		free(c);
		goto fail;
	}
	c->loc = loc;
	c->name_loc = name_loc;
	c->args = args;
	for (struct ts_ast_arg *a = args; a; a = a->next)
		c->n_args++;
	return c;
fail:
	ts_ast_arg_destroy(args);
	return NULL;
}

struct ts_ast_call *ts_ast_call_append(struct ts_ast_call *head,
				       struct ts_ast_call *c)
{
	struct ts_ast_call *last = head;

	if (!head)
		return c;
	while (last->next)
		last = last->next;
	last->next = c;
	return head;
}

struct ts_ast_setting *ts_ast_setting(struct ts_loc loc, const char *name,
				      struct ts_loc name_loc,
				      struct ts_ast_value *v)
{
	struct ts_ast_setting *s = v ? calloc(1, sizeof(*s)) : NULL;

	if (!s)
		goto fail;
	s->name = strdup(name ? name : "");
	if (!s->name) {
		free(s);
		goto fail;
	}
	s->loc = loc;
	s->name_loc = name_loc;
	s->value = v;
	return s;
fail:
	ts_ast_value_destroy(v);
	return NULL;
}

struct ts_ast_setting *ts_ast_setting_append(struct ts_ast_setting *head,
					     struct ts_ast_setting *s)
{
	struct ts_ast_setting *last = head;

	if (!head)
		return s;
	while (last->next)
		last = last->next;
	last->next = s;
	return head;
}

/* Every statement kind starts the same way; the caller fills its body. */
static struct ts_ast_stmt *stmt_new(enum ts_ast_stmt_kind kind,
				    struct ts_loc loc, const char *name,
				    struct ts_loc name_loc)
{
	struct ts_ast_stmt *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name ? name : "");
	if (!s->name) {
		free(s);
		return NULL;
	}
	s->kind = kind;
	s->loc = loc;
	s->name_loc = name_loc;
	return s;
}

struct ts_ast_stmt *ts_ast_let(struct ts_loc loc, const char *name,
			       struct ts_loc name_loc, struct ts_ast_value *v)
{
	struct ts_ast_stmt *s = v ? stmt_new(TS_AST_LET, loc, name, name_loc)
				  : NULL;

	if (!s) {
		ts_ast_value_destroy(v);
		return NULL;
	}
	s->value = v;
	return s;
}

struct ts_ast_stmt *ts_ast_pipeline(struct ts_loc loc, const char *name,
				    struct ts_loc name_loc,
				    struct ts_ast_call *calls)
{
	struct ts_ast_stmt *s = stmt_new(TS_AST_PIPELINE, loc, name, name_loc);

	if (!s) {
		ts_ast_call_destroy(calls);
		return NULL;
	}
	s->calls = calls;
	for (struct ts_ast_call *c = calls; c; c = c->next)
		s->n_calls++;
	return s;
}

struct ts_ast_stmt *ts_ast_serve(struct ts_loc loc, const char *name,
				 struct ts_loc name_loc,
				 struct ts_ast_setting *settings)
{
	struct ts_ast_stmt *s = stmt_new(TS_AST_SERVE, loc, name, name_loc);

	if (!s) {
		ts_ast_setting_destroy(settings);
		return NULL;
	}
	s->settings = settings;
	return s;
}

/* p->last makes appends O(1); it is re-found by walking when a caller
 * built p->stmts by hand. */
void ts_ast_program_add(struct ts_ast_program *p, struct ts_ast_stmt *s)
{
	if (!p || !s)
		return;
	if (!p->stmts) {
		p->stmts = s;
	} else {
		struct ts_ast_stmt *last = p->last ? p->last : p->stmts;

		while (last->next)
			last = last->next;
		last->next = s;
	}
	p->last = s;
	while (p->last->next)
		p->last = p->last->next;
	p->n_stmts++;
}

void ts_ast_value_destroy(struct ts_ast_value *v)
{
	while (v) {
		struct ts_ast_value *next = v->next;

		free(v->text);
		free(v->unit);
		free(v->str);
		ts_ast_value_destroy(v->lo);
		ts_ast_value_destroy(v->hi);
		ts_ast_value_destroy(v->items);
		ts_ast_call_destroy(v->calls);
		free(v);
		v = next;
	}
}

void ts_ast_arg_destroy(struct ts_ast_arg *a)
{
	while (a) {
		struct ts_ast_arg *next = a->next;

		free(a->name);
		ts_ast_value_destroy(a->value);
		free(a);
		a = next;
	}
}

void ts_ast_call_destroy(struct ts_ast_call *c)
{
	while (c) {
		struct ts_ast_call *next = c->next;

		free(c->name);
		ts_ast_arg_destroy(c->args);
		free(c);
		c = next;
	}
}

void ts_ast_setting_destroy(struct ts_ast_setting *s)
{
	while (s) {
		struct ts_ast_setting *next = s->next;

		free(s->name);
		ts_ast_value_destroy(s->value);
		free(s);
		s = next;
	}
}

void ts_ast_stmt_destroy(struct ts_ast_stmt *s)
{
	while (s) {
		struct ts_ast_stmt *next = s->next;

		free(s->name);
		ts_ast_value_destroy(s->value);
		ts_ast_call_destroy(s->calls);
		ts_ast_setting_destroy(s->settings);
		free(s);
		s = next;
	}
}

TS_EXPORT void ts_ast_program_destroy(struct ts_ast_program *p)
{
	if (!p)
		return;
	ts_ast_stmt_destroy(p->stmts);
	memset(p, 0, sizeof(*p));
}

TS_EXPORT const char *ts_ast_kind_name(enum ts_ast_value_kind k)
{
	switch (k) {
	case TS_AST_NUM: return "a number";
	case TS_AST_STR: return "a string";
	case TS_AST_BOOL: return "a boolean";
	case TS_AST_WORD: return "a word";
	case TS_AST_LIST: return "a list";
	case TS_AST_RANGE: return "a range";
	case TS_AST_OPS: return "operators";
	}
	return "a value";
}

static void put_loc(FILE *f, struct ts_loc l)
{
	fprintf(f, " @%d:%d-%d:%d\n", l.first_line, l.first_column,
		l.last_line, l.last_column);
}

static void put_calls(FILE *f, const struct ts_ast_call *c, int depth);

static void put_value(FILE *f, const struct ts_ast_value *v, int depth)
{
	fprintf(f, "%*s", depth * 2, "");
	switch (v->kind) {
	case TS_AST_NUM:
		fprintf(f, "num %.15g%s \"%s\"", v->num, v->is_int ? " int" : "",
			v->text);
		if (v->unit)
			fprintf(f, " unit=%s", v->unit);
		break;
	case TS_AST_STR:
		fprintf(f, "str \"%s\"", v->str);
		break;
	case TS_AST_BOOL:
		fprintf(f, "bool %s", v->boolean ? "true" : "false");
		break;
	case TS_AST_WORD:
		fprintf(f, "word %s", v->str);
		break;
	case TS_AST_LIST:
		fprintf(f, "list %zu", v->n_items);
		break;
	case TS_AST_RANGE:
		fprintf(f, "range");
		break;
	case TS_AST_OPS:
		fprintf(f, "ops %zu", v->n_calls);
		break;
	}
	put_loc(f, v->loc);
	put_calls(f, v->calls, depth + 1);
	if (v->kind == TS_AST_RANGE) {
		put_value(f, v->lo, depth + 1);
		put_value(f, v->hi, depth + 1);
	}
	for (const struct ts_ast_value *it = v->items; it; it = it->next)
		put_value(f, it, depth + 1);
}

/* Calls at depth (a pipeline's at 1, an operator chain's below its
 * value), each with its arguments. */
static void put_calls(FILE *f, const struct ts_ast_call *c, int depth)
{
	for (; c; c = c->next) {
		fprintf(f, "%*scall %s %zu", 2 * depth, "", c->name, c->n_args);
		put_loc(f, c->loc);
		for (const struct ts_ast_arg *a = c->args; a; a = a->next) {
			fprintf(f, "%*sarg %s", 2 * depth + 2, "", a->name ? a->name : "-");
			put_loc(f, a->loc);
			put_value(f, a->value, depth + 2);
		}
	}
}

static void put_stmt(FILE *f, const struct ts_ast_stmt *s)
{
	static const char *const kinds[] = {"let", "pipeline", "serve"};

	fprintf(f, "%s %s", kinds[s->kind], s->name);
	put_loc(f, s->loc);
	if (s->value)
		put_value(f, s->value, 1);
	put_calls(f, s->calls, 1);
	for (const struct ts_ast_setting *st = s->settings; st; st = st->next) {
		fprintf(f, "  set %s", st->name);
		put_loc(f, st->loc);
		put_value(f, st->value, 2);
	}
}

/* Built through a memory stream: the dump is for tests and debugging, so
 * simplicity beats speed. */
TS_EXPORT char *ts_ast_format(const struct ts_ast_program *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (const struct ts_ast_stmt *s = p ? p->stmts : NULL; s; s = s->next)
		put_stmt(f, s);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
