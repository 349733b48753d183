/*
 * test-reload.c - hot reload through the embedding API (ts_stream_reload):
 * an invalid pipeline is rejected and the running one carries on, a shape
 * change is refused, so is one whose source does not open, a valid one
 * takes over at the next epoch boundary in the same ring, and no batch is
 * torn; one whose source vanished by then leaves the running one going.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrun.h"


/* The emulator a cross build runs its programs under (TS_EXE_WRAPPER, set
 * by tests/meson.build from the cross file), or "" natively. */
static const char *exe_wrapper(void)
{
	const char *w = getenv("TS_EXE_WRAPPER");
	return w ? w : "";
}

static const char *A =
	"pipeline s = synthetic(size = 8, count = 50)\n"
	"    | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) | to(float32, nchw) | batch(10)\n"
	"serve s { epochs = 6  ring = 4 batches }\n";
static const char *B =
	"pipeline s = synthetic(size = 8, count = 30)\n"
	"    | normalize([0.1, 0.1, 0.1], [0.5, 0.5, 0.5]) | to(float32, nchw) | batch(10)\n";
static const char *SHAPE =
	"pipeline s = synthetic(size = 4, count = 30) | to(float32, nchw) | batch(10)\n";
static const char *BAD = "pipeline s = synthetic(size = 8) | flipp\n";

static struct ts_pipeline *compile(const char *text)
{
	struct ts_pipeline *p = NULL;
	struct ts_error err;
	int rc = ts_pipeline_compile(text, strlen(text), "a.ts", NULL, NULL, &p, NULL, &err);
	ck_assert_msg(rc == 0, "compile: %s", err.msg);
	return p;
}

START_TEST(test_reload_takes_over_at_epoch)
{
	struct ts_pipeline *p = compile(A);
	struct ts_stream *s = NULL;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1};
	struct ts_error err;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	struct ts_stream_batch b;
	size_t total = 0, per_epoch[6] = {0};
	int k = 0, rc;
	float first_of_epoch[6] = {0};
	while ((rc = ts_stream_next(s, &b, &err)) == 0) {
		ck_assert_uint_lt(b.epoch, 6);
		ck_assert_uint_eq(b.n, 10); /* no torn batch */
		if (b.index == 0)
			first_of_epoch[b.epoch] = ((const float *)b.data)[0];
		per_epoch[b.epoch] += b.n;
		total += b.n;
		if (k == 1) {
			char *diag = NULL;
			int r = ts_stream_reload(s, BAD, strlen(BAD), "bad.ts", NULL, NULL, &diag, &err);
			ck_assert_int_eq(r, TS_E_CHECK);
			ck_assert_ptr_nonnull(strstr(diag, "bad.ts:1:36: error: unknown operator 'flipp'"));
			free(diag);
			r = ts_stream_reload(s, SHAPE, strlen(SHAPE), "shape.ts", NULL, NULL, NULL, &err);
			ck_assert_int_eq(r, TS_E_CHECK);
			ck_assert_ptr_nonnull(strstr(err.msg, "cannot change the sample shape"));
		}
		if (k == 2)
			ck_assert_int_eq(ts_stream_reload(s, B, strlen(B), "b.ts", NULL, NULL, NULL, &err), 0);
		k++;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	/* The producer runs ahead of this consumer by up to the ring, so B
	 * takes over at the producer's next epoch boundary: epoch t >= 1.
	 * Every epoch before it is A's whole (50), every one from it B's (30). */
	int t = 1;
	while (t < 6 && per_epoch[t] == 50)
		t++;
	ck_assert_int_lt(t, 4);
	for (int e = 0; e < 6; e++)
		ck_assert_uint_eq(per_epoch[e], e < t ? 50 : 30);
	ck_assert_uint_eq(total, 50 * (size_t)t + 30 * (size_t)(6 - t));
	/* B normalizes with mean 0.1: its samples differ from A's. */
	ck_assert(first_of_epoch[t] != first_of_epoch[0]);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* views(...): a reload keeps the view table; one with the same bytes and
 * view 0 but the views in another order is refused, one with the same
 * views and other crops' parameters takes over. */
START_TEST(test_reload_views)
{
	static const char *V =
		"pipeline s = synthetic(size = 8, count = 100)\n"
		"    | views(2 = center_crop(4) | to(uint8), 1 = center_crop(8) | to(uint8))\n"
		"    | batch(10)\n"
		"serve s { epochs = 4  ring = 4 batches }\n";
	static const char *REORDER =
		"pipeline s = synthetic(size = 8, count = 100)\n"
		"    | views(1 = center_crop(4) | to(uint8), 1 = center_crop(8) | to(uint8),\n"
		"            1 = center_crop(4) | to(uint8))\n"
		"    | batch(10)\n";
	static const char *SAME =
		"pipeline s = synthetic(size = 8, count = 100)\n"
		"    | views(2 = random_crop(4) | to(uint8), 1 = flip(horizontal) | to(uint8))\n"
		"    | batch(10)\n";
	static const char *PLAIN =
		"pipeline s = synthetic(size = 8, count = 100) | center_crop(4) | to(uint8) | batch(10)\n";
	struct ts_pipeline *p = compile(V);
	struct ts_stream *s = NULL;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1};
	struct ts_error err;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	struct ts_stream_batch b;
	int rc, k = 0;
	while ((rc = ts_stream_next(s, &b, &err)) == 0) {
		ck_assert_uint_eq(b.sample_bytes, 2 * 48 + 192);
		if (k++ == 0) {
			int r = ts_stream_reload(s, REORDER, strlen(REORDER), "r.ts", NULL, NULL, NULL,
						 &err);
			ck_assert_int_eq(r, TS_E_CHECK);
			ck_assert_msg(strstr(err.msg, "cannot change the views"), "%s", err.msg);
			r = ts_stream_reload(s, PLAIN, strlen(PLAIN), "p.ts", NULL, NULL, NULL, &err);
			ck_assert_int_eq(r, TS_E_CHECK);
			ck_assert_msg(strstr(err.msg, "0 views"), "%s", err.msg);
			r = ts_stream_reload(s, SAME, strlen(SAME), "s.ts", NULL, NULL, NULL, &err);
			ck_assert_msg(r == 0, "%d: %s", r, err.msg);
		}
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

START_TEST(test_reload_in_last_epoch_refused)
{
	const char *one = "pipeline s = synthetic(size = 8, count = 40)"
			  " | to(float32, nchw) | batch(10)\nserve s { epochs = 1 }\n";
	struct ts_pipeline *p = compile(one);
	struct ts_stream *s = NULL;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1};
	struct ts_error err;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	struct ts_stream_batch b;
	ck_assert_int_eq(ts_stream_next(s, &b, &err), 0);
	ck_assert_int_eq(ts_stream_reload(s, one, strlen(one), "one.ts", NULL, NULL, NULL, &err),
			 TS_E_STATE);
	size_t n = b.n;
	while (ts_stream_next(s, &b, &err) == 0)
		n += b.n;
	ck_assert_uint_eq(n, 40);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* Pipeline text reading folder dir with A's sample shape. */
static const char *folder_text(char *buf, size_t n, const char *dir)
{
	snprintf(buf, n,
		 "pipeline s = folder(\"%s\") | decode(rgb) | resize(8, 8)\n"
		 "    | normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) | to(float32, nchw) | batch(10)\n",
		 dir);
	return buf;
}

/* Read to the end; every batch whole, every epoch 50 samples of A. */
static void drain_a(struct ts_stream *s, size_t already)
{
	struct ts_stream_batch b;
	struct ts_error err;
	size_t n = already;
	int rc;
	while ((rc = ts_stream_next(s, &b, &err)) == 0) {
		ck_assert_uint_eq(b.n, 10);
		n += b.n;
	}
	ck_assert_msg(rc == TS_E_EOS, "stream ended with %d: %s", rc, err.msg);
	ck_assert_uint_eq(n, 6 * 50);
}

/* A reload whose source does not open is refused at once, not at the
 * epoch boundary where it would end the stream. */
START_TEST(test_reload_missing_source_refused)
{
	struct ts_pipeline *p = compile(A);
	struct ts_stream *s = NULL;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1};
	struct ts_error err;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	struct ts_stream_batch b;
	ck_assert_int_eq(ts_stream_next(s, &b, &err), 0);
	char text[512];
	folder_text(text, sizeof(text), "/nonexistent/tsrun-reload-test");
	ck_assert_int_eq(ts_stream_reload(s, text, strlen(text), "missing.ts", NULL, NULL,
					  NULL, &err), TS_E_SOURCE);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/tsrun-reload-test"));
	drain_a(s, b.n);
	struct ts_stream_stats st;
	ts_stream_stats(s, &st);
	ck_assert_uint_eq(st.reloads_failed, 0);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* A source that opened at the reload but is gone at the boundary: the
 * running pipeline goes on from there, and the failure is counted. */
START_TEST(test_reload_source_gone_falls_back)
{
	const char *tsrun = getenv("TSRUN");
	ck_assert_msg(tsrun != NULL, "TSRUN is not set");
	char dir[64] = "/tmp/ts-reload-ds.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s '%s' make-dataset '%s' --images 20 --classes 2 --quiet "
		 ">/dev/null", exe_wrapper(), tsrun, dir);
	ck_assert_int_eq(system(cmd), 0);

	struct ts_pipeline *p = compile(A);
	struct ts_stream *s = NULL;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1};
	struct ts_error err;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	struct ts_stream_batch b;
	ck_assert_int_eq(ts_stream_next(s, &b, &err), 0);
	char text[512], train[128];
	snprintf(train, sizeof(train), "%s/train", dir);
	folder_text(text, sizeof(text), train);
	ck_assert_int_eq(ts_stream_reload(s, text, strlen(text), "gone.ts", NULL, NULL, NULL,
					  &err), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	drain_a(s, b.n);
	struct ts_stream_stats st;
	ts_stream_stats(s, &st);
	ck_assert_uint_eq(st.reloads_failed, 1);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

static Suite *reload_suite(void)
{
	Suite *s = suite_create("reload");
	TCase *tc = tcase_create("embedding");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_reload_takes_over_at_epoch);
	tcase_add_test(tc, test_reload_in_last_epoch_refused);
	tcase_add_test(tc, test_reload_views);
	tcase_add_test(tc, test_reload_missing_source_refused);
	tcase_add_test(tc, test_reload_source_gone_falls_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(reload_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
