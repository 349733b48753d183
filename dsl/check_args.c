/*
 * check_args.c - argument binding: a call's positional and named
 * arguments matched to its operator's parameters (and a plugin's own
 * parameters kept as text), every problem reported.
 */
#include "checker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "'resize' takes: size, width, ..." (or "takes no parameters") into
 * hint, cut short where it does not fit. */
static void params_hint(const struct ts_opdef *def, char *hint, size_t n)
{
	if (def->n_params == 0) {
		snprintf(hint, n, "'%s' takes no parameters", def->name);
		return;
	}
	size_t len = (size_t)snprintf(hint, n, "'%s' takes:", def->name);
	for (size_t j = 0; j < def->n_params && len < n; j++)
		len += (size_t)snprintf(hint + len, n - len, "%s %s", j ? "," : "",
					def->params[j].name);
}

/* A number where a parameter name goes (flip(2 = 0.5)): the grammar
 * takes NUMBER '=' value for views(2 = ops), so every other operator
 * meets it here. No name is a number: say so rather than "unknown
 * parameter" with the nearest name by spelling ('2' is one edit from
 * 'p'). Returns whether it reported. */
static bool is_count_name(const char *name)
{
	return name[0] >= '0' && name[0] <= '9';
}

static bool count_as_name(struct ts_check *c, const struct ts_opdef *def,
			  const struct ts_ast_arg *a, const char *hint)
{
	char h[192];
	if (!is_count_name(a->name))
		return false;
	if (!hint) {
		params_hint(def, h, sizeof(h));
		hint = h;
	}
	ts_check_err(c, a->name_loc, hint,
	    "'%s' is not a parameter name: a count before '=' is only views(...) syntax",
	    a->name);
	return true;
}

/* Match a call's arguments to def's parameters: positional in order,
 * named by name. Every problem is reported; returns -1 if any. */
int ts_check_bind_args(struct ts_check *c, const struct ts_opdef *def,
		     const struct ts_ast_call *call, struct ts_check_val *vals)
{
	size_t n_pos = 0, pos = 0, n;
	bool named_seen = false, extra_seen = false;
	int rc = 0;
	const char *names[TS_CHECK_MAX_PARAMS];

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
				ts_check_err(c, a->loc, "give positional arguments first",
				    "positional argument after a named one");
				rc = -1;
				continue;
			}
			if (pos >= n_pos && extra_seen) {
				/* the first extra one is reported; the others
				 * would say the same again */
				rc = -1;
				continue;
			}
			if (pos >= n_pos) {
				char hint[192];
				const char *named = NULL;
				extra_seen = true;
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
				ts_check_err(c, a->loc, hint,
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
			if (count_as_name(c, def, a, NULL)) {
				rc = -1;
				continue;
			}
			p = ts_registry_param(def, a->name);
			if (!p) {
				char hint[192];
				const char *s = ts_diag_suggest(a->name, names,
								def->n_params);
				if (s)
					snprintf(hint, sizeof(hint),
						 "did you mean '%s'?", s);
				else
					params_hint(def, hint, sizeof(hint));
				ts_check_err(c, a->name_loc, hint,
				    "unknown parameter '%s' for '%s'", a->name,
				    def->name);
				rc = -1;
				continue;
			}
			idx = (size_t)(p - def->params);
		}
		if (vals[idx].given && p->alias) {
			char hint[128];
			snprintf(hint, sizeof(hint), "give %s once, as %s = ...", p->name, p->name);
			ts_check_err(c, a->loc, hint, "parameter '%s' given twice ('%s' is "
				     "another name for it)", p->name, p->alias);
			rc = -1;
			continue;
		}
		if (vals[idx].given) {
			ts_check_err(c, a->loc, NULL, "parameter '%s' given twice", p->name);
			rc = -1;
			continue;
		}
		/* its messages name the parameter as written (interp, not
		 * interpolation) */
		struct ts_param as_written = *p;
		if (a->name && p->alias && strcmp(a->name, p->alias) == 0)
			as_written.name = p->alias;
		if (ts_check_convert(c, "parameter", &as_written, a->value, &vals[idx]) < 0) {
			/* keep the default so shape inference goes on, and
			 * mark it given so "missing" is not reported too */
			rc = -1;
			vals[idx] = (struct ts_check_val){0};
			ts_check_defaults(p, 1, &vals[idx]);
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
			/* normalize's example only where it is normalize
			 * (perspective's corners got mean and std) */
			if (p->type == TS_PT_NUMLIST && !strcmp(def->name, "normalize"))
				snprintf(hint, sizeof(hint),
					 "add %s, e.g. %s(mean = [0.5, 0.5, 0.5], std = [0.5, 0.5, 0.5])",
					 p->name, def->name);
			ts_check_err(c, call->loc, hint, "'%s' needs parameter '%s'",
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
	ts_check_defaults(def->params, def->n_params, vals);
	return rc;
}

const struct ts_check_val *ts_check_arg(const struct ts_opdef *def, struct ts_check_val *vals,
			   const char *name)
{
	const struct ts_param *p = ts_registry_param(def, name);
	return &vals[p - def->params];
}

struct ts_loc ts_check_arg_loc(const struct ts_opdef *def, struct ts_check_val *vals,
			    const struct ts_ast_call *call, const char *name)
{
	const struct ts_param *p = name ? ts_registry_param(def, name) : NULL;
	if (p && vals[p - def->params].given && vals[p - def->params].loc.first_line)
		return vals[p - def->params].loc;
	return call->loc;
}

/* A plugin's own parameter as the text it receives: strings without
 * quotes, words as written, booleans as true/false, numbers in decimal
 * (sizes in bytes). Writes NULL and reports for lists and ranges. */
static const char *plugin_text(struct ts_check *c, const struct ts_ast_arg *a,
			       char *buf, size_t n)
{
	const struct ts_ast_value *v = ts_check_resolve(c, a->value);

	if (!v) {
		ts_check_cycle_err(c, a->value->loc, a->value->str);
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
		ts_check_err(c, a->value->loc,
		    "plugin parameters are passed as text: give one value per name",
		    "plugin parameter '%s' must be a number, string, word or boolean, got %s",
		    a->name, ts_ast_kind_name(v->kind));
		return NULL;
	}
}

/* The op's size_h/size_w from `size` (N or [h, w]) and an optional
 * positional `width`. */
int ts_check_arg_size(struct ts_check *c, const struct ts_opdef *def,
		      struct ts_check_val *vals, int *h, int *w)
{
	const struct ts_check_val *size = ts_check_arg(def, vals, "size");
	const struct ts_check_val *width = ts_check_arg(def, vals, "width");
	*h = size->h;
	*w = size->w;
	if (width->given) {
		if (size->num < 0) {
			ts_check_err(c, width->loc, "give either [h, w] or h, w",
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
void ts_check_mean_std_counts(struct ts_check *c, const char *who,
			    const struct ts_check_val *mean, const struct ts_check_val *std,
			    const struct ts_shape *in)
{
	const struct ts_check_val *at = std;
	char hint[192];

	if (in->encoded) {
		ts_check_err(c, at->loc, "give one mean and one std per channel",
		    "%s has %d mean value%s but %d std value%s", who,
		    mean->n_nums, ts_registry_plural(mean->n_nums), std->n_nums,
		    ts_registry_plural(std->n_nums));
		return;
	}
	if (std->n_nums == in->c)
		at = mean;
	snprintf(hint, sizeof(hint), "give %d value%s to both mean and std",
		 in->c, ts_registry_plural(in->c));
	ts_check_err(c, at->loc, hint,
	    "%s has %d mean value%s and %d std value%s, but the image has %d channel%s",
	    who, mean->n_nums, ts_registry_plural(mean->n_nums), std->n_nums,
	    ts_registry_plural(std->n_nums), in->c, ts_registry_plural(in->c));
}

/* plugin("path.so", key = value, ...): path (positional or named) and the
 * reserved timeout_ms and memory bind like any operator's parameters; every other
 * named argument is the plugin's own and goes into op->plugin as text.
 * Reports every problem; op->plugin is built whenever memory allows (so
 * checking goes on), and -1 is returned after any error. */
int ts_check_bind_plugin(struct ts_check *c, const struct ts_opdef *def,
		       const struct ts_ast_call *call, struct ts_check_val *vals,
		       struct ts_op *op)
{
	const struct ts_param *path_p = ts_registry_param(def, "path");
	const struct ts_param *tmo_p = ts_registry_param(def, "timeout_ms");
	const struct ts_param *mem_p = ts_registry_param(def, "memory");
	struct ts_check_val *path = &vals[path_p - def->params];
	struct ts_check_val *tmo = &vals[tmo_p - def->params];
	struct ts_check_val *mem = &vals[mem_p - def->params];
	const struct ts_ast_arg *a;
	size_t n_own = 0, bytes = 0;
	bool named_seen = false;
	int rc = 0, pos = 0;
	char num[64];

	for (a = call->args; a; a = a->next) {
		const struct ts_param *p = NULL;
		struct ts_check_val *v = NULL;
		if (!a->name) {
			if (named_seen) {
				ts_check_err(c, a->loc, "give positional arguments first",
				    "positional argument after a named one");
				rc = -1;
				continue;
			}
			if (pos++ > 0) {
				ts_check_err(c, a->loc, "give the plugin's parameters by name, e.g. threshold = 0.5",
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
			} else if (strcmp(a->name, "memory") == 0) {
				p = mem_p;
				v = mem;
			}
		}
		if (p) {
			if (v->given) {
				ts_check_err(c, a->loc, NULL, "parameter '%s' given twice", p->name);
				rc = -1;
			} else if (ts_check_convert(c, "parameter", p, a->value, v) < 0) {
				*v = (struct ts_check_val){ .given = true, .loc = a->loc,
						   .num = p->def_num };
				rc = -1;
			}
			continue;
		}
		/* one of the plugin's own */
		if (count_as_name(c, def, a,
		    "give the plugin's parameters by name, e.g. threshold = 0.5")) {
			rc = -1;
			continue;
		}
		for (const struct ts_ast_arg *b = call->args; b != a; b = b->next)
			if (b->name && strcmp(b->name, a->name) == 0) {
				ts_check_err(c, a->loc, NULL, "parameter '%s' given twice", a->name);
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
		ts_check_err(c, call->loc, "write plugin(\"name.so\", ...)",
		    "'plugin' needs parameter 'path'");
		rc = -1;
	} else if (path->str && !path->str[0]) {
		ts_check_err(c, path->loc, "name the plugin's .so file",
		    "parameter 'path' of 'plugin' is empty");
		rc = -1;
	}
	ts_check_defaults(def->params, def->n_params, vals);

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
	pl->memory = (uint64_t)mem->num;
	for (a = call->args; a; a = a->next) {
		if (!a->name || strcmp(a->name, "path") == 0 ||
		    strcmp(a->name, "timeout_ms") == 0 || strcmp(a->name, "memory") == 0 ||
		    is_count_name(a->name)) /* reported above */
			continue;
		const struct ts_ast_value *v = ts_check_resolve(c, a->value);
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
