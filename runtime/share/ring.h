/*
 * ring.h - the shared sample ring: one memfd holding a header page, a data
 * region of `capacity` fixed-size sample slots and a parallel metadata
 * array (label, epoch, index per slot). Sample seq lives in slot
 * seq % capacity. Consumers map the data region twice back to back, so any
 * run of up to `capacity` samples is one contiguous span even across the
 * wrap.
 *
 * Producer side: the engine writes sample seq into ts_ring_slot(seq) after
 * ts_ring_wait_writable(seq) said the slot is free, fills its metadata with
 * ts_ring_set_meta(), and makes samples [0, head) visible with
 * ts_ring_publish(head). ts_ring_finish() ends the stream.
 *
 * Consumer side: a consumer is attached (ts_ring_attach, done by the server
 * for remote consumers, or ts_ring_local_create for in-process ones) and
 * gets its own control memfd in which it alone writes its release position.
 * A reader (ts_ring_reader_*) maps the ring read-only and cuts batches.
 *
 * Functions return 0 or a negative code (-errno or TS_E_*) and fill err
 * when non-NULL. Nothing here prints.
 */
#ifndef TS_RING_H
#define TS_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "error.h"
#include "plan.h"

#define TS_RING_MAGIC 0x47525354u      /* "TSRG" little-endian */
/* 2: reason, tensor shape, label tensors, closed epochs (tsrun.serve);
 * 3: the control page carries a job failure (job_failed, below);
 * 4: and a detach for holding the ring too long (detached, below);
 * 5: the view table (views(...): a sample of several views, below);
 * 6: sample_stride (slots padded past an odd-sized sample, below);
 * 7: the control page carries the trainer's own time accounting (its
 *    waits for batches and what it was handed: struct ts_ring_ctl).
 * 8: the control page carries a job's wait and start (job_wait, below)
 *    and the consumer's epochs (end_epoch, done). */
#define TS_RING_VERSION 8u
#define TS_RING_CTL_MAGIC 0x43525354u  /* "TSRC" */
#define TS_RING_MAX_CONSUMERS 64
#define TS_RING_MAX_DIMS 8             /* of a sample or label tensor */
#define TS_RING_MAX_VIEWS 32           /* views of a sample (views(...)) */
#define TS_RING_JOB_MAX 63             /* bytes of a job name (= the hello's) */

/* One view of a sample (views(...)): its tensor (C x H x W in nchw,
 * H x W x C in nhwc) at offset in the slot, bytes long. */
struct ts_ring_view {
	uint32_t height, width, channels;
	uint32_t dtype;             /* enum ts_dtype */
	uint32_t layout;            /* enum ts_layout */
	uint32_t group;             /* the views() group, from 0 */
	uint64_t offset, bytes;
};
_Static_assert(sizeof(struct ts_ring_view) == 40, "a view is 40 bytes on the wire");

/* Stream states (struct ts_ring_hdr.state). */
enum ts_ring_state {
	TS_RING_RUNNING = 0,
	TS_RING_EOS = 1,     /* every sample published; status 0 */
	TS_RING_ERROR = 2,   /* the producer failed; status holds the code */
};

/* Join policy of a consumer (also the wire value in the hello). */
enum ts_ring_join {
	TS_JOIN_NOW = 0,        /* start at the producer's current head */
	TS_JOIN_NEXT_EPOCH = 1, /* start at an epoch start: the current one
				   when it is still whole in the ring, else
				   the next one */
};

/*
 * The shared header, at offset 0 of the ring memfd (one page). Every field
 * that crosses processes is here, fixed-width; the producer writes the
 * layout fields once before any consumer sees the fd, and afterwards only
 * head, state, status and head_seq change, through the ordering macros in
 * ring.c. Consumers map this page read-only.
 */
struct ts_ring_hdr {
	uint32_t magic;             /* TS_RING_MAGIC */
	uint32_t version;           /* TS_RING_VERSION */
	uint32_t height, width, channels;
	uint32_t dtype;             /* enum ts_dtype */
	uint32_t layout;            /* enum ts_layout */
	uint32_t epochs;            /* 0 = forever */
	uint64_t sample_bytes;
	uint64_t capacity;          /* samples */
	uint64_t samples_per_epoch; /* 0 = unknown */
	uint64_t data_offset;       /* page aligned */
	uint64_t data_bytes;        /* capacity * sample_stride, page multiple */
	uint64_t meta_offset;       /* page aligned */
	uint64_t meta_bytes;        /* capacity * sizeof(struct ts_ring_meta),
				       rounded up to a page */
	uint64_t file_bytes;
	uint32_t producer_pid;
	uint32_t default_batch;     /* for consumers that ask for none */
	/* Bytes from one slot to the next (version 6): sample_bytes, or
	 * that padded to 64 bytes or to a page when sample_bytes would
	 * round the capacity up far (ts_ring_create). Slot s is at
	 * data_offset + s * sample_stride; a batch is n samples that far
	 * apart, the padding between them unwritten. */
	uint64_t sample_stride;

	/* Samples [0, head) are published. Own cache line: written by the
	 * producer per batch, read by every consumer. Consumers map the
	 * header read-only, so every word a consumer writes lives in its own
	 * control page (struct ts_ring_ctl). */
	_Alignas(64) uint64_t head;

	_Alignas(64) uint32_t state;   /* enum ts_ring_state */
	int32_t status;                /* with TS_RING_ERROR: the code */
	/* Futex word consumers sleep on; the producer bumps it and wakes
	 * only when some sleeping consumer's ctl.consumer_waiting is due. */
	uint32_t head_seq;
	uint32_t reserved1;
	/* With TS_RING_ERROR: why, as the producer's error message says
	 * (what, where: "FILE: truncated JPEG data"), NUL-terminated; empty
	 * when it gave none. Written once before the state's release
	 * store; a zero page (an older producer) reads as empty. */
	char reason[256];
	/* Samples [0, closed) belong to epochs known to be complete: a
	 * producer that cannot publish the next epoch's first sample at once
	 * (tsrun.serve, between two passes of a DataLoader) says here that
	 * the epoch ended, so a consumer's short last batch comes now. */
	uint64_t closed;

	/* Tensors as a producer that is not a pipeline has them (tsrun.serve;
	 * zero for pipelines). ndim > 0: a sample is a tensor of dims (C
	 * order), which height/width/channels/layout only approximate.
	 * label_bytes > 0: every sample has a label tensor of label_dims and
	 * label_dtype, label_bytes long, in slot seq % capacity of the label
	 * region at label_offset (the int32 label in the meta array is 0).
	 * Written once, before any consumer sees the fd. */
	_Alignas(64) uint32_t ndim;
	uint32_t label_ndim;
	uint32_t label_dtype;          /* enum ts_dtype */
	uint32_t reserved2;
	uint64_t dims[TS_RING_MAX_DIMS];
	uint64_t label_dims[TS_RING_MAX_DIMS];
	uint64_t label_bytes;          /* per sample; 0: int32 labels */
	uint64_t label_offset;         /* page aligned */
	uint64_t label_region_bytes;   /* capacity * label_bytes, page multiple */

	/* views(...) (version 5): n_views > 0 when a sample is several
	 * views, each a tensor of its own in the slot (views[i], in order,
	 * packed: view i + 1 starts where view i ends, the last ends at
	 * sample_bytes); height..layout above are then view 0's. 0 for
	 * every other producer. Written once, before any consumer sees the
	 * fd. */
	_Alignas(64) uint32_t n_views;
	uint32_t reserved3;
	struct ts_ring_view views[TS_RING_MAX_VIEWS];

	/* shard(): the producer's node, node_index of node_count (0 of 0
	 * without one, and in a zero page from an older producer), so that
	 * a consumer keys its own draws (Mixup) by a sample's position in
	 * the whole epoch, node_index + node_count * index, as the
	 * producer's are. Written once (ts_ring_set_node), before any
	 * consumer sees the fd. */
	_Alignas(64) uint32_t node_index;
	uint32_t node_count;
};
_Static_assert(sizeof(struct ts_ring_hdr) <= 4096, "the ring header is one page");

/* Per-slot metadata, 16 bytes, in the meta array. */
struct ts_ring_meta {
	uint64_t index;   /* position in the epoch */
	uint32_t epoch;
	int32_t label;
};

/*
 * The control page of one consumer (its own memfd, one page, read-write
 * for both sides). The consumer alone writes release; the producer
 * writes start before handing the fd over and producer_waiting while it
 * waits for space.
 */
struct ts_ring_ctl {
	uint32_t magic;             /* TS_RING_CTL_MAGIC */
	uint32_t version;
	uint64_t start;             /* first seq this consumer may read */
	/* Every seq < release is released by this consumer. */
	_Alignas(64) uint64_t release;
	/* Futex word the producer sleeps on while this consumer holds the
	 * ring; the consumer bumps it and wakes when producer_waiting != 0. */
	_Alignas(64) uint32_t wake_seq;
	uint32_t producer_waiting;
	/* Nonzero while the consumer sleeps on hdr.head_seq: the head it
	 * waits for (the end of its next batch). The producer's publish
	 * wakes it once head reaches it, or when a new epoch's first sample
	 * is published (the batch before it ends short); any smaller value,
	 * 1 say, asks for a wake at every publish. */
	_Alignas(64) uint64_t consumer_waiting;
	/* Samples the consumer passed over without reading them (aligning
	 * after a join, an epoch's short batch under drop_last), so that
	 * summaries count what it read. Written by the consumer only. */
	uint64_t skipped;
	/* Written by the producer, read by a rank of a job (tensorsocket(7)):
	 * another rank of its job left before the end of the stream. Its
	 * rank and pid are stored first, then job_failed = 1 (release). */
	_Alignas(64) uint32_t job_failed;
	uint32_t job_failed_rank;
	uint32_t job_failed_pid;
	/* Written by the producer, read by the consumer: it was detached for
	 * holding the ring held_ms without releasing, past the serve
	 * setting stall_timeout (timeout_ms). The two are stored first,
	 * then detached = 1 (release); the producer then hangs up. */
	_Alignas(64) uint32_t detached;
	uint32_t detached_held_ms;
	uint32_t detached_timeout_ms;
	/* The trainer's own accounting (version 7), written by the consumer
	 * only, read by the producer for its status and summary, which
	 * trusts none of it (it bounds every figure by its own clock and
	 * head). A seqlock: the writer makes stat_seq odd, stores the
	 * fields, then makes it even again (ring_reader.c); a reader retries
	 * while it is odd or changed under it. Times are CLOCK_MONOTONIC
	 * nanoseconds, one clock for every process of the host. Its own
	 * cache line: written twice per batch by the consumer, read about
	 * ten times a second by the producer. */
	_Alignas(64) uint32_t stat_seq;
	uint32_t reserved_stat;
	uint64_t joined_ns;         /* when the trainer connected; 0: no figures */
	uint64_t wait_ns;           /* time inside next() of the waits that ended */
	uint64_t wait_since_ns;     /* start of the wait under way; 0: none */
	uint64_t handed;            /* samples handed to the trainer (less the
				       ones it said it did not use) */
	uint64_t batches;           /* batches handed */
	/* Version 8. Written by the producer, read by a rank of a job while its job
	 * waits for its other ranks. job_wait is 1 from the welcome until
	 * every rank has connected; then the job's start (job_start,
	 * job_min_epoch) is stored first and job_wait = 0 (release). When
	 * the wait runs out (serve setting job_timeout, job_timeout_ms) the
	 * ranks that never came (job_missing, bit r for rank r) are stored
	 * first and job_failed = 2 (release). */
	_Alignas(64) uint32_t job_wait;
	uint32_t job_min_epoch;
	uint64_t job_start;
	uint64_t job_missing;
	uint32_t job_timeout_ms;
	/* Epochs count per trainer: the epoch this consumer stops before,
	 * its `epochs` whole epochs from where it joined (0: endless),
	 * written by the producer before the welcome (a job's ranks: before
	 * job_wait = 0). done is written by the consumer (release) once it
	 * reached end_epoch: from then on it holds nobody back and the
	 * producer serves no epoch for it. */
	_Alignas(64) uint32_t end_epoch;
	uint32_t done;
};
_Static_assert(sizeof(struct ts_ring_ctl) <= 4096, "the control page is one page");

struct ts_ring_params {
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	size_t sample_bytes;         /* 0: height*width*channels*dtype size */
	uint64_t capacity;           /* samples; rounded up so the data region
					is a page multiple (see sample_stride
					in struct ts_ring_hdr) */
	uint32_t epochs;             /* 0 = forever */
	uint64_t samples_per_epoch;  /* 0 = unknown (tile/filter pipelines) */
	unsigned min_consumers;      /* wait_writable blocks until this many
					consumers attached once; after that
					it pauses only while none is
					attached (0: never waits) */
	uint32_t default_batch;      /* the pipeline's batch(n): what a
					consumer asking for 0 gets */
	bool staged;                 /* publication passes a finisher (the
					device ring): see ts_ring_stage_* */
	/* Tensor shapes of a non-pipeline producer (struct ts_ring_hdr):
	 * ndim 0 for pipelines; label_bytes 0 for int32 labels. */
	int ndim;
	uint64_t dims[TS_RING_MAX_DIMS];
	int label_ndim;
	uint64_t label_dims[TS_RING_MAX_DIMS];
	enum ts_dtype label_dtype;
	size_t label_bytes;
	/* views(...): the sample's views (borrowed, n_views of them); 0 and
	 * NULL for one tensor per sample. */
	int n_views;
	const struct ts_plan_view *views;
};

/* Read-only facts about a ring (copied from its header). */
struct ts_ring_info {
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	size_t sample_bytes;
	size_t sample_stride;        /* slot to slot: sample_bytes or more */
	uint64_t capacity;
	uint32_t epochs;
	uint64_t samples_per_epoch;
	uint32_t default_batch;
	int ndim;                    /* as struct ts_ring_params */
	uint64_t dims[TS_RING_MAX_DIMS];
	int label_ndim;
	uint64_t label_dims[TS_RING_MAX_DIMS];
	enum ts_dtype label_dtype;
	size_t label_bytes;
	int n_views;                 /* views(...): 0 or the view table */
	struct ts_ring_view views[TS_RING_MAX_VIEWS];
	uint32_t node_index, node_count; /* shard(): as struct ts_ring_hdr */
};

struct ts_ring_consumer_stat {
	pid_t pid;            /* 0 for an in-process consumer */
	uint32_t batch;
	uint64_t start;
	uint64_t release;     /* samples released */
	uint64_t lag;         /* head - release */
	double rate;          /* samples/s since the previous ts_ring_stat */
	bool local;
	uint64_t waiting;     /* asleep until head reaches this; 0: awake */
	uint64_t skipped;     /* released without being read (ctl.skipped) */
	/* The trainer's own accounting (ctl.stat_seq ... batches), as it
	 * wrote it: raw, for the caller to bound. has_acct false when the
	 * page carries none (an older client) or never read steady. */
	bool has_acct;
	double attached;      /* ts_clock_now() when it attached (the producer's) */
	double joined;        /* ctl.joined_ns, in seconds */
	double waited;        /* seconds waited so far, the wait under way
				 included (to the time of the snapshot) */
	uint64_t handed, batches;
	double at;            /* ts_clock_now() of the snapshot */
	char job[TS_RING_JOB_MAX + 1];  /* its job's name; "" without */
	bool job_wait;        /* a rank whose job waits for its other ranks */
	uint32_t end_epoch;   /* it reads epochs before this one; 0: endless */
	uint32_t epoch;       /* the epoch of its next sample */
	bool done;            /* it has its epochs (ctl.done) */
};

struct ts_ring_stat {
	uint64_t head;
	enum ts_ring_state state;
	uint64_t capacity;
	bool producer_waiting;        /* a writer is blocked on a consumer */
	uint64_t consumer_wakes;      /* publishes that woke sleeping consumers */
	size_t n_consumers;
	struct ts_ring_consumer_stat consumers[TS_RING_MAX_CONSUMERS];
	/* Consumers that detached, oldest first (the last
	 * TS_RING_MAX_CONSUMERS of them), with their final release: for
	 * summaries of what each trainer got. */
	size_t n_departed;
	struct ts_ring_consumer_stat departed[TS_RING_MAX_CONSUMERS];
	/* Writers' time blocked in ts_ring_wait_writable, seconds, summed
	 * over writer threads since the ring was created: for a free slot
	 * (a consumer or a job's hold binds the ring: trainers are the
	 * bottleneck), idle (fewer consumers than asked for: nobody reads),
	 * or behind the ring's own head (the writers' in-order commit:
	 * counted as work). */
	double wait_slot_s, wait_idle_s, wait_self_s;
	double created;               /* ts_clock_now() when the ring was created */
};

struct ts_ring;
struct ts_ring_consumer;

/* ---- producer side ---------------------------------------------------- */

/*
 * Create a ring: a sealed-against-new-writers memfd, mapped read-write
 * (data twice) into this process. *out is written on success only; free
 * with ts_ring_destroy(). Returns 0, TS_E_ARG or -errno.
 */
int ts_ring_create(const struct ts_ring_params *p, struct ts_ring **out,
		   struct ts_error *err);

/* Unmap and close. Consumers still attached keep their own mappings; no
 * consumer or server may use the ring after this. NULL is a no-op. */
void ts_ring_destroy(struct ts_ring *r);

void ts_ring_get_info(const struct ts_ring *r, struct ts_ring_info *out);

/* The producer's node share (shard(): node index of count; the header's
 * node_index, node_count), before any consumer is handed the ring. */
void ts_ring_set_node(struct ts_ring *r, uint32_t index, uint32_t count);

/* The ring memfd (owned by the ring; do not close). The server reopens it
 * read-only for consumers. */
int ts_ring_fd(const struct ts_ring *r);

/* Where sample seq is written: slot seq % capacity, sample_bytes long
 * (slots are sample_stride apart).
 * Call only after ts_ring_wait_writable(seq) returned 0. Thread-safe. */
void *ts_ring_slot(struct ts_ring *r, uint64_t seq);

/* The label and stream position of sample seq. Thread-safe for distinct
 * seqs; visible to consumers with the publish that covers seq. */
void ts_ring_set_meta(struct ts_ring *r, uint64_t seq, int32_t label,
		      uint32_t epoch, uint64_t index);

/*
 * Block until slot seq may be written: every attached consumer has
 * released seq - capacity, seq < head + capacity, and min_consumers are
 * attached. Fast path: one atomic load, no syscall. Thread-safe (any
 * number of writer threads). timeout_ms < 0 waits forever.
 * Returns 0, -ETIMEDOUT, or -ECANCELED once ts_ring_finish() was called.
 */
int ts_ring_wait_writable(struct ts_ring *r, uint64_t seq, int timeout_ms);

/* Publish samples [0, head): release-store of head, then a futex wake only
 * when a consumer sleeps. head never decreases; calls must be serialised
 * by the caller (one thread advances the head). */
void ts_ring_publish(struct ts_ring *r, uint64_t head);

/* The stream still runs: not ended, not failed. Thread-safe. */
bool ts_ring_running(const struct ts_ring *r);

/* The current published head: what consumers see. */
uint64_t ts_ring_head(const struct ts_ring *r);

/* The head the writers published: ts_ring_head() for a plain ring; on a
 * staged ring it runs ahead of what the finisher has made visible. */
uint64_t ts_ring_written(const struct ts_ring *r);

/* Where the label tensor of sample seq is written (label_bytes long), as
 * ts_ring_slot; NULL on a ring of int32 labels. */
void *ts_ring_label_slot(struct ts_ring *r, uint64_t seq);

/* Say that the epoch of the samples below end (published already) is
 * complete, so consumers cut their short last batch of it now rather than
 * when the next epoch's first sample comes. Wakes every sleeping consumer
 * (once per epoch). Serialised with ts_ring_publish by the caller. */
void ts_ring_close_epoch(struct ts_ring *r, uint64_t end);

/* End the stream: status 0 is a normal end (consumers drain what is
 * published, then get TS_E_EOS), a negative code an error (consumers get
 * TS_E_PRODUCER). Wakes every waiter, producers included. Idempotent. */
void ts_ring_finish(struct ts_ring *r, int status);

/* As ts_ring_finish with an error status, with the reason consumers get
 * in their error (a message such as ts_error.msg; NULL or "" for none). */
void ts_ring_fail(struct ts_ring *r, int status, const char *reason);

/* ---- staged publication (a finisher between writers and consumers) ----
 *
 * On a ring created with params.staged, ts_ring_publish() does not show
 * samples to consumers: it hands them to one finisher thread (the device
 * ring's filler), which processes [done, written) and makes them visible
 * with ts_ring_stage_publish(). A normal ts_ring_finish(r, 0) waits for
 * the finisher: it ends the stream with ts_ring_stage_end() once it has
 * shown everything written. An error finish (status < 0) is immediate.
 * Writers are bound by the visible head, so a slot is never rewritten
 * before the finisher has read it.
 */

/* Wait until samples past done are written (*written > done), the
 * writers asked for the end (*ending; *written is then final), or the
 * stream failed (TS_E_PRODUCER). timeout_ms < 0 waits forever. Returns
 * 0, TS_E_PRODUCER or -ETIMEDOUT. One finisher thread per ring. */
int ts_ring_stage_wait(struct ts_ring *r, uint64_t done, uint64_t *written,
		       bool *ending, int timeout_ms);

/* Make [0, head) visible to consumers (head <= written). */
void ts_ring_stage_publish(struct ts_ring *r, uint64_t head);

/* End the stream for real: status 0 after everything written is visible,
 * or the finisher's error. */
void ts_ring_stage_end(struct ts_ring *r, int status);

/* A snapshot for status lines and `tsrun stat`. Thread-safe. */
void ts_ring_stat(struct ts_ring *r, struct ts_ring_stat *out);

/* The stream's first position (run --start EPOCH:INDEX; (0, 0), the
 * default, for a stream from its start): where a resuming trainer is
 * placed from while nothing is published yet. Set it before the server
 * accepts anyone. Thread-safe. */
void ts_ring_set_origin(struct ts_ring *r, uint32_t epoch, uint64_t index);

/* Samples per epoch as consumers learn it at welcome; set it before the
 * server accepts anyone (the engine knows it once it listed the source). */
void ts_ring_set_samples_per_epoch(struct ts_ring *r, uint64_t n);

/* ---- consumer accounting (the server and local consumers use this) ---- */

struct ts_ring_join_req {
	uint32_t batch;            /* 1 .. capacity / 2 */
	enum ts_ring_join join;
	pid_t pid;                 /* 0: in-process */
	/* A rank of a job: attached waiting (ctl.job_wait), holding nothing
	 * and reading nothing, until ts_ring_consumer_start_job. */
	bool job_wait;
	const char *job;           /* its job's name, for figures; NULL: none */
	/* A lone trainer that resumes (tensorsocket(7), Join policies):
	 * it begins at index resume_index of epoch resume_epoch when that
	 * sample is still in the ring or not published yet, else at that
	 * index of the first later epoch where it is (join is then not
	 * used), and stops resume_epochs epochs after the one it begins in,
	 * that one counted (has_resume_epochs, 0: none; else the stream's
	 * epochs less resume_epoch, at least 1), at most the stream's. */
	bool resume;
	bool has_resume_epochs;
	uint32_t resume_epoch;
	uint64_t resume_index;
	uint32_t resume_epochs;
};

/* Where an attached consumer begins. */
struct ts_ring_join_pos {
	uint64_t start;            /* first seq the consumer reads */
	uint32_t min_epoch;        /* skip (release unread) samples of
				      earlier epochs */
	uint64_t min_index;        /* a resume: and of min_epoch's samples
				      those before this index */
};

/*
 * Attach a consumer: creates its control memfd, picks its start per the
 * join policy and registers it, so the producer from now on waits for its
 * releases. Returns TS_E_REFUSED with a reason in err (batch too large,
 * too many consumers, stream finished) or -errno. Thread-safe.
 */
int ts_ring_attach(struct ts_ring *r, const struct ts_ring_join_req *req,
		   struct ts_ring_consumer **out, struct ts_ring_join_pos *pos,
		   struct ts_error *err);

/* The consumer's control memfd (read-write; owned by the consumer entry). */
int ts_ring_consumer_ctl_fd(const struct ts_ring_consumer *c);

/*
 * Every rank of a job has come: start the n waiting consumers cs (attached
 * with job_wait) at one position, picked now by the join policy, so they
 * read and hold the ring from there on; *pos gets it. Until then they held
 * nothing, so a job short of ranks never stops the others. Thread-safe.
 */
void ts_ring_consumer_start_job(struct ts_ring *r, struct ts_ring_consumer *const *cs,
				size_t n, enum ts_ring_join join,
				struct ts_ring_join_pos *pos);

/*
 * Does a connected trainer still want epoch `epoch` (one that has not
 * reached its end_epoch, nor is done)? The engine asks at the end of its
 * last configured epoch, so it serves until the last connected trainer
 * has its epochs. Thread-safe.
 */
bool ts_ring_epoch_wanted(struct ts_ring *r, uint32_t epoch);

/* Tell a waiting rank c that its job's wait for its other ranks ran out
 * (missing: bit r for each rank that never came; timeout_ms the serve
 * setting job_timeout): its reader returns TS_E_JOB from now on. */
void ts_ring_consumer_job_timeout(struct ts_ring *r, struct ts_ring_consumer *c,
				  uint64_t missing, uint32_t timeout_ms);

/* Tell consumer c that rank `rank` (process pid) of its job left before
 * the end of the stream: its reader returns TS_E_JOB from now on. */
void ts_ring_consumer_fail_job(struct ts_ring *r, struct ts_ring_consumer *c,
			       uint32_t rank, uint32_t pid);

/*
 * How long consumer c has held the ring without releasing: seconds since
 * a writer began to wait for a seq a capacity or more past its release
 * position (it waits on c, or on a consumer at the same position) while
 * another consumer
 * waits for a batch, with that position unchanged; 0 while it does not
 * hold the ring, nobody waits on it, or the stream is over.
 * The clock restarts whenever its release moves, so a slow trainer that
 * keeps reading never counts, however slow. Call it periodically (the
 * server does, every poll): it notices the start of a hold when called.
 * Thread-safe.
 */
double ts_ring_consumer_held(struct ts_ring *r, struct ts_ring_consumer *c);

/* Tell consumer c it is being detached for holding the ring held_ms,
 * past timeout_ms (ctl.detached): its reader returns TS_E_DETACHED from
 * now on and a sleeping one is woken. The caller then detaches it
 * (ts_ring_detach) and hangs up. Thread-safe. */
void ts_ring_consumer_mark_stalled(struct ts_ring *r, struct ts_ring_consumer *c,
				   uint32_t held_ms, uint32_t timeout_ms);

/* Detach (consumer hung up): it stops holding the ring back at once and a
 * producer waiting on it is woken. Frees c. NULL is a no-op. Thread-safe. */
void ts_ring_detach(struct ts_ring *r, struct ts_ring_consumer *c);

/* ---- reader: cutting batches out of a mapped ring ---------------------- */

struct ts_ring_batch {
	const void *data;         /* n samples, sample_stride apart (the
				     ring's; contiguous when it equals
				     sample_bytes) */
	size_t sample_stride;     /* bytes from one sample to the next */
	size_t n;                 /* samples, 1 .. batch */
	const int32_t *labels;    /* n labels (a copy owned by the reader) */
	const void *label_data;   /* n label tensors of label_bytes (a copy
				     owned by the reader); NULL: int32 labels */
	uint32_t epoch;
	uint64_t index;           /* index of the first sample in its epoch */
	uint64_t seq;             /* ring sequence number of the first */
};

struct ts_ring_reader_opts {
	uint32_t batch;
	bool drop_last;           /* drop an epoch's short last batch */
	uint64_t start;
	uint32_t min_epoch;
	bool align;               /* a "now" joiner mid-stream: skip to the
				     next batch boundary of the epoch (the
				     first sample whose index is a multiple
				     of batch) */
	uint64_t min_index;       /* a resume: skip min_epoch's samples
				     before this index too */
	bool align_epoch;         /* a next_epoch joiner: skip to the next
				     epoch start (index 0), so it reads
				     whole epochs even when the stream began
				     mid-epoch (run --start E:I) */
	/* A rank of a job: rank of world (0: no job) reads its share of
	 * every epoch (share.h), with job_drop choosing drop or pad; "now"
	 * alignment is then to a round of world * batch samples. */
	uint32_t rank, world;
	bool job_drop;
};

struct ts_ring_reader;

/*
 * Map a ring given its memfd (read-only suffices) and a control memfd.
 * The fds are not taken over: the caller may close them after. *out is
 * written on success only. Returns 0, TS_E_PROTOCOL (not a tsrun ring,
 * wrong version) or -errno.
 */
int ts_ring_reader_open(int ring_fd, int ctl_fd,
			const struct ts_ring_reader_opts *o,
			struct ts_ring_reader **out, struct ts_error *err);

void ts_ring_reader_get_info(const struct ts_ring_reader *rd,
			 struct ts_ring_info *out);

/*
 * The next batch: first releases the previous one, then waits (spin, then
 * futex in 100 ms slices) until a whole batch is published, the epoch ends
 * (a short batch; skipped with drop_last) or the stream ends. Between
 * slices it calls alive(arg) when non-NULL; a negative return aborts the
 * wait with that code (the client checks its socket for hang-up there).
 * Returns 0, TS_E_EOS, TS_E_PRODUCER, -ETIMEDOUT (timeout_ms >= 0) or the
 * code from alive. b is valid until the next call or release.
 * One thread at a time per reader.
 */
int ts_ring_reader_next(struct ts_ring_reader *rd, struct ts_ring_batch *b,
			int timeout_ms, int (*alive)(void *arg), void *arg,
			struct ts_error *err);

/* Release everything up to the end of b (release-store; wakes a producer
 * waiting on this consumer). Releasing twice is harmless. */
void ts_ring_reader_release(struct ts_ring_reader *rd,
			    const struct ts_ring_batch *b);

/*
 * Hold mode, for hosts whose batches outlive the next call (the Python
 * client's tensors): once on, ts_ring_reader_next releases nothing at or
 * after the floor, which is the first seq of the oldest batch still in
 * use. A batch handed out lowers the floor to its start; the caller
 * raises it with ts_ring_reader_release_below once older batches are
 * done (UINT64_MAX: none held), and everything below it, skipped
 * samples included, goes back. ts_ring_reader_next returns -EAGAIN
 * instead of waiting when the next batch cannot be published without
 * the held slots (floor + capacity < its end): release some, retry.
 */
void ts_ring_reader_set_hold(struct ts_ring_reader *rd, bool on);
void ts_ring_reader_release_below(struct ts_ring_reader *rd, uint64_t floor);

/* Where the data region lies in the ring memfd (page aligned, a page
 * multiple long): sample seq is at data_offset + (seq % capacity) *
 * sample_stride. */
void ts_ring_reader_data_region(const struct ts_ring_reader *rd,
				uint64_t *data_offset, uint64_t *data_bytes);

/* 0, or TS_E_DETACHED with the reason in err once the producer detached
 * this reader's consumer for holding the ring too long (ctl.detached). */
int ts_ring_reader_detached(const struct ts_ring_reader *rd, struct ts_error *err);

/* The epoch this reader's stream ends before (its epochs, counted per
 * trainer: ctl.end_epoch; a job's rank learns it when its job starts);
 * 0: endless. */
uint32_t ts_ring_reader_end_epoch(const struct ts_ring_reader *rd);

/* How many times the reader slept on the futex (a system call each); a
 * reader whose batches are published before it asks never does. */
uint64_t ts_ring_reader_sleeps(const struct ts_ring_reader *rd);

/* The reader's time accounting (what it also publishes in its control
 * page): when it opened, seconds spent inside ts_ring_reader_next (every
 * call: a batch already published costs microseconds), samples and
 * batches handed out less those given back with ts_ring_reader_unused,
 * and when the last call returned (0: none, or TSRUN_NO_WAIT_ACCOUNTING
 * is set and nothing is timed). Clock: ts_clock_now() (CLOCK_MONOTONIC). */
struct ts_ring_reader_acct {
	double opened, waited;
	uint64_t handed, batches;
	double last;
};
void ts_ring_reader_acct(const struct ts_ring_reader *rd, struct ts_ring_reader_acct *out);

/* n samples handed out were not used (a loader that read a batch ahead
 * and never yielded it): the counts leave them out. */
void ts_ring_reader_unused(struct ts_ring_reader *rd, uint64_t n);

/* Read a control page's accounting (its seqlock, a bounded number of
 * tries: the page is the consumer's, who may leave stat_seq odd). Fills
 * s's has_acct, joined, waited (at time now, a ts_clock_now() value), handed
 * and batches; has_acct false when it has none or never read steady. */
void ts_ring_ctl_read_acct(const struct ts_ring_ctl *ctl, double now,
			   struct ts_ring_consumer_stat *s);

/* Read the data region through data, a double mapping of it that the
 * caller keeps for the reader's life (an in-process consumer: the
 * producer's own), instead of the reader's: the samples are then counted
 * once in the process's memory, not twice. */
void ts_ring_reader_borrow_data(struct ts_ring_reader *rd, const uint8_t *data);

/* Unmap. NULL is a no-op. Does not detach (the producer sees that). */
void ts_ring_reader_destroy(struct ts_ring_reader *rd);

/* ---- in-process consumer (embedding API) -------------------------------- */

struct ts_ring_local;

/* Attach an in-process consumer with its own batch size and join policy.
 * Returns as ts_ring_attach. Free with ts_ring_local_destroy(). */
int ts_ring_local_create(struct ts_ring *r, uint32_t batch,
			 enum ts_ring_join join, bool drop_last,
			 struct ts_ring_local **out, struct ts_error *err);

/* The next batch, zero-copy into the producer's own mapping; as
 * ts_ring_reader_next (no liveness callback: the ring's finish is the
 * signal). */
int ts_ring_local_next(struct ts_ring_local *l, struct ts_ring_batch *b,
		       int timeout_ms, struct ts_error *err);
void ts_ring_local_release(struct ts_ring_local *l,
			   const struct ts_ring_batch *b);
/* As ts_ring_reader_sleeps. */
uint64_t ts_ring_local_sleeps(const struct ts_ring_local *l);
/* Detach and free. Call before ts_ring_destroy(). NULL is a no-op. */
void ts_ring_local_destroy(struct ts_ring_local *l);

#endif
