/* test-job.c - data-parallel jobs on one ring (runtime/job.h, the job
 * reader of ring_reader.c): ranks wait, holding nobody back, until all
 * came, then start at one position; their spans; a wait that runs out
 * (job_timeout); jobs per user; refusals; a rank's departure failing the
 * others. */
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
};

static int join_as(struct ts_job_table *t, struct ts_ring *r, uid_t uid, double now,
		   const char *name, uint32_t rank, uint32_t world, uint32_t batch,
		   struct rank *out, struct ts_error *err)
{
	struct ts_job_req jr = { name, uid, rank, world, false };
	struct ts_ring_join_req req = { .batch = batch, .join = TS_JOIN_NOW,
					.pid = (pid_t)(100 + rank) };
	int rc = ts_job_attach(t, r, &jr, &req, false, now, &out->c, &out->tk, err);
	if (rc < 0)
		return rc;
	/* The welcome's start is not read: the job's is in the page. */
	struct ts_ring_reader_opts o = { .batch = batch, .rank = rank, .world = world };
	ck_assert_int_eq(ts_ring_reader_open(ts_ring_fd(r), ts_ring_consumer_ctl_fd(out->c),
					     &o, &out->rd, NULL), 0);
	return 0;
}

static int join(struct ts_job_table *t, struct ts_ring *r, const char *name, uint32_t rank,
		uint32_t world, uint32_t batch, struct rank *out, struct ts_error *err)
{
	return join_as(t, r, 1000, 0.0, name, rank, world, batch, out, err);
}

static void leave(struct ts_job_table *t, struct ts_ring *r, struct rank *k, bool early)
{
	ts_job_leave(t, r, &k->tk, early);
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

/* A lone trainer on the ring, joined "now". */
static struct ts_ring_reader *lone(struct ts_ring *r, struct ts_ring_consumer **c)
{
	struct ts_ring_join_req req = { .batch = B, .join = TS_JOIN_NOW, .pid = 99 };
	struct ts_ring_join_pos pos;
	ck_assert_int_eq(ts_ring_attach(r, &req, c, &pos, NULL), 0);
	struct ts_ring_reader_opts o = { .batch = B, .start = pos.start };
	struct ts_ring_reader *rd = NULL;
	ck_assert_int_eq(ts_ring_reader_open(ts_ring_fd(r), ts_ring_consumer_ctl_fd(*c),
					     &o, &rd, NULL), 0);
	return rd;
}

START_TEST(test_wait_and_shares)
{
	struct ts_ring *r = make_ring(64);
	struct ts_job_table *t;
	ck_assert_int_eq(ts_job_create(&t, NULL), 0);
	struct ts_ring_consumer *lc;
	struct ts_ring_reader *lrd = lone(r, &lc);
	struct rank k0, k1, lk = { 0 };
	lk.rd = lrd;
	unsigned seen[2 * SPE] = {0}, lseen[2 * SPE] = {0};
	uint64_t got0 = 0, got1 = 0, lgot = 0;
	ck_assert_int_eq(join(t, r, "j", 0, 2, B, &k0, NULL), 0);
	/* Rank 0 waits for rank 1: it reads nothing and holds nobody, so
	 * the lone trainer reads on past a whole ring. */
	ck_assert_uint_eq(produce(r, 0, 2 * SPE), 64);
	ck_assert_int_eq(drain(&k0, seen, &got0), 0);
	struct ts_ring_stat st;
	ts_ring_stat(r, &st);
	ck_assert_uint_eq(st.n_consumers, 2);
	ck_assert(st.consumers[0].job_wait != st.consumers[1].job_wait);
	ck_assert_int_eq(drain(&lk, lseen, &lgot), 8);
	ck_assert_uint_eq(produce(r, 64, 2 * SPE), 128);
	ck_assert_int_eq(drain(&lk, lseen, &lgot), 8);
	/* Rank 1 comes: both start at the head, 128 (epoch 1, index 28),
	 * aligned ("now") to the round at index 32. */
	ck_assert_int_eq(join(t, r, "j", 1, 2, B, &k1, NULL), 0);
	int n0 = 0, n1 = 0;
	uint64_t at = 128;
	while (at < 2 * SPE) {
		n1 += drain(&k1, seen, &got1);
		n0 += drain(&k0, seen, &got0);
		drain(&lk, lseen, &lgot);
		at = produce(r, at, 2 * SPE);
	}
	ts_ring_finish(r, 0);
	n1 += drain(&k1, seen, &got1);
	n0 += drain(&k0, seen, &got0);
	drain(&lk, lseen, &lgot);
	/* M = 100, w = 2, B = 8, from index 32: rounds 2..5 (4 batches),
	 * then 4 left: 2 each. */
	ck_assert_int_eq(n0, 5);
	ck_assert_int_eq(n1, 5);
	ck_assert_uint_eq(got0, 34);
	ck_assert_uint_eq(got1, 34);
	for (int s = 0; s < 2 * SPE; s++) {
		ck_assert_uint_eq(seen[s], s >= SPE + 32);
		ck_assert_uint_eq(lseen[s], 1);
	}
	ck_assert_uint_eq(lgot, 2 * SPE);
	leave(t, r, &k0, false);
	leave(t, r, &k1, false);
	ts_ring_reader_destroy(lrd);
	ts_ring_detach(r, lc);
	ts_job_destroy(t);
	ts_ring_destroy(r);
}
END_TEST

/* A job short of ranks past job_timeout: its waiting ranks get TS_E_JOB
 * naming the missing ranks and the setting; the name is free again. */
START_TEST(test_wait_times_out)
{
	struct ts_ring *r = make_ring(64);
	struct ts_job_table *t;
	ck_assert_int_eq(ts_job_create(&t, NULL), 0);
	struct rank k0, again;
	char note[256];
	struct ts_ring_batch b;
	struct ts_error err;
	ck_assert_int_eq(join_as(t, r, 1000, 10.0, "j", 0, 3, B, &k0, NULL), 0);
	ck_assert(!ts_job_expire(t, r, 10.5, 1000, note, sizeof(note)));
	ck_assert_int_eq(ts_ring_reader_next(k0.rd, &b, 20, NULL, NULL, &err), -ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "still waiting for its other ranks"));
	ck_assert(ts_job_expire(t, r, 11.0, 1000, note, sizeof(note)));
	ck_assert_ptr_nonnull(strstr(note, "job 'j' (uid 1000): ranks 1, 2 of 3 did not "
				     "connect within 1 s (serve setting job_timeout); its "
				     "rank 0 (pid 100) gets an error"));
	ck_assert(!ts_job_expire(t, r, 99.0, 1000, note, sizeof(note)));
	ck_assert_int_eq(ts_ring_reader_next(k0.rd, &b, 1000, NULL, NULL, &err), TS_E_JOB);
	ck_assert_ptr_nonnull(strstr(err.msg, "waited 1 s for its ranks 1, 2 of 3, which "
				     "never connected (serve setting job_timeout = 1)"));
	ck_assert_int_eq(join(t, r, "j", 0, 3, B, &again, NULL), 0);
	leave(t, r, &k0, true);
	leave(t, r, &again, true);
	ts_job_destroy(t);
	ts_ring_destroy(r);
}
END_TEST

/* Two users' jobs of one name are two jobs; a rank that leaves a job
 * still waiting fails nothing and frees its place. */
START_TEST(test_jobs_per_user)
{
	struct ts_ring *r = make_ring(64);
	struct ts_job_table *t;
	ck_assert_int_eq(ts_job_create(&t, NULL), 0);
	struct rank a0, b0, b1, a1;
	struct ts_ring_batch b;
	struct ts_error err;
	char note[256];
	ck_assert_int_eq(join_as(t, r, 1000, 0.0, "ddp", 0, 2, B, &a0, NULL), 0);
	ck_assert_int_eq(join_as(t, r, 1001, 0.0, "ddp", 1, 2, B, &b1, NULL), 0);
	/* uid 1001's rank 0 completes its own job, not uid 1000's. */
	ck_assert_int_eq(join_as(t, r, 1001, 0.0, "ddp", 0, 2, B, &b0, NULL), 0);
	produce(r, 0, 16);
	ck_assert_int_eq(ts_ring_reader_next(b0.rd, &b, 100, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(b.seq, 0);
	ck_assert_int_eq(ts_ring_reader_next(b1.rd, &b, 100, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(b.seq, 8);
	ck_assert_int_eq(ts_ring_reader_next(a0.rd, &b, 20, NULL, NULL, &err), -ETIMEDOUT);
	/* uid 1000's rank 0 leaves while waiting, and comes back. */
	leave(t, r, &a0, true);
	ck_assert_int_eq(join_as(t, r, 1000, 5.0, "ddp", 0, 2, B, &a0, NULL), 0);
	ck_assert(!ts_job_expire(t, r, 5.5, 1000, note, sizeof(note)));
	ck_assert_int_eq(join_as(t, r, 1000, 5.6, "ddp", 1, 2, B, &a1, NULL), 0);
	ck_assert(!ts_job_expire(t, r, 99.0, 1000, note, sizeof(note)));
	leave(t, r, &a0, false);
	leave(t, r, &a1, false);
	leave(t, r, &b0, false);
	leave(t, r, &b1, false);
	ts_job_destroy(t);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_refusals)
{
	struct ts_ring *r = make_ring(64);
	struct ts_job_table *t;
	ck_assert_int_eq(ts_job_create(&t, NULL), 0);
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
	ts_job_destroy(t);
	ts_ring_destroy(r);
}
END_TEST

/* A rank that leaves while the stream runs fails the others (TS_E_JOB,
 * naming it), even one asleep waiting; the name is free again at once. */
START_TEST(test_departure_fails_job)
{
	struct ts_ring *r = make_ring(64);
	struct ts_job_table *t;
	ck_assert_int_eq(ts_job_create(&t, NULL), 0);
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
	ts_job_destroy(t);
	ts_ring_destroy(r);
}
END_TEST

static Suite *job_suite(void)
{
	Suite *s = suite_create("job");
	TCase *tc = tcase_create("jobs");
	tcase_add_test(tc, test_wait_and_shares);
	tcase_add_test(tc, test_wait_times_out);
	tcase_add_test(tc, test_jobs_per_user);
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
