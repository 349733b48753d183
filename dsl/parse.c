/*
 * parse.c - ts_dsl_parse(), and the lexer and parser support that needs
 * more than a grammar action: token values, locations, lexical errors and
 * the wording of syntax errors.
 *
 * Messages say what was found and what would have been accepted, in the
 * user's terms ("a value", "expected ')' to close the call opened at 7:24"),
 * not the grammar's.
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"
#include "registry.h"
#include "util.h"
#include "parser.h"
#define YYSTYPE TS_DSL_YYSTYPE
#define YYLTYPE TS_DSL_YYLTYPE
#include "lexer.h"

/* Longest token text quoted in a message. */
#define QUOTE_MAX 32

/* Every syntax error goes through here: counts it, and after
 * TS_DSL_MAX_ERRORS stops the scan so garbage input cannot flood d. */
static void __attribute__((format(printf, 4, 5)))
report(struct ts_parse_state *st, struct ts_loc loc, const char *hint,
       const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (st->stop)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ts_diags_add(st->diags, TS_SEV_ERROR, loc, hint, "%s", msg) < 0) {
		st->nomem = st->stop = true;
		return;
	}
	if (++st->n_errors >= TS_DSL_MAX_ERRORS) {
		ts_diags_add(st->diags, TS_SEV_NOTE, loc, NULL,
			     "too many errors; giving up");
		st->stop = true;
	}
}

/* Locations count characters, not bytes: a UTF-8 sequence is one column,
 * as is a byte that is not UTF-8 (ts_diag_utf8_next decides, so that the
 * renderer counts alike). A tab is one column. */
void ts_dsl_parse_advance(struct ts_parse_state *st, TS_DSL_YYLTYPE *lloc,
			  size_t len)
{
	const char *p = st->src + st->pos;
	int line = st->line, col = st->col;
	size_t k;
	long cp;

	lloc->first_line = lloc->last_line = line;
	lloc->first_column = lloc->last_column = col;
	for (size_t i = 0; i < len; i += k) {
		k = ts_diag_utf8_next(p + i, len - i, &cp);
		lloc->last_line = line;
		lloc->last_column = col;
		if (p[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	st->line = line;
	st->col = col;
	st->pos += len;
}

/* Unescape the body of a string literal into a new string, reporting
 * unknown escapes (kept as written), NUL bytes (a path would end there)
 * and bytes that are not UTF-8 (the status file and tsrun graph carry
 * strings as JSON and text: they must be UTF-8) at their column. base is
 * the location of the body's first character; columns count characters
 * as ts_dsl_parse_advance does. */
static char *unescape(struct ts_parse_state *st, const char *s, size_t len,
		      struct ts_loc base)
{
	static const char known[] = "known escapes are \\\", \\\\, \\n and \\t";
	char *out = malloc(len + 1), *o = out;
	int col = base.first_column;
	bool bad = false; /* one NUL or UTF-8 error per string is enough */
	size_t k;
	long cp;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += k, col++) {
		struct ts_loc l = {base.first_line, col, base.first_line, col};

		k = ts_diag_utf8_next(s + i, len - i, &cp);
		if (s[i] == '\0') {
			if (!bad)
				report(st, l, "remove it: a string cannot hold a NUL byte",
				       "NUL byte in string");
			bad = true;
			continue;
		}
		if (cp < 0) {
			if (!bad)
				report(st, l, "save the file as UTF-8 (a string is UTF-8 text)",
				       "byte 0x%02x in string is not UTF-8",
				       (unsigned char)s[i]);
			bad = true;
			continue;
		}
		if (s[i] != '\\' || i + 1 == len) {
			memcpy(o, s + i, k);
			o += k;
			continue;
		}
		char e = s[i + 1];
		k = 2;
		switch (e) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		default:
			l.last_column = col + 1;
			if (e >= 0x20 && e < 0x7f)
				report(st, l, known, "unknown escape '\\%c' in string", e);
			else
				report(st, l, known, "unknown escape in string");
			/* The backslash kept; what follows is read as text
			 * (a NUL or a byte that is not UTF-8 reported as such). */
			*o++ = '\\';
			k = 1;
			break;
		}
		col += k == 2;
	}
	*o = '\0';
	return out;
}

/* Printable form of a character the language does not know. */
static void show_char(char *buf, size_t size, const char *text, size_t len)
{
	unsigned char c = (unsigned char)text[0];

	if (len > 1)
		snprintf(buf, size, "'%.*s'", (int)len, text);
	else if (c == '\'')
		snprintf(buf, size, "\"'\"");
	else if (c >= 0x21 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "'\\x%02x'", c);
}

static const char *unknown_hint(char c)
{
	switch (c) {
	case '\'': return "strings use double quotes: \"...\"";
	case ':': return "settings and named arguments use '=': name = value";
	case '.': return "a range is written lo..hi, with two dots";
	case '*': case '+': return "values are literals; the language has no arithmetic";
	default: return NULL;
	}
}

static bool is_closer(int k)
{
	return k == ')' || k == ']' || k == '}';
}

static char opener_of(int k)
{
	return k == ')' ? '(' : k == ']' ? '[' : '{';
}

/* Track open brackets so a syntax error can name the one left open. The
 * statement keywords reset the stack: brackets never span statements, and
 * this keeps it right after error recovery skipped a closer. */
static void track_bracket(struct ts_parse_state *st, int kind,
			  struct ts_loc loc)
{
	st->has_prev_top = st->depth > 0 && st->depth <= TS_DSL_MAX_BRACKETS;
	if (st->has_prev_top)
		st->prev_top = st->br[st->depth - 1];
	if (kind == TS_TOK_LET || kind == TS_TOK_PIPELINE ||
	    kind == TS_TOK_SERVE) {
		st->depth = 0;
	} else if (kind == '(' || kind == '[' || kind == '{') {
		if (st->depth < TS_DSL_MAX_BRACKETS)
			st->br[st->depth] = (struct ts_dsl_bracket){(char)kind, loc};
		st->depth++;
	} else if (is_closer(kind) && st->depth > 0) {
		if (st->depth > TS_DSL_MAX_BRACKETS ||
		    st->br[st->depth - 1].ch == opener_of(kind))
			st->depth--;
	}
}

static void remember(struct ts_parse_state *st, int kind, struct ts_loc loc,
		     size_t len)
{
	memmove(&st->hist[1], &st->hist[0],
		sizeof(st->hist) - sizeof(st->hist[0]));
	st->hist[0] = (struct ts_dsl_tok){kind, loc, st->pos - len, len};
}

/* Build the semantic value of one token and return its kind; lexical
 * errors are reported here and replaced by the nearest valid token, or
 * skipped (negative result), so that the parse goes on. */
int ts_dsl_parse_token(struct ts_parse_state *st, int kind,
		       TS_DSL_YYSTYPE *lval, TS_DSL_YYLTYPE *lloc,
		       const char *text, size_t len)
{
	char buf[16];

	if (st->stop)
		kind = TS_TOK_YYEOF;
	switch (kind) {
	case TS_TOK_YYEOF:
		if (st->last.first_line > 0)
			*lloc = (struct ts_loc){st->last.last_line,
						st->last.last_column + 1,
						st->last.last_line,
						st->last.last_column + 1};
		else
			*lloc = (struct ts_loc){1, 1, 1, 1};
		len = 0;
		break;
	case TS_TOK_IDENT:
	case TS_TOK_UNIT:
		lval->str = strndup(text, len);
		if (!lval->str)
			goto nomem;
		break;
	case TS_DSL_LEX_BARE_POINT:
	case TS_TOK_NUMBER: {
		char num[64];
		double v;

		if (kind == TS_DSL_LEX_BARE_POINT) {
			snprintf(num, sizeof(num), "0%.*s", (int)len, text);
			report(st, *lloc, NULL,
			       "a number needs a digit before the point: write %s",
			       num);
			kind = TS_TOK_NUMBER;
		} else {
			snprintf(num, sizeof(num), "%.*s", (int)len, text);
		}
		v = strtod(num, NULL);
		if (len >= sizeof(num) - 1 || !isfinite(v)) {
			report(st, *lloc, NULL, "number too large");
			v = 0;
		}
		lval->value = ts_ast_num(*lloc, v, strcspn(num, ".eE") == strlen(num),
					 num);
		if (!lval->value)
			goto nomem;
		break;
	}
	case TS_DSL_LEX_UNTERMINATED:
	case TS_TOK_STRING: {
		struct ts_loc body = *lloc;
		size_t n = kind == TS_TOK_STRING ? len - 2 : len - 1;

		if (kind == TS_DSL_LEX_UNTERMINATED) {
			struct ts_loc quote = {lloc->first_line, lloc->first_column,
					       lloc->first_line, lloc->first_column};

			report(st, quote, "close it with '\"' on the same line",
			       "unterminated string");
			kind = TS_TOK_STRING;
		}
		body.first_column++;
		lval->str = unescape(st, text + 1, n, body);
		if (!lval->str)
			goto nomem;
		break;
	}
	case TS_DSL_LEX_DOTS:
		report(st, *lloc, "write lo..hi, for example 3/4..4/3",
		       "a range takes two dots, not %zu", len);
		kind = TS_TOK_DOTDOT;
		break;
	case TS_DSL_LEX_UNKNOWN:
		show_char(buf, sizeof(buf), text, len);
		report(st, *lloc, unknown_hint(text[0]), "unknown character %s",
		       buf);
		st->last = *lloc;
		return -1;
	default:
		break;
	}
	track_bracket(st, kind, *lloc);
	remember(st, kind, *lloc, len);
	if (kind != TS_TOK_YYEOF)
		st->last = *lloc;
	return kind;
nomem:
	st->nomem = st->stop = true;
	return TS_TOK_YYEOF;
}

struct ts_ast_value *ts_dsl_parse_frac(struct ts_parse_state *st, struct ts_loc loc,
				       struct ts_ast_value *a, struct ts_ast_value *b,
				       struct ts_loc b_loc)
{
	if (b && b->num == 0)
		report(st, b_loc, NULL, "a fraction cannot divide by zero");
	return ts_ast_frac(loc, a, b);
}

void ts_dsl_parse_fatal(yyscan_t scanner, const char *msg)
{
	struct ts_parse_state *st = ts_dsl_yyget_extra(scanner);

	(void)msg;
	st->nomem = true;
	longjmp(*st->fatal, 1);
}

/* ---- wording of syntax errors ---- */

static bool is_keyword(int k)
{
	return k == TS_TOK_LET || k == TS_TOK_PIPELINE || k == TS_TOK_SERVE;
}

static bool has(const char *const *exp, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(exp[i], name) == 0)
			return true;
	return false;
}

/* The source text of a remembered token, quoted and shortened. */
static void tok_text(const struct ts_parse_state *st,
		     const struct ts_dsl_tok *t, char *buf, size_t size)
{
	if (t->len > QUOTE_MAX)
		snprintf(buf, size, "'%.*s...'", QUOTE_MAX - 3, st->src + t->off);
	else
		snprintf(buf, size, "'%.*s'", (int)t->len, st->src + t->off);
}

static const char *value_starts[] = {
	"number", "string", "identifier", "true", "false", "'['", "'-'",
};
static const char *number_tails[] = {"unit", "'/'", "..", };
static const char *statement_starts[] = {"let", "pipeline", "serve"};

static bool in_set(const char *name, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, set[i]) == 0)
			return true;
	return false;
}

/* "A", "A or B", "A, B or C" from the expected tokens, in the user's terms:
 * value starts collapse to "a value", statement keywords to "a new
 * statement", and number tails (unit, '/', '..') show only when nothing
 * else would. */
static void expected_phrase(const char *const *exp, int n, char *buf,
			    size_t size)
{
	const char *items[32];
	size_t k = 0;
	bool value = has(exp, n, "number") && has(exp, n, "string");
	bool stmt = false, tails = false;

	for (int i = 0; i < n && k < TS_ARRAY_LEN(items) - 2; i++) {
		if (!strcmp(exp[i], "end of file") || !strcmp(exp[i], "error") ||
		    !strcmp(exp[i], "invalid token"))
			continue;
		if (value && in_set(exp[i], value_starts, TS_ARRAY_LEN(value_starts)))
			continue;
		if (!strcmp(exp[i], "'-'") && has(exp, n, "number"))
			continue; /* "a number" covers negative ones */
		if (in_set(exp[i], statement_starts, TS_ARRAY_LEN(statement_starts))) {
			stmt = true;
			continue;
		}
		if (in_set(exp[i], number_tails, TS_ARRAY_LEN(number_tails))) {
			tails = true;
			continue;
		}
		items[k++] = !strcmp(exp[i], "number") ? "a number" :
			     !strcmp(exp[i], "string") ? "a string" :
			     !strcmp(exp[i], "identifier") ? "a name" : exp[i];
	}
	if (value)
		items[k++] = "a value";
	if (stmt)
		items[k++] = "a new statement";
	if (k == 0 && tails)
		items[k++] = "a unit";
	/* Closers read best last: "expected ',' or ')'". */
	for (size_t i = 0, moved = 0; i + moved < k; i++) {
		const char *it = items[i];

		if (strlen(it) == 3 && it[0] == '\'' && is_closer(it[1])) {
			memmove(&items[i], &items[i + 1],
				(k - i - 1) * sizeof(items[0]));
			items[k - 1] = it;
			moved++;
			i--;
		}
	}
	buf[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		const char *sep = i == 0 ? "" : i + 1 == k ? " or " : ", ";
		size_t used = strlen(buf);

		snprintf(buf + used, size - used, "%s%s", sep, items[i]);
	}
}

static const char *construct_of(char opener)
{
	return opener == '(' ? "call" : opener == '[' ? "list" : "serve block";
}

static const char *name_hint(const struct ts_parse_state *st, char *buf,
			     size_t size)
{
	const struct ts_dsl_tok *la = &st->hist[0];
	char t[QUOTE_MAX + 8];

	tok_text(st, la, t, sizeof(t));
	if (la->kind == TS_TOK_UNIT)
		snprintf(buf, size, "%s is a unit word and cannot be a name", t);
	else if (is_keyword(la->kind) || la->kind == TS_TOK_TRUE ||
		 la->kind == TS_TOK_FALSE)
		snprintf(buf, size, "%s is a keyword and cannot be a name", t);
	else
		return NULL;
	return buf;
}

#define UNITS_HINT \
	"units are B, KiB, MiB, GiB, KB, MB and GB for sizes, batches and " \
	"samples for counts"

static bool starts_value(int k)
{
	return k == TS_TOK_NUMBER || k == TS_TOK_STRING || k == TS_TOK_TRUE ||
	       k == TS_TOK_FALSE || k == '[' || k == '-';
}

/* Copy the text of remembered token t into buf (size QUOTE_MAX + 1);
 * false when it does not fit. */
static bool tok_copy(const struct ts_parse_state *st,
		     const struct ts_dsl_tok *t, char *buf)
{
	if (t->len > QUOTE_MAX)
		return false;
	memcpy(buf, st->src + t->off, t->len);
	buf[t->len] = '\0';
	return true;
}

/* `ring = 8 bananas`: a word right after a number on the same line, where
 * the grammar wanted a unit or could not go on, is a unit the language
 * does not know. hist[u] is the word, hist[u + 1] the number; the name of
 * the setting or parameter, when there is one, stands before the '='.
 * Inside a serve block the setting's row says which units it takes.
 * Returns whether it reported. */
static bool unknown_unit(struct ts_parse_state *st, size_t u)
{
	const size_t n = TS_ARRAY_LEN(st->hist);
	const struct ts_dsl_tok *w = &st->hist[u], *num = &st->hist[u + 1];
	const struct ts_param *p = NULL;
	char unit[QUOTE_MAX + 1], name[QUOTE_MAX + 1] = "";
	bool serve = st->has_prev_top && st->prev_top.ch == '{';
	size_t at = u + 2;

	if (w->kind != TS_TOK_IDENT || num->kind != TS_TOK_NUMBER ||
	    num->loc.last_line != w->loc.first_line || !tok_copy(st, w, unit))
		return false;
	/* `epochs = 2 ring 8 batches`: a setting whose '=' is missing */
	if (serve && ts_registry_param(NULL, unit))
		return false;
	if (at < n && st->hist[at].kind == '-')
		at++;
	/* the name of a setting or named argument; a let's is no context */
	if (st->has_prev_top && at + 1 < n && st->hist[at].kind == '=' &&
	    st->hist[at + 1].kind == TS_TOK_IDENT)
		tok_copy(st, &st->hist[at + 1], name);
	if (serve && name[0])
		p = ts_registry_param(NULL, name);
	if (p && p->type == TS_PT_COUNT)
		report(st, w->loc, NULL,
		       "unknown unit '%s' for %s; use batches or samples", unit,
		       name);
	else if (p && (p->type == TS_PT_SIZE || p->type == TS_PT_SIZE_AUTO))
		report(st, w->loc, NULL,
		       "unknown unit '%s' for %s; use B, KiB, MiB or GiB (or KB, MB, GB)",
		       unit, name);
	else if (p)
		report(st, w->loc, NULL,
		       "unknown unit '%s' for %s; %s takes no unit", unit, name,
		       name);
	else if (name[0])
		report(st, w->loc, UNITS_HINT, "unknown unit '%s' for %s", unit,
		       name);
	else
		report(st, w->loc, UNITS_HINT, "unknown unit '%s'", unit);
	return true;
}

/* One syntax error being worded: the parser's view of it and the last
 * three tokens (la the lookahead, p1 and p2 before it). */
struct syntax {
	struct ts_parse_state *st;
	struct ts_loc loc;
	const char *const *exp;   /* what the parser expected, n of them */
	int n;
	const struct ts_dsl_tok *la, *p1, *p2;
	char what[QUOTE_MAX + 16]; /* the unexpected token, as shown */
	char hint[96];
};

/* A bracket left open: the user ended the construct without closing. */
static bool explain_unclosed(struct syntax *x)
{
	struct ts_parse_state *st = x->st;
	const struct ts_dsl_tok *la = x->la, *p1 = x->p1;
	if (!st->has_prev_top)
		return false;
	char closer = st->prev_top.ch == '(' ? ')' : st->prev_top.ch == '[' ? ']' : '}';
	char cq[4] = {'\'', closer, '\'', '\0'};
	bool ended = la->kind == TS_TOK_YYEOF || (la->kind == '|' && closer != '}') ||
		     (is_closer(la->kind) && la->kind != closer) ||
		     la->loc.first_line > p1->loc.last_line;
	if (!has(x->exp, x->n, cq) || !ended)
		return false;
	/* The closer belongs right after the construct's last token, not at
	 * whatever comes next (maybe lines below); a wrong closer is
	 * reported where it stands. */
	struct ts_loc at = x->loc;
	const char *h = NULL;
	if (!is_closer(la->kind) && p1->loc.first_line > 0)
		at = (struct ts_loc){p1->loc.last_line, p1->loc.last_column + 1,
				     p1->loc.last_line, p1->loc.last_column + 1};
	/* `random_apply(invert | equalize)`: an operator chain as a value
	 * starts with a call in parentheses (a bare first name is a word, so
	 * that `decode(rgb | ...` stays a missing ')'); say so when the word
	 * is an operator's name. */
	if (la->kind == '|' && p1->kind == TS_TOK_IDENT && p1->len < QUOTE_MAX) {
		char w[QUOTE_MAX];
		memcpy(w, st->src + p1->off, p1->len);
		w[p1->len] = '\0';
		if (ts_registry_find(w)) {
			snprintf(x->hint, sizeof(x->hint),
				 "operators as a value start with a call: write '%s() | ...'", w);
			h = x->hint;
		}
	}
	report(st, at, h, "expected '%c' to close the %s opened at %d:%d", closer,
	       construct_of(st->prev_top.ch), st->prev_top.loc.first_line,
	       st->prev_top.loc.first_column);
	return true;
}

/* let x 5 / pipeline p call / serve s socket = ... */
static bool explain_missing_eq(struct syntax *x)
{
	struct ts_parse_state *st = x->st;
	const struct ts_dsl_tok *p1 = x->p1, *p2 = x->p2;
	char name[QUOTE_MAX + 8];
	if (x->n != 1 || p1->kind != TS_TOK_IDENT ||
	    (strcmp(x->exp[0], "'='") && strcmp(x->exp[0], "'{'")))
		return false;
	tok_text(st, p1, name, sizeof(name));
	if (p2->kind == TS_TOK_LET || p2->kind == TS_TOK_PIPELINE || p2->kind == TS_TOK_SERVE)
		report(st, x->loc, NULL, "expected %s after '%.*s %.*s'", x->exp[0],
		       (int)p2->len, st->src + p2->off, (int)p1->len, st->src + p1->off);
	else
		report(st, x->loc, NULL, "expected %s after %s", x->exp[0], name);
	return true;
}

/* A name was wanted: say which kind. */
static bool explain_name_wanted(struct syntax *x)
{
	struct ts_parse_state *st = x->st;
	const struct ts_dsl_tok *p1 = x->p1;
	if (x->n != 1 || strcmp(x->exp[0], "identifier"))
		return false;
	const char *h = name_hint(st, x->hint, sizeof(x->hint));
	if (is_keyword(p1->kind))
		report(st, x->loc, h, "unexpected %s; expected a name after '%.*s'", x->what,
		       (int)p1->len, st->src + p1->off);
	else if (p1->kind == '|' || p1->kind == '=')
		report(st, x->loc, h, "unexpected %s; expected an operator after '%c'", x->what,
		       p1->kind);
	else
		report(st, x->loc, h, "unexpected %s; expected a name", x->what);
	return true;
}

/* Two stages side by side: the '|' is missing. */
static bool explain_missing_pipe(struct syntax *x)
{
	if (!has(x->exp, x->n, "'|'") || x->la->kind != TS_TOK_IDENT)
		return false;
	report(x->st, x->loc, NULL, "unexpected %s; expected '|' before the next operator",
	       x->what);
	return true;
}

/* A statement ended and something other than a statement follows. */
static bool explain_not_a_statement(struct syntax *x)
{
	static const char *const stmts[] = { "let", "pipeline", "serve" };
	const struct ts_dsl_tok *la = x->la;
	if (!has(x->exp, x->n, "let") || !has(x->exp, x->n, "pipeline") ||
	    has(x->exp, x->n, "'|'") || has(x->exp, x->n, "'='"))
		return false;
	const char *near = NULL;
	if (la->kind == TS_TOK_IDENT) {
		char word[QUOTE_MAX];
		snprintf(word, sizeof(word), "%.*s", (int)la->len, x->st->src + la->off);
		near = ts_diag_suggest(word, stmts, TS_ARRAY_LEN(stmts));
	}
	if (near)
		snprintf(x->hint, sizeof(x->hint), "did you mean '%s'?", near);
	report(x->st, x->loc, near ? x->hint : NULL,
	       "unexpected %s; a statement starts with 'let', 'pipeline' or 'serve'", x->what);
	return true;
}

/* What bison would say, with a hint for a missing value or a bad name
 * before '=' in a call. */
static bool explain_expected(struct syntax *x)
{
	struct ts_parse_state *st = x->st;
	const struct ts_dsl_tok *la = x->la, *p1 = x->p1, *p2 = x->p2;
	char phrase[192];
	expected_phrase(x->exp, x->n, phrase, sizeof(phrase));
	const char *h = NULL;
	bool in_call = st->has_prev_top && st->prev_top.ch == '(';
	/* `views(2 = )`, `flip(p = )`: the value after a name is missing. */
	if (in_call && la->kind == ')' && p1->kind == '=' &&
	    (p2->kind == TS_TOK_IDENT || p2->kind == TS_TOK_NUMBER) && p2->len < QUOTE_MAX) {
		snprintf(x->hint, sizeof(x->hint),
			 "write a value after '%.*s =', or remove '%.*s ='", (int)p2->len,
			 st->src + p2->off, (int)p2->len, st->src + p2->off);
		h = x->hint;
	}
	/* `views(-1 = ...)`, `views("2" = ...)`, `f(a = 2 = ...)`: something
	 * other than a name before '='. */
	if (in_call && la->kind == '=' && (p1->kind == TS_TOK_NUMBER || p1->kind == TS_TOK_STRING))
		h = "only a parameter's name, or in views(...) a view count from 1 to 32, "
		    "stands before '='";
	if (phrase[0])
		report(st, x->loc, h, "unexpected %s; expected %s", x->what, phrase);
	else
		report(st, x->loc, h, "unexpected %s", x->what);
	return true;
}

/* The explanations, most specific first; the last always reports. */
static bool (*const explainers[])(struct syntax *) = {
	explain_unclosed, explain_missing_eq, explain_name_wanted, explain_missing_pipe,
	explain_not_a_statement, explain_expected,
};

int ts_dsl_parse_syntax_error(struct ts_parse_state *st, const char *unexpected,
			      struct ts_loc loc, const char *const *exp, int n)
{
	struct syntax x = { .st = st, .loc = loc, .exp = exp, .n = n,
			    .la = &st->hist[0], .p1 = &st->hist[1], .p2 = &st->hist[2] };

	/* A keyword used as a name (`let serve = 1`, `f(pipeline)`) restarts
	 * a statement during recovery; its own follow-up error is noise. */
	if (st->suspect_off && (x.p1->off + 1 == st->suspect_off ||
				x.p2->off + 1 == st->suspect_off)) {
		st->suspect_off = 0;
		return 0;
	}
	st->suspect_off = 0;
	if (is_keyword(x.la->kind) && x.la->loc.first_line == x.p1->loc.last_line &&
	    x.p1->kind != TS_TOK_YYEOF)
		st->suspect_off = x.la->off + 1;

	if (!strcmp(unexpected, "end of file"))
		snprintf(x.what, sizeof(x.what), "end of file");
	else if (!strcmp(unexpected, "string"))
		snprintf(x.what, sizeof(x.what), "string");
	else
		tok_text(st, x.la, x.what, sizeof(x.what));

	/* `memory = 8 bananas }`: the word after the number was taken for
	 * the next setting's name; `f(x = 8 px)`: a unit was wanted. */
	if ((n == 1 && !strcmp(exp[0], "'='") && !starts_value(x.la->kind) &&
	     unknown_unit(st, 1)) ||
	    (has(exp, n, "unit") && unknown_unit(st, 0)))
		return 0;
	for (size_t i = 0; i < TS_ARRAY_LEN(explainers); i++)
		if (explainers[i](&x))
			break;
	return 0;
}

TS_EXPORT int ts_dsl_parse(const char *src, size_t len, struct ts_diags *d,
		 struct ts_ast_program *prog)
{
	struct ts_parse_state st = {
		.diags = d, .prog = prog, .src = src ? src : "",
		.len = src ? len : 0, .line = 1, .col = 1,
	};
	jmp_buf fatal;
	yyscan_t scanner;
	volatile int rc = 0;
	int r;

	/* A byte-order mark is no character of the program; columns start
	 * after it (the renderer skips it alike). */
	if (st.len >= 3 && memcmp(st.src, TS_DIAG_BOM, 3) == 0) {
		st.src += 3;
		st.len -= 3;
	}
	if (ts_dsl_yylex_init_extra(&st, &scanner) != 0)
		return TS_E_NOMEM;
	st.fatal = &fatal;
	if (setjmp(fatal) != 0) {
		rc = TS_E_NOMEM;
		goto out;
	}
	ts_dsl_yy_scan_bytes(st.src, (int)st.len, scanner);
	r = ts_dsl_yyparse(scanner, &st);
	/* yyparse() == 2 without our nomem flag: bison's stack is full. */
	if (r == 2 && !st.nomem)
		report(&st, st.hist[0].loc, "split deeply nested lists",
		       "the program is nested too deeply");
	if (st.nomem)
		rc = TS_E_NOMEM;
	else if (st.n_errors > 0 || r != 0)
		rc = TS_E_SYNTAX;
out:
	ts_dsl_yylex_destroy(scanner);
	return rc;
}
