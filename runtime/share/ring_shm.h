/*
 * ring_shm.h - what the producer side (ring.c) and the reader side
 * (ring_reader.c) of the ring both need: futex waits on shared words, the
 * monotonic clock and time slices, and the double mapping of the data
 * region. Internal to those two files.
 */
#ifndef TS_RING_SHM_H
#define TS_RING_SHM_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "util.h"

#define SPIN_LOOPS 2000
#define CONSUMER_SLICE_MS 100
#define PRODUCER_SLICE_MS 50

static inline long futex_wait(uint32_t *addr, uint32_t val, int ms, bool priv)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	return syscall(SYS_futex, addr, priv ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT,
		       val, ms < 0 ? NULL : &ts, NULL, 0);
}

static inline void futex_wake(uint32_t *addr, bool priv)
{
	syscall(SYS_futex, addr, priv ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE,
		INT_MAX, NULL, NULL, 0);
}

/* The clock (ts_clock_now's) in nanoseconds, as the control page carries it. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Milliseconds left until deadline (a ts_clock_now() value); < 0 deadline means
 * forever and returns slice. */
static inline int slice_ms(double deadline, int slice)
{
	if (deadline < 0)
		return slice;
	double left = (deadline - ts_clock_now()) * 1000.0;
	if (left <= 0)
		return 0;
	return left < slice ? (int)left + 1 : slice;
}

/*
 * Map the data region twice back to back: reserve 2x address space, then
 * put the same file range at both halves, so slot capacity-1 runs on into
 * slot 0 and any span of <= capacity samples is contiguous. extra_flags
 * apply to the first half only: the second maps the same pages, faulted
 * in only where a span wraps.
 */
static inline int map_double(int fd, uint64_t off, size_t len, int prot,
			     int extra_flags, uint8_t **out)
{
	uint8_t *base = mmap(NULL, 2 * len, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
	if (mmap(base, len, prot, MAP_SHARED | MAP_FIXED | extra_flags, fd,
		 (off_t)off) == MAP_FAILED ||
	    mmap(base + len, len, prot, MAP_SHARED | MAP_FIXED, fd,
		 (off_t)off) == MAP_FAILED) {
		int e = -errno;
		munmap(base, 2 * len);
		return e;
	}
	*out = base;
	return 0;
}

/* The facts of a ring header, for both sides. */
static inline void ring_info_from_hdr(const struct ts_ring_hdr *h, struct ts_ring_info *out)
{
	out->height = (int)h->height;
	out->width = (int)h->width;
	out->channels = (int)h->channels;
	out->dtype = (enum ts_dtype)h->dtype;
	out->layout = (enum ts_layout)h->layout;
	out->sample_bytes = h->sample_bytes;
	out->sample_stride = h->sample_stride;
	out->capacity = h->capacity;
	out->epochs = h->epochs;
	out->samples_per_epoch = h->samples_per_epoch;
	out->default_batch = h->default_batch;
	out->ndim = (int)h->ndim;
	out->label_ndim = (int)h->label_ndim;
	for (int i = 0; i < TS_RING_MAX_DIMS; i++) {
		out->dims[i] = h->dims[i];
		out->label_dims[i] = h->label_dims[i];
	}
	out->label_dtype = (enum ts_dtype)h->label_dtype;
	out->label_bytes = h->label_bytes;
	out->node_index = h->node_index;
	out->node_count = h->node_count;
	out->n_views = (int)h->n_views;
	for (uint32_t i = 0; i < h->n_views && i < TS_RING_MAX_VIEWS; i++)
		out->views[i] = h->views[i];
}

/* Whether a header's view table is sound: at most TS_RING_MAX_VIEWS
 * views of known dtypes and layouts, packed from 0 to sample_bytes, each
 * its shape's size. */
static inline bool ring_views_ok(const struct ts_ring_hdr *h)
{
	uint64_t off = 0, align = 1;
	if (h->n_views == 0)
		return true;
	if (h->n_views > TS_RING_MAX_VIEWS)
		return false;
	for (uint32_t i = 0; i < h->n_views; i++) {
		const struct ts_ring_view *v = &h->views[i];
		uint64_t es = v->dtype == TS_DTYPE_U8 ? 1 : v->dtype == TS_DTYPE_F32 ? 4
			      : v->dtype <= TS_DTYPE_F16 ? 2 : 0;
		/* each view at the next multiple of its element size
		 * (ts_plan_set_views) */
		off = es ? ts_round_up(off, es) : off;
		align = es > align ? es : align;
		if (!es || v->layout > TS_LAYOUT_NCHW || v->offset != off || v->height > 65535 ||
		    v->width > 65535 || v->channels > 4 ||
		    v->bytes != (uint64_t)v->height * v->width * v->channels * es)
			return false;
		off += v->bytes;
	}
	return ts_round_up(off, align) == h->sample_bytes;
}

/* Does an epoch start in [from, to)? Its first sample ends the batch a
 * consumer was filling, however short. */
static inline bool epoch_starts(const struct ts_ring_meta *meta, uint64_t capacity,
				uint64_t from, uint64_t to)
{
	for (uint64_t s = from; s < to; s++)
		if (meta[s % capacity].index == 0)
			return true;
	return false;
}

#endif
