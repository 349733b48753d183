/* test-parse.c - the lexer and parser on valid programs: the tree they
 * build, field by field and location by location. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"

/* Parse src; fail the test on any diagnostic. The caller destroys *p. */
static void parse_ok(const char *src, struct ts_ast_program *p)
{
	struct ts_diags d;
	int rc;

	memset(p, 0, sizeof(*p));
	ts_diags_init(&d, "t.ts", src, strlen(src));
	rc = ts_dsl_parse(src, strlen(src), &d, p);
	if (rc != 0) {
		char *r = ts_diags_render(&d);
		ck_abort_msg("parse failed (%d):\n%s", rc, r);
		free(r);
	}
	ck_assert_uint_eq(d.n, 0);
	ts_diags_fini(&d);
}

static char *dump(const char *src)
{
	struct ts_ast_program p;
	char *s;

	parse_ok(src, &p);
	s = ts_ast_format(&p);
	ck_assert_ptr_nonnull(s);
	ts_ast_program_destroy(&p);
	return s;
}

static void assert_loc(struct ts_loc l, int fl, int fc, int ll, int lc)
{
	ck_assert_int_eq(l.first_line, fl);
	ck_assert_int_eq(l.first_column, fc);
	ck_assert_int_eq(l.last_line, ll);
	ck_assert_int_eq(l.last_column, lc);
}

/* ---- whole programs, compared as tree dumps ---- */

static const struct {
	const char *src;
	const char *tree;
} trees[] = {
	{"let x = 42",
	 "let x @1:1-1:10\n"
	 "  num 42 int \"42\" @1:9-1:10\n"},
	{"let a = 0.5 let b = 1e-3 let c = -1 let d = 3/4 let e = -3/4",
	 "let a @1:1-1:11\n  num 0.5 \"0.5\" @1:9-1:11\n"
	 "let b @1:13-1:24\n  num 0.001 \"1e-3\" @1:21-1:24\n"
	 "let c @1:26-1:35\n  num -1 int \"-1\" @1:34-1:35\n"
	 "let d @1:37-1:47\n  num 0.75 \"3/4\" @1:45-1:47\n"
	 "let e @1:49-1:60\n  num -0.75 \"-3/4\" @1:57-1:60\n"},
	{"let s = \"a\\\"b\\\\c\\nd\\te\"",
	 "let s @1:1-1:23\n  str \"a\"b\\c\nd\te\" @1:9-1:23\n"},
	{"let t = true let f = false let w = rgb",
	 "let t @1:1-1:12\n  bool true @1:9-1:12\n"
	 "let f @1:14-1:26\n  bool false @1:22-1:26\n"
	 "let w @1:28-1:38\n  word rgb @1:36-1:38\n"},
	/* lists: empty, trailing comma, nested, mixed */
	{"let l = [] let m = [1, \"x\", [true,],]",
	 "let l @1:1-1:10\n  list 0 @1:9-1:10\n"
	 "let m @1:12-1:37\n  list 3 @1:20-1:37\n"
	 "    num 1 int \"1\" @1:21-1:21\n"
	 "    str \"x\" @1:24-1:26\n"
	 "    list 1 @1:29-1:35\n"
	 "      bool true @1:30-1:33\n"},
	/* ranges of numbers, fractions and negatives */
	{"let r = 0.08..1.0 let q = 3/4..4/3 let n = -1..2",
	 "let r @1:1-1:17\n  range @1:9-1:17\n"
	 "    num 0.08 \"0.08\" @1:9-1:12\n    num 1 \"1.0\" @1:15-1:17\n"
	 "let q @1:19-1:34\n  range @1:27-1:34\n"
	 "    num 0.75 \"3/4\" @1:27-1:29\n    num 1.33333333333333 \"4/3\" @1:32-1:34\n"
	 "let n @1:36-1:48\n  range @1:44-1:48\n"
	 "    num -1 int \"-1\" @1:44-1:45\n    num 2 int \"2\" @1:48-1:48\n"},
	/* bare calls, empty parens, trailing comma, named arguments */
	{"pipeline p = a | b() | c(1,) | d(k = v, 2)",
	 "pipeline p @1:1-1:42\n"
	 "  call a 0 @1:14-1:14\n"
	 "  call b 0 @1:18-1:20\n"
	 "  call c 1 @1:24-1:28\n"
	 "    arg - @1:26-1:26\n      num 1 int \"1\" @1:26-1:26\n"
	 "  call d 2 @1:32-1:42\n"
	 "    arg k @1:34-1:38\n      word v @1:38-1:38\n"
	 "    arg - @1:41-1:41\n      num 2 int \"2\" @1:41-1:41\n"},
	/* comments, newlines inside a pipeline, tabs count one column */
	{"# head\npipeline p =\n\tdecode # c\n\t| batch(8)  # tail\n",
	 "pipeline p @2:1-4:11\n"
	 "  call decode 0 @3:2-3:7\n"
	 "  call batch 1 @4:4-4:11\n"
	 "    arg - @4:10-4:10\n      num 8 int \"8\" @4:10-4:10\n"},
	/* serve: newlines, ',' and ';' as separators, an empty block */
	{"serve p { a = 1, b = \"s\"; c = x\n d = 2 }\nserve q {}",
	 "serve p @1:1-2:8\n"
	 "  set a @1:11-1:15\n    num 1 int \"1\" @1:15-1:15\n"
	 "  set b @1:18-1:24\n    str \"s\" @1:22-1:24\n"
	 "  set c @1:27-1:31\n    word x @1:31-1:31\n"
	 "  set d @2:2-2:6\n    num 2 int \"2\" @2:6-2:6\n"
	 "serve q @3:1-3:10\n"},
	/* units: sizes become bytes, counts stay */
	{"serve s { a = 8 batches b = 4 GiB c = 2 MiB d = 3 KiB e = 5 B\n"
	 "f = 1 KB g = 2 MB h = 1 GB i = 100 samples j = 1.5 KiB }",
	 "serve s @1:1-2:56\n"
	 "  set a @1:11-1:23\n    num 8 int \"8 batches\" unit=batches @1:15-1:23\n"
	 "  set b @1:25-1:33\n    num 4294967296 int \"4 GiB\" unit=GiB @1:29-1:33\n"
	 "  set c @1:35-1:43\n    num 2097152 int \"2 MiB\" unit=MiB @1:39-1:43\n"
	 "  set d @1:45-1:53\n    num 3072 int \"3 KiB\" unit=KiB @1:49-1:53\n"
	 "  set e @1:55-1:61\n    num 5 int \"5 B\" unit=B @1:59-1:61\n"
	 "  set f @2:1-2:8\n    num 1000 int \"1 KB\" unit=KB @2:5-2:8\n"
	 "  set g @2:10-2:17\n    num 2000000 int \"2 MB\" unit=MB @2:14-2:17\n"
	 "  set h @2:19-2:26\n    num 1000000000 int \"1 GB\" unit=GB @2:23-2:26\n"
	 "  set i @2:28-2:42\n    num 100 int \"100 samples\" unit=samples @2:32-2:42\n"
	 "  set j @2:44-2:54\n    num 1536 \"1.5 KiB\" unit=KiB @2:48-2:54\n"},
	/* a negative size or count keeps its unit */
	{"serve s { m = -5 GiB r = -2 batches }",
	 "serve s @1:1-1:37\n"
	 "  set m @1:11-1:20\n    num -5368709120 int \"-5 GiB\" unit=GiB @1:15-1:20\n"
	 "  set r @1:22-1:35\n    num -2 int \"-2 batches\" unit=batches @1:26-1:35\n"},
	/* a byte-order mark is skipped and takes no column */
	{"\xef\xbb\xbflet x = 42",
	 "let x @1:1-1:10\n"
	 "  num 42 int \"42\" @1:9-1:10\n"},
	/* the empty program and a comment-only one */
	{"", ""},
	{"# nothing\n\n", ""},
	/* identifiers that start like keywords and units */
	{"let letter = Bx let KiBs = batchesx",
	 "let letter @1:1-1:15\n  word Bx @1:14-1:15\n"
	 "let KiBs @1:17-1:35\n  word batchesx @1:28-1:35\n"},
	/* UTF-8 in a string counts one column per character, wide or not */
	{"let s = \"é\" let t = 1",
	 "let s @1:1-1:11\n  str \"é\" @1:9-1:11\n"
	 "let t @1:13-1:21\n  num 1 int \"1\" @1:21-1:21\n"},
	{"let s = \"日本\" let t = 1",
	 "let s @1:1-1:12\n  str \"日本\" @1:9-1:12\n"
	 "let t @1:14-1:22\n  num 1 int \"1\" @1:22-1:22\n"},
};

START_TEST(test_tree)
{
	char *got = dump(trees[_i].src);

	ck_assert_msg(strcmp(got, trees[_i].tree) == 0,
		      "source:\n%s\ngot:\n%s\nwant:\n%s", trees[_i].src, got,
		      trees[_i].tree);
	free(got);
}
END_TEST

/* ---- DESIGN.md's example, field by field ---- */

static const char imagenet[] =
	"# examples/imagenet.ts\n"
	"let mean = [0.485, 0.456, 0.406]\n"
	"let std  = [0.229, 0.224, 0.225]\n"
	"\n"
	"pipeline train =\n"
	"    folder(\"data/train\", ext = [\".jpg\", \".jpeg\", \".png\"])   # label = class sub-folder\n"
	"    | shuffle(seed = 42)\n"
	"    | decode(rgb)\n"
	"    | random_resized_crop(224, scale = 0.08..1.0, ratio = 3/4..4/3)\n"
	"    | flip(horizontal, p = 0.5)\n"
	"    | normalize(mean, std)\n"
	"    | to(float32, nchw)\n"
	"    | batch(256)\n"
	"\n"
	"serve train {\n"
	"    socket = \"/tmp/tsrun-train.sock\"\n"
	"    epochs = 90\n"
	"    ring   = 8 batches      # how far the fastest trainer may run ahead\n"
	"    memory = 4 GiB          # budget\n"
	"}\n";

START_TEST(test_imagenet)
{
	static const char *const ops[] = {
		"folder", "shuffle", "decode", "random_resized_crop", "flip",
		"normalize", "to", "batch",
	};
	struct ts_ast_program p;
	const struct ts_ast_stmt *s;
	const struct ts_ast_call *c;
	const struct ts_ast_value *v;
	size_t i = 0;

	parse_ok(imagenet, &p);
	ck_assert_uint_eq(p.n_stmts, 4);

	s = p.stmts;
	ck_assert_int_eq(s->kind, TS_AST_LET);
	ck_assert_str_eq(s->name, "mean");
	assert_loc(s->name_loc, 2, 5, 2, 8);
	ck_assert_int_eq(s->value->kind, TS_AST_LIST);
	ck_assert_uint_eq(s->value->n_items, 3);
	ck_assert_double_eq_tol(s->value->items->next->num, 0.456, 1e-12);
	ck_assert(!s->value->items->is_int);

	s = s->next->next;
	ck_assert_int_eq(s->kind, TS_AST_PIPELINE);
	ck_assert_str_eq(s->name, "train");
	assert_loc(s->loc, 5, 1, 13, 16);
	ck_assert_uint_eq(s->n_calls, 8);
	for (c = s->calls; c; c = c->next, i++)
		ck_assert_str_eq(c->name, ops[i]);
	ck_assert_uint_eq(i, 8);

	c = s->calls;
	assert_loc(c->name_loc, 6, 5, 6, 10);
	ck_assert_uint_eq(c->n_args, 2);
	ck_assert_ptr_null(c->args->name);
	ck_assert_str_eq(c->args->value->str, "data/train");
	ck_assert_str_eq(c->args->next->name, "ext");
	assert_loc(c->args->next->name_loc, 6, 26, 6, 28);
	ck_assert_str_eq(c->args->next->value->items->next->str, ".jpeg");

	c = c->next->next->next; /* random_resized_crop */
	v = c->args->next->value;
	ck_assert_int_eq(v->kind, TS_AST_RANGE);
	ck_assert_double_eq_tol(v->lo->num, 0.08, 1e-12);
	ck_assert_double_eq_tol(v->hi->num, 1.0, 1e-12);
	v = c->args->next->next->value;
	ck_assert_str_eq(v->lo->text, "3/4");
	ck_assert_double_eq_tol(v->hi->num, 4.0 / 3.0, 1e-12);
	assert_loc(v->loc, 9, 59, 9, 66);

	s = s->next;
	ck_assert_int_eq(s->kind, TS_AST_SERVE);
	ck_assert_str_eq(s->settings->name, "socket");
	v = s->settings->next->next->value;
	ck_assert_str_eq(v->unit, "batches");
	ck_assert_double_eq(v->num, 8);
	ck_assert(v->is_int);
	v = s->settings->next->next->next->value;
	ck_assert_str_eq(v->unit, "GiB");
	ck_assert_str_eq(v->text, "4 GiB");
	ck_assert_double_eq(v->num, 4.0 * 1024 * 1024 * 1024);
	assert_loc(v->loc, 19, 14, 19, 18);
	ck_assert_ptr_null(s->settings->next->next->next->next);
	ts_ast_program_destroy(&p);
	ck_assert_ptr_null(p.stmts);
}
END_TEST

/* Long chains append in O(1) and keep their order and counts. */
START_TEST(test_long_chains)
{
	enum { N = 20000 };
	size_t cap = N * 8 + 64, len = 0;
	char *src = malloc(cap);
	struct ts_ast_program p;
	const struct ts_ast_value *v;
	size_t i = 0;

	len += (size_t)snprintf(src + len, cap - len, "let l = [");
	for (int k = 0; k < N; k++)
		len += (size_t)snprintf(src + len, cap - len, "%d,", k);
	snprintf(src + len, cap - len, "]");
	parse_ok(src, &p);
	ck_assert_uint_eq(p.stmts->value->n_items, N);
	for (v = p.stmts->value->items; v; v = v->next, i++)
		ck_assert_double_eq(v->num, (double)i);
	ck_assert_uint_eq(i, N);
	ts_ast_program_destroy(&p);
	free(src);
}
END_TEST

/* The constructors used by hand (as the checker's tests do). */
START_TEST(test_constructors)
{
	struct ts_loc l = {1, 1, 1, 3};
	struct ts_ast_program p = {0};
	struct ts_ast_value *v = ts_ast_num(l, 3, true, "3");

	v = ts_ast_value_append(v, ts_ast_word(l, "x"));
	v = ts_ast_list(l, v);
	ck_assert_uint_eq(v->n_items, 2);
	ck_assert_str_eq(ts_ast_kind_name(v->kind), "a list");
	ck_assert_str_eq(ts_ast_kind_name(TS_AST_RANGE), "a range");
	ts_ast_program_add(&p, ts_ast_let(l, "a", l, v));
	ts_ast_program_add(&p, ts_ast_pipeline(l, "b", l,
		ts_ast_call(l, "decode", l, NULL)));
	ts_ast_program_add(&p, ts_ast_serve(l, "b", l, NULL));
	ck_assert_uint_eq(p.n_stmts, 3);
	ck_assert_str_eq(p.stmts->next->next->name, "b");
	ck_assert_int_eq(p.stmts->next->next->kind, TS_AST_SERVE);
	ts_ast_program_destroy(&p);
	ts_ast_program_destroy(NULL);
	ts_ast_value_destroy(NULL);
	ck_assert_ptr_null(ts_ast_neg(l, NULL));
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc = tcase_create("trees");

	tcase_add_loop_test(tc, test_tree, 0, (int)(sizeof(trees) / sizeof(trees[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("imagenet");
	tcase_add_test(tc, test_imagenet);
	suite_add_tcase(s, tc);
	tc = tcase_create("ast");
	tcase_add_test(tc, test_long_chains);
	tcase_add_test(tc, test_constructors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(parse_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
