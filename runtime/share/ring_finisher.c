/* ring_finisher.c - the staged ring's finisher thread (ring_finisher.h). */
#include "ring_finisher.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "barrier.h"
#include "util.h"

#define WAIT_SLICE_MS 100

struct ts_finisher {
	struct ts_ring *ring;
	size_t chunk;
	uint64_t capacity;
	ts_finisher_fill fill;
	void *arg;
	pthread_t thread;
	int stop;                 /* atomic */
	uint64_t done;            /* atomic: visible head we published */
	uint64_t fills;           /* atomic */
	double fill_s;            /* under mu */
	pthread_mutex_t mu;
	int rc;                   /* after join */
	struct ts_error err;
};

/* Finish [done, written) in chunks that stay inside one pass of the
 * ring, so the host bytes are in the first mapping (the one a producer
 * pins for DMA). Returns the new done, or stops at the first error. */
static int fill_range(struct ts_finisher *f, uint64_t done, uint64_t written,
		      uint64_t *out)
{
	while (done < written) {
		uint64_t to_wrap = f->capacity - done % f->capacity;
		uint64_t n = written - done;
		if (n > f->chunk)
			n = f->chunk;
		if (n > to_wrap)
			n = to_wrap;
		double t0 = ts_clock_now();
		int rc = f->fill(f->arg, ts_ring_slot(f->ring, done), done, (size_t)n,
				 &f->err);
		double dt = ts_clock_now() - t0;
		pthread_mutex_lock(&f->mu);
		f->fill_s += dt;
		pthread_mutex_unlock(&f->mu);
		ATOMIC_ADD(&f->fills, 1); /* a count for stats: orders nothing */
		if (rc < 0) {
			*out = done;
			return rc;
		}
		done += n;
		ts_ring_stage_publish(f->ring, done);
		WRITE_ONCE(f->done, done); /* for stats, untorn; publish ordered the data */
	}
	*out = done;
	return 0;
}

static void *finisher_main(void *arg)
{
	struct ts_finisher *f = arg;
	uint64_t done = READ_ONCE(f->done); /* our own word: untorn is enough */
	/* pairs with ts_finisher_stop's release: what it set before is seen */
	while (!smp_load_acquire(&f->stop)) {
		uint64_t written = 0;
		bool ending = false;
		int rc = ts_ring_stage_wait(f->ring, done, &written, &ending, WAIT_SLICE_MS);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc < 0)
			break;        /* the stream failed; nothing to show */
		rc = fill_range(f, done, written, &done);
		if (rc < 0) {
			f->rc = rc;
			/* consumers get TS_E_PRODUCER, writers -ECANCELED */
			ts_ring_stage_end(f->ring, rc);
			break;
		}
		if (ending) {
			ts_ring_stage_end(f->ring, 0);
			break;
		}
	}
	return NULL;
}

int ts_finisher_start(struct ts_ring *ring, size_t chunk, ts_finisher_fill fill,
		      void *arg, struct ts_finisher **out, struct ts_error *err)
{
	if (!ring || !fill || !out || chunk == 0)
		return ts_error_set(err, TS_E_ARG, "finisher: ring, fill and a chunk >= 1 needed");
	struct ts_finisher *f = calloc(1, sizeof(*f));
	if (!f)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	struct ts_ring_info info;
	ts_ring_get_info(ring, &info);
	f->ring = ring;
	f->capacity = info.capacity;
	f->chunk = chunk;
	f->fill = fill;
	f->arg = arg;
	f->done = ts_ring_head(ring);
	pthread_mutex_init(&f->mu, NULL);
	int e = pthread_create(&f->thread, NULL, finisher_main, f);
	if (e) {
		pthread_mutex_destroy(&f->mu);
		free(f);
		return ts_error_set(err, -e, "finisher: cannot start a thread");
	}
	*out = f;
	return 0;
}

void ts_finisher_stats(struct ts_finisher *f, struct ts_finisher_stats *out)
{
	/* stats: untorn reads, no order needed between them */
	out->samples = READ_ONCE(f->done);
	out->fills = READ_ONCE(f->fills);
	pthread_mutex_lock(&f->mu);
	out->fill_s = f->fill_s;
	pthread_mutex_unlock(&f->mu);
}

int ts_finisher_stop(struct ts_finisher *f, struct ts_error *err)
{
	if (!f)
		return 0;
	smp_store_release(&f->stop, 1); /* pairs with finisher_main's acquire */
	pthread_join(f->thread, NULL);
	int rc = f->rc;
	if (rc < 0 && err)
		*err = f->err;
	pthread_mutex_destroy(&f->mu);
	free(f);
	return rc;
}
