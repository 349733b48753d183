/*
 * engine_pool.c - the engine's threads: workers claim positions in order
 * (waiting for the I/O thread's bytes when it reads), the last one out
 * ends the stream; the I/O thread keeps queue_depth reads in flight in
 * position order; start, stop and join.
 */
#include "engine_internal.h"
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "augment.h"
#include "barrier.h"
#include "util.h"

void ts_engine_set_fatal(struct ts_engine *e, const struct ts_error *err)
{
	pthread_mutex_lock(&e->mu);
	if (!e->fatal) {
		e->fatal = err->code ? err->code : TS_E_STATE;
		e->fatal_err = *err;
	}
	/* release: the fatal error above is set when a worker sees stop */
	smp_store_release(&e->stop, true);
	pthread_cond_broadcast(&e->cv_ready);
	pthread_cond_broadcast(&e->cv_space);
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
}

/* Claim the next position; with the I/O thread, wait for its bytes.
 * Returns false when there is no more work. */
static bool claim(struct ts_engine *e, uint64_t *p, uint8_t **data,
		  size_t *len, int *status)
{
	pthread_mutex_lock(&e->mu);
	/* The last epoch asked for is claimed: another, while a connected
	 * trainer still wants it (it joined late). Under mu, as every change
	 * of total; total stays at an epoch's end. */
	if (e->per_trainer && !e->handover && e->next_claim >= e->total &&
	    e->total < UINT64_MAX - e->n && !smp_load_acquire(&e->stop)) {
		uint64_t epoch, index;
		ts_engine_pos_split(e, e->total, &epoch, &index);
		if (index == 0 && epoch < UINT32_MAX &&
		    ts_ring_epoch_wanted(e->ring, (uint32_t)epoch))
			e->total += e->n;
	}
	/* acquire: pairs with the release of whoever stopped us */
	if (smp_load_acquire(&e->stop) || e->next_claim >= e->total) {
		pthread_mutex_unlock(&e->mu);
		return false;
	}
	*p = e->next_claim++;
	*data = NULL;
	*len = 0;
	*status = 0;
	if (e->reader) {
		struct win_entry *we = &e->win[*p % e->wsize];
		while (!(we->state == WIN_READY && we->pos == *p) &&
		       !smp_load_acquire(&e->stop)) {
			/* About to starve: the I/O thread refills now. */
			if (e->io_idle)
				pthread_cond_signal(&e->cv_space);
			pthread_cond_wait(&e->cv_ready, &e->mu);
		}
		if (smp_load_acquire(&e->stop)) {
			pthread_mutex_unlock(&e->mu);
			return false;
		}
		*data = we->data;
		*len = we->len;
		*status = we->status;
		we->state = WIN_FREE;
		we->data = NULL;
		/* Wake the I/O thread for a quarter window at a time, so it
		 * submits many reads per io_uring_enter instead of one per
		 * claim (a futex round trip per image otherwise). */
		if (e->io_idle && ++e->freed >= (e->wsize + 3) / 4)
			pthread_cond_signal(&e->cv_space);
	}
	pthread_mutex_unlock(&e->mu);
	return true;
}

static uint64_t tv_us(struct timeval t)
{
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_usec;
}

/* The worker's CPU to the engine's first-epoch and later-epoch sums
 * (ts_engine_stats.cpu_*): what it used before its first sample of a
 * later epoch, and after. */
static void worker_cpu_add(struct worker *w)
{
	struct ts_engine *e = w->e;
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return;
	uint64_t u = tv_us(ru.ru_utime), s = tv_us(ru.ru_stime);
	uint64_t u1 = w->past_first ? tv_us(w->first_user) : u;
	uint64_t s1 = w->past_first ? tv_us(w->first_sys) : s;
	/* counts for stats, read after the join */
	ATOMIC_ADD(&e->cpu_us[0], u1);
	ATOMIC_ADD(&e->cpu_us[1], s1);
	ATOMIC_ADD(&e->cpu_us[2], u > u1 ? u - u1 : 0);
	ATOMIC_ADD(&e->cpu_us[3], s > s1 ? s - s1 : 0);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ts_engine *e = w->e;
	uint64_t p;
	uint8_t *data;
	size_t len;
	int status;
	uint64_t epoch0, epoch, index;
	ts_engine_pos_split(e, 0, &epoch0, &index);
	while (claim(e, &p, &data, &len, &status)) {
		struct ts_error err = {0};
		if (!w->past_first) {
			ts_engine_pos_split(e, p, &epoch, &index);
			struct rusage ru;
			if (epoch > epoch0 && getrusage(RUSAGE_THREAD, &ru) == 0) {
				w->first_user = ru.ru_utime;
				w->first_sys = ru.ru_stime;
				w->past_first = true;
			}
		}
		int rc = ts_engine_run_sample(w, p, data, len, status, &err);
		if (data)
			ts_reader_release(e->reader, data);
		if (rc && rc != -ECANCELED) {
			if (!err.code)
				ts_error_set(&err, rc, "%s", ts_error_name(rc));
			ts_engine_set_fatal(e, &err);
		}
	}
	ts_aug_scratch_free();
	ts_prof_add_thread(TS_PROF_WORKER);
	worker_cpu_add(w);
	/* Plugin hosts would die with this thread anyway (PR_SET_PDEATHSIG);
	 * reap them now rather than leave zombies until destroy. */
	for (size_t k = 0; k < e->n_plugins; k++)
		ts_plugin_host_stop(w->plugins[k]);
	/* The last worker out ends the stream: consumers must learn at once
	 * that no more samples come, and why. */
	if (ATOMIC_SUB(&e->live_workers, 1) == 0) { /* full barrier: last out */
		pthread_mutex_lock(&e->mu);
		int code = e->fatal ? e->fatal
			 : e->next_claim >= e->total ? 0
			 : e->asked_stop ? TS_E_STOPPED : TS_E_PRODUCER;
		bool keep = e->handover && code == 0;
		e->finished = !keep;
		smp_store_release(&e->stop, true); /* pairs with the acquires */
		pthread_cond_broadcast(&e->cv_space);
		pthread_mutex_unlock(&e->mu);
		if (!keep && e->ring)
			ts_ring_fail(e->ring, code, e->fatal ? e->fatal_err.msg : NULL);
	}
	return NULL;
}

/* The I/O thread: keep the window full of reads in position order. */
static void *io_main(void *arg)
{
	struct ts_engine *e = arg;
	struct ts_read_done done[32];
	for (;;) {
		pthread_mutex_lock(&e->mu);
		while (!smp_load_acquire(&e->stop) && ts_reader_in_flight(e->reader) == 0 &&
		       (e->next_submit >= e->total ||
			e->win[e->next_submit % e->wsize].state != WIN_FREE)) {
			e->io_idle = true;
			pthread_cond_wait(&e->cv_space, &e->mu);
			e->io_idle = false;
		}
		e->freed = 0;
		if (smp_load_acquire(&e->stop)) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		/* Submit what fits. */
		while (e->next_submit < e->total &&
		       e->win[e->next_submit % e->wsize].state == WIN_FREE) {
			uint64_t p = e->next_submit;
			uint64_t epoch, index;
			ts_engine_pos_split(e, p, &epoch, &index);
			const uint32_t *perm = ts_engine_perm_get(e, epoch);
			if (!perm)
				break;
			struct ts_item it;
			uint32_t id = perm[ts_share_node_pos(&e->node, index)];
			ts_source_item(e->ix, id, &it);
			/* An item in the decoded cache is not read: its worker
			 * gets no bytes (data NULL, status 0) and reads it
			 * itself in the rare case it needs them (a frame asked
			 * at a reduced DCT scale). */
			bool cached = ts_engine_cache_get(e->cache, id) != NULL;
			int rc = cached ? 0 : ts_reader_submit(e->reader, &it, p);
			if (rc == -EBUSY)
				break;
			struct win_entry *we = &e->win[p % e->wsize];
			we->pos = p;
			if (rc || cached) {
				we->state = WIN_READY;
				we->status = rc;
				we->data = NULL;
				we->len = 0;
				pthread_cond_broadcast(&e->cv_ready);
			} else {
				we->state = WIN_READING;
			}
			e->next_submit++;
		}
		pthread_mutex_unlock(&e->mu);
		int n = ts_reader_reap(e->reader, done, TS_ARRAY_LEN(done), 50);
		if (n <= 0)
			continue;
		pthread_mutex_lock(&e->mu);
		for (int i = 0; i < n; i++) {
			struct win_entry *we = &e->win[done[i].tag % e->wsize];
			we->state = WIN_READY;
			we->status = done[i].status;
			we->data = done[i].data;
			we->len = done[i].len;
		}
		pthread_cond_broadcast(&e->cv_ready);
		pthread_mutex_unlock(&e->mu);
	}
	/* Drain reads still in flight so their buffers come back. */
	while (ts_reader_in_flight(e->reader) > 0) {
		int n = ts_reader_reap(e->reader, done, TS_ARRAY_LEN(done), 100);
		for (int i = 0; i < n; i++)
			if (done[i].data)
				ts_reader_release(e->reader, done[i].data);
	}
	ts_prof_add_thread(TS_PROF_READ_IO);
	return NULL;
}

int ts_engine_start(struct ts_engine *e, struct ts_error *err)
{
	if (e->total == 0) {
		if (e->ring)
			ts_ring_finish(e->ring, 0);
		return 0;
	}
	if (e->reader) {
		if (pthread_create(&e->io_thread, NULL, io_main, e) != 0)
			return ts_error_set(err, -EAGAIN, "cannot start the reader thread");
		e->io_started = true;
	}
	WRITE_ONCE(e->live_workers, e->threads); /* pthread_create orders it */
	for (int i = 0; i < e->threads; i++) {
		if (pthread_create(&e->workers[i].thread, NULL, worker_main, &e->workers[i]) != 0) {
			struct ts_error se;
			ts_error_set(&se, -EAGAIN, "cannot start worker thread %d", i);
			ts_engine_set_fatal(e, &se);
			if (ATOMIC_SUB(&e->live_workers, e->threads - i) == 0) {
				e->finished = true;
				if (e->ring)
					ts_ring_finish(e->ring, -EAGAIN);
			}
			if (err)
				*err = se;
			return -EAGAIN;
		}
		e->workers[i].started = true;
	}
	return 0;
}

void ts_engine_stop(struct ts_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	/* Asked before the end: the stream ends "stopped", not "failed". */
	e->asked_stop = true;
	smp_store_release(&e->stop, true); /* asked_stop is set when seen */
	pthread_cond_broadcast(&e->cv_ready);
	pthread_cond_broadcast(&e->cv_space);
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
}

int ts_engine_join(struct ts_engine *e, struct ts_error *err)
{
	if (e->joined)
		goto out;
	for (int i = 0; i < e->threads; i++)
		if (e->workers[i].started)
			pthread_join(e->workers[i].thread, NULL);
	pthread_mutex_lock(&e->mu);
	bool asked = e->asked_stop;
	pthread_mutex_unlock(&e->mu);
	ts_engine_stop(e);
	if (e->io_started)
		pthread_join(e->io_thread, NULL);
	e->joined = true;
	if (e->ring && !e->finished && !(e->handover && !e->fatal))
		ts_ring_fail(e->ring, e->fatal ? e->fatal
				     : asked ? TS_E_STOPPED : TS_E_PRODUCER,
			     e->fatal ? e->fatal_err.msg : NULL);
	e->finished = true;
out:
	if (e->fatal) {
		if (err)
			*err = e->fatal_err;
		return e->fatal;
	}
	return 0;
}
