/*
 * check_names.c - the checker's name index: every let, pipeline and serve
 * statement by (kind, name) in one hash table built once per ts_dsl_check,
 * and every let's value with let names followed, computed once for all
 * lets. Lookups were a walk over every statement, and resolving a chain a
 * walk per link: checking a file of 20,000 pipelines took 18 s. With the
 * index the whole check is linear in the size of the file, and a let chain
 * of any length resolves (no depth limit); a cycle is found as such and
 * named with its members.
 */
#include "checker.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One slot: the first statement of its kind with its name (a later one is
 * a duplicate, reported), and for a let its resolution. */
struct ts_check_entry {
	const struct ts_ast_stmt *stmt;
	const struct ts_ast_value *value; /* let: value, names followed; NULL: cycle */
	const struct ts_check_entry *enter; /* let in or before a cycle: the first
					       member its chain reaches */
	unsigned char state;              /* let resolution: 0 new, 1 on the path, 2 done */
	bool member;                      /* let: a member of its cycle */
};

/* FNV-1a over the name, the kind mixed in last. */
static size_t hash_name(enum ts_ast_stmt_kind kind, const char *name)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	h = (h ^ (uint64_t)kind) * 1099511628211ull;
	return (size_t)(h ^ (h >> 29));
}

static struct ts_check_entry *slot_of(const struct ts_check *c,
				      enum ts_ast_stmt_kind kind,
				      const char *name)
{
	if (!c->names || !name)
		return NULL;
	for (size_t i = hash_name(kind, name) & c->names_mask;;
	     i = (i + 1) & c->names_mask) {
		struct ts_check_entry *e = &c->names[i];

		if (!e->stmt)
			return e;
		if (e->stmt->kind == kind && strcmp(e->stmt->name, name) == 0)
			return e;
	}
}

static struct ts_check_entry *let_of(const struct ts_check *c, const char *name)
{
	struct ts_check_entry *e = slot_of(c, TS_AST_LET, name);

	return e && e->stmt ? e : NULL;
}

/* Resolve every let: walk each chain once, marking its lets on the path;
 * a chain ends at a value that is no let name (every let on the path
 * takes it), at a let already resolved (they take its result), or at a
 * let on the path itself (a cycle: every let on the path gets NULL and
 * remembers where its chain enters the cycle, for the message). Each let is on one
 * path only, so this is linear in the number of lets. */
static int resolve_lets(struct ts_check *c, size_t n_lets)
{
	struct ts_check_entry **path;

	if (!n_lets)
		return 0;
	path = malloc(n_lets * sizeof(*path));
	if (!path)
		return TS_E_NOMEM;
	for (const struct ts_ast_stmt *s = c->prog->stmts; s; s = s->next) {
		struct ts_check_entry *e;
		const struct ts_ast_value *v = NULL;
		const struct ts_check_entry *cycle = NULL;
		size_t n = 0;

		if (s->kind != TS_AST_LET || !s->name ||
		    !(e = let_of(c, s->name)) || e->stmt != s || e->state)
			continue;
		for (;;) {
			struct ts_check_entry *next;

			e->state = 1;
			path[n++] = e;
			v = e->stmt->value;
			if (!v || v->kind != TS_AST_WORD || !(next = let_of(c, v->str)))
				break;
			if (next->state == 1) {
				v = NULL;
				cycle = next;
				break;
			}
			if (next->state == 2) {
				v = next->value;
				cycle = next->member ? next : next->enter;
				break;
			}
			e = next;
		}
		/* The path's tail from the let found on it is the cycle (each
		 * member enters it at itself); the lets before enter it where
		 * the chain reaches it. */
		bool member = cycle && cycle->state == 1;
		while (n) {
			e = path[--n];
			e->state = 2;
			e->value = v;
			e->member = member;
			e->enter = member ? e : cycle;
			if (e == cycle)
				member = false;
		}
	}
	free(path);
	return 0;
}

int ts_check_names_build(struct ts_check *c)
{
	size_t n = 0, n_lets = 0, cap = 16;

	for (const struct ts_ast_stmt *s = c->prog->stmts; s; s = s->next)
		n++;
	while (cap < 2 * n)
		cap *= 2;
	c->names = calloc(cap, sizeof(*c->names));
	if (!c->names)
		return TS_E_NOMEM;
	c->names_mask = cap - 1;
	for (const struct ts_ast_stmt *s = c->prog->stmts; s; s = s->next) {
		struct ts_check_entry *e;

		if (!s->name)
			continue;
		e = slot_of(c, s->kind, s->name);
		if (!e->stmt) {
			e->stmt = s;
			n_lets += s->kind == TS_AST_LET;
		}
	}
	return resolve_lets(c, n_lets);
}

void ts_check_names_free(struct ts_check *c)
{
	free(c->names);
	c->names = NULL;
}

const struct ts_ast_stmt *ts_check_find(const struct ts_check *c,
					enum ts_ast_stmt_kind kind,
					const char *name)
{
	const struct ts_check_entry *e = slot_of(c, kind, name);

	return e ? e->stmt : NULL;
}

/* Follow let names: a word that names a let stands for the let's value,
 * recursively. A word that names no let is returned as is (it may be an
 * enum word such as rgb). Returns NULL for a cycle. */
const struct ts_ast_value *ts_check_resolve(const struct ts_check *c,
					    const struct ts_ast_value *v)
{
	const struct ts_check_entry *e;

	if (!v || v->kind != TS_AST_WORD || !(e = let_of(c, v->str)))
		return v;
	return e->value;
}

/* The members of a cycle from start on, back to it: "a -> b -> a", cut
 * short after 8 members ("a -> ... "). */
static void cycle_text(const struct ts_check *c, const struct ts_check_entry *start,
		       char *buf, size_t size)
{
	const struct ts_check_entry *e = start;
	size_t len = 0;
	int members = 0;

	buf[0] = '\0';
	do {
		int k = members == 8
			? snprintf(buf + len, size - len, " -> ...")
			: snprintf(buf + len, size - len, "%s%s",
				   members ? " -> " : "", e->stmt->name);
		if (k < 0 || (size_t)k >= size - len || members++ == 8)
			return;
		len += (size_t)k;
		e = let_of(c, e->stmt->value->str);
	} while (e && e != start);
	snprintf(buf + len, size - len, " -> %s", start->stmt->name);
}

void ts_check_cycle_err(struct ts_check *c, struct ts_loc loc, const char *name)
{
	const struct ts_check_entry *e = let_of(c, name);
	const char *hint = "a let may not refer to itself, directly or not";
	char text[160];

	if (!e || !e->enter) {
		ts_check_err(c, loc, NULL, "let '%s' has no value", name);
		return;
	}
	if (e->member) {
		cycle_text(c, e, text, sizeof(text));
		ts_check_err(c, loc, hint, "let '%s' refers to itself: %s", name, text);
	} else {
		cycle_text(c, e->enter, text, sizeof(text));
		ts_check_err(c, loc, hint, "let '%s' leads to a cycle of lets: %s",
		    name, text);
	}
}
