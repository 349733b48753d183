/*
 * tsrun_producer.h - publish tensors that something else made (a PyTorch
 * DataLoader, a generator) into a tsrun ring, served on a Unix socket to
 * the same trainers as `tsrun run`: the same memfd ring, protocol, client
 * libraries, joins, crash handling, status file (`tsrun stat`), status line
 * and summary. Part of libtsrun; what `tsrun.serve()` in the Python
 * package drives through ctypes (tensorsocket(7), libtsrun(3)).
 *
 * A producer has a fixed sample: a tensor of up to TS_PRODUCER_MAX_DIMS
 * dimensions and one of the ring's dtypes, and a label per sample that is
 * either an int32 class or a fixed tensor. The caller writes each batch
 * once: ts_producer_wait() until the ring has room for n samples (in
 * slices, so the caller can notice a signal between them), then
 * ts_producer_put() copies the n samples into their slots with one memcpy
 * (two when the label tensors wrap) and publishes them; consumers read them
 * zero-copy, each at its own batch size. Epochs end explicitly
 * (ts_producer_end_epoch), the stream with ts_producer_finish.
 *
 * Conventions as tsrun.h: 0 or a negative code (-errno, TS_E_*), err
 * filled on failure, out-parameters written on success only. Nothing is
 * printed except the status line and the summary, and only to the
 * descriptor the caller names in opts.status_fd.
 *
 * Thread safety: one thread calls wait/put/end_epoch/finish at a time;
 * ts_producer_consumers and ts_producer_socket may be called from any.
 */
#ifndef TSRUN_PRODUCER_H
#define TSRUN_PRODUCER_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_PRODUCER_MAX_DIMS 8

struct ts_producer;

/* One sample's (or one label's) tensor. dtype is an enum ts_dtype
 * value (tsrun.h): 0 uint8, 1 uint16 (int16 bits), 2 float16, 3 float32. */
struct ts_producer_tensor {
	int ndim;                          /* 0 .. TS_PRODUCER_MAX_DIMS */
	int dtype;
	int64_t dims[TS_PRODUCER_MAX_DIMS];  /* each >= 1 */
};

struct ts_producer_opts {
	/* sizeof(struct ts_producer_opts) as the caller's header declares it:
	 * set by ts_producer_opts_init (a caller that fills the struct itself
	 * sets it). The library reads the fields that fit in size and
	 * takes the defaults for the rest, so a program built against an
	 * older header keeps working; it refuses size 0 (unset) and, from
	 * a newer header, a size whose fields past its own are not zero
	 * (libtsrun(3), Sized structs). */
	size_t size;
	const char *socket_path;     /* where trainers connect (required) */
	const char *name;            /* shown by the status line, the summary
					and `tsrun stat` ("loader" if NULL) */
	const char *file;            /* what produces (the script); may be NULL */
	struct ts_producer_tensor sample;
	int label_tensor;            /* 0: int32 class labels; 1: label is a
					tensor of shape `label` per sample */
	struct ts_producer_tensor label;
	uint32_t batch;              /* what a trainer asking for none gets,
					and the unit of ring */
	uint32_t ring;               /* ring size in batches (>= 2) */
	uint32_t epochs;             /* epochs the caller will publish; 0:
					unknown (forever) */
	uint64_t samples_per_epoch;  /* 0: unknown */
	unsigned wait;               /* trainers to wait for before the first
					sample (as `tsrun run --wait`) */
	int status_fd;               /* status line and summary go there
					(-1: nowhere) */
	int quiet;                   /* neither status line nor summary (as
					`tsrun run --quiet`); the status file
					for `tsrun stat` is written anyway */
	double stall_timeout;        /* seconds a trainer may hold the ring
					while others wait, then it is detached
					(the serve setting; 0: never) */
	unsigned consumers;          /* trainers served at once, 1..64 */
};

/* Zero opts with status_fd -1, ring 8, wait 1, stall_timeout 120,
 * consumers 64, and its size. Call it as ts_producer_opts_init(o), which
 * passes sizeof *o (as ts_client_opts_init). */
void ts_producer_opts_init_size(struct ts_producer_opts *o, size_t size);
#define ts_producer_opts_init(o) ts_producer_opts_init_size((o), sizeof *(o))

/*
 * Create the ring (allocated now: a machine without that much shared
 * memory says so here), bind the socket and start the status thread.
 * Returns 0 and *out, TS_E_ARG (a bad shape or size, with what is wrong),
 * TS_E_STATE (someone serves that socket already) or -errno.
 */
int ts_producer_create(const struct ts_producer_opts *o,
		       struct ts_producer **out, struct ts_error *err);

/* The socket as bound (owned by the producer). */
const char *ts_producer_socket(const struct ts_producer *p);

/* Ring capacity in samples (the largest n one put can take). */
uint64_t ts_producer_capacity(const struct ts_producer *p);

/* Trainers connected now. */
unsigned ts_producer_consumers(struct ts_producer *p);

/*
 * Wait until n (1 .. capacity) more samples can be written: every trainer
 * has released the slots, and opts.wait trainers came (once). Returns 0,
 * -ETIMEDOUT after timeout_ms (< 0: no limit; call again), TS_E_STATE
 * after ts_producer_finish, TS_E_ARG for a bad n.
 */
int ts_producer_wait(struct ts_producer *p, size_t n, int timeout_ms,
		     struct ts_error *err);

/*
 * Copy n samples into the ring and publish them: data holds n samples of
 * opts.sample contiguously (C order); labels n int32 classes, or with
 * label tensors label_data n labels contiguously (labels may then be
 * NULL). The samples take the next indices of the current epoch. Call
 * after ts_producer_wait(p, n) returned 0. Returns 0, TS_E_ARG, or
 * TS_E_STATE (no room: wait first; or the stream was finished).
 */
int ts_producer_put(struct ts_producer *p, const void *data,
		    const int32_t *labels, const void *label_data, size_t n,
		    struct ts_error *err);

/* End the current epoch: trainers get its short last batch now, and the
 * next put starts epoch + 1 at index 0. An epoch with no sample is not
 * counted. Returns 0, or TS_E_STATE after finish. */
int ts_producer_end_epoch(struct ts_producer *p, struct ts_error *err);

/* Position of the next sample: epoch (from 0) and index in it. */
void ts_producer_position(const struct ts_producer *p, uint64_t *epoch,
			  uint64_t *index);

/*
 * End the stream. status 0: trainers read what is published, then get the
 * end of stream; TS_E_STOPPED: "stopped" (a signal); another negative
 * code: the producer failed (trainers get TS_E_PRODUCER with reason, what
 * went wrong and where, in their error; NULL or "" for none). Then waits
 * up to drain_ms for connected trainers to finish reading (the status
 * file keeps answering `tsrun stat`), and writes the summary. Idempotent.
 */
void ts_producer_finish(struct ts_producer *p, int status, const char *reason,
			int drain_ms);

/* In a child forked from the producer's process (the workers a DataLoader
 * forks after the producer started): close the child's copies of the
 * socket descriptors, so that the producer's death hangs up on trainers
 * and refuses new ones at once while the children live on. Frees nothing,
 * touches no thread; the child must not use p afterwards. Call it from a
 * pthread_atfork child handler (tsrun.serve does, os.register_at_fork). */
void ts_producer_forked(struct ts_producer *p);

/* Finish (with TS_E_STOPPED if not finished yet, no drain), close the
 * socket, remove the status file, free. NULL is a no-op. */
void ts_producer_destroy(struct ts_producer *p);

#ifdef __cplusplus
}
#endif
#endif
