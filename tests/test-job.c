/* test-job.c - data-parallel jobs on one ring (runtime/job.h, the job
 * reader of ring_reader.c): ranks admitted at one start, held until all
 * came; their spans; refusals; a rank's departure failing the others. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "ring.h"

#define SPE 100
#define B 8

static struct ts_ring *make_ring(uint64_t cap)
{
	struct ts_ring_params p = { .height = 16, .width = 4, .channels = 1,
				    .dtype = TS_DTYPE_U8, .capacity = cap,
				    .samples_per_epoch = SPE };
	struct ts_ring *r = NULL;
	ck_assert_int_eq(ts_ring_create(&p, &r, NULL), 0);
	return r;
}

/* Write [from, to) as far as the ring lets within 30 ms a sample; returns
 * where it stopped. label = seq, epoch = seq / SPE. */
static uint64_t produce(struct ts_ring *r, uint64_t from, uint64_t to)
{
	uint64_t s = from;
	for (; s < to; s++) {
		if (ts_ring_wait_writable(r, s, 30) < 0)
			break;
		ts_ring_set_meta(r, s, (int32_t)s, (uint32_t)(s / SPE), s % SPE);
	}
	ts_ring_publish(r, s);
	return s;
}

struct rank {
	struct ts_ring_consumer *c;
	struct ts_ring_reader *rd;
	struct ts_job_ticket tk;
	struct ts_ring_join_pos pos;
};

static int join(struct ts_jobs *t, struct ts_ring *r, const char *name, uint32_t rank,
		uint32_t world, uint32_t batch, struct rank *out, struct ts_error *err)
{
	struct ts_job_req jr = { name, rank, world, false };
	struct ts_ring_join_req req = { .batch = batch, .join = TS_JOIN_NOW,
					.pid = (pid_t)(100 + rank) };
	int rc = ts_jobs_attach(t, r, &jr, &req, false, &out->c, &out->pos, &out->tk, err);
	if (rc < 0)
		return rc;
	struct ts_ring_reader_opts o = { .batch = batch, .start = out->pos.start,
					 .min_epoch = out->pos.min_epoch,
					 .rank = rank, .world = world };
	ck_assert_int_eq(ts_ring_reader_open(ts_ring_fd(r), ts_ring_consumer_ctl_fd(out->c),
					     &o, &out->rd, NULL), 0);
	return 0;
}

static void leave(struct ts_jobs *t, struct ts_ring *r, struct rank *k, bool early)
{
	ts_jobs_leave(t, r, &k->tk, early);
	ts_ring_reader_destroy(k->rd);
	ts_ring_detach(r, k->c);
}

/* Read what is published (10 ms waits) into seen[]; returns batches. */
static int drain(struct rank *k, unsigned *seen, uint64_t *n_read)
{
	struct ts_ring_batch b;
	int n = 0;
	while (ts_ring_reader_next(k->rd, &b, 10, NULL, NULL, NULL) == 0) {
		ck_assert_uint_le(b.n, B);
		for (size_t i = 0; i < b.n; i++) {
			ck_assert_int_eq(b.labels[i], (int32_t)(b.seq + i));
			seen[b.seq + i]++;
		}
		*n_read += b.n;
		n++;
	}
	return n;
}

START_TEST(test_hold_and_shares)
{
	struct ts_ring *r = make_ring(64);
	struct ts_jobs *t;
	ck_assert_int_eq(ts_jobs_create(&t, NULL), 0);
	struct rank k0, k1;
	unsigned seen[2 * SPE] = {0};
	uint64_t got0 = 0, got1 = 0;
	ck_assert_int_eq(join(t, r, "j", 0, 2, B, &k0, NULL), 0);
	ck_assert_uint_eq(produce(r, 0, 2 * SPE), 64);
	/* Rank 0 reads its spans of what is there and releases the rest,
	 * but the job's start is held for rank 1: nothing more is written. */
	int n0 = drain(&k0, seen, &got0);
	ck_assert_int_eq(n0, 4);
	ck_assert_uint_eq(produce(r, 64, 2 * SPE), 64);
	/* Rank 1 comes: it starts at the job's start, and the hold is gone
	 * (rank 1 itself now bounds the writer). */
	ck_assert_int_eq(join(t, r, "j", 1, 2, B, &k1, NULL), 0);
	ck_assert_uint_eq(k1.pos.start, 0);
	int n1 = 0;
	uint64_t at = 64;
	while (at < 2 * SPE) {
		n1 += drain(&k1, seen, &got1);
		n0 += drain(&k0, seen, &got0);
		at = produce(r, at, 2 * SPE);
	}
	ts_ring_finish(r, 0);
	n1 += drain(&k1, seen, &got1);
	n0 += drain(&k0, seen, &got0);
	/* M = 100, w = 2, B = 8: 6 rounds of 16, then 4 left: 2 each. */
	ck_assert_int_eq(n0, 2 * 7);
	ck_assert_int_eq(n1, 2 * 7);
	ck_assert_uint_eq(got0, 2 * 50);
	ck_assert_uint_eq(got1, 2 * 50);
	for (int s = 0; s < 2 * SPE; s++)
		ck_assert_uint_eq(seen[s], 1);
	leave(t, r, &k0, false);
	leave(t, r, &k1, false);
	ts_jobs_destroy(t, r);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_refusals)
{
	struct ts_ring *r = make_ring(64);
	struct ts_jobs *t;
	ck_assert_int_eq(ts_jobs_create(&t, NULL), 0);
	struct rank k0, x;
	struct ts_error err;
	ck_assert_int_eq(join(t, r, "j", 0, 2, B, &k0, NULL), 0);
	ck_assert_int_eq(join(t, r, "j", 1, 3, B, &x, &err), TS_E_REFUSED);
	ck_assert_ptr_nonnull(strstr(err.msg, "asks for world size 3, but its other ranks have 2"));
	ck_assert_int_eq(join(t, r, "j", 1, 2, 4, &x, &err), TS_E_REFUSED);
	ck_assert_ptr_nonnull(strstr(err.msg, "batch size 4"));
	ck_assert_int_eq(join(t, r, "j", 0, 2, B, &x, &err), TS_E_REFUSED);
	ck_assert_ptr_nonnull(strstr(err.msg, "rank 0 of job 'j' is already connected (pid 100)"));
	ck_assert_int_eq(join(t, r, "k", 2, 2, B, &x, &err), TS_E_REFUSED);
	/* Nothing refused was attached: one consumer. */
	struct ts_ring_stat st;
	ts_ring_stat(r, &st);
	ck_assert_uint_eq(st.n_consumers, 1);
	leave(t, r, &k0, false);
	ts_jobs_destroy(t, r);
	ts_ring_destroy(r);
}
END_TEST

/* A rank that leaves while the stream runs fails the others (TS_E_JOB,
 * naming it), even one asleep waiting; the name is free again at once. */
START_TEST(test_departure_fails_job)
{
	struct ts_ring *r = make_ring(64);
	struct ts_jobs *t;
	ck_assert_int_eq(ts_jobs_create(&t, NULL), 0);
	struct rank k0, k1, again;
	ck_assert_int_eq(join(t, r, "j", 0, 2, B, &k0, NULL), 0);
	ck_assert_int_eq(join(t, r, "j", 1, 2, B, &k1, NULL), 0);
	produce(r, 0, 16);
	struct ts_ring_batch b;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_reader_next(k0.rd, &b, 100, NULL, NULL, NULL), 0);
	leave(t, r, &k1, true);
	ck_assert_int_eq(ts_ring_reader_next(k0.rd, &b, 1000, NULL, NULL, &err), TS_E_JOB);
	ck_assert_ptr_nonnull(strstr(err.msg, "rank 1 (pid 101)"));
	ck_assert_int_eq(ts_ring_reader_next(k0.rd, &b, 1000, NULL, NULL, &err), TS_E_JOB);
	/* A new job of the same name; the old rank 0's leave is a no-op on it. */
	ck_assert_int_eq(join(t, r, "j", 1, 2, B, &again, NULL), 0);
	leave(t, r, &k0, true);
	ck_assert_int_eq(ts_ring_reader_next(again.rd, &b, 50, NULL, NULL, &err), -ETIMEDOUT);
	leave(t, r, &again, false);
	ts_jobs_destroy(t, r);
	ts_ring_destroy(r);
}
END_TEST

static Suite *job_suite(void)
{
	Suite *s = suite_create("job");
	TCase *tc = tcase_create("jobs");
	tcase_add_test(tc, test_hold_and_shares);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_departure_fails_job);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(job_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
