/*
 * reader.h - asynchronous file reads for the engine.
 *
 * With io_uring, every plain-file read is one batch of linked SQEs
 * open -> read -> close on a direct descriptor (a fixed-file slot per
 * request, no fd ever enters the process table) into a registered buffer
 * (read_fixed). Tar members are reads of (offset, size) ranges of a shard
 * that stays open in a small cache of fixed-file slots, so a shard is
 * opened once while it is in use, not once per member. SQEs are queued by
 * ts_reader_submit and handed to the kernel in one io_uring_enter per
 * ts_reader_reap, so a whole batch costs one syscall.
 *
 * Buffers: 2 x queue_depth buffers of buf_size bytes (queue_depth in
 * flight plus as many held by decoders). A file larger than its buffer is
 * detected by the read filling the buffer: the bytes move to a heap buffer
 * twice the size and the rest is read by another open -> read -> close at
 * the next offset, doubling until a short read marks the end of the file.
 * A range larger than buf_size goes straight to a heap buffer of its size.
 * The caller sees no difference: it gets (data, len) and releases data.
 *
 * Fallback: when io_uring cannot be set up (ENOSYS, EPERM, sysctl
 * kernel.io_uring_disabled, no direct descriptors) or TSRUN_NO_URING=1 is
 * set, the reader runs in a synchronous mode: ts_reader_reap performs the
 * queued reads with open/pread/close on the calling thread.
 * ts_reader_fallback_reason() says why, for the CLI to print.
 *
 * Fault injection (a testing aid, inert unless set): TSRUN_FAULT_READ is
 * a comma-separated list of KIND:N (the Nth completion the reader hands
 * out, counting from 1) or KIND:%N (every Nth), KIND one of eio (status
 * -EIO), enoent (-ENOENT, a file gone after listing) and short (half the
 * bytes of a plain file; a range fails with -EIO as a real short range
 * does), e.g. TSRUN_FAULT_READ="eio:7,short:12,enoent:20". Read at the
 * first finished read; the count is process-wide. Malformed entries are ignored.
 *
 * Threads: one thread drives a reader (create, submit, reap, destroy);
 * ts_reader_release may be called from any thread.
 * Errors: functions return 0 (or a count) or a negative code (-errno or
 * TS_E_*); none prints.
 */
#ifndef TS_READER_H
#define TS_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "source.h"

struct ts_reader;

/* One finished read. */
struct ts_read_done {
	uint64_t tag;      /* as given to ts_reader_submit */
	int status;        /* 0, or -errno (-ENOENT, -EIO for a short range) */
	uint8_t *data;     /* status 0: the bytes, owned by the reader until
			      ts_reader_release(data); NULL on error */
	size_t len;
};

/* Default buffer size when buf_size is 0: 256 KiB. */
#define TS_READER_DEFAULT_BUF (256u * 1024u)

/*
 * Create a reader with queue_depth (1..4096) reads in flight and buffers
 * of buf_size bytes (0: TS_READER_DEFAULT_BUF). Tries io_uring first and
 * falls back to synchronous reads (see above) without failing.
 * out: the new reader on success; free with ts_reader_destroy().
 * Returns 0, TS_E_ARG for a bad depth, TS_E_NOMEM / TS_E_NOMEM.
 */
int ts_reader_create(unsigned queue_depth, size_t buf_size,
		     struct ts_reader **out, struct ts_error *err);

/*
 * Release every resource. Reads still in flight are waited for (they are
 * file reads: this is short). Every buffer handed out must have been
 * released first. NULL is a no-op.
 */
void ts_reader_destroy(struct ts_reader *r);

/* Read only files and ranges of at most max bytes (default: no cap); a
 * larger one completes with -EFBIG, unread. Whatever the cap, only
 * regular files are read: anything else completes with -ESPIPE. */
void ts_reader_set_max_file(struct ts_reader *r, uint64_t max);

/* True when the reader uses io_uring, false in the fallback mode. */
bool ts_reader_uses_uring(const struct ts_reader *r);

/* Why the reader is in the fallback mode, or runs io_uring without some
 * feature (e.g. "registered buffers unavailable (RLIMIT_MEMLOCK): plain
 * reads into the buffer pool"); NULL when nothing to report. Static
 * storage owned by the reader. */
const char *ts_reader_fallback_reason(const struct ts_reader *r);

/*
 * Queue a read of item (ts_source_item). item->path must stay valid until
 * its completion is reaped (the index outlives the reader). tag comes back
 * in the completion. The read is handed to the kernel at the next
 * ts_reader_reap (or at once when the submission queue fills).
 * Returns 0, -EBUSY when queue_depth reads are in flight or every buffer
 * is held (reap or release first), TS_E_ARG for an item without a path.
 * An error of the read itself (e.g. a missing file) is never returned
 * here: it comes back as the completion's status.
 */
int ts_reader_submit(struct ts_reader *r, const struct ts_item *item,
		     uint64_t tag);

/*
 * Hand queued reads to the kernel and collect up to max finished ones into
 * done[]. Waits up to timeout_ms (-1: until at least one finishes, 0: do
 * not wait) when none is finished yet; returns at once with 0 when nothing
 * is in flight. Completions come in any order.
 * Returns the number of entries written, or a negative code for a failure
 * of the ring itself (not of a read).
 */
int ts_reader_reap(struct ts_reader *r, struct ts_read_done *done,
		   unsigned max, int timeout_ms);

/* Reads submitted and not yet reaped. */
unsigned ts_reader_in_flight(const struct ts_reader *r);

/*
 * Fault injection hook (TSRUN_FAULT_READ above): count one finished read
 * of a file (range: a tar member) whose status is status and whose length
 * is *len, and return the status it should have: status itself, or an
 * injected -EIO / -ENOENT (the caller then drops the data), or 0 with *len
 * halved (a short read). Called by the reader for its own completions and
 * by plain synchronous readers (the engine's workers without io_uring).
 * Returns status unchanged when the variable is unset. Thread-safe.
 */
int ts_reader_fault(bool range, int status, size_t *len);

/* Give a completion's buffer back. Thread-safe; NULL is a no-op. */
void ts_reader_release(struct ts_reader *r, uint8_t *data);

#endif
