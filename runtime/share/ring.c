/* ring.c - the producer side of the shared sample ring: memfd layout,
 * publish, space accounting over attached consumers, attach and detach,
 * and the in-process consumer. The reader side is ring_reader.c. */
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "barrier.h"
#include "memory.h"
#include "ring_internal.h"
#include "ring_shm.h"
#include "util.h"

/* Where the ring's parts lie in its memfd: the header page, the data,
 * the per-sample metadata, the labels. */
struct ring_layout {
	uint64_t page, data_off, meta_off, label_off, file_bytes;
};

/* The memfd, every page allocated, and its mappings (the data twice,
 * back to back). */
static int map_ring(struct ts_ring *r, const struct ring_layout *l, struct ts_error *err)
{
	const uint64_t page = l->page, file_bytes = l->file_bytes;
	const uint64_t data_off = l->data_off, meta_off = l->meta_off, label_off = l->label_off;
	uint64_t cap = r->capacity;
	int rc;
	r->fd = memfd_create("tsrun-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->fd < 0) {
		rc = ts_error_set(err, -errno, "ring: memfd_create: %s",
				  strerror(errno));
		return rc;
	}
	if (ftruncate(r->fd, (off_t)file_bytes) < 0) {
		rc = ts_error_set(err, -errno, "ring: cannot size %llu bytes: %s",
				  (unsigned long long)file_bytes, strerror(errno));
		return rc;
	}
	/* Allocate every page now: the memory figure is honoured from the
	 * start, and a machine without that much shared memory says so here
	 * rather than with SIGBUS mid-run. */
	rc = posix_fallocate(r->fd, 0, (off_t)file_bytes);
	if (rc != 0) {
		rc = ts_error_set(err, -rc, "ring: cannot allocate %llu bytes of shared "
				  "memory: %s; use a smaller ring or free memory",
				  (unsigned long long)file_bytes, strerror(rc));
		return rc;
	}
	r->hdr = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	r->meta = mmap(NULL, r->meta_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, (off_t)meta_off);
	if (r->label_region_bytes)
		r->label_region = mmap(NULL, r->label_region_bytes, PROT_READ | PROT_WRITE,
				       MAP_SHARED, r->fd, (off_t)label_off);
	if (r->hdr == MAP_FAILED || r->meta == MAP_FAILED ||
	    (r->label_region_bytes && r->label_region == MAP_FAILED)) {
		rc = ts_error_set(err, -errno, "ring: mmap: %s", strerror(errno));
		return rc;
	}
	rc = map_double(r->fd, data_off, r->data_bytes, PROT_READ | PROT_WRITE, 0,
			&r->data);
	if (rc < 0)
		return ts_error_set(err, rc, "ring: double map of %zu bytes: %s",
				    r->data_bytes, strerror(-rc));
	/* The pages are allocated (above) but not yet zeroed nor mapped:
	 * that is most of a fresh ring's cost (some 2.5 us a page), and
	 * done here it runs on one core before any worker starts. The
	 * writers do it instead, each for the slots it is about to write
	 * on the first lap (prefault, from ts_ring_wait_writable), in one
	 * madvise a slot rather than a fault a page, on every worker's
	 * core. A kernel without MADV_POPULATE_WRITE (before 5.14) gets
	 * the old way: every page faulted in now. */
	if (madvise(r->data, (size_t)page, MADV_POPULATE_WRITE) != 0) {
		r->populated = cap;
		for (uint64_t off = 0; off < r->data_bytes; off += page)
			((volatile uint8_t *)r->data)[off] = 0; /* zero already */
	}

	return 0;
}

/* The shared header: the layout and the sample's shape, then state
 * RUNNING (release). */
static void write_header(struct ts_ring *r, const struct ts_ring_params *p,
			 const struct ring_layout *l)
{
	const uint64_t sb = r->sample_bytes, stride = r->sample_stride, cap = r->capacity;
	const uint64_t data_off = l->data_off, meta_off = l->meta_off, label_off = l->label_off;
	const uint64_t file_bytes = l->file_bytes;
	struct ts_ring_hdr *h = r->hdr;
	h->magic = TS_RING_MAGIC;
	h->version = TS_RING_VERSION;
	h->height = (uint32_t)p->height;
	h->width = (uint32_t)p->width;
	h->channels = (uint32_t)p->channels;
	h->dtype = (uint32_t)p->dtype;
	h->layout = (uint32_t)p->layout;
	h->epochs = p->epochs;
	h->sample_bytes = sb;
	h->sample_stride = stride;
	h->capacity = cap;
	h->samples_per_epoch = p->samples_per_epoch;
	h->data_offset = data_off;
	h->data_bytes = r->data_bytes;
	h->meta_offset = meta_off;
	h->meta_bytes = r->meta_bytes;
	h->file_bytes = file_bytes;
	h->producer_pid = (uint32_t)getpid();
	h->default_batch = p->default_batch;
	h->n_views = (uint32_t)p->n_views;
	for (int i = 0; i < p->n_views; i++)
		h->views[i] = (struct ts_ring_view){
			.height = (uint32_t)p->views[i].height, .width = (uint32_t)p->views[i].width,
			.channels = (uint32_t)p->views[i].channels,
			.dtype = (uint32_t)p->views[i].dtype, .layout = (uint32_t)p->views[i].layout,
			.group = (uint32_t)p->views[i].group, .offset = p->views[i].offset,
			.bytes = p->views[i].bytes,
		};
	h->ndim = (uint32_t)p->ndim;
	for (int i = 0; i < p->ndim; i++)
		h->dims[i] = p->dims[i];
	if (p->label_bytes) {
		h->label_ndim = (uint32_t)p->label_ndim;
		for (int i = 0; i < p->label_ndim; i++)
			h->label_dims[i] = p->label_dims[i];
		h->label_dtype = (uint32_t)p->label_dtype;
		h->label_bytes = p->label_bytes;
		h->label_offset = label_off;
		h->label_region_bytes = r->label_region_bytes;
	}
	/* Orders the layout fields above before any later reader of state
	 * (the fd reaches consumers only after this anyway). */
	smp_store_release(&h->state, (uint32_t)TS_RING_RUNNING);

}

static int seal_ring(struct ts_ring *r, struct ts_error *err)
{
	int rc = 0;
	/* No new writable mapping from now on, by anyone: a consumer that
	 * reopens /proc/PID/fd/N read-write still cannot map it writable.
	 * A kernel without F_SEAL_FUTURE_WRITE (before 5.1, some sandboxes
	 * such as gVisor) says EINVAL: seal the size alone there; consumers
	 * still get a read-only descriptor. */
	int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
	int sr = fcntl(r->fd, F_ADD_SEALS, seals);
	if (sr < 0 && errno == EINVAL)
		sr = fcntl(r->fd, F_ADD_SEALS, seals & ~F_SEAL_FUTURE_WRITE);
	if (sr < 0) {
		rc = ts_error_set(err, -errno, "ring: cannot seal memfd: %s",
				  strerror(errno));
		return rc;
	}
	return 0;
}

int ts_ring_create(const struct ts_ring_params *p, struct ts_ring **out,
		   struct ts_error *err)
{
	struct ts_ring *r = NULL;
	int rc;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (!p || !out || p->height <= 0 || p->width <= 0 ||
	    p->channels <= 0 || ts_dtype_size(p->dtype) == 0 || p->ndim < 0 ||
	    p->ndim > TS_RING_MAX_DIMS || p->label_ndim < 0 ||
	    p->label_ndim > TS_RING_MAX_DIMS ||
	    (p->label_bytes && ts_dtype_size(p->label_dtype) == 0) ||
	    p->label_bytes > (1u << 20) || p->n_views < 0 ||
	    p->n_views > TS_RING_MAX_VIEWS || (p->n_views && !p->views))
		return ts_error_set(err, TS_E_ARG, "ring: invalid sample shape");
	uint64_t sb = p->sample_bytes;
	if (sb == 0)
		sb = (uint64_t)p->height * (uint64_t)p->width *
		     (uint64_t)p->channels * ts_dtype_size(p->dtype);
	const uint64_t want = p->capacity < 2 ? 2 : p->capacity;
	uint64_t stride = 0, cap = 0;
	/* slots padded past an odd-sized sample (memory.h) */
	if (!ts_plan_ring_layout(sb, want, page, &stride, &cap))
		return ts_error_set(err, TS_E_ARG,
				    "ring: %llu samples of %llu bytes is too large",
				    (unsigned long long)want,
				    (unsigned long long)sb);

	r = calloc(1, sizeof(*r));
	if (!r)
		return ts_error_set(err, TS_E_NOMEM, "ring: out of memory");
	r->fd = -1;
	r->hdr = MAP_FAILED;
	r->meta = MAP_FAILED;
	r->label_region = MAP_FAILED;
	pthread_mutex_init(&r->lock, NULL);
	r->created = ts_clock_now();
	r->capacity = cap;
	r->sample_bytes = sb;
	r->sample_stride = stride;
	r->data_bytes = cap * stride;
	r->meta_bytes = ts_round_up(cap * sizeof(struct ts_ring_meta), page);
	r->min_consumers = p->min_consumers;
	r->staged = p->staged;
	uint64_t data_off = page;
	uint64_t meta_off = data_off + r->data_bytes;
	r->label_bytes = p->label_bytes;
	r->label_region_bytes = ts_round_up(cap * p->label_bytes, page);
	uint64_t label_off = meta_off + r->meta_bytes;
	uint64_t file_bytes = label_off + r->label_region_bytes;

	struct ring_layout l = { page, data_off, meta_off, label_off, file_bytes };
	if ((rc = map_ring(r, &l, err)) < 0)
		goto fail;
	write_header(r, p, &l);
	if ((rc = seal_ring(r, err)) < 0)
		goto fail;
	*out = r;
	return 0;
fail:
	ts_ring_destroy(r);
	return rc;
}

void ts_ring_destroy(struct ts_ring *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_consumers; i++) {
		struct ts_ring_consumer *c = r->consumers[i];
		munmap(c->ctl, (size_t)sysconf(_SC_PAGESIZE));
		close(c->ctl_fd);
		free(c);
	}
	if (r->data)
		munmap(r->data, 2 * r->data_bytes);
	if (r->meta != MAP_FAILED)
		munmap(r->meta, r->meta_bytes);
	if (r->label_region != MAP_FAILED)
		munmap(r->label_region, r->label_region_bytes);
	if (r->hdr != MAP_FAILED)
		munmap(r->hdr, (size_t)sysconf(_SC_PAGESIZE));
	if (r->fd >= 0)
		close(r->fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void ts_ring_get_info(const struct ts_ring *r, struct ts_ring_info *out)
{
	ring_info_from_hdr(r->hdr, out);
}

void ts_ring_set_node(struct ts_ring *r, uint32_t index, uint32_t count)
{
	/* plain stores: no consumer has the fd yet (the server hands it out
	 * after the engine that sets this was created); a takeover's engine
	 * stores the values already there */
	r->hdr->node_index = index;
	r->hdr->node_count = count;
}

int ts_ring_fd(const struct ts_ring *r)
{
	return r->fd;
}

void *ts_ring_slot(struct ts_ring *r, uint64_t seq)
{
	return r->data + (seq % r->capacity) * r->sample_stride;
}

void *ts_ring_label_slot(struct ts_ring *r, uint64_t seq)
{
	if (!r->label_bytes)
		return NULL;
	return r->label_region + (seq % r->capacity) * r->label_bytes;
}

void ts_ring_set_meta(struct ts_ring *r, uint64_t seq, int32_t label,
		      uint32_t epoch, uint64_t index)
{
	struct ts_ring_meta *m = &r->meta[seq % r->capacity];
	/* Plain stores: ordered before consumers' reads by the release in
	 * ts_ring_publish that covers seq. */
	m->index = index;
	m->epoch = epoch;
	m->label = label;
}

bool ts_ring_running(const struct ts_ring *r)
{
	/* Acquire: pairs with the release of the state in finish. */
	return smp_load_acquire(&r->hdr->state) == TS_RING_RUNNING;
}

uint64_t ts_ring_head(const struct ts_ring *r)
{
	/* Pairs with the release in publish: the caller may read samples
	 * below the value. */
	return smp_load_acquire(&r->hdr->head);
}

/* Wake writers blocked in wait_writable (process-local futex). */
void ts_ring_wake_producers(struct ts_ring *r)
{
	/* Full barrier (RMW): the change that calls us (head, consumer
	 * table, finished) is ordered before the waiter count we load; pairs
	 * with the writer's "prod_waiters++; smp_mb; recheck". */
	ATOMIC_ADD(&r->prod_seq, 1);
	if (READ_ONCE(r->prod_waiters))
		futex_wake(&r->prod_seq, true);
}

/* Wake the finisher of a staged ring. */
static void wake_stage(struct ts_ring *r)
{
	/* Full barrier (RMW): the change that calls us (written, end_asked,
	 * finished) is ordered before the flag we load; pairs with the
	 * finisher's "stage_waiting = 1; smp_mb; recheck". */
	ATOMIC_ADD(&r->stage_seq, 1);
	if (READ_ONCE(r->stage_waiting))
		futex_wake(&r->stage_seq, true);
}

static void publish_visible(struct ts_ring *r, uint64_t head);

void ts_ring_publish(struct ts_ring *r, uint64_t head)
{
	if (r->staged) {
		/* Release: the slots below head are written before the
		 * finisher, acquiring written, reads them. */
		smp_store_release(&r->written, head);
		wake_stage(r);
		return;
	}
	publish_visible(r, head);
}

uint64_t ts_ring_written(const struct ts_ring *r)
{
	return r->staged ? smp_load_acquire(&r->written) : ts_ring_head(r);
}

void ts_ring_stage_publish(struct ts_ring *r, uint64_t head)
{
	publish_visible(r, head);
}

int ts_ring_stage_wait(struct ts_ring *r, uint64_t done, uint64_t *written,
		       bool *ending, int timeout_ms)
{
	double deadline = timeout_ms < 0 ? -1.0 : ts_clock_now() + timeout_ms / 1e3;
	for (;;) {
		/* Read end_asked before written: the end is asked after the
		 * final publish, so seeing it makes the written we load next
		 * the final one. */
		/* Acquire: v is read before the words below, so a change
		 * after them moves the futex word past v. */
		uint32_t v = smp_load_acquire(&r->stage_seq);
		bool end = smp_load_acquire(&r->end_asked) != 0;
		uint64_t w = smp_load_acquire(&r->written);
		if (smp_load_acquire(&r->finished))
			return TS_E_PRODUCER;
		if (w > done || end) {
			*written = w;
			*ending = end;
			return 0;
		}
		int ms = slice_ms(deadline, PRODUCER_SLICE_MS);
		if (ms == 0)
			return -ETIMEDOUT;
		/* Dekker with wake_stage: raise the flag, then re-check. */
		WRITE_ONCE(r->stage_waiting, 1);
		smp_mb();
		if (READ_ONCE(r->stage_seq) == v)
			futex_wait(&r->stage_seq, v, ms, true);
		WRITE_ONCE(r->stage_waiting, 0);
	}
}

static void finish_now(struct ts_ring *r, int status, const char *reason);

void ts_ring_stage_end(struct ts_ring *r, int status)
{
	finish_now(r, status, NULL);
}

static void publish_visible(struct ts_ring *r, uint64_t head)
{
	struct ts_ring_hdr *h = r->hdr;
	bool sleeper = false;
	/* Only this thread stores head. */
	uint64_t old = READ_ONCE(h->head);
	int starts = -1;        /* epoch_starts(old, head), when asked */

	/* Release: the slot data and metadata of every seq < head are
	 * visible before the new head. */
	smp_store_release(&h->head, head);
	/* Dekker with the consumer's "consumer_waiting = want; load head": the
	 * head store is ordered before the flag loads below. pub_active
	 * (seq_cst) keeps detach from unmapping a ctl page we scan. */
	ATOMIC_ADD(&r->pub_active, 1);
	smp_mb();
	for (size_t i = 0; i < TS_RING_MAX_CONSUMERS; i++) {
		struct ts_ring_ctl *c = smp_load_acquire(&r->watch[i]);
		uint64_t want = c ? READ_ONCE(c->consumer_waiting) : 0;
		if (!want)
			continue;
		if (head >= want) {
			sleeper = true;
			break;
		}
		if (starts < 0)
			starts = epoch_starts(r->meta, r->capacity, old, head);
		if (starts) {
			sleeper = true;
			break;
		}
	}
	/* Full barrier: our reads of the scanned ctl pages are done before
	 * ts_ring_quiesce_publish() can see the count drop and unmap one. */
	ATOMIC_SUB(&r->pub_active, 1);
	if (sleeper) {
		ATOMIC_ADD(&h->head_seq, 1);
		futex_wake(&h->head_seq, false);
		/* Only the publishing thread writes it; read as a statistic. */
		WRITE_ONCE(r->consumer_wakes, READ_ONCE(r->consumer_wakes) + 1);
	}
	/* Ordered after the head store by the smp_mb above (Dekker with a
	 * writer bound by the head: "prod_waiters++; smp_mb; load head"). */
	if (READ_ONCE(r->prod_waiters))
		ts_ring_wake_producers(r);
}

void ts_ring_close_epoch(struct ts_ring *r, uint64_t end)
{
	struct ts_ring_hdr *h = r->hdr;
	/* Release: the head that covers end (stored before) is visible to a
	 * consumer that sees the new closed. */
	smp_store_release(&h->closed, end);
	/* After the store: a consumer woken by this bump sees it (as in
	 * finish_now); once per epoch, so every sleeper is woken. */
	ATOMIC_ADD(&h->head_seq, 1);
	futex_wake(&h->head_seq, false);
}

void ts_ring_finish(struct ts_ring *r, int status)
{
	if (status == 0 && r->staged) {
		/* The finisher ends the stream once it showed everything
		 * written (ts_ring_stage_end). Release: the final written
		 * is visible with the flag. */
		smp_store_release(&r->end_asked, 1);
		wake_stage(r);
		return;
	}
	finish_now(r, status, NULL);
}

void ts_ring_fail(struct ts_ring *r, int status, const char *reason)
{
	if (status == 0)
		ts_ring_finish(r, 0);
	else
		finish_now(r, status, reason);
}

static void finish_now(struct ts_ring *r, int status, const char *reason)
{
	struct ts_ring_hdr *h = r->hdr;
	/* Full barrier; finished is process-local (writers and attach). */
	if (ATOMIC_XCHG(&r->finished, 1))
		return;
	/* Only the first finisher gets here: the reason is written once,
	 * before the state store below publishes it. */
	if (reason && status != 0)
		snprintf(h->reason, sizeof(h->reason), "%s", reason);
	WRITE_ONCE(h->status, (int32_t)status);
	/* Release: the final head and status are visible to whoever sees the
	 * new state. */
	smp_store_release(&h->state, (uint32_t)(status == 0 ? TS_RING_EOS
							    : TS_RING_ERROR));
	/* After the state store: a consumer woken by this bump sees it. */
	ATOMIC_ADD(&h->head_seq, 1);
	futex_wake(&h->head_seq, false);
	ts_ring_wake_producers(r);
	wake_stage(r);
}

/* Wait until no publish() is scanning the watch array, so a ctl page
 * removed from it can be unmapped. */
void ts_ring_quiesce_publish(struct ts_ring *r)
{
	/* Dekker with publish's "pub_active++; smp_mb; load watch[i]": the
	 * detach's NULL store into watch[] (before this, in this thread or
	 * before the lock that handed us the entry) is ordered before the
	 * count we load. Either the scan sees NULL or we see it counted. */
	smp_mb();
	/* Acquire: pairs with the RMW decrement; the scan's reads of the
	 * page are done before we unmap it. */
	while (smp_load_acquire(&r->pub_active))
		sched_yield();
}

void ts_ring_free_consumer(struct ts_ring *r, struct ts_ring_consumer *c)
{
	ts_ring_quiesce_publish(r);
	munmap(c->ctl, (size_t)sysconf(_SC_PAGESIZE));
	close(c->ctl_fd);
	free(c);
}

/*
 * Recompute the write limit from every consumer's release position (the
 * producer's own head counts as one, so writers stay within capacity of
 * it). Called with the lock held. Returns the slowest consumer or NULL
 * when the head itself (or a missing consumer) is the bound.
 */
static struct ts_ring_consumer *recompute_limit(struct ts_ring *r,
					       uint64_t *head)
{
	/* Acquire: the samples below head are in place (we compare). */
	uint64_t low = smp_load_acquire(&r->hdr->head);
	*head = low;
	struct ts_ring_consumer *slow = NULL;

	unsigned active = 0;
	for (size_t i = 0; i < r->n_consumers; i++) {
		struct ts_ring_consumer *c = r->consumers[i];
		/* A rank whose job waits for its other ranks reads nothing
		 * yet: it holds nobody back (ts_ring_consumer_start_job). */
		/* Nor does one that has its epochs. Acquire: pairs with the
		 * reader's release of done. */
		if (c->job_wait || smp_load_acquire(&c->ctl->done))
			continue;
		active++;
		/* Acquire pairs with the consumer's release store: its reads
		 * of the released slots are done before we overwrite them. */
		uint64_t rel = smp_load_acquire(&c->ctl->release);
		if (rel < low) {
			low = rel;
			slow = c;
		}
	}
	/* min_consumers holds the start back until that many trainers came;
	 * once started, one is enough: a trainer that finishes early must
	 * not stall the others, and with none left the producer pauses for
	 * the next one rather than running on for nobody. */
	unsigned need = r->started ? (r->min_consumers > 0) : r->min_consumers;
	if (active < need)
		return NULL;
	r->started = true;
	uint64_t lim = low + r->capacity;
	/* Under the lock; limit only grows. Release: pairs with the acquire
	 * on the fast path, so the consumers' releases we acquired above
	 * happen before a writer's stores into the slots this frees. */
	if (lim > r->limit)
		smp_store_release(&r->limit, lim);
	return slow;
}

/* On the first lap, fault in the pages of the slots up to seq that no
 * writer claimed yet (ts_ring_create says why). Writers claim a range by
 * moving populated forward, so each page is populated once, by one of
 * them; a writer that reaches a slot another is still populating only
 * takes a fault, as without any of this (nothing but speed rides on it). */
static void prefault(struct ts_ring *r, uint64_t seq)
{
	uint64_t from = READ_ONCE(r->populated); /* a claim mark, orders nothing */
	uint64_t to;
	do {
		if (seq < from || from >= r->capacity)
			return;
		to = seq + 1 < r->capacity ? seq + 1 : r->capacity;
	} while (!ATOMIC_CMPXCHG(&r->populated, &from, to));
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)(r->data + from * r->sample_stride) & ~(page - 1);
	uintptr_t b = (uintptr_t)(r->data + to * r->sample_stride);
	/* Failure (out of memory) is left to the writes, as for any page. */
	(void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
}

/*
 * What a writer that may not write seq waits for (under the lock, after
 * recompute_limit gave slow): a consumer's release (a
 * free slot: the trainers bind the producer), a consumer at all (idle:
 * fewer attached than it waits for), or else its own head (the other
 * writers' samples before seq, committed in order: work). The counter
 * its time goes to.
 */
static uint64_t *wait_kind(struct ts_ring *r, uint64_t seq,
			   const struct ts_ring_consumer *slow)
{
	if (slow)
		return &r->wait_slot_ns;
	unsigned need = r->started ? (r->min_consumers > 0) : r->min_consumers;
	if (r->n_consumers < need)
		return &r->wait_idle_ns;
	return &r->wait_self_ns;
}

int ts_ring_wait_writable(struct ts_ring *r, uint64_t seq, int timeout_ms)
{
	/* Acquire: consumers' releases folded into limit happen before our
	 * writes into the slot. */
	if (seq < smp_load_acquire(&r->limit)) {
		prefault(r, seq);
		return 0;
	}
	double deadline = timeout_ms < 0 ? -1.0 : ts_clock_now() + timeout_ms / 1e3;

	for (;;) {
		/* Acquire: pairs with the xchg in finish (nothing rides on
		 * it but the flag). */
		if (smp_load_acquire(&r->finished))
			return -ECANCELED;
		uint64_t t_iter = now_ns();
		pthread_mutex_lock(&r->lock);
		uint64_t h0;
		struct ts_ring_consumer *slow = recompute_limit(r, &h0);
		if (seq < r->limit) {
			pthread_mutex_unlock(&r->lock);
			prefault(r, seq);
			return 0;
		}
		uint64_t *acct = wait_kind(r, seq, slow);
		if (seq > r->want)
			r->want = seq;  /* for ts_ring_consumer_held */
		int ms = slice_ms(deadline, PRODUCER_SLICE_MS);
		if (ms == 0) {
			pthread_mutex_unlock(&r->lock);
			return -ETIMEDOUT;
		}
		/* Statistics only (ts_ring_stat); the RMW is not relied on. */
		ATOMIC_ADD(&r->producer_blocked, 1);
		if (slow && seq >= smp_load_acquire(&slow->ctl->release) +
					   r->capacity) {
			/* Sleep on the slowest consumer's control page: it
			 * wakes us when it releases and sees our flag. */
			struct ts_ring_ctl *ctl = slow->ctl;
			slow->refs++;
			/* Acquire: the futex value is read before the flag
			 * goes up, so a bump after it fails the wait. */
			uint32_t v = smp_load_acquire(&ctl->wake_seq);
			ATOMIC_ADD(&ctl->producer_waiting, 1);
			/* Attach/detach bump prod_seq (under the lock, so
			 * this read is ordered by it). */
			uint32_t pv = READ_ONCE(r->prod_seq);
			pthread_mutex_unlock(&r->lock);
			/* Dekker with the consumer's "store release; smp_mb;
			 * load producer_waiting": re-check after raising the
			 * flag. */
			smp_mb();
			if (seq >= smp_load_acquire(&ctl->release) + r->capacity &&
			    pv == READ_ONCE(r->prod_seq))
				futex_wait(&ctl->wake_seq, v, ms, false);
			pthread_mutex_lock(&r->lock);
			ATOMIC_SUB(&ctl->producer_waiting, 1);
			bool gone = --slow->refs == 0 && slow->dead;
			pthread_mutex_unlock(&r->lock);
			if (gone)
				ts_ring_free_consumer(r, slow);
		} else {
			/* Bound by our own head or by too few consumers:
			 * sleep until publish, attach or detach. */
			uint32_t v = READ_ONCE(r->prod_seq);
			/* Full barrier (RMW) then a head re-check: Dekker
			 * with publish's "store head; smp_mb; load
			 * prod_waiters". Without the re-check a publish
			 * between our head load in recompute_limit and
			 * this increment finds no waiter and we sleep a
			 * whole slice behind a head that already moved. */
			ATOMIC_ADD(&r->prod_waiters, 1);
			pthread_mutex_unlock(&r->lock);
			if (smp_load_acquire(&r->hdr->head) == h0)
				futex_wait(&r->prod_seq, v, ms, true);
			ATOMIC_SUB(&r->prod_waiters, 1);
		}
		ATOMIC_SUB(&r->producer_blocked, 1);
		uint64_t t_end = now_ns();
		ATOMIC_ADD_RELAXED(acct, t_end > t_iter ? t_end - t_iter : 0);
	}
}

void ts_ring_stat(struct ts_ring *r, struct ts_ring_stat *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&r->lock);
	double t = ts_clock_now();
	out->head = smp_load_acquire(&r->hdr->head);
	out->state = (enum ts_ring_state)smp_load_acquire(&r->hdr->state);
	out->capacity = r->capacity;
	/* Untorn, unordered: a statistic. */
	out->producer_waiting = READ_ONCE(r->producer_blocked) != 0;
	out->consumer_wakes = READ_ONCE(r->consumer_wakes);
	out->n_consumers = r->n_consumers;
	for (size_t i = 0; i < r->n_consumers; i++) {
		struct ts_ring_consumer *c = r->consumers[i];
		struct ts_ring_consumer_stat *s = &out->consumers[i];
		/* Acquire: a position the consumer really reached. */
		uint64_t rel = smp_load_acquire(&c->ctl->release);
		double dt = t - c->last_time;
		if (dt >= 0.05) {
			c->rate = rel >= c->last_release
					  ? (double)(rel - c->last_release) / dt
					  : 0.0;
			c->last_release = rel;
			c->last_time = t;
		}
		s->pid = c->pid;
		s->batch = c->batch;
		s->start = c->start;
		s->release = rel;
		s->lag = out->head > rel ? out->head - rel : 0;
		s->rate = c->rate;
		s->local = c->local;
		s->waiting = READ_ONCE(c->ctl->consumer_waiting);
		s->skipped = READ_ONCE(c->ctl->skipped);
		s->attached = c->attached;
		s->at = t;
		memcpy(s->job, c->job, sizeof(s->job));
		ts_ring_ctl_read_acct(c->ctl, t, s);
		s->job_wait = c->job_wait;
		s->end_epoch = c->end_epoch;
		/* Acquire: as in recompute_limit. */
		s->done = smp_load_acquire(&c->ctl->done) != 0;
		if (rel < out->head)
			s->epoch = r->meta[rel % r->capacity].epoch;
		else if (out->head > 0)
			s->epoch = r->meta[(out->head - 1) % r->capacity].epoch;
		if (c->job_wait || s->done)
			s->lag = 0;  /* it reads nothing (yet, or more): holds nobody */
	}
	/* Relaxed: statistics (barrier.h's ATOMIC_ADD_RELAXED). */
	out->wait_slot_s = (double)__atomic_load_n(&r->wait_slot_ns, __ATOMIC_RELAXED) * 1e-9;
	out->wait_idle_s = (double)__atomic_load_n(&r->wait_idle_ns, __ATOMIC_RELAXED) * 1e-9;
	out->wait_self_s = (double)__atomic_load_n(&r->wait_self_ns, __ATOMIC_RELAXED) * 1e-9;
	out->created = r->created;
	size_t nd = r->n_departed < TS_RING_MAX_CONSUMERS ? r->n_departed : TS_RING_MAX_CONSUMERS;
	for (size_t i = 0; i < nd; i++)
		out->departed[i] = r->departed[(r->n_departed - nd + i) % TS_RING_MAX_CONSUMERS];
	out->n_departed = nd;
	pthread_mutex_unlock(&r->lock);
}

void ts_ring_set_origin(struct ts_ring *r, uint32_t epoch, uint64_t index)
{
	/* Read by the server thread under the lock (a resume's hello). */
	pthread_mutex_lock(&r->lock);
	r->origin_epoch = epoch;
	r->origin_index = index;
	pthread_mutex_unlock(&r->lock);
}

void ts_ring_set_samples_per_epoch(struct ts_ring *r, uint64_t n)
{
	/* Read by the server thread under the lock when it welcomes. */
	pthread_mutex_lock(&r->lock);
	WRITE_ONCE(r->hdr->samples_per_epoch, n);
	pthread_mutex_unlock(&r->lock);
}

