/*
 * parse_state.h - the state of one parse, shared by the lexer
 * (grammar/lexer.l), the parser (grammar/parser.y) and dsl/parse.c: the
 * chains under construction, the recent tokens and open brackets kept for
 * error messages, and the lexer's pseudo token kinds. The grammar's
 * prologue includes it; it is not installed.
 */
#ifndef TS_PARSE_STATE_H
#define TS_PARSE_STATE_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

#include "ast.h"
#include "diag.h"

/* Chains under construction: the tail makes every append O(1). */
struct ts_dsl_values { struct ts_ast_value *head, *tail; };
struct ts_dsl_args { struct ts_ast_arg *head, *tail; };
struct ts_dsl_calls { struct ts_ast_call *head, *tail; };
struct ts_dsl_settings { struct ts_ast_setting *head, *tail; };

/* A token the lexer handed to the parser (kept for error messages). */
struct ts_dsl_tok {
	int kind;
	struct ts_loc loc;
	size_t off, len;
};

/* An open '(', '[' or '{'. */
struct ts_dsl_bracket {
	char ch;
	struct ts_loc loc;
};

#define TS_DSL_MAX_BRACKETS 64
#define TS_DSL_MAX_ERRORS 50

/* State shared by the lexer, the parser and dsl/parse.c for one parse. */
struct ts_parse_state {
	struct ts_diags *diags;
	struct ts_ast_program *prog;
	const char *src;
	size_t len;
	size_t pos;             /* byte offset after the current token */
	int line, col;          /* position after the current token */
	bool nomem;
	bool stop;              /* too many errors: the lexer ends the input */
	size_t n_errors;        /* errors this parse added */
	struct ts_dsl_tok hist[6];   /* hist[0]: the latest token */
	struct ts_loc last;          /* the last thing scanned, for EOF */
	size_t suspect_off;          /* 1 + offset of a keyword that was out
					of place at the last error; 0: none */
	struct ts_dsl_bracket br[TS_DSL_MAX_BRACKETS];
	size_t depth;                /* may exceed TS_DSL_MAX_BRACKETS */
	bool has_prev_top;           /* innermost bracket before hist[0] */
	struct ts_dsl_bracket prev_top;
	jmp_buf *fatal;              /* where a flex fatal error returns to */
};

/* Lexer-only pseudo kinds for ts_dsl_parse_token (never reach the parser). */
enum {
	TS_DSL_LEX_UNKNOWN = -100,   /* a character outside the language */
	TS_DSL_LEX_BARE_POINT,       /* ".5" */
	TS_DSL_LEX_UNTERMINATED,     /* a string without its closing quote */
	TS_DSL_LEX_DOTS,             /* "..." or more: a range written wrong */
};

#endif
