/* ring_reader.c - the reader side of the shared sample ring: map a ring
 * read-only from its fds, wait for batches, hand them out and release
 * them. The C client (libtsclient) compiles this file and proto.c only;
 * the producer side is ring.c. */
#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "barrier.h"
#include "ring_shm.h"
#include "share.h"
#include "util.h"

struct ts_ring_reader {
	const struct ts_ring_hdr *hdr;
	const uint8_t *data;
	const struct ts_ring_meta *meta;
	const uint8_t *label_region;   /* label tensors, or MAP_FAILED */
	size_t data_bytes, meta_bytes, label_region_bytes;
	struct ts_ring_ctl *ctl;
	uint64_t capacity, sample_bytes, label_bytes;
	uint64_t sample_stride;
	uint32_t batch;
	bool drop_last;
	uint32_t min_epoch;
	uint64_t min_index;    /* a resume: and min_epoch's samples before it */
	bool align;            /* still skipping to a batch boundary */
	bool align_epoch;      /* ... to an epoch start instead */
	uint64_t pos;          /* next seq to hand out */
	uint64_t released;     /* what we last stored in ctl->release */
	uint64_t pending_end;  /* end of the batch handed out last */
	int32_t *labels;
	uint8_t *label_data;   /* batch * label_bytes: the batch's label tensors */
	uint64_t sleeps;       /* futex waits: 0 for a reader that keeps up */
	bool hold;             /* hold mode: release nothing at or past floor */
	uint64_t floor;        /* first seq of the oldest batch held */
	uint64_t data_offset;  /* of the data region in the memfd */
	struct ts_share_rank share;  /* a rank of a job: world > 0 */
	bool job_pending;      /* its job's start is not read yet (ctl.job_wait) */
	uint32_t end_epoch;    /* its epochs end before this one; 0: endless */
	bool done;             /* it reached end_epoch (ctl.done) */
	bool data_borrowed;    /* data is the producer's mapping (local) */
	/* Time accounting (ts_ring_reader_acct), the copy this reader
	 * trusts; the control page gets the same through its seqlock. */
	uint64_t opened_ns, wait_ns, handed, batches;
	uint64_t last_ns;      /* when the last next() returned (0: none) */
	uint32_t stat_seq;
	bool no_acct;          /* TSRUN_NO_WAIT_ACCOUNTING: no clock, no page */
};

/*
 * Publish the accounting in the control page, with since the start of a
 * wait under way (0: none). A seqlock (struct ts_ring_ctl): a handful of
 * plain stores to a line of our own page, no system call; the producer
 * reads it at its own pace (ts_ring_ctl_read_acct).
 */
static void acct_publish(struct ts_ring_reader *rd, uint64_t since)
{
	struct ts_ring_ctl *ctl = rd->ctl;
	uint32_t seq = rd->stat_seq + 1;  /* odd: an update under way */
	WRITE_ONCE(ctl->stat_seq, seq);
	/* Orders the odd sequence before the fields' stores (partner: the
	 * reader's smp_rmb before its second look at the sequence). */
	smp_wmb();
	WRITE_ONCE(ctl->joined_ns, rd->opened_ns);
	WRITE_ONCE(ctl->wait_ns, rd->wait_ns);
	WRITE_ONCE(ctl->wait_since_ns, since);
	WRITE_ONCE(ctl->handed, rd->handed);
	WRITE_ONCE(ctl->batches, rd->batches);
	rd->stat_seq = seq + 1;
	/* Release: the fields are in place before the even sequence (the
	 * reader acquires it first). */
	smp_store_release(&ctl->stat_seq, rd->stat_seq);
}

void ts_ring_ctl_read_acct(const struct ts_ring_ctl *ctl, double now,
			   struct ts_ring_consumer_stat *s)
{
	s->has_acct = false;
	for (int tries = 0; tries < 16; tries++) {
		/* Acquire: the fields below are at least as new as this
		 * sequence. */
		uint32_t s1 = smp_load_acquire(&ctl->stat_seq);
		if (s1 & 1) {
			cpu_relax();
			continue;
		}
		uint64_t joined = READ_ONCE(ctl->joined_ns);
		uint64_t wait = READ_ONCE(ctl->wait_ns);
		uint64_t since = READ_ONCE(ctl->wait_since_ns);
		uint64_t handed = READ_ONCE(ctl->handed);
		uint64_t batches = READ_ONCE(ctl->batches);
		/* Orders the field loads before the second look (partner:
		 * the writer's smp_wmb after its odd sequence). */
		smp_rmb();
		if (READ_ONCE(ctl->stat_seq) != s1)
			continue;
		if (joined == 0)
			return;  /* an older client: no figures */
		s->joined = (double)joined * 1e-9;
		s->waited = (double)wait * 1e-9;
		if (since && (double)since * 1e-9 < now)
			s->waited += now - (double)since * 1e-9;
		s->handed = handed;
		s->batches = batches;
		s->has_acct = true;
		return;
	}
}

int ts_ring_reader_open(int ring_fd, int ctl_fd,
			const struct ts_ring_reader_opts *o,
			struct ts_ring_reader **out, struct ts_error *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct ts_ring_reader *rd;
	struct stat st;
	int rc;

	if (!o || o->batch == 0)
		return ts_error_set(err, TS_E_ARG, "reader: batch must be > 0");
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	rd->hdr = MAP_FAILED;
	rd->meta = MAP_FAILED;
	rd->label_region = MAP_FAILED;
	rd->ctl = MAP_FAILED;
	if (fstat(ring_fd, &st) < 0) {
		rc = ts_error_set(err, -errno, "ring fd: %s", strerror(errno));
		goto fail;
	}
	rd->hdr = mmap(NULL, page, PROT_READ, MAP_SHARED, ring_fd, 0);
	rd->ctl = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, ctl_fd, 0);
	if (rd->hdr == MAP_FAILED || rd->ctl == MAP_FAILED) {
		rc = ts_error_set(err, -errno, "ring: mmap: %s", strerror(errno));
		goto fail;
	}
	const struct ts_ring_hdr *h = rd->hdr;
	uint64_t cap = h->capacity, sb = h->sample_bytes, stride = h->sample_stride;
	/* The sample area as the header's capacity and stride make it, not
	 * wrapped past 2^64 (a crafted header would pass a check of the
	 * wrapped product and send slots outside the mapping), within the
	 * 2^44 bytes a producer lays out at most (ts_plan_ring_layout). */
	uint64_t area = 0;
	bool area_ok = !__builtin_mul_overflow(cap, stride, &area) && area <= (1ull << 44);
	/* Trust nothing: the layout must fit the file we were given. */
	if (h->magic != TS_RING_MAGIC || h->version != TS_RING_VERSION ||
	    rd->ctl->magic != TS_RING_CTL_MAGIC || cap < 2 || sb == 0 ||
	    cap > (1ull << 32) || sb > (1ull << 40) ||
	    /* a padded stride is a multiple of 64 (memory.h): samples of
	     * every dtype stay aligned */
	    stride < sb || stride - sb >= page || (stride != sb && stride % 64) ||
	    !area_ok || h->data_bytes != area || h->data_offset % page ||
	    h->meta_offset % page || h->data_bytes % page ||
	    h->meta_bytes < cap * sizeof(struct ts_ring_meta) ||
	    h->data_offset + h->data_bytes > (uint64_t)st.st_size ||
	    h->meta_offset + h->meta_bytes > (uint64_t)st.st_size ||
	    h->ndim > TS_RING_MAX_DIMS || h->label_ndim > TS_RING_MAX_DIMS ||
	    !ring_views_ok(h) ||
	    h->label_bytes > (1u << 20) ||
	    (h->label_bytes && (h->label_offset % page ||
				h->label_region_bytes < cap * h->label_bytes ||
				h->label_offset + h->label_region_bytes >
					(uint64_t)st.st_size))) {
		rc = ts_error_set(err, TS_E_PROTOCOL,
				  "not a tsrun ring (or another version)");
		goto fail;
	}
	rd->capacity = cap;
	rd->sample_bytes = sb;
	rd->sample_stride = stride;
	rd->data_offset = h->data_offset;
	rd->data_bytes = h->data_bytes;
	rd->meta_bytes = h->meta_bytes;
	rd->meta = mmap(NULL, rd->meta_bytes, PROT_READ, MAP_SHARED, ring_fd,
			(off_t)h->meta_offset);
	rd->label_bytes = h->label_bytes;
	rd->label_region_bytes = h->label_region_bytes;
	if (rd->label_bytes)
		rd->label_region = mmap(NULL, rd->label_region_bytes, PROT_READ, MAP_SHARED,
					ring_fd, (off_t)h->label_offset);
	if (rd->meta == MAP_FAILED ||
	    (rd->label_bytes && rd->label_region == MAP_FAILED)) {
		rc = ts_error_set(err, -errno, "ring: mmap: %s", strerror(errno));
		goto fail;
	}
	uint8_t *d = NULL;
	rc = map_double(ring_fd, h->data_offset, rd->data_bytes, PROT_READ, 0, &d);
	if (rc < 0) {
		ts_error_set(err, rc, "ring: double map: %s", strerror(-rc));
		goto fail;
	}
	rd->data = d;
	if (o->batch > cap) {
		rc = ts_error_set(err, TS_E_ARG, "batch %u exceeds the ring (%llu)",
				  o->batch, (unsigned long long)cap);
		goto fail;
	}
	rd->labels = calloc(o->batch, sizeof(int32_t));
	if (rd->label_bytes)
		rd->label_data = malloc(o->batch * rd->label_bytes);
	if (!rd->labels || (rd->label_bytes && !rd->label_data)) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto fail;
	}
	if (o->world) {
		uint64_t spe = h->samples_per_epoch;
		if (spe == 0 || o->rank >= o->world) {
			rc = ts_error_set(err, TS_E_ARG, spe ? "rank %u of %u is not a rank"
					  : "a job needs a known epoch size; this pipeline's (tile, "
					    "filter, a plugin that drops) varies", o->rank, o->world);
			goto fail;
		}
		rd->share = (struct ts_share_rank){ spe, o->rank, o->world, o->batch,
						    o->job_drop };
		rd->job_pending = true;
	}
	rd->batch = o->batch;
	rd->drop_last = o->drop_last;
	rd->min_epoch = o->min_epoch;
	rd->min_index = o->min_index;
	rd->align = o->align || o->align_epoch;
	rd->align_epoch = o->align_epoch;
	/* The producer wrote it before the welcome (a job's ranks: read
	 * again once their job starts). */
	rd->end_epoch = READ_ONCE(rd->ctl->end_epoch);
	rd->pos = o->start;
	rd->released = o->start;
	rd->pending_end = o->start;
	rd->floor = UINT64_MAX;
	rd->opened_ns = now_ns();
	/* The switch that measures the accounting's cost (perf/waits.sh):
	 * the page then says nothing (joined_ns 0), as an older client's. */
	const char *no = getenv("TSRUN_NO_WAIT_ACCOUNTING");
	rd->no_acct = no && *no && strcmp(no, "0") != 0;
	if (!rd->no_acct)
		acct_publish(rd, 0);
	*out = rd;
	return 0;
fail:
	ts_ring_reader_destroy(rd);
	return rc;
}

static void reader_release_to(struct ts_ring_reader *rd, uint64_t end);

void ts_ring_reader_destroy(struct ts_ring_reader *rd)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (!rd)
		return;
	/* Everything handed out was read: release it before the socket
	 * hangs up, so the producer's summary counts the last batch of a
	 * trainer that stops without asking for another (it released only
	 * up to the batch before). Nothing is in use once we unmap, so a
	 * hold's floor does not apply. */
	if (rd->ctl != MAP_FAILED && rd->hdr != MAP_FAILED) {
		rd->hold = false;
		reader_release_to(rd, rd->pending_end);
	}
	if (rd->data && !rd->data_borrowed)
		munmap((void *)rd->data, 2 * rd->data_bytes);
	if (rd->meta != MAP_FAILED)
		munmap((void *)rd->meta, rd->meta_bytes);
	if (rd->label_region != MAP_FAILED)
		munmap((void *)rd->label_region, rd->label_region_bytes);
	if (rd->hdr != MAP_FAILED)
		munmap((void *)rd->hdr, page);
	if (rd->ctl != MAP_FAILED)
		munmap(rd->ctl, page);
	free(rd->labels);
	free(rd->label_data);
	free(rd);
}

void ts_ring_reader_borrow_data(struct ts_ring_reader *rd, const uint8_t *data)
{
	if (!rd->data_borrowed)
		munmap((void *)rd->data, 2 * rd->data_bytes);
	rd->data = data;
	rd->data_borrowed = true;
}

void ts_ring_reader_get_info(const struct ts_ring_reader *rd,
			     struct ts_ring_info *out)
{
	ring_info_from_hdr(rd->hdr, out);
}

uint32_t ts_ring_reader_end_epoch(const struct ts_ring_reader *rd)
{
	return rd->end_epoch;
}

uint64_t ts_ring_reader_sleeps(const struct ts_ring_reader *rd)
{
	return rd->sleeps;
}

void ts_ring_reader_acct(const struct ts_ring_reader *rd, struct ts_ring_reader_acct *out)
{
	out->opened = (double)rd->opened_ns * 1e-9;
	out->waited = (double)rd->wait_ns * 1e-9;
	out->handed = rd->handed;
	out->batches = rd->batches;
	out->last = (double)rd->last_ns * 1e-9;
}

void ts_ring_reader_unused(struct ts_ring_reader *rd, uint64_t n)
{
	rd->handed = n < rd->handed ? rd->handed - n : 0;
	if (!rd->no_acct)
		acct_publish(rd, 0);
}

/* Store our release position and wake a producer sleeping on us. */
static void reader_release_to(struct ts_ring_reader *rd, uint64_t end)
{
	if (rd->hold && end > rd->floor)
		end = rd->floor;  /* a batch from there on is still in use */
	if (end <= rd->released)
		return;
	rd->released = end;
	/* Release: our reads of every slot below end are done before the
	 * producer (acquire in recompute_limit) may overwrite them. */
	smp_store_release(&rd->ctl->release, end);
	/* Dekker with the producer's "producer_waiting++; load release". */
	smp_mb();
	if (READ_ONCE(rd->ctl->producer_waiting)) {
		/* Full barrier: the release store is visible before the
		 * futex value changes. */
		ATOMIC_ADD(&rd->ctl->wake_seq, 1);
		futex_wake(&rd->ctl->wake_seq, false);
	}
}

void ts_ring_reader_release(struct ts_ring_reader *rd,
			    const struct ts_ring_batch *b)
{
	reader_release_to(rd, b->seq + b->n);
}

void ts_ring_reader_set_hold(struct ts_ring_reader *rd, bool on)
{
	rd->hold = on;
	rd->floor = UINT64_MAX;
	if (!on)
		reader_release_to(rd, rd->pending_end);
}

/* Everything below pending_end was handed out or skipped: what lies
 * below the caller's floor too is done with. */
void ts_ring_reader_release_below(struct ts_ring_reader *rd, uint64_t floor)
{
	rd->floor = floor;
	reader_release_to(rd, floor < rd->pending_end ? floor : rd->pending_end);
}

void ts_ring_reader_data_region(const struct ts_ring_reader *rd,
				uint64_t *data_offset, uint64_t *data_bytes)
{
	*data_offset = rd->data_offset;
	*data_bytes = rd->data_bytes;
}

/* Samples released without being read: the producer's summaries
 * subtract them (ctl.skipped; only this reader writes it). */
static void count_skipped(struct ts_ring_reader *rd, uint64_t n)
{
	WRITE_ONCE(rd->ctl->skipped, READ_ONCE(rd->ctl->skipped) + n);
}

static const struct ts_ring_meta *meta_at(const struct ts_ring_reader *rd,
					  uint64_t seq)
{
	return &rd->meta[seq % rd->capacity];
}

static void fill_batch(struct ts_ring_reader *rd, struct ts_ring_batch *b,
		       size_t n)
{
	uint64_t seq = rd->pos;
	b->data = rd->data + (seq % rd->capacity) * rd->sample_stride;
	b->sample_stride = rd->sample_stride;
	b->n = n;
	b->seq = seq;
	b->epoch = meta_at(rd, seq)->epoch;
	b->index = meta_at(rd, seq)->index;
	for (size_t i = 0; i < n; i++)
		rd->labels[i] = meta_at(rd, seq + i)->label;
	b->labels = rd->labels;
	b->label_data = NULL;
	if (rd->label_bytes) {
		/* The label region is mapped once: a batch across the wrap is
		 * copied in two pieces. */
		uint64_t first = seq % rd->capacity;
		size_t head_n = n < rd->capacity - first ? n : (size_t)(rd->capacity - first);
		memcpy(rd->label_data, rd->label_region + first * rd->label_bytes,
		       head_n * rd->label_bytes);
		memcpy(rd->label_data + head_n * rd->label_bytes, rd->label_region,
		       (n - head_n) * rd->label_bytes);
		b->label_data = rd->label_data;
	}
	rd->pos = seq + n;
	rd->pending_end = rd->pos;
	if (rd->hold && seq < rd->floor)
		rd->floor = seq;
}

/*
 * Is what the reader waits for there: head at want, an epoch started since
 * *seen (which advances over samples checked), or the stream over?
 */
static bool wait_done(struct ts_ring_reader *rd, uint64_t *seen, uint64_t want,
		      uint64_t closed)
{
	const struct ts_ring_hdr *hd = rd->hdr;
	/* Acquire: the metadata below head is complete. */
	uint64_t head = smp_load_acquire(&hd->head);
	if (head >= want || smp_load_acquire(&hd->state) != TS_RING_RUNNING)
		return true;
	/* Acquire: an epoch closed since the caller looked (its head is
	 * visible with it). */
	if (smp_load_acquire(&hd->closed) != closed)
		return true;
	/* A rank of a job wakes for its job's failure too (fail_job bumps
	 * head_seq). Acquire: pairs with its release. */
	if (rd->share.world && smp_load_acquire(&rd->ctl->job_failed))
		return true;
	/* And for its job's start (start_job bumps head_seq). Acquire:
	 * pairs with its release. */
	if (rd->job_pending && !smp_load_acquire(&rd->ctl->job_wait))
		return true;
	/* So does a detach (mark_stalled bumps head_seq). Acquire: pairs
	 * with its release. */
	if (smp_load_acquire(&rd->ctl->detached))
		return true;
	if (head != *seen) {
		if (epoch_starts(rd->meta, rd->capacity, *seen, head))
			return true;
		*seen = head;
	}
	return false;
}

/*
 * Sleep until the head reaches want (the end of the batch being filled),
 * a new epoch starts after h (the batch ends short), or the stream ends:
 * spin a little (a producer keeping up is usually there within
 * microseconds), then futex on head_seq with want in our control page, so
 * the producer wakes us once per batch and not per sample, in slices,
 * asking alive() between slices.
 */
static int reader_wait(struct ts_ring_reader *rd, uint64_t h, uint64_t want,
		       uint64_t closed, double deadline, int (*alive)(void *), void *arg)
{
	const struct ts_ring_hdr *hd = rd->hdr;
	uint64_t seen = h;
	for (int i = 0; i < SPIN_LOOPS; i++) {
		if (wait_done(rd, &seen, want, closed))
			return 0;
		cpu_relax();
	}
	for (;;) {
		/* Acquire: the futex value is read before the flag goes
		 * up, so a bump after it fails the wait. */
		uint32_t v = smp_load_acquire(&hd->head_seq);
		/* Dekker with publish's "store head; smp_mb; load
		 * consumer_waiting": target store, full fence, head load.
		 * Either we see the new head or publish sees the target. */
		smp_store_mb(rd->ctl->consumer_waiting, want);
		bool done = wait_done(rd, &seen, want, closed);
		int ms = slice_ms(deadline, CONSUMER_SLICE_MS);
		if (!done && ms > 0) {
			rd->sleeps++;
			futex_wait((uint32_t *)&hd->head_seq, v, ms, false);
		}
		/* Unordered: a stale target costs the producer one futex
		 * wake. */
		WRITE_ONCE(rd->ctl->consumer_waiting, 0);
		if (done || wait_done(rd, &seen, want, closed))
			return 0;
		if (alive) {
			int rc = alive(arg);
			if (rc < 0)
				return rc;
		}
		if (deadline >= 0 && ts_clock_now() >= deadline)
			return -ETIMEDOUT;
	}
}

/* The stream is over (state, not RUNNING) at head h: release the rest and
 * say how it ended. */
static int stream_over(struct ts_ring_reader *rd, uint32_t state, uint64_t h,
		       struct ts_error *err)
{
	const struct ts_ring_hdr *hd = rd->hdr;
	rd->pos = h;
	rd->pending_end = h;
	reader_release_to(rd, h);
	if (state == TS_RING_EOS)
		return ts_error_set(err, TS_E_EOS, "end of stream");
	int status = READ_ONCE(hd->status);
	if (status == TS_E_STOPPED)
		return ts_error_set(err, TS_E_PRODUCER,
				    "the producer was stopped (a signal) before "
				    "the end of the stream");
	/* The reason was written before the state we acquired; bounded, as
	 * the page is the producer's. */
	char why[sizeof(hd->reason)];
	memcpy(why, hd->reason, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	if (why[0])
		return ts_error_set(err, TS_E_PRODUCER, "the producer failed: %s", why);
	return ts_error_set(err, TS_E_PRODUCER, "the producer failed: %s",
			    ts_error_name(status));
}

/* The epochs no longer have the size the job's ranks split (a reload took
 * over with another data set): equal shares cannot be kept. */
static int job_resized(const struct ts_ring_reader *rd, uint32_t epoch,
		       struct ts_error *err)
{
	return ts_error_set(err, TS_E_STATE,
			    "epoch %u is not of the %llu samples this job's ranks split (a "
			    "reload changed the epoch size): the shares cannot stay equal; "
			    "start the job again", epoch,
			    (unsigned long long)rd->share.epoch_size);
}

/*
 * This trainer has its epochs (the next sample is of end_epoch): it says
 * so in its control page, so it holds nobody back from now on and the
 * producer serves no more epochs for it, and its stream ends here.
 */
static int trainer_done(struct ts_ring_reader *rd, struct ts_error *err)
{
	if (!rd->done) {
		rd->done = true;
		/* Release: our reads of what we were handed are done before
		 * the producer, which acquires done, stops waiting for us. */
		smp_store_release(&rd->ctl->done, 1u);
		/* Dekker with the producer's "producer_waiting++; load", as
		 * in reader_release_to: wake a writer asleep on us. */
		smp_mb();
		if (READ_ONCE(rd->ctl->producer_waiting)) {
			ATOMIC_ADD(&rd->ctl->wake_seq, 1);
			futex_wake(&rd->ctl->wake_seq, false);
		}
	}
	return ts_error_set(err, TS_E_EOS, "end of stream (this trainer's epochs are done: "
			    "it read up to epoch %u)", rd->end_epoch);
}

/* The job's wait for its ranks ran out (ctl.job_failed 2): which never came. */
static int job_timed_out(const struct ts_ring_reader *rd, struct ts_error *err)
{
	uint64_t missing = READ_ONCE(rd->ctl->job_missing);
	double tmo = READ_ONCE(rd->ctl->job_timeout_ms) / 1e3;
	char list[160] = "";
	size_t n = 0, count = 0;
	for (uint32_t k = 0; k < rd->share.world && k < 64; k++) {
		if (!(missing >> k & 1))
			continue;
		count++;
		if (n < sizeof(list))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u",
					      n ? ", " : "", k);
	}
	return ts_error_set(err, TS_E_JOB,
			    "this trainer's job waited %g s for its rank%s %s of %u, which "
			    "never connected (serve setting job_timeout = %g): start every "
			    "rank of the job (torchrun: the same --nproc_per_node on this "
			    "host), or raise job_timeout",
			    tmo, count > 1 ? "s" : "", list, rd->share.world, tmo);
}

/*
 * Wait for the job's start: its ranks read nothing until every rank has
 * connected; then the start the producer picked is in the control page.
 * 0 once it is read, 1 to look again (woken, or the wait may go on), or
 * an error (the deadline, alive(), the stream over).
 */
static int job_wait_start(struct ts_ring_reader *rd, double deadline, int timeout_ms,
			  int (*alive)(void *), void *arg, struct ts_error *err)
{
	const struct ts_ring_hdr *hd = rd->hdr;
	/* Acquire: pairs with start_job's release; the start is in place. */
	if (!smp_load_acquire(&rd->ctl->job_wait)) {
		uint64_t st = READ_ONCE(rd->ctl->job_start);
		rd->pos = st;
		rd->released = st;
		rd->pending_end = st;
		rd->min_epoch = READ_ONCE(rd->ctl->job_min_epoch);
		rd->end_epoch = READ_ONCE(rd->ctl->end_epoch);
		/* next_epoch skips to an epoch's start, "now" to a round. */
		rd->align = rd->align_epoch || st > 0;
		rd->job_pending = false;
		return 0;
	}
	/* Acquire: as in job_next. */
	uint64_t h = smp_load_acquire(&hd->head);
	uint32_t state = smp_load_acquire(&hd->state);
	if (state != TS_RING_RUNNING)
		return stream_over(rd, state, h, err);
	int rc = reader_wait(rd, h, UINT64_MAX, smp_load_acquire(&hd->closed), deadline,
			     alive, arg);
	if (rc == -ETIMEDOUT)
		return ts_error_set(err, rc, "no batch within %d ms (this trainer's job is "
				    "still waiting for its other ranks to connect)", timeout_ms);
	if (rc < 0)
		return ts_error_set(err, rc, "%s", ts_error_name(rc));
	return 1;
}

/*
 * A rank of a job: its next span of the epoch (share.h), passing over the
 * other ranks' samples, which it releases unread and counts as skipped
 * (so the producer's summary counts what each rank read). The ranks share
 * one start, so each finds the same rounds. Trainer drop_last drops the
 * short last span, the same q samples for every rank.
 */
static int job_next(struct ts_ring_reader *rd, struct ts_ring_batch *b,
		    double deadline, int timeout_ms, int (*alive)(void *),
		    void *arg, struct ts_error *err)
{
	const struct ts_ring_hdr *hd = rd->hdr;
	const struct ts_share_rank *s = &rd->share;
	uint64_t round = (uint64_t)s->world * rd->batch;
	for (;;) {
		int drc = ts_ring_reader_detached(rd, err);
		if (drc < 0)
			return drc;
		/* Acquire: pairs with the producer's release in fail_job;
		 * the rank and pid below are in place. */
		uint32_t failed = smp_load_acquire(&rd->ctl->job_failed);
		if (failed == 2)
			return job_timed_out(rd, err);
		if (failed)
			return ts_error_set(err, TS_E_JOB,
					    "rank %u (pid %u) of this trainer's job left before the "
					    "end of the stream: the job's shares can no longer be "
					    "equal, so its ranks stop",
					    READ_ONCE(rd->ctl->job_failed_rank),
					    READ_ONCE(rd->ctl->job_failed_pid));
		if (rd->job_pending) {
			int wrc = job_wait_start(rd, deadline, timeout_ms, alive, arg, err);
			if (wrc < 0)
				return wrc;
			continue;
		}
		/* Acquire: slots and metadata below h are complete. */
		uint64_t h = smp_load_acquire(&hd->head);
		/* Acquire: as in ts_ring_reader_next (a job's epochs have a
		 * known size, so none is closed early; the wait watches it). */
		uint64_t closed = smp_load_acquire(&hd->closed);
		if (closed > h)
			continue;
		if (h > rd->pos + rd->capacity)
			return ts_error_set(err, TS_E_PROTOCOL,
					    "producer overran this consumer");
		uint64_t skip = rd->pos, want = 0;
		while (skip < h) {
			const struct ts_ring_meta *m = meta_at(rd, skip);
			if (m->epoch < rd->min_epoch) {
				skip++;
				continue;
			}
			if (rd->end_epoch && m->epoch >= rd->end_epoch)
				return trainer_done(rd, err);
			if (rd->align) {
				if (rd->align_epoch ? m->index == 0 : m->index % round == 0) {
					rd->align = false;
				} else {
					skip++;
					continue;
				}
			}
			if (m->index >= s->epoch_size)
				return job_resized(rd, m->epoch, err);
			uint64_t first = 0, n = 0, gap;
			bool ours = ts_share_rank_next(s, m->index, &first, &n) &&
				    !(rd->drop_last && n < rd->batch);
			if (!ours)  /* nothing more of ours in this epoch */
				gap = s->epoch_size - m->index;
			else
				gap = first - m->index;
			if (gap) {
				/* Pass over it, but never into the next epoch. */
				uint64_t end = skip + (gap < h - skip ? gap : h - skip);
				uint32_t e = m->epoch;
				while (skip < end && meta_at(rd, skip)->epoch == e)
					skip++;
				continue;
			}
			want = skip + n;
			break;
		}
		if (skip != rd->pos) {
			count_skipped(rd, skip - rd->pos);
			rd->pos = skip;
			rd->pending_end = skip;
			reader_release_to(rd, skip);
		}
		if (want && h >= want) {
			/* The span is one epoch's: an epoch that ends inside it
			 * is shorter than the job's size. */
			if (meta_at(rd, want - 1)->epoch != meta_at(rd, rd->pos)->epoch)
				return job_resized(rd, meta_at(rd, rd->pos)->epoch, err);
			fill_batch(rd, b, (size_t)(want - rd->pos));
			return 0;
		}
		/* Acquire: a final head published before the state change is
		 * visible when we reload it below. */
		uint32_t state = smp_load_acquire(&hd->state);
		if (state != TS_RING_RUNNING) {
			if (smp_load_acquire(&hd->head) != h)
				continue;
			return stream_over(rd, state, h, err);
		}
		int rc = reader_wait(rd, h, want ? want : rd->pos + rd->batch,
				     closed, deadline, alive, arg);
		if (rc == -ETIMEDOUT)
			return ts_error_set(err, rc, "no batch within %d ms",
					    timeout_ms);
		if (rc < 0)
			return ts_error_set(err, rc, "%s", ts_error_name(rc));
	}
}

int ts_ring_reader_detached(const struct ts_ring_reader *rd, struct ts_error *err)
{
	/* Acquire: pairs with the producer's release in mark_stalled; the
	 * figures below are in place. */
	if (!smp_load_acquire(&rd->ctl->detached))
		return 0;
	double held = READ_ONCE(rd->ctl->detached_held_ms) / 1e3;
	double tmo = READ_ONCE(rd->ctl->detached_timeout_ms) / 1e3;
	return ts_error_set(err, TS_E_DETACHED,
			    "the producer detached this trainer: it held the ring %.1f s "
			    "without releasing a batch (serve setting stall_timeout = %g); "
			    "reconnect to join again, or raise stall_timeout (0: wait forever)",
			    held, tmo);
}

static int reader_next(struct ts_ring_reader *rd, struct ts_ring_batch *b,
		       int timeout_ms, int (*alive)(void *arg), void *arg,
		       struct ts_error *err)
{
	const struct ts_ring_hdr *hd = rd->hdr;
	double deadline = timeout_ms < 0 ? -1.0 : ts_clock_now() + timeout_ms / 1e3;

	if (rd->done)
		return trainer_done(rd, err);
	if (rd->share.world)
		return job_next(rd, b, deadline, timeout_ms, alive, arg, err);
	for (;;) {
		int drc = ts_ring_reader_detached(rd, err);
		if (drc < 0)
			return drc;
		/* Acquire: slots and metadata below h are complete. */
		uint64_t h = smp_load_acquire(&hd->head);
		/* Acquire: the head covering closed was stored before it; a
		 * closed past our (older) h means a newer head: look again. */
		uint64_t closed = smp_load_acquire(&hd->closed);
		if (closed > h)
			continue;
		if (h > rd->pos + rd->capacity) {
			/* Cannot happen with an honest producer. */
			return ts_error_set(err, TS_E_PROTOCOL,
					    "producer overran this consumer");
		}
		/* Joiners with next_epoch skip what precedes their epoch, a
		 * resume what precedes its position. */
		uint64_t skip = rd->pos;
		while (skip < h && (meta_at(rd, skip)->epoch < rd->min_epoch ||
				    (meta_at(rd, skip)->epoch == rd->min_epoch &&
				     meta_at(rd, skip)->index < rd->min_index)))
			skip++;
		/* "now" joiners mid-stream start at a batch boundary, so their
		 * batches line up with those of a trainer there from the start
		 * (an epoch's first sample is one). */
		while (rd->align && skip < h) {
			uint64_t index = meta_at(rd, skip)->index;
			if (rd->align_epoch ? index == 0 : index % rd->batch == 0)
				rd->align = false;
			else
				skip++;
		}
		if (skip != rd->pos) {
			count_skipped(rd, skip - rd->pos);
			rd->pos = skip;
			rd->pending_end = skip;
			reader_release_to(rd, skip);
		}
		uint64_t avail = h - rd->pos;
		if (avail > 0 && rd->end_epoch && meta_at(rd, rd->pos)->epoch >= rd->end_epoch)
			return trainer_done(rd, err);
		if (avail > 0) {
			uint32_t e = meta_at(rd, rd->pos)->epoch;
			size_t lim = avail < rd->batch ? (size_t)avail : rd->batch;
			size_t k = 1;
			while (k < lim && meta_at(rd, rd->pos + k)->epoch == e)
				k++;
			if (k == rd->batch) {
				fill_batch(rd, b, k);
				return 0;
			}
			/* The epoch ends inside what is published, or the
			 * producer closed it at the end of what is (its
			 * short last batch comes now). */
			if (k < lim || (k == avail && closed == rd->pos + k)) {
				if (!rd->drop_last) {
					fill_batch(rd, b, k);
					return 0;
				}
				count_skipped(rd, k);
				rd->pos += k;
				rd->pending_end = rd->pos;
				reader_release_to(rd, rd->pos);
				continue;
			}
		}
		/* Acquire: a final head published before the state change is
		 * visible when we reload it below. */
		uint32_t state = smp_load_acquire(&hd->state);
		if (state != TS_RING_RUNNING) {
			if (smp_load_acquire(&hd->head) != h)
				continue;
			if (avail > 0 && !rd->drop_last) {
				fill_batch(rd, b, (size_t)avail);
				return 0;
			}
			return stream_over(rd, state, h, err);
		}
		/* Held batches pin the producer at floor + capacity: waiting
		 * for a batch that ends past it would never end. */
		if (rd->hold && rd->floor != UINT64_MAX &&
		    rd->pos + rd->batch > rd->floor + rd->capacity)
			return ts_error_set(err, -EAGAIN, "the batches held keep the "
					    "producer from publishing the next one");
		int rc = reader_wait(rd, h, rd->pos + rd->batch, closed, deadline, alive, arg);
		if (rc == -ETIMEDOUT)
			return ts_error_set(err, rc, "no batch within %d ms",
					    timeout_ms);
		if (rc < 0)
			return ts_error_set(err, rc, "%s", ts_error_name(rc));
	}
}

static int reader_next_checked(struct ts_ring_reader *rd, struct ts_ring_batch *b,
			       int timeout_ms, int (*alive)(void *arg), void *arg,
			       struct ts_error *err);

/* The next batch, or the detach: a reader the producer detached (stopped
 * past stall_timeout) may have been cutting a batch from slots the
 * producer has since reused, so the flag is checked again after the
 * batch is cut, and a batch cut then is not handed out. */
int ts_ring_reader_next(struct ts_ring_reader *rd, struct ts_ring_batch *b,
			int timeout_ms, int (*alive)(void *arg), void *arg,
			struct ts_error *err)
{
	if (rd->no_acct) {
		int rc = reader_next_checked(rd, b, timeout_ms, alive, arg, err);
		if (rc == 0) {
			rd->handed += b->n;
			rd->batches++;
		}
		return rc;
	}
	/* The whole call is time the trainer waits for input: two vDSO
	 * clock reads and two seqlock updates per call, no system call. */
	uint64_t t0 = now_ns();
	acct_publish(rd, t0);
	int rc = reader_next_checked(rd, b, timeout_ms, alive, arg, err);
	uint64_t t1 = now_ns();
	rd->wait_ns += t1 > t0 ? t1 - t0 : 0;
	rd->last_ns = t1;
	if (rc == 0) {
		rd->handed += b->n;
		rd->batches++;
	}
	acct_publish(rd, 0);
	return rc;
}

/* reader_next, then the detach check (ts_ring_reader_next's comment). */
static int reader_next_checked(struct ts_ring_reader *rd, struct ts_ring_batch *b,
			       int timeout_ms, int (*alive)(void *arg), void *arg,
			       struct ts_error *err)
{
	reader_release_to(rd, rd->pending_end);
	int rc = reader_next(rd, b, timeout_ms, alive, arg, err);
	if (rc == 0 || rc == TS_E_PROTOCOL) {
		int drc = ts_ring_reader_detached(rd, err);
		if (drc < 0)
			rc = drc;
	}
	return rc;
}
