/* test-finisher.c - staged publication (ring.h) and the finisher thread
 * (ring_finisher.h) with a CPU fill standing in for the device ring: consumers
 * see a sample only after its fill, the end of stream waits for the last
 * fill, a failing fill ends the stream with an error, and a fill never
 * crosses the ring's wrap. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring_finisher.h"
#include "ring.h"
#include "util.h"

#define SB 16   /* sample bytes: 4x4x1 uint8 */

struct fake_dev {
	uint64_t cap;
	uint8_t *slots;          /* cap * SB: "finished" = host byte + 1 */
	size_t chunk;
	uint64_t fail_at;        /* a fill covering this seq fails (0: never) */
	useconds_t delay;
	int bad_call;            /* a fill crossed the wrap or the chunk */
	uint64_t calls;
};

static int fake_fill(void *arg, const void *host, uint64_t seq, size_t n,
		     struct ts_error *err)
{
	struct fake_dev *d = arg;
	d->calls++;
	if (n == 0 || n > d->chunk || seq % d->cap + n > d->cap)
		d->bad_call = 1;
	if (d->fail_at && seq <= d->fail_at && d->fail_at < seq + n)
		return ts_error_set(err, TS_E_NODEV, "fake device lost at seq %llu",
				    (unsigned long long)d->fail_at);
	if (d->delay)
		usleep(d->delay);
	/* Relaxed atomics on the fake device: the ring's head orders them,
	 * but through two mappings of one page, which ThreadSanitizer cannot
	 * pair; the check below still fails if the order were wrong. */
	const uint8_t *h = host;
	for (size_t i = 0; i < n * SB; i++)
		__atomic_store_n(&d->slots[(seq % d->cap) * SB + i], (uint8_t)(h[i] + 1),
				 __ATOMIC_RELAXED);
	return 0;
}

static struct ts_ring *make_staged(uint64_t cap)
{
	struct ts_ring_params p = { .height = 4, .width = 4, .channels = 1,
				    .dtype = TS_DTYPE_U8, .capacity = cap,
				    .samples_per_epoch = 0, .staged = true,
				    .min_consumers = 1 };
	struct ts_ring *r = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &r, &err), 0);
	return r;
}

struct producer {
	struct ts_ring *r;
	uint64_t n;
	bool finish;
	int rc;                  /* first wait_writable failure */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	for (uint64_t s = 0; s < p->n; s++) {
		int rc = ts_ring_wait_writable(p->r, s, 5000);
		if (rc) {
			p->rc = rc;
			return NULL;
		}
		memset(ts_ring_slot(p->r, s), (int)(s & 0x7f), SB);
		ts_ring_set_meta(p->r, s, (int32_t)s, 0, s);
		if (s % 3 == 2 || s + 1 == p->n)
			ts_ring_publish(p->r, s + 1);
	}
	if (p->finish)
		ts_ring_finish(p->r, 0);
	return NULL;
}

/* Read everything; every sample seen must already be finished. Returns
 * the samples read and the final code. */
static uint64_t consume(struct ts_ring *r, struct fake_dev *d, uint32_t batch, int *code)
{
	struct ts_ring_local *l = NULL;
	struct ts_ring_batch b;
	struct ts_error err;
	uint64_t next = 0;
	ck_assert_int_eq(ts_ring_local_create(r, batch, TS_JOIN_NOW, false, &l, &err), 0);
	int rc;
	while ((rc = ts_ring_local_next(l, &b, 10000, &err)) == 0) {
		ck_assert_uint_eq(b.seq, next);
		for (size_t i = 0; i < b.n; i++) {
			uint64_t s = b.seq + i;
			const uint8_t *host = (const uint8_t *)b.data + i * SB;
			ck_assert_uint_eq(host[0], s & 0x7f);
			/* visible means finished */
			ck_assert_uint_eq(__atomic_load_n(&d->slots[(s % d->cap) * SB],
							  __ATOMIC_RELAXED), (s & 0x7f) + 1);
			ck_assert_int_eq(b.labels[i], (int32_t)s);
		}
		next += b.n;
	}
	*code = rc;
	ts_ring_local_destroy(l);
	return next;
}

static void fake_init(struct fake_dev *d, struct ts_ring *r, size_t chunk)
{
	struct ts_ring_info in;
	ts_ring_get_info(r, &in);
	memset(d, 0, sizeof(*d));
	d->cap = in.capacity;
	d->chunk = chunk;
	d->slots = calloc(in.capacity, SB);
	ck_assert_ptr_nonnull(d->slots);
}

START_TEST(test_written_is_not_visible)
{
	struct ts_ring *r = make_staged(256);
	struct ts_ring_local *l = NULL;
	struct ts_ring_batch b;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_local_create(r, 4, TS_JOIN_NOW, false, &l, &err), 0);
	for (uint64_t s = 0; s < 10; s++) {
		ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
		ts_ring_set_meta(r, s, 0, 0, s);
	}
	ts_ring_publish(r, 10);
	ck_assert_uint_eq(ts_ring_written(r), 10);
	ck_assert_uint_eq(ts_ring_head(r), 0);
	/* nothing visible without the finisher; a normal finish waits too */
	ts_ring_finish(r, 0);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 200, &err), -ETIMEDOUT);
	uint64_t w = 0;
	bool ending = false;
	ck_assert_int_eq(ts_ring_stage_wait(r, 0, &w, &ending, 100), 0);
	ck_assert_uint_eq(w, 10);
	ck_assert(ending);
	ts_ring_stage_publish(r, 10);
	ts_ring_stage_end(r, 0);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), 0);
	ck_assert_uint_eq(b.n, 4);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), 0);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), 0);
	ck_assert_uint_eq(b.n, 2);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), TS_E_EOS);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_stream_through_finisher)
{
	/* a small ring (the 16-byte samples round it to 256) wraps many
	 * times; fills of up to 24 never cross the wrap */
	struct ts_ring *r = make_staged(256);
	struct fake_dev d;
	struct ts_finisher *f = NULL;
	struct ts_error err;
	fake_init(&d, r, 24);
	d.delay = 50;
	ck_assert_int_eq(ts_finisher_start(r, 24, fake_fill, &d, &f, &err), 0);
	struct producer p = { .r = r, .n = 5000, .finish = true };
	pthread_t t;
	pthread_create(&t, NULL, produce, &p);
	int code = 0;
	uint64_t got = consume(r, &d, 10, &code);
	pthread_join(t, NULL);
	ck_assert_int_eq(p.rc, 0);
	/* the end of stream came after the last fill, not before */
	ck_assert_int_eq(code, TS_E_EOS);
	ck_assert_uint_eq(got, 5000);
	ck_assert_int_eq(d.bad_call, 0);
	struct ts_finisher_stats st;
	ts_finisher_stats(f, &st);
	ck_assert_uint_eq(st.samples, 5000);
	ck_assert_uint_eq(st.fills, d.calls);
	ck_assert_int_eq(ts_finisher_stop(f, &err), 0);
	free(d.slots);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_fill_error_ends_stream)
{
	struct ts_ring *r = make_staged(256);
	struct fake_dev d;
	struct ts_finisher *f = NULL;
	struct ts_error err = {0};
	fake_init(&d, r, 16);
	d.fail_at = 700;
	ck_assert_int_eq(ts_finisher_start(r, 16, fake_fill, &d, &f, &err), 0);
	struct producer p = { .r = r, .n = 5000, .finish = true };
	pthread_t t;
	pthread_create(&t, NULL, produce, &p);
	int code = 0;
	uint64_t got = consume(r, &d, 8, &code);
	pthread_join(t, NULL);
	/* consumers stop with the producer's error at or before the failed
	 * run; the writers are cancelled, none hangs */
	ck_assert_int_eq(code, TS_E_PRODUCER);
	ck_assert_uint_le(got, 700);
	ck_assert_int_eq(p.rc, -ECANCELED);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ts_finisher_stop(f, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "fake device lost at seq 700"));
	free(d.slots);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_stop_midstream)
{
	struct ts_ring *r = make_staged(256);
	struct fake_dev d;
	struct ts_finisher *f = NULL;
	struct ts_error err;
	struct ts_ring_local *l = NULL;
	fake_init(&d, r, 32);
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &l, &err), 0);
	ck_assert_int_eq(ts_finisher_start(r, 32, fake_fill, &d, &f, &err), 0);
	for (uint64_t s = 0; s < 40; s++) {
		ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
		ts_ring_set_meta(r, s, 0, 0, s);
	}
	ts_ring_publish(r, 40);
	for (int i = 0; i < 200 && ts_ring_head(r) < 40; i++)
		usleep(10000);
	ck_assert_uint_eq(ts_ring_head(r), 40);
	/* a stop with the stream running returns at once and cleanly */
	ck_assert_int_eq(ts_finisher_stop(f, &err), 0);
	ts_ring_local_destroy(l);
	free(d.slots);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_bad_args)
{
	struct ts_ring *r = make_staged(256);
	struct ts_finisher *f = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_finisher_start(r, 0, fake_fill, NULL, &f, &err), TS_E_ARG);
	ck_assert_int_eq(ts_finisher_start(r, 4, NULL, NULL, &f, &err), TS_E_ARG);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(ts_finisher_stop(NULL, &err), 0);
	ts_ring_destroy(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("finisher");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_written_is_not_visible);
	tcase_add_test(tc, test_stream_through_finisher);
	tcase_add_test(tc, test_fill_error_ends_stream);
	tcase_add_test(tc, test_stop_midstream);
	tcase_add_test(tc, test_bad_args);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
