/*
 * engine_internal.h - the engine's state, shared by its parts and by
 * nothing else:
 *   engine.c         create, destroy, stats; positions to items
 *   engine_load.c    a position's item read, decoded (fused crop) and
 *                    run through the middle ops, with skip replacement
 *   engine_sample.c  where it goes: written direct to the ring, staged and
 *                    committed in order, or discarded into a digest
 *   engine_banded.c  tile pipelines decoded and tiled a band of rows at a
 *                    time
 *   engine_skip.c    the skipped-sample list
 *   engine_views.c   views(): each view's ops and output
 *   engine_pool.c    the worker threads, the I/O thread, start/stop/join
 *   engine_reload.c  reload: checking a new plan, handover at the epoch
 *                    boundary, takeover with fallback
 *   engine_cache.c   the decoded cache: a fixed subset of items' decoded
 *                    pixels, kept for the run
 */
#ifndef TS_ENGINE_INTERNAL_H
#define TS_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "decode.h"
#include "engine.h"
#include "image.h"
#include "plugin.h"
#include "reader.h"
#include "ring.h"
#include "share.h"
#include "source.h"

enum win_state { WIN_FREE, WIN_READING, WIN_READY };

struct win_entry {
	enum win_state state;
	uint64_t pos;
	int status;
	uint8_t *data;
	size_t len;
};

struct perm_cache {
	uint64_t epoch;
	uint32_t *perm;  /* NULL when empty */
};

struct worker {
	struct ts_engine *e;
	pthread_t thread;
	bool started;
	struct ts_decoder *dec;
	struct ts_image img, tmp1, tmp2, tmp3;
	/* staging for expanding pipelines */
	uint8_t *stage;
	int32_t stage_n;
	int32_t stage_cap;      /* samples stage holds */
	/* discard mode: where the output stage writes */
	uint8_t *out;
	size_t out_cap;
	/* plugin ops: this worker's isolated host per plugin op, in op
	 * order (runtime/plugin.h); the item being processed, for their
	 * messages (NULL: synthetic) */
	struct ts_plugin_host **plugins;
	const char *path;
	/* views(): a view's copy of the decoded image (engine_views.c) */
	struct ts_image view;
	/* ts_engine_opts.trace: the sample's draws, and its line */
	struct ts_trace *trace, *trace_line;
	/* the decoded cache (engine_load.c): the image before the op an
	 * admission stops at */
	struct ts_image fill;
	/* this thread's CPU when it claimed its first sample of an epoch
	 * after the run's first (engine_pool.c; ts_engine_stats.cpu_*) */
	struct timeval first_user, first_sys;
	bool past_first;
};

struct ts_engine {
	const struct ts_plan *plan;
	struct ts_ring *ring;
	struct ts_index *ix;
	uint64_t n;             /* items per epoch: this node's share */
	struct ts_share_node node; /* shard(): the data set and our share */
	uint64_t total;         /* positions to run; UINT64_MAX: forever */
	uint64_t start_epoch, start_index;
	uint64_t seq_base;      /* ring sequence of position 0 */
	bool handover;          /* ending early for a new plan: keep the ring */
	bool per_trainer;       /* finite epochs into a ring: serve more while a
				   trainer still wants them (claim) */
	uint64_t planned_total; /* total before any such epoch was added */
	int threads;
	uint64_t capacity;

	pthread_mutex_t mu;     /* window, claims, perms, skipped, fatal */
	pthread_cond_t cv_ready;
	pthread_cond_t cv_space;
	struct ts_reader *reader;
	char *reader_note;
	pthread_t io_thread;
	bool io_started;
	struct win_entry *win;
	uint64_t wsize;
	uint64_t next_claim;
	uint64_t next_submit;
	bool io_idle;           /* the I/O thread sleeps on cv_space */
	bool asked_stop;        /* ts_engine_stop() was called */
	uint64_t freed;         /* window slots freed since it last woke */

	struct ts_engine_cache *cache; /* NULL: none (engine_cache.c) */

	struct perm_cache perms[3];
	unsigned perm_next;

	pthread_mutex_t head_mu;
	uint8_t *done;          /* capacity flags, one-to-one pipelines */
	uint64_t head;

	/* expanding pipelines: ordered commit */
	pthread_cond_t cv_commit;
	uint64_t commit_pos;    /* next position to commit */
	uint64_t out_seq;       /* next ring sequence */
	uint64_t out_epoch;     /* epoch of the last committed sample */
	uint64_t out_index;     /* next index in out_epoch */

	/* discard mode: ts_engine_opts.sink */
	void (*sink)(void *arg, const struct ts_engine_sample *s);
	void *sink_arg;
	bool no_digest;         /* discard mode: ts_engine_opts.no_digest */
	bool trace;             /* ts_engine_opts.trace, trace_fd */
	int trace_fd;
	pthread_mutex_t trace_mu; /* one line written at a time */

	/* Read and written through barrier.h, each use commented. */
	bool stop;              /* release by whoever stops, acquire by workers */
	uint64_t bytes;         /* counts: ATOMIC_ADD, READ_ONCE for stats */
	uint64_t decodes;       /* images decoded (views(): one per sample) */
	uint64_t cpu_us[4];     /* workers' first-epoch user, sys, later user,
				   sys (ATOMIC_ADD as each exits) */
	uint64_t skipped_n;
	int fatal;
	struct ts_error fatal_err;
	char **skipped;         /* "path: reason" lines, one per path */
	size_t *skipped_plen;   /* the length of each line's path */
	size_t n_skipped, cap_skipped;
	size_t *skip_tab;       /* open addressing over skipped, by hash;
				   SIZE_MAX = empty; skip_tab_cap a power of 2 */
	size_t skip_tab_cap;

	/* Discard mode (ring == NULL): samples are produced, hashed and
	 * dropped, for benchmarks of pipelines whose samples have no fixed
	 * size (a decode-only pipeline). */
	uint64_t discarded;
	uint64_t unordered_digest;
	struct worker *workers;
	size_t n_plugins;       /* plugin ops in the plan */
	int live_workers;       /* ATOMIC_SUB as each worker ends */
	bool finished;          /* the ring got its end of stream or error */
	bool joined;
};

/* engine_cache.c: one item's entry. resume 0: a frame of the whole
 * image decoded at DCT scale scale/8, before the decode's fused op (the
 * file's full size and format in full_w, full_h, format: the decode's
 * geometry); k > 0: the image before ops[k]. */
struct ts_cache_entry {
	uint64_t off;             /* pixels at the arena's base + off */
	uint32_t width, height;   /* of the pixels held */
	uint16_t full_w, full_h;  /* frames: the file's size */
	uint16_t resume;
	uint8_t channels, dtype, format, scale;
	uint8_t state;            /* through barrier.h (engine_cache.c) */
};
#define TS_CACHE_ENTRY_BYTES 32
_Static_assert(sizeof(struct ts_cache_entry) == TS_CACHE_ENTRY_BYTES,
	       "the plan's figures and tsrun-pipeline(5) count 32 bytes an item");
enum { TS_CACHE_HIT, TS_CACHE_MISS, TS_CACHE_BYPASS };
struct ts_engine_cache;
/* Whether plan's samples can be cached (files decoded, and not in bands);
 * an arena of bytes for a data set of items; free it; the READY entry of
 * item id (NULL: none); claim id's entry for filling (false: another
 * worker has it, or it is final); give a claim back (the decode failed);
 * fill a claimed entry with img's pixels (false: it did not fit, and the
 * item stays uncached); or fill it in place: reserve n bytes of pixels
 * for it (NULL: they do not fit, and the entry is final), then commit it
 * once img (whose rows, compact, are those bytes) is written, or drop it
 * (the decode failed; n as reserved); the entry's pixels as a read-only
 * image (never reserved into or freed); count a lookup; the figures for
 * stats. */
bool ts_engine_cache_applies(const struct ts_plan *plan);
int ts_engine_cache_create(uint64_t bytes, uint64_t items,
			   struct ts_engine_cache **out, struct ts_error *err);
void ts_engine_cache_destroy(struct ts_engine_cache *c);
const struct ts_cache_entry *ts_engine_cache_get(const struct ts_engine_cache *c,
						 uint32_t id);
bool ts_engine_cache_claim(struct ts_engine_cache *c, uint32_t id);
void ts_engine_cache_abandon(struct ts_engine_cache *c, uint32_t id);
struct ts_cache_frame {
	int full_w, full_h, format, scale; /* a frame's (resume 0); else 0 */
};
bool ts_engine_cache_put(struct ts_engine_cache *c, uint32_t id, const struct ts_image *img,
			 int resume, const struct ts_cache_frame *fr);
uint8_t *ts_engine_cache_reserve(struct ts_engine_cache *c, uint32_t id, uint64_t n);
void ts_engine_cache_commit(struct ts_engine_cache *c, uint32_t id, const struct ts_image *img,
			    int resume, const struct ts_cache_frame *fr);
void ts_engine_cache_drop(struct ts_engine_cache *c, uint32_t id, uint64_t n);
struct ts_image ts_engine_cache_image(const struct ts_engine_cache *c,
				      const struct ts_cache_entry *en);
void ts_engine_cache_count(struct ts_engine_cache *c, int what);
void ts_engine_cache_stats(const struct ts_engine_cache *c, struct ts_engine_stats *st);

/* engine.c: position p -> (epoch, index); the permutation of an epoch
 * (under e->mu; NULL when out of memory); this machine's online cores. */
void ts_engine_pos_split(const struct ts_engine *e, uint64_t p,
			 uint64_t *epoch, uint64_t *index);
const uint32_t *ts_engine_perm_get(struct ts_engine *e, uint64_t epoch);
int ts_engine_online_cores(void);


/* engine_pool.c: stop everything on the first fatal error, keeping it. */
void ts_engine_set_fatal(struct ts_engine *e, const struct ts_error *err);

/* engine_views.c: the views of w->img (position (epoch, index)) by the
 * plan's views op vo, into the slot dst of bytes (plan->sample_bytes). */
int ts_engine_views_write(struct worker *w, const struct ts_op *vo, uint64_t epoch,
			  uint64_t index, uint8_t *dst, size_t bytes,
			  struct ts_error *err);

/* engine_sample.c: produce position p (its bytes, or read status, from
 * the I/O thread; NULL data: read here) into the ring, staged in order
 * for expanding pipelines, or into the worker's buffer in discard mode.
 * engine_skip.c: count and list a skipped sample. */
int ts_engine_run_sample(struct worker *w, uint64_t p, const uint8_t *data,
			 size_t len, int read_status, struct ts_error *err);
void ts_engine_note_skip(struct ts_engine *e, const char *path, const char *why,
			 bool count);

/* engine_load.c (each described at its definition): the item of (epoch,
 * index); its bytes; the header's size check; the decode with its fused
 * op into w->img; the kernel ops from ops[first] on, returning the op it
 * stopped at; and all of that for position p (*op_at: the op the caller
 * continues with). */
int ts_engine_item_at(struct ts_engine *e, uint64_t epoch, uint64_t index,
		      struct ts_item *it);
int ts_engine_read_item(struct worker *w, const struct ts_item *it, bool pre,
			const uint8_t *data, size_t len, int read_status,
			uint8_t **own, const uint8_t **buf, size_t *blen,
			struct ts_error *lerr);
int ts_engine_check_header(const struct ts_plan *plan, const struct ts_decode_info *info,
			   struct ts_error *err);
int ts_engine_decode_sample(struct worker *w, const struct ts_op *op,
			    const uint8_t *buf, size_t len, uint64_t epoch,
			    uint64_t index, struct ts_error *err);
size_t ts_engine_apply_middle(struct worker *w, size_t first, uint64_t epoch,
			      uint64_t index, struct ts_image *img, int *rc,
			      struct ts_error *err);
int ts_engine_prepare(struct worker *w, uint64_t p, const uint8_t *data,
		      size_t len, int read_status, uint64_t *epoch, uint64_t *index,
		      int32_t *label, size_t *op_at, struct ts_error *err);

/* engine_sample.c, the staging of expanding pipelines: one image through
 * the ops after a tile into the next staging slot; wait for position p's
 * commit turn; write the staged outputs to the ring; pass the turn on. */
int ts_engine_stage_one(struct worker *w, struct ts_image *cur, size_t i,
			uint64_t epoch, uint64_t sub, int tile, int32_t *outs,
			struct ts_error *err);
int ts_engine_wait_turn(struct ts_engine *e, uint64_t p);
int ts_engine_flush_stage(struct worker *w, uint64_t epoch, int32_t label,
			  bool *begun, struct ts_error *err);
void ts_engine_end_turn(struct ts_engine *e, uint64_t p);

/* engine_banded.c: whether the plan's tiles are cut from bands of rows;
 * position p of such a plan, staged and committed in order. */
bool ts_engine_banded(const struct ts_plan *plan);
int ts_engine_run_banded(struct worker *w, uint64_t p, const uint8_t *data,
			 size_t len, int read_status, struct ts_error *err);

#endif
