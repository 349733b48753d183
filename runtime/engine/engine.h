/*
 * engine.h - runs a plan: lists the source, reads files ahead through the
 * reader, and a pool of workers decodes, augments and writes each sample
 * straight into its ring slot. The head advances over the contiguous
 * finished prefix only, so consumers see samples in stream order whatever
 * order workers finish them in; every random choice comes from the
 * counter-based RNG keyed by (seed, epoch, index), so the bytes are the
 * same for any thread count.
 */
#ifndef TS_ENGINE_H
#define TS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include "error.h"
#include "plan.h"

struct ts_ring;
struct ts_engine;

/* Discard mode's view of one finished sample (ts_engine_opts.sink). */
struct ts_engine_sample {
	uint64_t pos;           /* stream position, from the start (0, 1, ...) */
	uint64_t epoch, index;
	uint64_t key;           /* the index its random streams are keyed by:
				   its position in the epoch before shard()
				   (tsrun-pipeline(5)); index without one */
	int32_t label;
	const char *path;       /* the file it came from; NULL: synthetic */
	const void *data;       /* what the output stage wrote; valid during
				   the call only */
	size_t bytes;
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
};

struct ts_engine_opts {
	int threads;            /* 0: plan->threads, and 0 there: online cores */
	int epochs;             /* -1: plan->epochs; 0: forever */
	uint64_t start_epoch;   /* resume position (epoch, index) */
	uint64_t start_index;
	uint64_t seq_base;      /* ring sequence of the first sample (a plan
				   taking over a running ring starts at its
				   head) */
	uint64_t limit;         /* run at most this many positions; 0: as
				   epochs says */
	/* Discard mode only: called with every sample, from the worker
	 * threads (concurrently, in any order), after the output stage wrote
	 * it; `tsrun preview` keeps the few it shows. NULL: none. */
	void (*sink)(void *arg, const struct ts_engine_sample *s);
	void *sink_arg;
	/* Discard mode only: no unordered digest (ts_engine_unordered_digest
	 * stays 0), for figures without that work (tsrun bench --no-digest). */
	bool no_digest;
	/* trace: one JSON line per sample produced, of what its random ops
	 * drew (runtime/trace.h; the form is tsrun(1)'s, `bench --trace`),
	 * written to trace_fd (borrowed, open for writing; lines in the
	 * order samples finish, each written whole). */
	bool trace;
	int trace_fd;
	/* The decoded cache's size in bytes: 0 the plan's (plan->mem_cache:
	 * the serve block's cache setting), UINT64_MAX none. */
	uint64_t cache;
};

struct ts_engine_stats {
	uint64_t samples;       /* published */
	uint64_t bytes;         /* encoded bytes read */
	uint64_t decodes;       /* images decoded (a views() pipeline's
				   views share one) */
	uint64_t skipped;
	uint64_t epoch;         /* epoch of the head */
	uint64_t index;         /* index in the epoch of the head */
	uint64_t epoch_size;    /* samples per epoch (source items) */
	int threads;
	bool uring;             /* the reader uses io_uring */
	bool idle;              /* every worker has exited */
	bool done;
	/* the decoded cache (engine_cache.c; all 0 without one): its size
	 * and the pixel bytes in use, the items it holds, and its lookups:
	 * served from it, not in it (read and decoded; the first epoch's
	 * admissions among them), in it as a full-scale frame but asked at a
	 * reduced DCT scale (read and decoded) */
	uint64_t cache_bytes, cache_used, cache_items;
	uint64_t cache_hits, cache_misses, cache_bypass;
	bool cache_locked;      /* its pages are locked (never swapped) */
	/* The worker threads' CPU (getrusage RUSAGE_THREAD, seconds; summed
	 * as each worker exits, so whole once the engine is joined) split at
	 * each worker's first sample of an epoch after the run's first: the
	 * first epoch's (with a cache, its admissions and the kernel's
	 * zeroing of the pages they touch first) and the later epochs', user
	 * and system time apart. The I/O thread and the consumer are in
	 * neither. */
	double cpu_first_user, cpu_first_sys, cpu_later_user, cpu_later_sys;
};

/* Prepare to run plan into ring (both borrowed: they must outlive the
 * engine). Lists the source now, so a missing or empty data set fails here
 * with TS_E_SOURCE naming the path. ring may be NULL: discard mode, for
 * benchmarks, where each sample is produced, hashed and dropped (also for
 * plans whose samples have no fixed size, such as decode only). */
int ts_engine_create(const struct ts_plan *plan, const struct ts_engine_opts *o,
		     struct ts_ring *ring, struct ts_engine **out,
		     struct ts_error *err);

/* The index the random streams of the sample at (node-local) index are
 * keyed by, ts_rng_init(seed, epoch, key, stage): its position in the
 * epoch's order over the whole data set, before shard() takes the node's
 * share (tsrun-pipeline(5)); index itself without a shard. */
uint64_t ts_engine_key(const struct ts_engine *e, uint64_t index);

/* Samples per epoch, known after create (source items; tile/filter may
 * change what reaches the ring). */
uint64_t ts_engine_epoch_size(const struct ts_engine *e);

/* The listed source (folder class names, item paths), known after
 * create; owned by the engine. */
struct ts_index;
const struct ts_index *ts_engine_index(const struct ts_engine *e);

/* Start the reader and worker threads. */
int ts_engine_start(struct ts_engine *e, struct ts_error *err);

/* Ask the threads to stop at the next sample; returns at once. */
void ts_engine_stop(struct ts_engine *e);

/* Wait for the threads to finish (end of the last epoch, a stop, or a
 * fatal error). Returns 0 or the fatal error, filling err. The ring is
 * finished (end of stream, or error) before this returns. */
int ts_engine_join(struct ts_engine *e, struct ts_error *err);

/* Hand over at the next epoch boundary: stop claiming samples there and
 * leave the ring running (no end of stream) so another engine can go on
 * from it at ring head ts_ring_head() and epoch *next_epoch. Returns 0, or
 * TS_E_STATE when the stream ends with the current epoch anyway. */
int ts_engine_handover(struct ts_engine *e, uint64_t *next_epoch);

/* Check that plan can start: open and index its source, set up its
 * reader, decoders and plugins, as ts_engine_create does, then free it
 * all. A reload calls this before it accepts a plan. */
int ts_engine_probe(const struct ts_plan *plan, const struct ts_engine_opts *o,
		    struct ts_error *err);

/* May next replace cur in a running ring? Its samples must have cur's
 * shape, dtype and layout (consumers map the ring with them), its device
 * stage must be cur's, and it must start (ts_engine_probe with o's
 * threads and epochs). Returns 0, or TS_E_CHECK / the probe's error with
 * the reason in err ("its samples are ..."). */
int ts_engine_check_reload(const struct ts_plan *cur, const struct ts_plan *next,
			   const struct ts_engine_opts *o, struct ts_error *err);

/* Complete a handover once *e is idle (ts_engine_stats().idle): join and
 * free it, then start an engine for plan in the same ring, from epoch
 * next_epoch at the ring's head, with o's threads and epochs (its start
 * and seq_base are ignored). When the join reports the old engine's error,
 * *e is left as it was and that error returned. When plan cannot start,
 * an engine for fallback (the plan that was running; NULL for none) goes
 * on from the same boundary instead: *fell_back is set and plan's error
 * returned. If that fails too, *e is NULL and the ring is finished with
 * plan's error. Plans must outlive the engine running them. */
int ts_engine_takeover(struct ts_engine **e, const struct ts_plan *plan,
		       const struct ts_plan *fallback,
		       const struct ts_engine_opts *o, uint64_t next_epoch,
		       bool *fell_back, struct ts_error *err);

/* A reloaded plan waiting for the running engine's epoch boundary: what
 * `tsrun run` (session.c) and the embedding API (tsrun.c) both keep. Zero it
 * to start; ts_engine_reload_clear frees a pending plan. */
struct ts_engine_reload {
	struct ts_plan *pending;   /* owned; NULL: none */
	uint64_t epoch;            /* the epoch it takes over at */
};

/* Offer next (ownership passes, whatever the result) to replace cur, which
 * e runs: ts_engine_check_reload, then a handover at the next epoch
 * boundary; a plan already pending is replaced (*replaced set). Returns 0
 * (r->epoch says where), TS_E_STATE when the stream ends with the current
 * epoch, or the check's error (err says why). */
int ts_engine_reload_offer(struct ts_engine_reload *r, struct ts_engine *e,
			   const struct ts_plan *cur, struct ts_plan *next,
			   const struct ts_engine_opts *o, bool *replaced,
			   struct ts_error *err);

enum ts_engine_reload_event {
	TS_RELOAD_NONE,       /* nothing pending, or not at the boundary yet */
	TS_RELOAD_TOOK_OVER,  /* *taken runs now */
	TS_RELOAD_FELL_BACK,  /* it could not start (err); cur runs on */
};

/* Call periodically: once *e is idle with a plan pending, take over
 * (ts_engine_takeover with cur as the fallback). TOOK_OVER hands the plan
 * now running to the caller in *taken (the caller frees cur). Returns 0
 * with *ev, or an error that ended the stream: the old engine's (*e as it
 * was) or, when neither plan could start, the new one's (*e NULL). No plan
 * is pending afterwards in any case but TS_RELOAD_NONE. */
int ts_engine_reload_poll(struct ts_engine_reload *r, struct ts_engine **e,
			  const struct ts_plan *cur, const struct ts_engine_opts *o,
			  enum ts_engine_reload_event *ev, struct ts_plan **taken,
			  struct ts_error *err);

void ts_engine_reload_clear(struct ts_engine_reload *r);

/* Discard mode: a digest of every sample and its position, independent
 * of the order workers finished them in. */
uint64_t ts_engine_unordered_digest(const struct ts_engine *e);

void ts_engine_stats(const struct ts_engine *e, struct ts_engine_stats *st);

/* Paths skipped under on_error = skip, with reasons ("path: reason"),
 * each distinct line once (a file skipped in every epoch is listed once;
 * ts_engine_stats counts every skip), valid until destroy. */
size_t ts_engine_skipped(const struct ts_engine *e, const char *const **list);

/* Why the reader does not use io_uring, or NULL when it does. */
const char *ts_engine_reader_note(const struct ts_engine *e);

void ts_engine_destroy(struct ts_engine *e);

#endif
