/*
 * parser.y - the grammar of pipeline.ts programs.
 *
 *   program  := { 'let' NAME '=' value
 *              | 'pipeline' NAME '=' call { '|' call }
 *              | 'serve' NAME '{' { NAME '=' value [',' | ';'] } '}' }
 *   call     := NAME [ '(' [ arg { ',' arg } [','] ] ')' ]
 *   arg      := value | NAME '=' value | NUMBER '=' value
 *               (a number as the name: a group of views(), `2 = ops`)
 *   value    := num | ['-'] NUMBER UNIT | num '..' num | STRING | 'true' | 'false'
 *             | NAME | '[' [ value { ',' value } [','] ] ']' | chain
 *   chain    := NAME '(' [ arg { ',' arg } [','] ] ')' { '|' call }
 *               (operators as a value: random_apply's ops, random_choice's
 *               alternatives; a bare NAME alone stays a word. The first
 *               call has its parentheses, so that `decode(rgb | ...` is
 *               still a missing ')' after rgb)
 *   num      := ['-'] NUMBER [ '/' NUMBER ]
 *
 * Newlines are not significant. Actions only call the ts_ast_* constructors
 * (dsl/ast.h) or dsl/parse.c's builders; messages for syntax errors are
 * worded in dsl/parse.c. parse.error is `custom`, bison's hook for the data
 * `detailed` prints (the unexpected token, the expected ones): dsl/parse.c
 * words them, e.g. "expected ')' to close the call opened at 7:24". On an
 * error the parser drops tokens up to the next 'let', 'pipeline' or 'serve'
 * and goes on, so one run reports every broken statement.
 */
%define api.pure full
%define api.prefix {ts_dsl_yy}
%define api.token.prefix {TS_TOK_}
%define api.location.type {struct ts_loc}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {yyscan_t scanner}
%parse-param {struct ts_parse_state *st}

%code requires {
#include "parse_state.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif
}

%code provides {
/*
 * Bridges between the generated code and dsl/parse.c. All take the state
 * of one parse and are not thread-safe on it (one parse, one thread).
 *
 * ts_dsl_parse_advance: move the position over len bytes of input and set
 *   *lloc to their span (called for every match, via YY_USER_ACTION).
 * ts_dsl_parse_token: build the semantic value of a token in *lval (owned
 *   by the parser from then on) and return its kind, or a negative number
 *   for a character that was reported and skipped.
 * ts_dsl_parse_syntax_error: report the parser's syntax error, worded from
 *   the unexpected token's name and the names of the expected ones.
 * ts_dsl_parse_frac: the fraction a/b at loc, b written at b_loc (a zero
 *   denominator is reported there).
 * ts_dsl_parse_fatal: flex's fatal errors (out of memory) unwind to
 *   ts_dsl_parse() instead of exiting.
 */
int ts_dsl_yylex(TS_DSL_YYSTYPE *lval, TS_DSL_YYLTYPE *lloc, yyscan_t scanner);
int ts_dsl_yyparse(yyscan_t scanner, struct ts_parse_state *st);
void ts_dsl_parse_advance(struct ts_parse_state *st, TS_DSL_YYLTYPE *lloc,
			  size_t len);
int ts_dsl_parse_token(struct ts_parse_state *st, int kind,
		       TS_DSL_YYSTYPE *lval, TS_DSL_YYLTYPE *lloc,
		       const char *text, size_t len);
int ts_dsl_parse_syntax_error(struct ts_parse_state *st, const char *unexpected,
			      struct ts_loc loc, const char *const *expected,
			      int n_expected);
struct ts_ast_value *ts_dsl_parse_frac(struct ts_parse_state *st, struct ts_loc loc,
				       struct ts_ast_value *a, struct ts_ast_value *b,
				       struct ts_loc b_loc);
void ts_dsl_parse_fatal(yyscan_t scanner, const char *msg)
	__attribute__((noreturn));
}

%code {
#include <stdlib.h>

static void ts_dsl_yyerror(struct ts_loc *loc, yyscan_t scanner,
			   struct ts_parse_state *st, const char *msg);

/* Out of memory in a constructor: stop with yyparse() == 2. */
#define NEED(x) do { if (!(x)) { st->nomem = true; YYNOMEM; } } while (0)
}

%union {
	char *str;
	struct ts_ast_value *value;
	struct ts_ast_arg *arg;
	struct ts_ast_call *call;
	struct ts_ast_setting *setting;
	struct ts_ast_stmt *stmt;
	struct ts_dsl_values values;
	struct ts_dsl_args args;
	struct ts_dsl_calls calls;
	struct ts_dsl_settings settings;
}

%token LET "let" PIPELINE "pipeline" SERVE "serve" TRUE "true" FALSE "false"
%token DOTDOT ".."
%token <str> IDENT "identifier" STRING "string" UNIT "unit"
%token <value> NUMBER "number"

%type <value> value num
%type <values> items
%type <arg> arg
%type <args> args
%type <call> call
%type <calls> calls chain
%type <call> pcall
%type <setting> setting
%type <settings> settings
%type <stmt> stmt

%destructor { free($$); } <str>
%destructor { ts_ast_value_destroy($$); } <value>
%destructor { ts_ast_value_destroy($$.head); } <values>
%destructor { ts_ast_arg_destroy($$); } <arg>
%destructor { ts_ast_arg_destroy($$.head); } <args>
%destructor { ts_ast_call_destroy($$); } <call>
%destructor { ts_ast_call_destroy($$.head); } <calls>
%destructor { ts_ast_setting_destroy($$); } <setting>
%destructor { ts_ast_setting_destroy($$.head); } <settings>
%destructor { ts_ast_stmt_destroy($$); } <stmt>

%%

program
	: %empty
	| program stmt          { ts_ast_program_add(st->prog, $2); }
	| program error
	;

/* A statement keyword ends error recovery: errors after it are new. */
kw_let: "let" { yyerrok; } ;
kw_pipeline: "pipeline" { yyerrok; } ;
kw_serve: "serve" { yyerrok; } ;

stmt
	: kw_let IDENT '=' value
		{ $$ = ts_ast_let(@$, $2, @2, $4); free($2); NEED($$); }
	| kw_pipeline IDENT '=' calls
		{ $$ = ts_ast_pipeline(@$, $2, @2, $4.head); free($2); NEED($$); }
	| kw_serve IDENT '{' settings '}'
		{ $$ = ts_ast_serve(@$, $2, @2, $4.head); free($2); NEED($$); }
	;

calls
	: call                  { $$.head = $$.tail = $1; }
	| calls '|' call        { ts_ast_call_append($1.tail, $3); $$.head = $1.head; $$.tail = $3; }
	;

call
	: IDENT                 { $$ = ts_ast_call(@$, $1, @1, NULL); free($1); NEED($$); }
	| pcall
	;

pcall
	: IDENT '(' ')'         { $$ = ts_ast_call(@$, $1, @1, NULL); free($1); NEED($$); }
	| IDENT '(' args ')'    { $$ = ts_ast_call(@$, $1, @1, $3.head); free($1); NEED($$); }
	| IDENT '(' args ',' ')'
		{ $$ = ts_ast_call(@$, $1, @1, $3.head); free($1); NEED($$); }
	;

args
	: arg                   { $$.head = $$.tail = $1; }
	| args ',' arg          { ts_ast_arg_append($1.tail, $3); $$.head = $1.head; $$.tail = $3; }
	;

arg
	: value                 { NEED($$ = ts_ast_arg(@$, NULL, (struct ts_loc){0, 0, 0, 0}, $1)); }
	| IDENT '=' value       { $$ = ts_ast_arg(@$, $1, @1, $3); free($1); NEED($$); }
	| NUMBER '=' value
		{ $$ = ts_ast_arg(@$, $1->text, @1, $3); ts_ast_value_destroy($1); NEED($$); }
	;

settings
	: %empty                { $$.head = $$.tail = NULL; }
	| settings setting sep
		{ $$.head = $1.head ? $1.head : $2; ts_ast_setting_append($1.tail, $2); $$.tail = $2; }
	;

sep: %empty | ',' | ';' ;

setting
	: IDENT '=' value       { $$ = ts_ast_setting(@$, $1, @1, $3); free($1); NEED($$); }
	;

value
	: num
	| NUMBER UNIT           { $$ = ts_ast_num_unit($1, $2, @$); free($2); NEED($$); }
	| '-' NUMBER UNIT
		{ $$ = ts_ast_neg(@$, ts_ast_num_unit($2, $3, @$)); free($3); NEED($$); }
	| num ".." num          { NEED($$ = ts_ast_range(@$, $1, $3)); }
	| STRING                { $$ = ts_ast_str(@$, $1); free($1); NEED($$); }
	| "true"                { NEED($$ = ts_ast_bool(@$, true)); }
	| "false"               { NEED($$ = ts_ast_bool(@$, false)); }
	| IDENT                 { $$ = ts_ast_word(@$, $1); free($1); NEED($$); }
	| '[' ']'               { NEED($$ = ts_ast_list(@$, NULL)); }
	| '[' items ']'         { NEED($$ = ts_ast_list(@$, $2.head)); }
	| '[' items ',' ']'     { NEED($$ = ts_ast_list(@$, $2.head)); }
	| chain                 { NEED($$ = ts_ast_ops(@$, $1.head)); }
	;

chain
	: pcall                 { $$.head = $$.tail = $1; }
	| chain '|' call        { ts_ast_call_append($1.tail, $3); $$.head = $1.head; $$.tail = $3; }
	;

items
	: value                 { $$.head = $$.tail = $1; }
	| items ',' value       { ts_ast_value_append($1.tail, $3); $$.head = $1.head; $$.tail = $3; }
	;

num
	: NUMBER
	| '-' NUMBER            { NEED($$ = ts_ast_neg(@$, $2)); }
	| NUMBER '/' NUMBER     { NEED($$ = ts_dsl_parse_frac(st, @$, $1, $3, @3)); }
	| '-' NUMBER '/' NUMBER
		{ NEED($$ = ts_ast_neg(@$, ts_dsl_parse_frac(st, @$, $2, $4, @4))); }
	;

%%

/* Hands the parser's view of a syntax error (the unexpected token and what
 * would have been accepted) to dsl/parse.c, which words the message. */
static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner,
				 struct ts_parse_state *st)
{
	yysymbol_kind_t exp[YYNTOKENS];
	const char *names[YYNTOKENS];
	int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);

	for (int i = 0; i < n; i++)
		names[i] = yysymbol_name(exp[i]);
	return ts_dsl_parse_syntax_error(st, yysymbol_name(yypcontext_token(ctx)),
					 *yypcontext_location(ctx), names, n < 0 ? 0 : n);
}

/* Bison calls this only when its stack is exhausted (very deep nesting) or
 * an action ran out of memory; ts_dsl_parse() reports both from yyparse()'s
 * result. Syntax errors go through the function above. */
static void ts_dsl_yyerror(struct ts_loc *loc, yyscan_t scanner,
			   struct ts_parse_state *st, const char *msg)
{
}
