/* test-diag.c - diagnostics: golden syntax errors (source in, exact text
 * out), the renderer on hand-made spans, and "did you mean" suggestions. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"

/* ---- syntax errors, as the CLI prints them ---- */

static const struct {
	const char *src;
	const char *text;
} golden[] = {
	{"let x 5",
	 "pipe.ts:1:7: error: expected '=' after 'let x'\n"
	 "    1 | let x 5\n"
	 "      |       ^\n"},
	{"pipeline train\n"
	 "    decode",
	 "pipe.ts:2:5: error: expected '=' after 'pipeline train'\n"
	 "    2 |     decode\n"
	 "      |     ^~~~~~\n"},
	{"serve t socket = 1",
	 "pipe.ts:1:9: error: expected '{' after 'serve t'\n"
	 "    1 | serve t socket = 1\n"
	 "      |         ^~~~~~\n"},
	{"serve t { socket \"x\" }",
	 "pipe.ts:1:18: error: expected '=' after 'socket'\n"
	 "    1 | serve t { socket \"x\" }\n"
	 "      |                  ^~~\n"},
	{"let x = 1\n"
	 "pipeline p = decode(rgb\n"
	 "serve p { ring = 8 batches\n"
	 "let y 2\n",
	 "pipe.ts:2:24: error: expected ')' to close the call opened at 2:20\n"
	 "    2 | pipeline p = decode(rgb\n"
	 "      |                        ^\n"
	 "pipe.ts:3:27: error: expected '}' to close the serve block opened at 3:9\n"
	 "    3 | serve p { ring = 8 batches\n"
	 "      |                           ^\n"
	 "pipe.ts:4:7: error: expected '=' after 'let y'\n"
	 "    4 | let y 2\n"
	 "      |       ^\n"},
	{"pipeline p = f(a, b\n"
	 "    | g(c)",
	 "pipe.ts:1:20: error: expected ')' to close the call opened at 1:15\n"
	 "    1 | pipeline p = f(a, b\n"
	 "      |                    ^\n"},
	/* the ')' belongs after the call's last token, not lines below */
	{"pipeline p = f(a, b\n"
	 "\n"
	 "serve p { }",
	 "pipe.ts:1:20: error: expected ')' to close the call opened at 1:15\n"
	 "    1 | pipeline p = f(a, b\n"
	 "      |                    ^\n"},
	{"pipeline p = decode(rgb, size = 3 4)",
	 "pipe.ts:1:35: error: unexpected '4'; expected ',' or ')'\n"
	 "    1 | pipeline p = decode(rgb, size = 3 4)\n"
	 "      |                                   ^\n"},
	{"let x = [1, 2 pipeline p = a",
	 "pipe.ts:1:15: error: unexpected 'pipeline'; expected ',' or ']'\n"
	 "    1 | let x = [1, 2 pipeline p = a\n"
	 "      |               ^~~~~~~~\n"},
	{"let x = [1, 2",
	 "pipe.ts:1:14: error: expected ']' to close the list opened at 1:9\n"
	 "    1 | let x = [1, 2\n"
	 "      |              ^\n"},
	{"serve t { a = 1\n"
	 "pipeline p = a",
	 "pipe.ts:1:16: error: expected '}' to close the serve block opened at 1:9\n"
	 "    1 | serve t { a = 1\n"
	 "      |                ^\n"},
	{"pipeline p = f(a, b]",
	 "pipe.ts:1:20: error: expected ')' to close the call opened at 1:15\n"
	 "    1 | pipeline p = f(a, b]\n"
	 "      |                    ^\n"},
	{"let s = \"/tmp/x\n",
	 "pipe.ts:1:9: error: unterminated string\n"
	 "    1 | let s = \"/tmp/x\n"
	 "      |         ^\n"
	 "hint: close it with '\"' on the same line\n"},
	{"let x = @",
	 "pipe.ts:1:9: error: unknown character '@'\n"
	 "    1 | let x = @\n"
	 "      |         ^\n"
	 "pipe.ts:1:10: error: unexpected end of file; expected a value\n"
	 "    1 | let x = @\n"
	 "      |          ^\n"},
	{"let x = 'a'",
	 "pipe.ts:1:9: error: unknown character \"'\"\n"
	 "    1 | let x = 'a'\n"
	 "      |         ^\n"
	 "hint: strings use double quotes: \"...\"\n"
	 "pipe.ts:1:11: error: unknown character \"'\"\n"
	 "    1 | let x = 'a'\n"
	 "      |           ^\n"
	 "hint: strings use double quotes: \"...\"\n"},
	{"let x = .5",
	 "pipe.ts:1:9: error: a number needs a digit before the point: write 0.5\n"
	 "    1 | let x = .5\n"
	 "      |         ^~\n"},
	{"let x = 1/0",
	 "pipe.ts:1:11: error: a fraction cannot divide by zero\n"
	 "    1 | let x = 1/0\n"
	 "      |           ^\n"},
	{"let x = 1e999",
	 "pipe.ts:1:9: error: number too large\n"
	 "    1 | let x = 1e999\n"
	 "      |         ^~~~~\n"},
	{"let x = \"a\\qb\"",
	 "pipe.ts:1:11: error: unknown escape '\\q' in string\n"
	 "    1 | let x = \"a\\qb\"\n"
	 "      |           ^~\n"
	 "hint: known escapes are \\\", \\\\, \\n and \\t\n"},
	{"pipeline p = a | b c",
	 "pipe.ts:1:20: error: unexpected 'c'; expected '|' before the next operator\n"
	 "    1 | pipeline p = a | b c\n"
	 "      |                    ^\n"},
	{"pipeline p = | a",
	 "pipe.ts:1:14: error: unexpected '|'; expected an operator after '='\n"
	 "    1 | pipeline p = | a\n"
	 "      |              ^\n"},
	{"let x = 1 2",
	 "pipe.ts:1:11: error: unexpected '2'; a statement starts with 'let', 'pipeline' or 'serve'\n"
	 "    1 | let x = 1 2\n"
	 "      |           ^\n"},
	{"let KB = 3",
	 "pipe.ts:1:5: error: unexpected 'KB'; expected a name after 'let'\n"
	 "    1 | let KB = 3\n"
	 "      |     ^~\n"
	 "hint: 'KB' is a unit word and cannot be a name\n"},
	{"let serve = 3",
	 "pipe.ts:1:5: error: unexpected 'serve'; expected a name after 'let'\n"
	 "    1 | let serve = 3\n"
	 "      |     ^~~~~\n"
	 "hint: 'serve' is a keyword and cannot be a name\n"},
	{"pipeline = a",
	 "pipe.ts:1:10: error: unexpected '='; expected a name after 'pipeline'\n"
	 "    1 | pipeline = a\n"
	 "      |          ^\n"},
	{"let x =",
	 "pipe.ts:1:8: error: unexpected end of file; expected a value\n"
	 "    1 | let x =\n"
	 "      |        ^\n"},
	{"let x = -",
	 "pipe.ts:1:10: error: unexpected end of file; expected a number\n"
	 "    1 | let x = -\n"
	 "      |          ^\n"},
	{"pipeline p = f(x = )",
	 "pipe.ts:1:20: error: unexpected ')'; expected a value\n"
	 "    1 | pipeline p = f(x = )\n"
	 "      |                    ^\n"
	 "hint: write a value after 'x =', or remove 'x ='\n"},
	{"let x = [1 2]",
	 "pipe.ts:1:12: error: unexpected '2'; expected ',' or ']'\n"
	 "    1 | let x = [1 2]\n"
	 "      |            ^\n"},
	{"}",
	 "pipe.ts:1:1: error: unexpected '}'; a statement starts with 'let', 'pipeline' or 'serve'\n"
	 "    1 | }\n"
	 "      | ^\n"},
	{"let x = é",
	 "pipe.ts:1:9: error: unknown character 'é'\n"
	 "    1 | let x = é\n"
	 "      |         ^\n"
	 "pipe.ts:1:10: error: unexpected end of file; expected a value\n"
	 "    1 | let x = é\n"
	 "      |          ^\n"},
	{"\tlet\tx 5",
	 "pipe.ts:1:8: error: expected '=' after 'let x'\n"
	 "    1 | \tlet\tx 5\n"
	 "      | \t   \t  ^\n"},
	{"let serve = 3",
	 "pipe.ts:1:5: error: unexpected 'serve'; expected a name after 'let'\n"
	 "    1 | let serve = 3\n"
	 "      |     ^~~~~\n"
	 "hint: 'serve' is a keyword and cannot be a name\n"},
	{"pipeline p = f(pipeline)\n"
	 "let x 1",
	 "pipe.ts:1:16: error: unexpected 'pipeline'; expected a value or ')'\n"
	 "    1 | pipeline p = f(pipeline)\n"
	 "      |                ^~~~~~~~\n"
	 "pipe.ts:2:7: error: expected '=' after 'let x'\n"
	 "    2 | let x 1\n"
	 "      |       ^\n"},
	/* a word after a number where a unit belongs */
	{"serve s { ring = 8 bananas }",
	 "pipe.ts:1:20: error: unknown unit 'bananas' for ring; use batches or samples\n"
	 "    1 | serve s { ring = 8 bananas }\n"
	 "      |                    ^~~~~~~\n"},
	{"serve s { memory = -2 gigs\n  epochs = 1 }",
	 "pipe.ts:1:23: error: unknown unit 'gigs' for memory; use B, KiB, MiB or GiB (or KB, MB, GB)\n"
	 "    1 | serve s { memory = -2 gigs\n"
	 "      |                       ^~~~\n"},
	{"serve s { epochs = 2 times }",
	 "pipe.ts:1:22: error: unknown unit 'times' for epochs; epochs takes no unit\n"
	 "    1 | serve s { epochs = 2 times }\n"
	 "      |                      ^~~~~\n"},
	{"pipeline p = f(size = 8 px)",
	 "pipe.ts:1:25: error: unknown unit 'px' for size\n"
	 "    1 | pipeline p = f(size = 8 px)\n"
	 "      |                         ^~\n"
	 "hint: units are B, KiB, MiB, GiB, KB, MB and GB for sizes, batches and samples for counts\n"},
	{"let x = 8 px",
	 "pipe.ts:1:11: error: unknown unit 'px'\n"
	 "    1 | let x = 8 px\n"
	 "      |           ^~\n"
	 "hint: units are B, KiB, MiB, GiB, KB, MB and GB for sizes, batches and samples for counts\n"},
	/* ... but a setting that lacks its '=' is still that */
	{"serve s { epochs = 2 ring 8 batches }",
	 "pipe.ts:1:27: error: expected '=' after 'ring'\n"
	 "    1 | serve s { epochs = 2 ring 8 batches }\n"
	 "      |                           ^\n"},
	/* a byte-order mark is skipped: columns start after it */
	{"\xef\xbb\xbflet x 5",
	 "pipe.ts:1:7: error: expected '=' after 'let x'\n"
	 "    1 | let x 5\n"
	 "      |       ^\n"},
	/* columns count characters; the caret is as wide as the text */
	{"let s = \"日本\" x",
	 "pipe.ts:1:14: error: unexpected 'x'; a statement starts with 'let', 'pipeline' or 'serve'\n"
	 "    1 | let s = \"日本\" x\n"
	 "      |                ^\n"},
	{"let x = ０",
	 "pipe.ts:1:9: error: unknown character '０'\n"
	 "    1 | let x = ０\n"
	 "      |         ^~\n"
	 "pipe.ts:1:10: error: unexpected end of file; expected a value\n"
	 "    1 | let x = ０\n"
	 "      |           ^\n"},
	{"let x = 1..\"a\"",
	 "pipe.ts:1:12: error: unexpected string; expected a number\n"
	 "    1 | let x = 1..\"a\"\n"
	 "      |            ^~~\n"},
};

START_TEST(test_golden)
{
	const char *src = golden[_i].src;
	struct ts_ast_program p = {0};
	struct ts_diags d;
	char *got;
	int rc;

	ts_diags_init(&d, "pipe.ts", src, strlen(src));
	rc = ts_dsl_parse(src, strlen(src), &d, &p);
	ck_assert_int_eq(rc, TS_E_SYNTAX);
	ck_assert_uint_ge(d.n_errors, 1);
	got = ts_diags_render(&d);
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(strcmp(got, golden[_i].text) == 0,
		      "source:\n%s\ngot:\n%s\nwant:\n%s", src, got,
		      golden[_i].text);
	free(got);
	ts_ast_program_destroy(&p);
	ts_diags_fini(&d);
}
END_TEST

/* Recovery: three broken statements give three errors, and the good
 * statements between them still reach the tree. */
START_TEST(test_recovery)
{
	static const char src[] =
		"let a = 1\n"
		"let b 2\n"
		"pipeline p = decode(rgb | batch(8)\n"
		"let c = [1, 2\n"
		"pipeline q = decode | batch(4)\n";
	struct ts_ast_program p = {0};
	struct ts_diags d;

	ts_diags_init(&d, "pipe.ts", src, strlen(src));
	ck_assert_int_eq(ts_dsl_parse(src, strlen(src), &d, &p), TS_E_SYNTAX);
	ck_assert_uint_eq(d.n_errors, 3);
	ck_assert_int_eq(d.items[0].loc.first_line, 2);
	ck_assert_int_eq(d.items[1].loc.first_line, 3);
	ck_assert_int_eq(d.items[1].loc.first_column, 24); /* after "rgb" */
	ck_assert_str_eq(d.items[1].msg,
			 "expected ')' to close the call opened at 3:20");
	ck_assert_int_eq(d.items[2].loc.first_line, 4);
	ck_assert_int_eq(d.items[2].loc.first_column, 14); /* after "2" */
	ck_assert_str_eq(d.items[2].msg,
			 "expected ']' to close the list opened at 4:9");
	ck_assert_uint_eq(p.n_stmts, 2);
	ck_assert_str_eq(p.stmts->name, "a");
	ck_assert_str_eq(p.stmts->next->name, "q");
	ck_assert_uint_eq(p.stmts->next->n_calls, 2);
	ts_ast_program_destroy(&p);
	ts_diags_fini(&d);
}
END_TEST

/* Garbage stops after a bounded number of errors. */
START_TEST(test_error_cap)
{
	char src[2000];
	struct ts_ast_program p = {0};
	struct ts_diags d;

	memset(src, '@', sizeof(src));
	ts_diags_init(&d, "pipe.ts", src, sizeof(src));
	ck_assert_int_eq(ts_dsl_parse(src, sizeof(src), &d, &p), TS_E_SYNTAX);
	ck_assert_uint_eq(d.n_errors, 50);
	ck_assert_uint_eq(d.n, 51);
	ck_assert_int_eq(d.items[50].sev, TS_SEV_NOTE);
	ck_assert_str_eq(d.items[50].msg, "too many errors; giving up");
	ts_diags_fini(&d);
}
END_TEST

/* Nesting deeper than the parser's stack is an error, not a crash. */
START_TEST(test_deep_nesting)
{
	enum { N = 20000 };
	char *src = malloc(N + 16);
	struct ts_ast_program p = {0};
	struct ts_diags d;

	memcpy(src, "let x = ", 8);
	memset(src + 8, '[', N);
	ts_diags_init(&d, "pipe.ts", src, N + 8);
	ck_assert_int_eq(ts_dsl_parse(src, N + 8, &d, &p), TS_E_SYNTAX);
	ck_assert_uint_eq(d.n_errors, 1);
	ck_assert_str_eq(d.items[0].msg, "the program is nested too deeply");
	ts_diags_fini(&d);
	free(src);
}
END_TEST

/* NUL bytes and other control characters are errors and print as '?'. */
START_TEST(test_control_chars)
{
	static const char src[] = "let x = 1\0let y = 2";
	struct ts_ast_program p = {0};
	struct ts_diags d;
	char *got;

	ts_diags_init(&d, "pipe.ts", src, sizeof(src) - 1);
	ck_assert_int_eq(ts_dsl_parse(src, sizeof(src) - 1, &d, &p), TS_E_SYNTAX);
	got = ts_diags_render(&d);
	ck_assert_str_eq(got,
		"pipe.ts:1:10: error: unknown character '\\x00'\n"
		"    1 | let x = 1?let y = 2\n"
		"      |          ^\n");
	ck_assert_uint_eq(p.n_stmts, 2);
	free(got);
	ts_ast_program_destroy(&p);
	ts_diags_fini(&d);
}
END_TEST

/* Inside a string, a NUL byte (it would cut a path short) and bytes that
 * are not UTF-8 (strings reach the JSON status file) are errors at their
 * column, one per string; the string's other characters count as usual. */
static const struct {
	const char *src;
	size_t len;
	const char *text;
} string_bytes[] = {
	{"let s = \"ab\0cd\"", 15,
	 "pipe.ts:1:12: error: NUL byte in string\n"
	 "    1 | let s = \"ab?cd\"\n"
	 "      |            ^\n"
	 "hint: remove it: a string cannot hold a NUL byte\n"},
	{"let s = \"\xc3\xa9\xff\xfe\"", 14,
	 "pipe.ts:1:11: error: byte 0xff in string is not UTF-8\n"
	 "    1 | let s = \"\xc3\xa9??\"\n"
	 "      |           ^\n"
	 "hint: save the file as UTF-8 (a string is UTF-8 text)\n"},
	/* overlong, a surrogate, a sequence cut short */
	{"let s = \"\xc0\x80\"", 12,
	 "pipe.ts:1:10: error: byte 0xc0 in string is not UTF-8\n"
	 "    1 | let s = \"??\"\n"
	 "      |          ^\n"
	 "hint: save the file as UTF-8 (a string is UTF-8 text)\n"},
	{"let s = \"\xe6\x97\xa5\xed\xa0\x80\"", 16,
	 "pipe.ts:1:11: error: byte 0xed in string is not UTF-8\n"
	 "    1 | let s = \"\xe6\x97\xa5???\"\n"
	 "      |            ^\n"
	 "hint: save the file as UTF-8 (a string is UTF-8 text)\n"},
	{"let s = \"a\xe6\x97\" let t = 1", 23,
	 "pipe.ts:1:11: error: byte 0xe6 in string is not UTF-8\n"
	 "    1 | let s = \"a??\" let t = 1\n"
	 "      |           ^\n"
	 "hint: save the file as UTF-8 (a string is UTF-8 text)\n"},
	/* a NUL after a backslash: the escape, then the NUL */
	{"let s = \"\\\0\"", 12,
	 "pipe.ts:1:10: error: unknown escape in string\n"
	 "    1 | let s = \"\\?\"\n"
	 "      |          ^~\n"
	 "hint: known escapes are \\\", \\\\, \\n and \\t\n"
	 "pipe.ts:1:11: error: NUL byte in string\n"
	 "    1 | let s = \"\\?\"\n"
	 "      |           ^\n"
	 "hint: remove it: a string cannot hold a NUL byte\n"},
};

START_TEST(test_string_bytes)
{
	struct ts_ast_program p = {0};
	struct ts_diags d;
	char *got;

	ts_diags_init(&d, "pipe.ts", string_bytes[_i].src, string_bytes[_i].len);
	ck_assert_int_eq(ts_dsl_parse(string_bytes[_i].src, string_bytes[_i].len, &d, &p),
			 TS_E_SYNTAX);
	got = ts_diags_render(&d);
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(strcmp(got, string_bytes[_i].text) == 0, "got:\n%s\nwant:\n%s", got,
		      string_bytes[_i].text);
	free(got);
	ts_ast_program_destroy(&p);
	ts_diags_fini(&d);
}
END_TEST

/* ---- the renderer on hand-made diagnostics ---- */

struct span {
	enum ts_severity sev;
	struct ts_loc loc;
	const char *msg, *hint;
};

static const struct {
	const char *src;
	struct span spans[3];
	const char *text;
} renders[] = {
	/* the house example: caret under the name, hint after */
	{"pipeline p =\n    decode\n    | flipp(horizontal)\n",
	 {{TS_SEV_ERROR, {3, 7, 3, 11}, "unknown operator 'flipp'",
	   "did you mean 'flip'?"}},
	 "pipe.ts:3:7: error: unknown operator 'flipp'\n"
	 "    3 |     | flipp(horizontal)\n"
	 "      |       ^~~~~\n"
	 "hint: did you mean 'flip'?\n"},
	/* severities, one after the other with no blank line */
	{"let a = 1\nlet b = 2",
	 {{TS_SEV_WARNING, {1, 9, 1, 9}, "w", NULL},
	  {TS_SEV_NOTE, {2, 5, 2, 5}, "n", NULL}},
	 "pipe.ts:1:9: warning: w\n"
	 "    1 | let a = 1\n"
	 "      |         ^\n"
	 "pipe.ts:2:5: note: n\n"
	 "    2 | let b = 2\n"
	 "      |     ^\n"},
	/* a span over two lines underlines to the end of the first */
	{"serve s {\n  a = 1\n}",
	 {{TS_SEV_ERROR, {1, 7, 3, 1}, "span", NULL}},
	 "pipe.ts:1:7: error: span\n"
	 "    1 | serve s {\n"
	 "      |       ^~~\n"},
	/* tabs stay tabs, so caret and text line up in a terminal */
	{"\tlet\tx = 1",
	 {{TS_SEV_ERROR, {1, 6, 1, 6}, "tab", NULL}},
	 "pipe.ts:1:6: error: tab\n"
	 "    1 | \tlet\tx = 1\n"
	 "      | \t   \t^\n"},
	/* CRLF line ends are not shown */
	{"let a = 1\r\nlet b = 2\r\n",
	 {{TS_SEV_ERROR, {2, 1, 2, 3}, "crlf", NULL}},
	 "pipe.ts:2:1: error: crlf\n"
	 "    2 | let b = 2\n"
	 "      | ^~~\n"},
	/* no location: header only; a line past the end: no source line */
	{"let a = 1",
	 {{TS_SEV_ERROR, {0, 0, 0, 0}, "whole file", "try again"},
	  {TS_SEV_ERROR, {9, 1, 9, 1}, "past end", NULL}},
	 "pipe.ts: error: whole file\n"
	 "hint: try again\n"
	 "pipe.ts:9:1: error: past end\n"},
	/* one past the end of a line (end of file) */
	{"let a =",
	 {{TS_SEV_ERROR, {1, 8, 1, 8}, "eof", NULL}},
	 "pipe.ts:1:8: error: eof\n"
	 "    1 | let a =\n"
	 "      |        ^\n"},
	/* columns count UTF-8 characters; a tab after one still lines up */
	{"\"é\"\tx",
	 {{TS_SEV_ERROR, {1, 5, 1, 5}, "utf8 tab", NULL}},
	 "pipe.ts:1:5: error: utf8 tab\n"
	 "    1 | \"é\"\tx\n"
	 "      |    \t^\n"},
	{"let s = \"é\" x",
	 {{TS_SEV_ERROR, {1, 13, 1, 13}, "utf8", NULL}},
	 "pipe.ts:1:13: error: utf8\n"
	 "    1 | let s = \"é\" x\n"
	 "      |             ^\n"},
	/* wide characters take two columns of the caret line, before the
	 * caret and under it; a combining mark takes none */
	{"\"日本\" flipp",
	 {{TS_SEV_ERROR, {1, 6, 1, 10}, "wide", NULL},
	  {TS_SEV_ERROR, {1, 2, 1, 3}, "under wide", NULL}},
	 "pipe.ts:1:6: error: wide\n"
	 "    1 | \"日本\" flipp\n"
	 "      |        ^~~~~\n"
	 "pipe.ts:1:2: error: under wide\n"
	 "    1 | \"日本\" flipp\n"
	 "      |  ^~~~\n"},
	{"\"e\xcc\x81\" x",
	 {{TS_SEV_ERROR, {1, 6, 1, 6}, "combining", NULL}},
	 "pipe.ts:1:6: error: combining\n"
	 "    1 | \"e\xcc\x81\" x\n"
	 "      |     ^\n"},
	/* a byte that is not UTF-8 shows as '?', one column */
	{"\"\xff\xc3\" x",
	 {{TS_SEV_ERROR, {1, 5, 1, 5}, "bad utf8", NULL}},
	 "pipe.ts:1:5: error: bad utf8\n"
	 "    1 | \"??\" x\n"
	 "      |     ^\n"},
	/* a byte-order mark is not shown and takes no column */
	{"\xef\xbb\xbflet a\nlet b",
	 {{TS_SEV_ERROR, {1, 5, 1, 5}, "bom", NULL}},
	 "pipe.ts:1:5: error: bom\n"
	 "    1 | let a\n"
	 "      |     ^\n"},
};

START_TEST(test_render)
{
	struct ts_diags d;
	char *got;

	ts_diags_init(&d, "pipe.ts", renders[_i].src, strlen(renders[_i].src));
	for (size_t k = 0; k < 3 && renders[_i].spans[k].msg; k++) {
		const struct span *s = &renders[_i].spans[k];

		ck_assert_int_eq(ts_diags_add(&d, s->sev, s->loc, s->hint, "%s",
					      s->msg), 0);
	}
	got = ts_diags_render(&d);
	ck_assert_msg(strcmp(got, renders[_i].text) == 0, "got:\n%s\nwant:\n%s",
		      got, renders[_i].text);
	free(got);
	ts_diags_fini(&d);
}
END_TEST

/* Counting: only errors count; fini empties; a line number wider than the
 * gutter widens it. */
START_TEST(test_counts_and_wide_gutter)
{
	size_t n = 123456;
	char *src = malloc(n + 8), *got;
	struct ts_diags d;

	memset(src, '\n', n);
	memcpy(src + n - 1, "\nabc", 5);
	ts_diags_init(&d, NULL, src, n + 3);
	ts_diags_add(&d, TS_SEV_NOTE, (struct ts_loc){1, 1, 1, 1}, NULL, "x");
	ck_assert_uint_eq(d.n_errors, 0);
	ts_diags_fini(&d);
	ts_diags_add(&d, TS_SEV_ERROR, (struct ts_loc){123457, 2, 123457, 3},
		     NULL, "wide %d", 1);
	ck_assert_uint_eq(d.n_errors, 1);
	got = ts_diags_render(&d);
	ck_assert_str_eq(got, "<input>:123457:2: error: wide 1\n"
			      "123457 | abc\n"
			      "       |  ^~\n");
	free(got);
	ts_diags_fini(&d);
	ck_assert_uint_eq(d.n, 0);
	ts_diags_fini(NULL);
	free(src);
}
END_TEST

/* ---- suggestions ---- */

static const char *const ops[] = {
	"folder", "list", "tar", "synthetic", "shuffle", "shard", "decode",
	"resize", "center_crop", "random_crop", "random_resized_crop", "flip",
	"color_jitter", "grayscale", "normalize", "to", "tile", "filter", "batch",
};

static const struct {
	const char *word, *want;
} suggests[] = {
	{"flipp", "flip"},
	{"filp", "flip"},               /* a swap is one edit */
	{"decod", "decode"},
	{"normalise", "normalize"},
	{"random_resize_crop", "random_resized_crop"},
	{"centre_crop", "center_crop"},
	{"batchh", "batch"},
	{"t", "to"},                    /* short words still get distance 1 */
	{"xyz", NULL},                  /* nothing close */
	{"suffle", "shuffle"},
	{"grayscal", "grayscale"},
	{"colour_jitter", "color_jitter"},
	{"flop", "flip"},
	{"fl", NULL},                   /* distance 2 > max(1, 2/3) */
	{"", NULL},
};

START_TEST(test_suggest)
{
	const char *got = ts_diag_suggest(suggests[_i].word, ops,
					  sizeof(ops) / sizeof(ops[0]));

	if (suggests[_i].want)
		ck_assert_pstr_eq(got, suggests[_i].want);
	else
		ck_assert_ptr_null(got);
}
END_TEST

START_TEST(test_suggest_edges)
{
	const char *const some[] = {NULL, "abc"};
	char longword[100];

	ck_assert_ptr_null(ts_diag_suggest("abc", NULL, 0));
	ck_assert_pstr_eq(ts_diag_suggest("abd", some, 2), "abc");
	memset(longword, 'a', sizeof(longword) - 1);
	longword[sizeof(longword) - 1] = '\0';
	ck_assert_ptr_null(ts_diag_suggest(longword, some, 2));
}
END_TEST

/* Past edit distance: a candidate that holds the word or that the word
 * holds (4 characters or more), the closest in length, a tie none. */
START_TEST(test_suggest_contains)
{
	const char *const interp[] = {"nearest", "bilinear", "bicubic", "lanczos"};
	const char *const params[] = {"size", "width", "interp", "antialias", "max_size"};
	const char *const crops[] = {"center_crop", "random_crop", "flip"};
	struct ts_diag_suggester sg;

	ck_assert_pstr_eq(ts_diag_suggest("cubic", interp, 4), "bicubic");
	ck_assert_pstr_eq(ts_diag_suggest("linear", interp, 4), "bilinear");
	ck_assert_pstr_eq(ts_diag_suggest("interpolation", params, 5), "interp");
	ck_assert_ptr_null(ts_diag_suggest("crop", crops, 3)); /* a tie */
	ck_assert_ptr_null(ts_diag_suggest("idt", params, 5)); /* "idt" in "width": too short */
	/* edit distance first: "siz" is one edit from "size" */
	ck_assert_pstr_eq(ts_diag_suggest("siz", params, 5), "size");
	/* the offered form over many candidates: the last one counts too */
	ts_diag_suggest_begin(&sg, "cubic");
	for (int i = 0; i < 1000; i++)
		ts_diag_suggest_offer(&sg, "nearest");
	ts_diag_suggest_offer(&sg, "bicubic");
	ck_assert_pstr_eq(ts_diag_suggest_end(&sg), "bicubic");
}
END_TEST

static Suite *diag_suite(void)
{
	Suite *s = suite_create("diag");
	TCase *tc = tcase_create("syntax");

	tcase_add_loop_test(tc, test_golden, 0, (int)(sizeof(golden) / sizeof(golden[0])));
	tcase_add_test(tc, test_recovery);
	tcase_add_test(tc, test_error_cap);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_control_chars);
	tcase_add_loop_test(tc, test_string_bytes, 0,
			    (int)(sizeof(string_bytes) / sizeof(string_bytes[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("render");
	tcase_add_loop_test(tc, test_render, 0, (int)(sizeof(renders) / sizeof(renders[0])));
	tcase_add_test(tc, test_counts_and_wide_gutter);
	suite_add_tcase(s, tc);
	tc = tcase_create("suggest");
	tcase_add_loop_test(tc, test_suggest, 0, (int)(sizeof(suggests) / sizeof(suggests[0])));
	tcase_add_test(tc, test_suggest_edges);
	tcase_add_test(tc, test_suggest_contains);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(diag_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
