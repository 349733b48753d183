/*
 * ring_local.c - the ring's in-process consumer (ts_ring_local_*): a
 * reader of the producer's own ring in the same process (tsrun bench, the
 * embedded library), attached like a remote trainer but reading through
 * the producer's mapping, so the samples count once in RSS. It uses only
 * ring.h's API of the producer side and the reader.
 */
#include "ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

struct ts_ring_local {
	struct ts_ring *ring;
	struct ts_ring_consumer *c;
	struct ts_ring_reader *rd;
	uint8_t *data;                 /* the producer's first mapping */
	uint64_t capacity;             /* samples */
	size_t sample_stride;
	uint64_t last_seq, last_n;     /* the batch handed out last */
};

uint64_t ts_ring_local_sleeps(const struct ts_ring_local *l)
{
	return ts_ring_reader_sleeps(l->rd);
}

int ts_ring_local_create(struct ts_ring *r, uint32_t batch,
			 enum ts_ring_join join, bool drop_last,
			 struct ts_ring_local **out, struct ts_error *err)
{
	struct ts_ring_local *l = calloc(1, sizeof(*l));
	struct ts_ring_join_req req = { .batch = batch, .join = join, .pid = 0 };
	struct ts_ring_join_pos pos;
	int rc;

	if (!l)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	l->ring = r;
	struct ts_ring_info info;
	ts_ring_get_info(r, &info);
	l->capacity = info.capacity;
	l->sample_stride = info.sample_stride;
	l->data = ts_ring_slot(r, 0);
	rc = ts_ring_attach(r, &req, &l->c, &pos, err);
	if (rc < 0)
		goto fail;
	struct ts_ring_reader_opts o = {
		.batch = batch, .drop_last = drop_last, .start = pos.start,
		.min_epoch = pos.min_epoch,
		.align = join == TS_JOIN_NOW && pos.start > 0,
		.align_epoch = join == TS_JOIN_NEXT_EPOCH,
	};
	rc = ts_ring_reader_open(ts_ring_fd(r), ts_ring_consumer_ctl_fd(l->c), &o,
				 &l->rd, err);
	if (rc < 0)
		goto fail;
	/* The samples through our own mapping: counted once in RSS (the
	 * budget), not once per mapping. */
	ts_ring_reader_borrow_data(l->rd, l->data);
	*out = l;
	return 0;
fail:
	ts_ring_detach(r, l->c);
	free(l);
	return rc;
}

/* A batch across the wrap was read through the second copy of the data
 * mapping, whose pages then count in RSS a second time: once it is
 * released, drop them from the mapping (the memfd keeps them; the
 * writers use the first copy), so the process holds the ring once plus
 * at most the part of one batch past the wrap. */
static void local_unwrap(struct ts_ring_local *l)
{
	uint64_t first = l->last_seq % l->capacity;
	if (l->last_n == 0 || first + l->last_n <= l->capacity)
		return;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t past = (first + l->last_n - l->capacity) * l->sample_stride;
	madvise(l->data + l->capacity * l->sample_stride,
		(size_t)ts_round_up(past, page), MADV_DONTNEED);
	l->last_n = 0;
}

int ts_ring_local_next(struct ts_ring_local *l, struct ts_ring_batch *b,
		       int timeout_ms, struct ts_error *err)
{
	int rc = ts_ring_reader_next(l->rd, b, timeout_ms, NULL, NULL, err);
	local_unwrap(l);  /* the previous batch is released now */
	if (rc == 0) {
		l->last_seq = b->seq;
		l->last_n = b->n;
	}
	return rc;
}

void ts_ring_local_release(struct ts_ring_local *l,
			   const struct ts_ring_batch *b)
{
	ts_ring_reader_release(l->rd, b);
	if (b && b->seq == l->last_seq)
		local_unwrap(l);
}

void ts_ring_local_destroy(struct ts_ring_local *l)
{
	if (!l)
		return;
	ts_ring_reader_destroy(l->rd);
	ts_ring_detach(l->ring, l->c);
	free(l);
}
