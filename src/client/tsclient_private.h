/*
 * tsclient_private.h - libtsclient's entry points for the Python client
 * (src/python/tsrun), which reaches them by ctypes: batches that outlive
 * the next call (tensors of their own), their private mappings, the
 * device ring's holds and outstanding batches, and the read-ahead it did
 * not use. Not installed; exported in the symbol node
 * TSCLIENT_PRIVATE_<major>.<minor> of src/client/libtsclient.sym, apart
 * from the public nodes (tests/exports.sh checks both ways), so that they
 * may change in any release without touching the public ABI. A C trainer
 * uses tsclient.h and tsclient_cuda.h only.
 *
 * Conventions as tsclient.h.
 */
#ifndef TSCLIENT_PRIVATE_H
#define TSCLIENT_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include "tsclient.h"
#include "tsclient_cuda.h"

/* ---- batches that outlive the next call (the Python client) ------------
 *
 * ts_client_next_held is ts_client_next without the implied release: the
 * batches it hands out stay held, in any number and released in any
 * order, until ts_client_release_below(c, seq) says that no batch from
 * seq on is still in use (the first seq of the oldest one still held, or
 * UINT64_MAX for none): everything below seq goes back, skipped samples
 * included. It returns -EAGAIN, instead of waiting forever, when the
 * next batch cannot be published while the oldest held batch keeps its
 * slots: release (or copy out) that one and call again. A ts_client_next
 * afterwards ends hold mode and releases everything handed out.
 *
 * ts_client_span_map gives a batch its own mapping of its samples:
 * private (copy on write) and writable, of the ring's pages, so reading
 * it is zero-copy, a write copies only the pages it touches into this
 * process and never reaches the ring, and the mapping outlives the
 * client, the producer and the batch's release. Until the batch is
 * released, its bytes are the ring's; ts_client_span_own copies the
 * pages not yet copied, after which the span no longer depends on the
 * ring and the batch may be released. ts_client_span_unmap frees it.
 */
struct ts_client_span {
	void *base;     /* the mapping (page aligned) */
	size_t len;     /* its length */
	void *data;     /* the batch's first sample; n samples, sample_stride
			   apart */
};

int ts_client_next_held(struct ts_client *c, struct ts_batch *b,
			struct ts_error *err);
void ts_client_release_below(struct ts_client *c, uint64_t seq);

/* 0 and *out, or -errno (mmap refused: err says why; copy the batch
 * instead). b comes from ts_client_next_held on c and is still held. */
int ts_client_span_map(struct ts_client *c, const struct ts_batch *b,
		       struct ts_client_span *out, struct ts_error *err);
/* 0, or -errno when the pages cannot all be copied (out of memory). Safe
 * while other threads read or write the span. */
int ts_client_span_own(const struct ts_client_span *s, struct ts_error *err);
/* Unmap; any thread; a zeroed span is a no-op. */
void ts_client_span_unmap(struct ts_client_span *s);

/* 1 when no page of s is this process's own (none written, none owned:
 * every page still the ring's, so the span may serve a later batch of
 * the same ring range without being mapped again), 0 when some is, or
 * -errno (no /proc/self/pagemap). Any thread; s must not be written
 * meanwhile. */
int ts_client_span_clean(const struct ts_client_span *s);

/* n samples handed out were never used (a loader that read a batch ahead
 * and then stopped): this trainer's counts, and the producer's summary
 * of it, leave them out. */
void ts_client_unused(struct ts_client *c, size_t n);

/* ---- the device ring, for views that outlive their batch --------------- */

/*
 * Keep up to k (1..8, default 1) batches outstanding, so that the host
 * runs ahead of the GPU: ts_client_device_next then takes batches with
 * ts_client_next_held and gives each back (ts_client_release_below) at
 * the first ts_client_device_next after the uses recorded on it have
 * finished (cudaEventQuery, without waiting), waiting only for the
 * oldest when k are out, or when its slots keep the producer from
 * publishing the next batch. A batch's device view is then valid until
 * its recorded uses are done and a later ts_client_device_next ran (one
 * without recorded uses: until the next call, as with k = 1). On another
 * GPU each outstanding batch has its own peer-copy buffer (k batches'
 * worth are allocated). Set before the first batch. 0, TS_E_ARG or
 * TS_E_NOMEM.
 */
int ts_client_device_set_outstanding(struct ts_client_device *d, unsigned k,
				     struct ts_error *err);

/* How many batches are outstanding now (outstanding mode). */
unsigned ts_client_device_outstanding(const struct ts_client_device *d);

/* Holds on the mapping: a view that may outlive its batch takes one and
 * gives it back when it goes. The mapping stays open while holds remain;
 * after the end of the stream, the last unhold closes it. */
void ts_client_device_hold(struct ts_client_device *d);
void ts_client_device_unhold(struct ts_client_device *d);

#endif
