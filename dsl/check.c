/*
 * check.c - the checker's entry, ts_dsl_check: duplicate names, which
 * pipeline to lower, then every pipeline (check_pipeline.c) and its serve
 * block (check_serve.c) with the memory budget (memory.c), every error
 * reported (not only the first) into a ts_diags, sorted by position. The
 * errors, statement lookup and let resolution every part shares are here.
 */
#include "checker.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memory.h"
#include "util.h"

/* Every error goes through here so that running out of memory while
 * reporting is remembered rather than lost. */
void ts_check_err(struct ts_check *c, struct ts_loc loc, const char *hint,
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

/* The statement of one kind whose name is closest to word, for "did you
 * mean" hints: every statement of the file is a candidate. */
const char *ts_check_suggest_stmt(const struct ts_ast_program *p,
				  enum ts_ast_stmt_kind kind, const char *word)
{
	struct ts_diag_suggester sg;
	ts_diag_suggest_begin(&sg, word);
	for (const struct ts_ast_stmt *s = p->stmts; s; s = s->next)
		if (s->kind == kind && s->name)
			ts_diag_suggest_offer(&sg, s->name);
	return ts_diag_suggest_end(&sg);
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
	/* The default socket lives in a folder only this user can write, so
	 * no other user can bind it first or plant files next to it:
	 * $XDG_RUNTIME_DIR/tsrun/, else /tmp/tsrun-UID/ (tsrun run makes it,
	 * 0700, and refuses one it does not own). */
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n = xdg && xdg[0] == '/'
		? asprintf(&plan->socket, "%s/tsrun/%s.sock", xdg, st->name ? st->name : "")
		: asprintf(&plan->socket, "/tmp/tsrun-%u/%s.sock", (unsigned)geteuid(),
			   st->name ? st->name : "");
	if (n < 0)
		plan->socket = NULL;
	plan->socket_private = true;
	if (!plan->name || !plan->file || !plan->source.base_dir || !plan->socket) {
		ts_plan_destroy(plan);
		return TS_E_NOMEM;
	}
	*out = plan;
	return 0;
}

/* Budget: refuse a plan that needs more than its serve block allows, with
 * the breakdown so the user sees which part to shrink. */
static void check_budget(struct ts_check *c, const struct ts_plan *plan,
			 struct ts_loc loc)
{
	char msg[256], hint[192];

	if (ts_plan_over_budget(plan, msg, sizeof(msg), hint, sizeof(hint)))
		ts_check_err(c, loc, hint, "%s", msg);
}

/* plan->n_served and served_names: the pipelines the program serves, in
 * order, each once ("train, val"). Returns 0 or TS_E_NOMEM. */
static int list_served(const struct ts_check *c, struct ts_plan *plan)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n = 0;

	if (!f)
		return TS_E_NOMEM;
	for (const struct ts_ast_stmt *s = c->prog->stmts; s; s = s->next) {
		if (s->kind != TS_AST_SERVE || !s->name ||
		    ts_check_find(c, TS_AST_SERVE, s->name) != s)
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

static bool diag_before(const struct ts_diag *a, const struct ts_diag *b)
{
	return a->loc.first_line < b->loc.first_line ||
	       (a->loc.first_line == b->loc.first_line &&
		a->loc.first_column < b->loc.first_column);
}

/* Stable sort of diagnostics [from, n) by position, so errors found in
 * different passes still read top to bottom: a merge sort (insertion
 * sort was quadratic in the number of errors), or nothing when they are
 * in order already, as they mostly are. Without memory for the merge,
 * insertion sort. */
static void sort_diags(struct ts_diags *d, size_t from)
{
	size_t n = d->n - from, i;
	struct ts_diag *a, *tmp;

	if (n < 2)
		return; /* items may be NULL */
	a = d->items + from;
	for (i = 1; i < n && !diag_before(&a[i], &a[i - 1]); i++)
		;
	if (i >= n)
		return;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		for (i = 1; i < n; i++) {
			struct ts_diag x = a[i];
			size_t j = i;
			while (j > 0 && diag_before(&x, &a[j - 1])) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
		return;
	}
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n - w; lo += 2 * w) {
			size_t mid = lo + w, hi = mid + w < n ? mid + w : n;
			size_t l = lo, r = mid, k = lo;

			while (l < mid && r < hi)
				tmp[k++] = diag_before(&a[r], &a[l]) ? a[r++] : a[l++];
			while (l < mid)
				tmp[k++] = a[l++];
			while (r < hi)
				tmp[k++] = a[r++];
			memcpy(a + lo, tmp + lo, (hi - lo) * sizeof(*a));
		}
	}
	free(tmp);
}

/* Duplicate let and pipeline names, each at its second definition. */
static void check_duplicates(struct ts_check *c)
{
	char hint[192];
	for (const struct ts_ast_stmt *s = c->prog->stmts; s; s = s->next) {
		if (s->kind == TS_AST_SERVE || !s->name)
			continue;
		const struct ts_ast_stmt *prev = ts_check_find(c, s->kind, s->name);
		if (prev != s) {
			snprintf(hint, sizeof(hint), "first defined at line %d",
				 prev->name_loc.first_line);
			ts_check_err(c, s->name_loc, hint, "duplicate %s name '%s'",
			    s->kind == TS_AST_LET ? "let" : "pipeline", s->name);
		}
	}
}

/* The pipeline to lower: the one named, else the first served, else the
 * first; NULL after reporting. */
static const struct ts_ast_stmt *choose_pipeline(struct ts_check *c, const char *pipeline)
{
	const struct ts_ast_program *prog = c->prog;
	const struct ts_ast_stmt *chosen = NULL;
	char hint[192];
	if (pipeline) {
		chosen = ts_check_find(c, TS_AST_PIPELINE, pipeline);
		if (!chosen) {
			const char *s = ts_check_suggest_stmt(prog, TS_AST_PIPELINE, pipeline);
			if (s)
				snprintf(hint, sizeof(hint), "did you mean '%s'?", s);
			ts_check_err(c, (struct ts_loc){0, 0, 0, 0}, s ? hint : NULL,
			    "no pipeline named '%s'", pipeline);
		}
		return chosen;
	}
	for (const struct ts_ast_stmt *s = prog->stmts; s && !chosen; s = s->next)
		if (s->kind == TS_AST_SERVE && s->name)
			chosen = ts_check_find(c, TS_AST_PIPELINE, s->name);
	for (const struct ts_ast_stmt *s = prog->stmts; s && !chosen; s = s->next)
		if (s->kind == TS_AST_PIPELINE)
			chosen = s;
	if (!chosen)
		ts_check_err(c, prog->stmts ? (struct ts_loc){1, 1, 1, 1} : (struct ts_loc){0, 0, 0, 0},
		    "write `pipeline NAME = source(...) | ...`", "no pipeline in this file");
	return chosen;
}

/* A serve block's settings checked against a plan of nothing (its
 * pipeline is undefined, or it serves one a second time). */
static int check_serve_alone(struct ts_check *c, const struct ts_ast_stmt *s,
			     const char *file, const char *base_dir)
{
	struct ts_plan *dummy = NULL;
	struct ts_loc ml;
	bool hm;
	int rc = new_plan(s, file, base_dir, &dummy);
	if (rc < 0)
		return rc;
	dummy->batch = 1;
	rc = ts_check_serve(c, s, dummy, &ml, &hm);
	ts_plan_destroy(dummy);
	return rc < 0 ? rc : 0;
}

/* A serve statement of its own: served twice, or of an undefined
 * pipeline; a pipeline's first serve block is checked with it. */
static int check_serve_stmt(struct ts_check *c, const struct ts_ast_stmt *s,
			    const char *file, const char *base_dir)
{
	const struct ts_ast_stmt *p = ts_check_find(c, TS_AST_PIPELINE, s->name);
	const struct ts_ast_stmt *first_serve = ts_check_find(c, TS_AST_SERVE, s->name);
	char hint[192];
	if (first_serve != s) {
		snprintf(hint, sizeof(hint), "first served at line %d",
			 first_serve->name_loc.first_line);
		ts_check_err(c, s->name_loc, hint, "pipeline '%s' is served twice", s->name);
	}
	if (!p) {
		const char *sug = ts_check_suggest_stmt(c->prog, TS_AST_PIPELINE, s->name);
		if (sug)
			snprintf(hint, sizeof(hint), "did you mean '%s'?", sug);
		else
			snprintf(hint, sizeof(hint), "define it with `pipeline %s = ...`", s->name);
		ts_check_err(c, s->name_loc, hint, "serve of undefined pipeline '%s'", s->name);
		return check_serve_alone(c, s, file, base_dir); /* still its settings */
	}
	return first_serve != s ? check_serve_alone(c, s, file, base_dir) : 0;
}

/* One pipeline statement, its serve block and its estimate into *out. */
static int check_pipeline_stmt(struct ts_check *c, const struct ts_ast_stmt *s,
			       const char *file, const char *base_dir, struct ts_plan **out)
{
	struct ts_plan *plan = NULL;
	bool size_reported = false;
	char hint[192];
	int rc = new_plan(s, file, base_dir, &plan);
	if (rc < 0)
		return rc;
	rc = ts_check_pipeline(c, s, plan, &size_reported);
	if (rc < 0)
		goto fail;
	ts_check_serve_defaults(plan);
	const struct ts_ast_stmt *serve = ts_check_find(c, TS_AST_SERVE, s->name);
	if (serve) {
		struct ts_loc mem_loc = serve->name_loc;
		bool has_memory;
		plan->served = true;
		rc = ts_check_serve(c, serve, plan, &mem_loc, &has_memory);
		if (rc < 0)
			goto fail;
		if ((!plan->height || !plan->width) && !size_reported) {
			snprintf(hint, sizeof(hint),
				 "add center_crop, resize([h, w]) or random_resized_crop to pipeline '%s'",
				 s->name);
			ts_check_err(c, serve->name_loc, hint,
			    "cannot serve '%s': its samples have no fixed size", s->name);
		}
		ts_plan_estimate(plan, 0);
		check_budget(c, plan, mem_loc);
	} else {
		ts_plan_estimate(plan, 0);
	}
	*out = plan;
	return 0;
fail:
	ts_plan_destroy(plan);
	return rc;
}

TS_EXPORT int ts_dsl_check(const struct ts_ast_program *prog,
			   const char *pipeline, const char *file,
			   const char *base_dir, struct ts_diags *d,
			   struct ts_plan **out)
{
	struct ts_check c = { .prog = prog, .d = d };
	size_t first = d->n, errors_before = d->n_errors;
	struct ts_plan *result = NULL;
	int rc = 0;

	if ((rc = ts_check_names_build(&c)) < 0)
		goto out;
	check_duplicates(&c);
	const struct ts_ast_stmt *chosen = choose_pipeline(&c, pipeline);
	/* Every pipeline, then its serve block. */
	for (const struct ts_ast_stmt *s = prog->stmts; s; s = s->next) {
		if (s->kind == TS_AST_SERVE && s->name) {
			if ((rc = check_serve_stmt(&c, s, file, base_dir)) < 0)
				goto out;
			continue;
		}
		if (s->kind != TS_AST_PIPELINE || ts_check_find(&c, TS_AST_PIPELINE, s->name) != s)
			continue;
		struct ts_plan *plan = NULL;
		if ((rc = check_pipeline_stmt(&c, s, file, base_dir, &plan)) < 0)
			goto out;
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
	    (rc = list_served(&c, result)) < 0)
		goto out;
	if (d->n_errors > errors_before || !result) {
		rc = TS_E_CHECK;
		goto out;
	}
	*out = result;
	result = NULL;
out:
	ts_check_names_free(&c);
	ts_plan_destroy(result);
	return rc;
}
