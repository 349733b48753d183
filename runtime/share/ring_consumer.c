/*
 * ring_consumer.c - the ring's side of each attached trainer: where it
 * joins (ts_ring_attach and its control page), a job's start and its
 * failed rank, the stall clock and detaching (the stall_timeout policy).
 */
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barrier.h"
#include "ring_internal.h"
#include "ring_shm.h"
#include "util.h"

/*
 * Where a joiner starts. Samples at or above limit - capacity are intact
 * and stay so once the joiner is registered (grants happen under the
 * lock), so a joiner may start that far back. next_epoch looks back from
 * the head for the first sample of the current epoch; if it is still in
 * that window the joiner gets the whole epoch, else it skips to the next.
 */
static void join_position(struct ts_ring *r, enum ts_ring_join join,
			  struct ts_ring_join_pos *pos)
{
	uint64_t h = smp_load_acquire(&r->hdr->head);
	uint64_t lo = r->limit > r->capacity ? r->limit - r->capacity : 0;
	pos->start = h;
	pos->min_epoch = 0;
	pos->min_index = 0;
	if (join != TS_JOIN_NEXT_EPOCH || h == 0)
		return;
	if (lo > h)
		lo = h;
	uint32_t e = r->meta[(h - 1) % r->capacity].epoch;
	uint64_t s = h - 1;
	while (s > lo && r->meta[(s - 1) % r->capacity].epoch == e)
		s--;
	if (s > lo || s == 0) {
		pos->start = s;
		pos->min_epoch = e;
	} else {
		pos->min_epoch = e + 1;
	}
}

/* Is sample m before position (epoch, index) of the stream? */
static bool meta_before(const struct ts_ring_meta *m, uint32_t epoch, uint64_t index)
{
	return m->epoch < epoch || (m->epoch == epoch && m->index < index);
}

/*
 * Where a resuming trainer starts (tensorsocket(7), Join policies): at
 * (E, I) = (resume_epoch, resume_index) when that sample is still intact
 * in the ring or not published yet (the exact resume: the same samples,
 * as after a run --start at or before it); otherwise at index I of the
 * first later epoch whose sample I still is: the current one when the
 * ring has not passed I yet, else the next. The reader skips (releases
 * unread) what comes before (min_epoch, min_index). Called with the lock
 * held, as join_position.
 */
static void resume_position(struct ts_ring *r, const struct ts_ring_join_req *req,
			    struct ts_ring_join_pos *pos)
{
	uint64_t h = smp_load_acquire(&r->hdr->head);
	uint64_t lo = r->limit > r->capacity ? r->limit - r->capacity : 0;
	uint32_t te = req->resume_epoch;
	uint64_t ti = req->resume_index;
	if (lo > h)
		lo = h;
	/* The oldest sample still to be had: the stream's first when none is
	 * published, the oldest intact one, or (none intact) the one after
	 * the last published (its slot may be rewritten already by a later
	 * sample: the trainer then begins an epoch later than it might). */
	struct ts_ring_meta first = { .epoch = r->origin_epoch, .index = r->origin_index };
	if (h > 0)
		first = r->meta[(lo < h ? lo : h - 1) % r->capacity];
	if (h > 0 && lo == h)
		first.index++;
	if (meta_before(&first, te, ti) || (first.epoch == te && first.index == ti)) {
		/* (E, I) is intact or to come: exact */
	} else {
		te = first.index <= ti ? first.epoch : first.epoch + 1;
	}
	uint64_t s = lo;
	while (s < h && meta_before(&r->meta[s % r->capacity], te, ti))
		s++;
	pos->start = s;
	pos->min_epoch = te;
	pos->min_index = ti;
}

/*
 * The epoch a joiner at p stops before: its first whole epoch plus the
 * stream's epochs (0: endless). A next_epoch joiner's first whole epoch is
 * p's min_epoch; a "now" joiner's the one after the sample before its
 * start (its partial first epoch does not count). Joiners at the stream's
 * start get the epochs as configured (from a run's --start on). Called
 * with the lock held.
 */
static uint32_t end_epoch(const struct ts_ring *r, enum ts_ring_join join,
			  const struct ts_ring_join_pos *p)
{
	uint32_t epochs = r->hdr->epochs;  /* set at create, never changes */
	if (!epochs)
		return 0;
	uint64_t first = 0;
	if (join == TS_JOIN_NEXT_EPOCH)
		first = p->min_epoch;
	else if (p->start > 0)
		first = (uint64_t)r->meta[(p->start - 1) % r->capacity].epoch + 1;
	uint64_t end = first + epochs;
	return end > UINT32_MAX ? UINT32_MAX : (uint32_t)end;
}

/* A resuming trainer's end (struct ts_ring_join_req): the epoch it begins
 * in (p's min_epoch) and the epochs it still owes, that one counted, at
 * least 1 and at most the stream's epochs; 0 for an endless stream. */
static uint32_t resume_end_epoch(const struct ts_ring *r, const struct ts_ring_join_req *req,
				 const struct ts_ring_join_pos *p)
{
	uint32_t epochs = r->hdr->epochs;  /* set at create, never changes */
	if (!epochs)
		return 0;
	uint64_t left = req->has_resume_epochs ? req->resume_epochs
		      : epochs > req->resume_epoch ? epochs - req->resume_epoch : 1;
	if (left < 1 && p->min_epoch == 0)
		left = 1;
	if (left > epochs)
		left = epochs;
	uint64_t end = (uint64_t)p->min_epoch + left;
	return end > UINT32_MAX ? UINT32_MAX : (uint32_t)end;
}

int ts_ring_attach(struct ts_ring *r, const struct ts_ring_join_req *req,
		   struct ts_ring_consumer **out, struct ts_ring_join_pos *pos,
		   struct ts_error *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct ts_ring_consumer *c = NULL;
	int rc;

	if (!req || req->batch == 0 || req->batch > r->capacity / 2)
		return ts_error_set(err, TS_E_REFUSED,
				    "batch size %u is larger than half the ring "
				    "(%llu samples); ask for at most %llu",
				    req ? req->batch : 0,
				    (unsigned long long)r->capacity,
				    (unsigned long long)(r->capacity / 2));
	c = calloc(1, sizeof(*c));
	if (!c)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	c->ctl = MAP_FAILED;
	/* Sealed at its one page: the consumer that holds it (maybe another
	 * user's, with group =) cannot shrink it under our mapping (SIGBUS
	 * in the producer), grow it, or add seals. It writes through its
	 * mapping, as it must. */
	c->ctl_fd = memfd_create("tsrun-ctl", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->ctl_fd < 0 || ftruncate(c->ctl_fd, (off_t)page) < 0 ||
	    fcntl(c->ctl_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = ts_error_set(err, -errno, "control page: %s", strerror(errno));
		goto fail;
	}
	c->ctl = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED,
		      c->ctl_fd, 0);
	if (c->ctl == MAP_FAILED) {
		rc = ts_error_set(err, -errno, "control page: %s", strerror(errno));
		goto fail;
	}
	c->pid = req->pid;
	c->batch = req->batch;
	c->attached = ts_clock_now();
	if (req->job)
		snprintf(c->job, sizeof(c->job), "%s", req->job);
	c->local = req->pid == 0;
	c->ctl->magic = TS_RING_CTL_MAGIC;
	c->ctl->version = TS_RING_VERSION;

	pthread_mutex_lock(&r->lock);
	/* Acquire: pairs with the xchg in finish. */
	if (smp_load_acquire(&r->finished)) {
		pthread_mutex_unlock(&r->lock);
		rc = ts_error_set(err, TS_E_REFUSED,
				  "the stream has ended; nothing left to serve");
		goto fail;
	}
	if (r->n_consumers >= TS_RING_MAX_CONSUMERS) {
		pthread_mutex_unlock(&r->lock);
		rc = ts_error_set(err, TS_E_REFUSED,
				  "too many consumers (at most %d)",
				  TS_RING_MAX_CONSUMERS);
		goto fail;
	}
	struct ts_ring_join_pos p = { 0 };
	if (req->resume && !req->job_wait)
		resume_position(r, req, &p);
	else
		join_position(r, req->join, &p);
	/* A waiting rank's start is its job's, picked when the job is
	 * complete (ts_ring_consumer_start_job); the reader sees job_wait
	 * in the page the welcome hands it. */
	c->job_wait = req->job_wait;
	c->ctl->job_wait = req->job_wait;
	c->end_epoch = req->resume && !req->job_wait ? resume_end_epoch(r, req, &p)
		       : end_epoch(r, req->join, &p);
	c->ctl->end_epoch = c->end_epoch;
	c->start = p.start;
	c->ctl->start = p.start;
	/* Release: start is in place before the producer reads release. */
	smp_store_release(&c->ctl->release, p.start);
	c->last_release = p.start;
	c->last_time = ts_clock_now();
	c->stall_release = p.start;
	c->stall_since = -1.0;
	int slot = 0;
	while (r->watch[slot])
		slot++;
	c->slot = slot;
	/* Release: the ctl page contents are initialised before publish()
	 * can see the pointer. */
	smp_store_release(&r->watch[slot], c->ctl);
	r->consumers[r->n_consumers++] = c;
	pthread_mutex_unlock(&r->lock);
	ts_ring_wake_producers(r);
	*out = c;
	if (pos)
		*pos = p;
	return 0;
fail:
	if (c->ctl != MAP_FAILED)
		munmap(c->ctl, page);
	if (c->ctl_fd >= 0)
		close(c->ctl_fd);
	free(c);
	return rc;
}

int ts_ring_consumer_ctl_fd(const struct ts_ring_consumer *c)
{
	return c->ctl_fd;
}

void ts_ring_consumer_start_job(struct ts_ring *r, struct ts_ring_consumer *const *cs,
				size_t n, enum ts_ring_join join,
				struct ts_ring_join_pos *pos)
{
	struct ts_ring_join_pos p;
	pthread_mutex_lock(&r->lock);
	/* Under the lock, as every grant: no writer passes p.start +
	 * capacity before the ranks' releases below bound it. */
	join_position(r, join, &p);
	uint32_t end = end_epoch(r, join, &p);
	double t = ts_clock_now();
	for (size_t i = 0; i < n; i++) {
		struct ts_ring_consumer *c = cs[i];
		c->start = p.start;
		c->ctl->start = p.start;
		/* Release: the start is in place before a writer, which
		 * acquires release, bounds itself by it. The reader writes
		 * release only once it sees job_wait 0 (below). */
		smp_store_release(&c->ctl->release, p.start);
		c->last_release = p.start;
		c->last_time = t;
		c->stall_release = p.start;
		c->stall_since = -1.0;
		c->job_wait = false;
		c->end_epoch = end;
		WRITE_ONCE(c->ctl->end_epoch, end);
		WRITE_ONCE(c->ctl->job_start, p.start);
		WRITE_ONCE(c->ctl->job_min_epoch, p.min_epoch);
		/* Release: the start above is in place before the reader,
		 * which acquires job_wait, reads it. */
		smp_store_release(&c->ctl->job_wait, 0u);
	}
	pthread_mutex_unlock(&r->lock);
	/* Wake the ranks asleep on the head (they re-check job_wait). Full
	 * barrier: the flags are visible before the futex value changes. */
	ATOMIC_ADD(&r->hdr->head_seq, 1);
	futex_wake(&r->hdr->head_seq, false);
	/* Writers paused for want of a trainer may go on now. */
	ts_ring_wake_producers(r);
	*pos = p;
}

bool ts_ring_epoch_wanted(struct ts_ring *r, uint32_t epoch)
{
	bool want = false;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; !want && i < r->n_consumers; i++) {
		const struct ts_ring_consumer *c = r->consumers[i];
		/* Acquire: pairs with the reader's release of done (nothing
		 * rides on it but the flag). */
		want = !c->job_wait && c->end_epoch > epoch &&
		       !smp_load_acquire(&c->ctl->done);
	}
	pthread_mutex_unlock(&r->lock);
	return want;
}

void ts_ring_consumer_job_timeout(struct ts_ring *r, struct ts_ring_consumer *c,
				  uint64_t missing, uint32_t timeout_ms)
{
	WRITE_ONCE(c->ctl->job_missing, missing);
	WRITE_ONCE(c->ctl->job_timeout_ms, timeout_ms);
	/* Release: the ranks and the setting are in place before the
	 * reader, which acquires job_failed, reads them. */
	smp_store_release(&c->ctl->job_failed, 2u);
	/* As in fail_job: wake a reader asleep on the head. */
	ATOMIC_ADD(&r->hdr->head_seq, 1);
	futex_wake(&r->hdr->head_seq, false);
}

void ts_ring_consumer_fail_job(struct ts_ring *r, struct ts_ring_consumer *c,
			       uint32_t rank, uint32_t pid)
{
	WRITE_ONCE(c->ctl->job_failed_rank, rank);
	WRITE_ONCE(c->ctl->job_failed_pid, pid);
	/* Release: the rank and pid are in place before the reader, which
	 * acquires job_failed, reads them. */
	smp_store_release(&c->ctl->job_failed, 1u);
	/* Wake readers asleep on the head (they re-check and see it). Full
	 * barrier: the flag is visible before the futex value changes. */
	ATOMIC_ADD(&r->hdr->head_seq, 1);
	futex_wake(&r->hdr->head_seq, false);
}

double ts_ring_consumer_held(struct ts_ring *r, struct ts_ring_consumer *c)
{
	double held = 0.0;
	pthread_mutex_lock(&r->lock);
	/* Acquire: as in recompute_limit. */
	if (c->job_wait || smp_load_acquire(&c->ctl->done)) {
		/* Waiting for its job's ranks, or done with its epochs, it
		 * holds nobody back. */
		c->stall_since = -1.0;
		pthread_mutex_unlock(&r->lock);
		return 0.0;
	}
	/* Acquire both: positions the two sides really reached (we only
	 * compare them). */
	uint64_t head = smp_load_acquire(&r->hdr->head);
	uint64_t rel = smp_load_acquire(&c->ctl->release);
	/* A writer waits for a seq it may not write while this consumer
	 * keeps rel (or one at the same position, stalled as long): the
	 * highest seq waited for is not granted yet and lies a capacity or
	 * more past rel. After the end nobody waits. */
	bool holding = r->want >= r->limit && r->want >= rel + r->capacity &&
		       !smp_load_acquire(&r->finished) &&
		       smp_load_acquire(&r->hdr->state) == TS_RING_RUNNING;
	/* ... and someone waits on it: another consumer that has read all
	 * but less than a batch of what is published. A trainer alone (or
	 * with every other one stopped as long) harms nobody by pausing. */
	bool waited_on = false;
	for (size_t i = 0; holding && !waited_on && i < r->n_consumers; i++) {
		struct ts_ring_consumer *o = r->consumers[i];
		/* Acquire: as rel above. */
		waited_on = o != c && !o->job_wait &&
			    smp_load_acquire(&o->ctl->release) + o->batch > head;
	}
	holding = holding && waited_on;
	double t = ts_clock_now();
	if (!holding || rel != c->stall_release) {
		c->stall_release = rel;
		c->stall_since = holding ? t : -1.0;
	} else if (c->stall_since < 0) {
		c->stall_since = t;
	} else {
		held = t - c->stall_since;
	}
	pthread_mutex_unlock(&r->lock);
	return held;
}

void ts_ring_consumer_mark_stalled(struct ts_ring *r, struct ts_ring_consumer *c,
				   uint32_t held_ms, uint32_t timeout_ms)
{
	WRITE_ONCE(c->ctl->detached_held_ms, held_ms);
	WRITE_ONCE(c->ctl->detached_timeout_ms, timeout_ms);
	/* Release: the two figures are in place before the reader, which
	 * acquires detached, reads them. */
	smp_store_release(&c->ctl->detached, 1u);
	/* Wake a reader asleep on the head (it re-checks and sees it). Full
	 * barrier: the flag is visible before the futex value changes. */
	ATOMIC_ADD(&r->hdr->head_seq, 1);
	futex_wake(&r->hdr->head_seq, false);
}

void ts_ring_detach(struct ts_ring *r, struct ts_ring_consumer *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n_consumers; i++) {
		if (r->consumers[i] == c) {
			r->consumers[i] = r->consumers[--r->n_consumers];
			break;
		}
	}
	/* Keep what it got: its final release, for summaries. */
	struct ts_ring_consumer_stat *d = &r->departed[r->n_departed++ % TS_RING_MAX_CONSUMERS];
	memset(d, 0, sizeof(*d));
	d->pid = c->pid;
	d->batch = c->batch;
	d->start = c->start;
	d->release = smp_load_acquire(&c->ctl->release);
	d->skipped = READ_ONCE(c->ctl->skipped);
	d->local = c->local;
	/* Its accounting as it left (the wait under way, none once its
	 * reader closed, counted to now). */
	d->attached = c->attached;
	d->at = ts_clock_now();
	memcpy(d->job, c->job, sizeof(d->job));
	ts_ring_ctl_read_acct(c->ctl, d->at, d);
	/* Ordered before the pub_active load by the smp_mb in
	 * ts_ring_quiesce_publish(): no scan reads this page once it returns. */
	WRITE_ONCE(r->watch[c->slot], NULL);
	c->dead = true;
	bool now = c->refs == 0;
	if (!now) {
		/* A writer sleeps on this page: wake it to recompute. Full
		 * barrier: the table change is visible before the bump. */
		ATOMIC_ADD(&c->ctl->wake_seq, 1);
		futex_wake(&c->ctl->wake_seq, false);
	}
	pthread_mutex_unlock(&r->lock);
	ts_ring_wake_producers(r);
	if (now)
		ts_ring_free_consumer(r, c);
}
