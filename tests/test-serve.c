/*
 * test-serve.c - one served pipeline (runtime/session.h) with a real trainer
 * over the socket: it sees every sample of every epoch in whole batches;
 * a reload of another shape or of a missing folder is refused and changes
 * nothing; a valid one takes over at the epoch boundary (the event, the
 * plan and the trainer's data all say so); a second replaces a pending
 * one; a stop ends the stream "stopped".
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsl.h"
#include "session.h"
#include "tsclient.h"

static char dir[64], sock[128];

static struct ts_plan *compile(const char *src)
{
	struct ts_diags d;
	ts_diags_init(&d, "serve.ts", src, strlen(src));
	struct ts_plan *plan = NULL;
	int rc = ts_dsl_compile(src, strlen(src), "serve.ts", NULL, &d, &plan);
	ck_assert_msg(rc == 0, "does not compile: %s", d.n ? d.items[0].msg : "");
	ts_diags_fini(&d);
	return plan;
}

/* 40 samples an epoch of 8x8 float32; mean sets the first value. */
static struct ts_plan *plan_with(double mean, int size, const char *source)
{
	char src[512];
	snprintf(src, sizeof(src),
		 "pipeline s = %s(size = %d, count = 40) | normalize([%g, %g, %g], [1, 1, 1])"
		 " | to(float32, nchw) | batch(10)\n"
		 "serve s { epochs = 4  ring = 4 batches  threads = 1 }\n",
		 source, size, mean, mean, mean);
	return compile(src);
}

struct trainer {
	int rc;
	int hold;               /* after the first batch, wait for go */
	int go;
	size_t batches, samples, short_batches;
	float first[4];         /* first value of each epoch's first sample */
};

static void *train(void *arg)
{
	struct trainer *t = arg;
	struct ts_client_opts o;
	struct ts_client *c = NULL;
	struct ts_error err;
	ts_client_opts_init(&o);
	o.timeout_ms = 10000;
	t->rc = ts_client_connect(sock, &o, &c, &err);
	if (t->rc)
		return NULL;
	struct ts_batch b;
	while ((t->rc = ts_client_next(c, &b, &err)) == 0) {
		if (b.n != 10)
			t->short_batches++;
		if (b.index == 0 && b.epoch < 4)
			t->first[b.epoch] = ((const float *)b.data)[0];
		__atomic_add_fetch(&t->batches, 1, __ATOMIC_RELAXED);
		/* Holding the batch keeps the producer within one ring of it. */
		while (t->hold && !__atomic_load_n(&t->go, __ATOMIC_ACQUIRE))
			usleep(1000);
		t->samples += b.n;
		usleep(2000);
	}
	ts_client_close(c);
	return NULL;
}

static void setup(void)
{
	strcpy(dir, "/tmp/ts-serve-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
}

static void teardown(void)
{
	rmdir(dir);
}

START_TEST(test_serve_reload)
{
	struct ts_session_opts o = { .socket_path = sock, .epochs = -1, .wait = 1 };
	struct ts_session *s = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_session_create(plan_with(0.0, 8, "synthetic"), &o, &s, &err), 0);
	struct ts_session_info si;
	ts_session_get_info(s, &si);
	ck_assert_str_eq(si.socket_path, sock);
	ck_assert_int_eq(si.epochs, 4);
	ck_assert(!si.device);
	ck_assert_int_eq(ts_session_start(s, &err), 0);
	struct trainer t = { .hold = 1 };
	pthread_t th;
	pthread_create(&th, NULL, train, &t);

	/* The trainer holds its first batch: the producer is within one ring
	 * (one epoch) of it, so the reloads below land before the last epoch
	 * however slow this runs (valgrind). */
	while (__atomic_load_n(&t.batches, __ATOMIC_RELAXED) < 1)
		usleep(1000);

	/* Refused, and nothing changes: another shape, a folder not there. */
	uint64_t epoch = 0;
	bool replaced = true;
	ck_assert_int_eq(ts_session_reload(s, plan_with(0.5, 4, "synthetic"), &epoch, &replaced,
					 &err), TS_E_CHECK);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot change the sample shape"));
	ck_assert(!replaced);
	char missing[512];
	snprintf(missing, sizeof(missing),
		 "pipeline s = folder(\"%s/none\") | decode(rgb) | resize(8, 8)"
		 " | normalize([0, 0, 0], [1, 1, 1]) | to(float32, nchw) | batch(10)\n", dir);
	ck_assert_int_ne(ts_session_reload(s, compile(missing), &epoch, &replaced, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "/none"));

	/* Accepted, then replaced before the boundary by a second one. */
	ck_assert_int_eq(ts_session_reload(s, plan_with(0.25, 8, "synthetic"), &epoch, &replaced,
					 &err), 0);
	ck_assert(!replaced);
	uint64_t first_epoch = epoch;
	ck_assert_int_eq(ts_session_reload(s, plan_with(0.75, 8, "synthetic"), &epoch, &replaced,
					 &err), 0);
	ck_assert(replaced);
	ck_assert_uint_eq(epoch, first_epoch);
	ck_assert_uint_ge(epoch, 1);
	ck_assert_uint_lt(epoch, 4);

	__atomic_store_n(&t.go, 1, __ATOMIC_RELEASE);
	const struct ts_plan *before = ts_session_plan(s);
	bool took = false;
	for (int i = 0; i < 2000 && !ts_session_ended(s); i++) {
		enum ts_session_event ev;
		ck_assert_int_eq(ts_session_poll(s, &ev, &err), 0);
		ck_assert_int_ne(ev, TS_SESSION_FELL_BACK);
		if (ev == TS_SESSION_TOOK_OVER) {
			ck_assert(!took);
			took = true;
			ck_assert_ptr_ne(ts_session_plan(s), before);
		}
		usleep(5000);
	}
	ck_assert(took);
	ck_assert_int_eq(ts_session_join(s, &err), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(t.rc, TS_E_EOS);
	ck_assert_uint_eq(t.samples, 4 * 40);
	ck_assert_uint_eq(t.batches, 4 * 4);
	ck_assert_uint_eq(t.short_batches, 0);
	/* Epochs before the boundary are the first plan's (mean 0), from it
	 * the second reload's (mean 0.75); the replaced one never ran. */
	for (uint64_t e = 0; e < 4; e++) {
		float v0 = t.first[0];
		if (e < epoch)
			ck_assert_float_eq_tol(t.first[e], v0, 1e-6);
		else
			ck_assert_float_eq_tol(t.first[e], v0 - 0.75f, 1e-6);
	}
	ck_assert_int_eq(ts_session_destroy(s, &err), 0);
}
END_TEST

START_TEST(test_serve_stop)
{
	struct ts_session_opts o = { .socket_path = sock, .epochs = 0, .wait = 1 };
	struct ts_session *s = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_session_create(plan_with(0.0, 8, "synthetic"), &o, &s, &err), 0);
	ck_assert_int_eq(ts_session_start(s, &err), 0);
	struct trainer t = {0};
	pthread_t th;
	pthread_create(&th, NULL, train, &t);
	while (__atomic_load_n(&t.batches, __ATOMIC_RELAXED) < 5)
		usleep(1000);
	ck_assert_uint_eq(ts_session_consumers(s), 1);
	ts_session_stop(s);
	ck_assert_int_eq(ts_session_join(s, &err), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(t.rc, TS_E_PRODUCER);
	ck_assert(ts_session_ended(s));
	ck_assert_int_eq(ts_session_destroy(s, &err), 0);
}
END_TEST

static Suite *serve_suite(void)
{
	Suite *su = suite_create("serve");
	TCase *tc = tcase_create("serve");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_serve_reload);
	tcase_add_test(tc, test_serve_stop);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(serve_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
