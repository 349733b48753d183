/*
 * ast.h - the syntax tree of a pipeline.ts program, as the parser builds it.
 *
 * The grammar (grammar/parser.y) calls only the ts_ast_* constructors
 * below; it holds no other logic. The checker (dsl/check.c) reads the tree
 * and never modifies it. Lists are singly linked, in source order.
 * Every node owns its strings and children; ts_ast_program_destroy frees it
 * all. Constructors take ownership of the child nodes passed to them.
 */
#ifndef TS_AST_H
#define TS_AST_H

#include <stdbool.h>
#include <stddef.h>
#include "error.h"

enum ts_ast_value_kind {
	TS_AST_NUM,   /* 42, 0.5, 3/4, 4 GiB, 8 batches, -1 */
	TS_AST_STR,   /* "data/train" */
	TS_AST_BOOL,  /* true, false */
	TS_AST_WORD,  /* an identifier: an enum word (rgb) or a let name */
	TS_AST_LIST,  /* [a, b, c] */
	TS_AST_RANGE, /* lo..hi */
	TS_AST_OPS,   /* operator calls joined by '|' inside a call or a
			 let, the first with parentheses: invert() | flip
			 (random_apply's ops, random_choice's alternatives) */
};

struct ts_ast_value {
	enum ts_ast_value_kind kind;
	struct ts_loc loc;
	/* TS_AST_NUM: value after applying the unit when the unit is a size
	 * (KiB, MiB, GiB, KB, MB, GB, B: num is then bytes). */
	double num;
	bool is_int;        /* written without '.', '/' or exponent */
	char *text;         /* the number as written, e.g. "3/4", "4 GiB" */
	char *unit;         /* NULL, or the unit word as written */
	/* TS_AST_STR: the unescaped contents. TS_AST_WORD: the identifier. */
	char *str;
	bool boolean;                   /* TS_AST_BOOL */
	struct ts_ast_value *lo, *hi;   /* TS_AST_RANGE */
	struct ts_ast_value *items;     /* TS_AST_LIST: first item */
	size_t n_items;
	struct ts_ast_value *next;      /* next item when inside a list */
	struct ts_ast_call *calls;      /* TS_AST_OPS: the first call */
	size_t n_calls;
};

/* One argument of an operator call: positional (name == NULL) or named. */
struct ts_ast_arg {
	char *name;
	struct ts_loc loc;       /* the whole argument */
	struct ts_loc name_loc;  /* the name, when named */
	struct ts_ast_value *value;
	struct ts_ast_arg *next;
};

/* One stage of a pipeline: name(args...). A bare name (no parentheses)
 * is allowed for operators without required parameters: `| shuffle`. */
struct ts_ast_call {
	char *name;
	struct ts_loc loc;       /* whole call, name to ')' */
	struct ts_loc name_loc;
	struct ts_ast_arg *args;
	size_t n_args;
	struct ts_ast_call *next;
};

/* key = value inside a serve block. */
struct ts_ast_setting {
	char *name;
	struct ts_loc loc;
	struct ts_loc name_loc;
	struct ts_ast_value *value;
	struct ts_ast_setting *next;
};

enum ts_ast_stmt_kind {
	TS_AST_LET,      /* let NAME = value */
	TS_AST_PIPELINE, /* pipeline NAME = call | call ... */
	TS_AST_SERVE,    /* serve NAME { key = value ... } */
};

struct ts_ast_stmt {
	enum ts_ast_stmt_kind kind;
	char *name;
	struct ts_loc loc;
	struct ts_loc name_loc;
	struct ts_ast_value *value;       /* TS_AST_LET */
	struct ts_ast_call *calls;        /* TS_AST_PIPELINE */
	size_t n_calls;
	struct ts_ast_setting *settings;  /* TS_AST_SERVE */
	struct ts_ast_stmt *next;
};

struct ts_ast_program {
	struct ts_ast_stmt *stmts;
	size_t n_stmts;
	struct ts_ast_stmt *last; /* internal to ts_ast_program_add (O(1)
				     append); NULL when the program is empty */
};

/* Constructors. Each returns NULL only when out of memory. Strings are
 * copied; child nodes are taken over. */
struct ts_ast_value *ts_ast_num(struct ts_loc loc, double num, bool is_int,
				const char *text);
struct ts_ast_value *ts_ast_num_unit(struct ts_ast_value *num,
				     const char *unit, struct ts_loc loc);
/* -num (text gets a leading '-'), and a/b as one number (text "a/b",
 * is_int false). Both take over their operands; NULL in gives NULL out. */
struct ts_ast_value *ts_ast_neg(struct ts_loc loc, struct ts_ast_value *num);
struct ts_ast_value *ts_ast_frac(struct ts_loc loc, struct ts_ast_value *a,
				 struct ts_ast_value *b);
struct ts_ast_value *ts_ast_str(struct ts_loc loc, const char *s);
struct ts_ast_value *ts_ast_bool(struct ts_loc loc, bool b);
struct ts_ast_value *ts_ast_word(struct ts_loc loc, const char *id);
struct ts_ast_value *ts_ast_list(struct ts_loc loc, struct ts_ast_value *first);
struct ts_ast_value *ts_ast_range(struct ts_loc loc, struct ts_ast_value *lo,
				  struct ts_ast_value *hi);
/* An operator chain value from its calls (taken over), in order. */
struct ts_ast_value *ts_ast_ops(struct ts_loc loc, struct ts_ast_call *first);
/* Append v to the list that starts at head; returns the head. */
struct ts_ast_value *ts_ast_value_append(struct ts_ast_value *head,
					 struct ts_ast_value *v);

struct ts_ast_arg *ts_ast_arg(struct ts_loc loc, const char *name,
			      struct ts_loc name_loc, struct ts_ast_value *v);
struct ts_ast_arg *ts_ast_arg_append(struct ts_ast_arg *head,
				     struct ts_ast_arg *a);
struct ts_ast_call *ts_ast_call(struct ts_loc loc, const char *name,
				struct ts_loc name_loc, struct ts_ast_arg *args);
struct ts_ast_call *ts_ast_call_append(struct ts_ast_call *head,
				       struct ts_ast_call *c);
struct ts_ast_setting *ts_ast_setting(struct ts_loc loc, const char *name,
				      struct ts_loc name_loc,
				      struct ts_ast_value *v);
struct ts_ast_setting *ts_ast_setting_append(struct ts_ast_setting *head,
					     struct ts_ast_setting *s);

struct ts_ast_stmt *ts_ast_let(struct ts_loc loc, const char *name,
			       struct ts_loc name_loc, struct ts_ast_value *v);
struct ts_ast_stmt *ts_ast_pipeline(struct ts_loc loc, const char *name,
				    struct ts_loc name_loc,
				    struct ts_ast_call *calls);
struct ts_ast_stmt *ts_ast_serve(struct ts_loc loc, const char *name,
				 struct ts_loc name_loc,
				 struct ts_ast_setting *settings);
void ts_ast_program_add(struct ts_ast_program *p, struct ts_ast_stmt *s);

void ts_ast_value_destroy(struct ts_ast_value *v);   /* and its next chain */
void ts_ast_arg_destroy(struct ts_ast_arg *a);       /* and its next chain */
void ts_ast_call_destroy(struct ts_ast_call *c);     /* and its next chain */
void ts_ast_setting_destroy(struct ts_ast_setting *s);
void ts_ast_stmt_destroy(struct ts_ast_stmt *s);     /* and its next chain */
void ts_ast_program_destroy(struct ts_ast_program *p);

/* A printable name for a value kind: "a number", "a string", "a list". */
const char *ts_ast_kind_name(enum ts_ast_value_kind k);

/* The tree as indented text, one node a line with its location, e.g.
 *   let mean @1:1-1:33
 *     list @1:12-1:33
 *       num 0.485 "0.485" @1:13-1:17
 * For tests and debugging. Malloc'd; NULL when out of memory. */
char *ts_ast_format(const struct ts_ast_program *p);

#endif
