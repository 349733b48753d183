/*
 * engine.c - the worker pool that turns a plan into a stream of samples in
 * a ring.
 *
 * Stream positions p = 0, 1, 2, ... count source items from the start
 * position; position p is sample (epoch, index) with index counted in the
 * epoch's permutation. For one-to-one pipelines position p is ring
 * sequence p: a worker claims p, waits until the slot is free, decodes and
 * augments, and the output stage writes straight into the slot. Finished
 * positions are flagged; the head moves over the contiguous finished
 * prefix only and is published then, so consumers never see a hole.
 *
 * Pipelines with tile or filter produce a varying number of samples per
 * position: their workers render into private staging buffers and commit
 * in position order (one copy per sample), which keeps the stream
 * identical for any thread count.
 *
 * Reads: with io_uring one I/O thread keeps queue_depth reads in flight,
 * in position order, into a window the workers take from; without it the
 * workers read synchronously themselves.
 */
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "augment.h"
#include "decode.h"
#include "digest.h"
#include "image.h"
#include "plugin.h"
#include "reader.h"
#include "ring.h"
#include "rng.h"
#include "shuffle.h"
#include "source.h"
#include "util.h"

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
};

struct ts_engine {
	const struct ts_plan *plan;
	struct ts_ring *ring;
	struct ts_index *ix;
	uint64_t n;             /* items per epoch */
	uint64_t total;         /* positions to run; UINT64_MAX: forever */
	uint64_t start_epoch, start_index;
	uint64_t seq_base;      /* ring sequence of position 0 */
	bool handover;          /* ending early for a new plan: keep the ring */
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

	atomic_bool stop;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t skipped_n;
	int fatal;
	struct ts_error fatal_err;
	char **skipped;         /* distinct "path: reason" lines */
	size_t n_skipped, cap_skipped;
	size_t *skip_tab;       /* open addressing over skipped, by hash;
				   SIZE_MAX = empty; skip_tab_cap a power of 2 */
	size_t skip_tab_cap;

	/* Discard mode (ring == NULL): samples are produced, hashed and
	 * dropped, for benchmarks of pipelines whose samples have no fixed
	 * size (a decode-only pipeline). */
	atomic_uint_fast64_t discarded;
	atomic_uint_fast64_t unordered_digest;
	struct worker *workers;
	size_t n_plugins;       /* plugin ops in the plan */
	atomic_int live_workers;
	bool finished;          /* the ring got its end of stream or error */
	bool joined;
};

/* Position p -> (epoch, index). */
static void pos_split(const struct ts_engine *e, uint64_t p, uint64_t *epoch,
		      uint64_t *index)
{
	uint64_t abs = e->start_index + p;
	*epoch = e->start_epoch + abs / e->n;
	*index = abs % e->n;
}

/* The permutation of an epoch; computed once and kept for the few epochs
 * in flight. Called with e->mu held. */
static const uint32_t *perm_get(struct ts_engine *e, uint64_t epoch)
{
	for (unsigned i = 0; i < TS_ARRAY_LEN(e->perms); i++)
		if (e->perms[i].perm && e->perms[i].epoch == epoch)
			return e->perms[i].perm;
	/* Replace the oldest epoch: positions are claimed in order, so the
	 * epochs in flight are at most two consecutive ones. */
	unsigned victim = 0;
	for (unsigned i = 1; i < TS_ARRAY_LEN(e->perms); i++)
		if (!e->perms[i].perm ||
		    (e->perms[victim].perm && e->perms[i].epoch < e->perms[victim].epoch))
			victim = i;
	struct perm_cache *pc = &e->perms[victim];
	if (!pc->perm) {
		pc->perm = malloc(sizeof(uint32_t) * e->n);
		if (!pc->perm)
			return NULL;
	}
	ts_shuffle_perm(e->plan->source.seed, epoch, e->plan->source.shuffle,
			pc->perm, e->n);
	pc->epoch = epoch;
	return pc->perm;
}

static int item_at(struct ts_engine *e, uint64_t epoch, uint64_t index,
		   struct ts_item *it)
{
	pthread_mutex_lock(&e->mu);
	const uint32_t *perm = perm_get(e, epoch);
	uint32_t id = perm ? perm[index] : 0;
	pthread_mutex_unlock(&e->mu);
	if (!perm)
		return -ENOMEM;
	ts_source_item(e->ix, id, it);
	return 0;
}

static void set_fatal(struct ts_engine *e, const struct ts_error *err)
{
	pthread_mutex_lock(&e->mu);
	if (!e->fatal) {
		e->fatal = err->code ? err->code : TS_E_STATE;
		e->fatal_err = *err;
	}
	atomic_store(&e->stop, true);
	pthread_cond_broadcast(&e->cv_ready);
	pthread_cond_broadcast(&e->cv_space);
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
}

static uint64_t skip_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

/* Whether line is already listed; if not, the table slot to take. Under
 * e->mu. */
static bool skip_seen(const struct ts_engine *e, const char *line, size_t *slot)
{
	size_t mask = e->skip_tab_cap - 1;
	for (size_t i = (size_t)skip_hash(line) & mask;; i = (i + 1) & mask) {
		size_t k = e->skip_tab[i];
		if (k == SIZE_MAX) {
			*slot = i;
			return false;
		}
		if (strcmp(e->skipped[k], line) == 0)
			return true;
	}
}

/* Keep the table at most half full. Under e->mu. False when out of memory. */
static bool skip_tab_room(struct ts_engine *e)
{
	if (e->skip_tab_cap && (e->n_skipped + 1) * 2 <= e->skip_tab_cap)
		return true;
	size_t cap = e->skip_tab_cap ? e->skip_tab_cap * 2 : 64;
	size_t *t = malloc(cap * sizeof(*t));
	if (!t)
		return false;
	for (size_t i = 0; i < cap; i++)
		t[i] = SIZE_MAX;
	for (size_t k = 0; k < e->n_skipped; k++) {
		size_t i = (size_t)skip_hash(e->skipped[k]) & (cap - 1);
		while (t[i] != SIZE_MAX)
			i = (i + 1) & (cap - 1);
		t[i] = k;
	}
	free(e->skip_tab);
	e->skip_tab = t;
	e->skip_tab_cap = cap;
	return true;
}

/* Count a skipped sample and list its path and reason once: an endless
 * stream (epochs = 0) that meets the same bad file every epoch keeps one
 * line for it, so the list is bounded by the data set. */
static void note_skip(struct ts_engine *e, const char *path, const char *why)
{
	char *line = NULL;
	size_t slot = 0;
	if (asprintf(&line, "%s: %s", path ? path : "(synthetic)", why) < 0)
		line = NULL;
	pthread_mutex_lock(&e->mu);
	if (line && skip_tab_room(e) && !skip_seen(e, line, &slot)) {
		if (e->n_skipped == e->cap_skipped) {
			size_t cap = e->cap_skipped ? e->cap_skipped * 2 : 16;
			char **v = realloc(e->skipped, cap * sizeof(*v));
			if (v) {
				e->skipped = v;
				e->cap_skipped = cap;
			}
		}
		if (e->n_skipped < e->cap_skipped) {
			e->skip_tab[slot] = e->n_skipped;
			e->skipped[e->n_skipped++] = line;
			line = NULL;
		}
	}
	free(line);
	pthread_mutex_unlock(&e->mu);
	atomic_fetch_add(&e->skipped_n, 1);
}

/* Decode one encoded sample into w->img, with the fused crop or resize of
 * the decode op done as an ROI + DCT-scaled decode and one resample. */
static int decode_sample(struct worker *w, const struct ts_op *op,
			 const uint8_t *buf, size_t len, uint64_t epoch,
			 uint64_t index, struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	struct ts_decode_info info;
	int rc = ts_decoder_info(w->dec, buf, len, &info, err);
	if (rc)
		return rc;
	struct ts_decode_req req = {.color = op->color, .depth = op->depth};
	const struct ts_op *f = op->fused;
	bool resample = false, apply_after = false;
	int tw = 0, th = 0;
	if (f) {
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)f->index);
		int x = 0, y = 0, cw = info.width, ch = info.height;
		switch (f->kind) {
		case TS_OP_RANDOM_RESIZED_CROP:
			ts_aug_rrc_box(info.width, info.height, f, &rng, &x, &y, &cw, &ch);
			tw = f->size_w;
			th = f->size_h;
			resample = true;
			break;
		case TS_OP_RESIZE:
			ts_aug_resize_dims(info.width, info.height, f, &tw, &th);
			resample = true;
			break;
		case TS_OP_CENTER_CROP:
			cw = f->size_w;
			ch = f->size_h;
			if (cw > info.width || ch > info.height) {
				apply_after = true; /* needs padding */
				break;
			}
			ts_aug_center_box(info.width, info.height, cw, ch, &x, &y);
			break;
		case TS_OP_RANDOM_CROP:
			cw = f->size_w;
			ch = f->size_h;
			if (f->padding > 0 || cw > info.width || ch > info.height) {
				apply_after = true;
				break;
			}
			ts_aug_random_crop_box(info.width, info.height, f, &rng, &x, &y);
			break;
		default:
			apply_after = true;
			break;
		}
		if (!apply_after) {
			req.roi_x = x;
			req.roi_y = y;
			req.roi_w = cw;
			req.roi_h = ch;
			req.target_w = resample ? tw : 0;
			req.target_h = resample ? th : 0;
		}
	}
	struct ts_decode_geom geom;
	rc = ts_decoder_decode(w->dec, buf, len, &req, &w->img, &geom, err);
	if (rc)
		return rc;
	if (f && apply_after) {
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)f->index);
		return ts_aug_apply(f, &w->img, &w->tmp1, &rng, err);
	}
	if (resample && (w->img.width != tw || w->img.height != th)) {
		rc = ts_aug_resize(&w->img, &w->tmp1, tw, th, f->interp, f->antialias);
		if (rc)
			return ts_error_set(err, rc, "resize to %dx%d failed", tw, th);
		ts_image_swap(&w->img, &w->tmp1);
	}
	return 0;
}

/* Everything between the decode (or synthetic source) and the output
 * stage, for one image; ops[first..] up to OUTPUT, TILE, FILTER or PLUGIN. Returns
 * the index of the op it stopped at. */
static size_t apply_middle(struct worker *w, size_t first, uint64_t epoch,
			   uint64_t index, struct ts_image *img, int *rc,
			   struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	size_t i = first;
	*rc = 0;
	for (; i < plan->n_ops; i++) {
		const struct ts_op *op = &plan->ops[i];
		if (op->kind == TS_OP_OUTPUT || op->kind == TS_OP_TILE ||
		    op->kind == TS_OP_FILTER || op->kind == TS_OP_PLUGIN)
			break;
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)op->index);
		*rc = ts_aug_apply(op, img, &w->tmp1, &rng, err);
		if (*rc)
			break;
	}
	return i;
}

/* Load and decode the item of (epoch, index), with replacement under
 * on_error = skip: the next indices of the permutation, deterministically.
 * data/len is the pre-read item (may be NULL: read synchronously). On
 * success w->img holds the decoded image and *label its label. */
static int load_sample(struct worker *w, uint64_t epoch, uint64_t index,
		       const uint8_t *data, size_t len, int read_status,
		       int32_t *label, size_t *first_op, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	for (uint64_t k = 0; k < e->n; k++) {
		struct ts_item it;
		int rc = item_at(e, epoch, (index + k) % e->n, &it);
		if (rc)
			return ts_error_set(err, rc, "out of memory");
		*label = it.label;
		w->path = it.path;
		if (plan->source.kind == TS_SRC_SYNTHETIC) {
			*first_op = 0;
			return ts_source_synthetic(&plan->source, it.offset, &w->img, label);
		}
		uint8_t *own = NULL;
		const uint8_t *buf = NULL;
		size_t blen = 0;
		struct ts_error lerr = {0};
		if (k == 0 && (data || read_status)) {
			/* The I/O thread already read it (or failed to). */
			buf = data;
			blen = len;
			rc = read_status;
			if (rc)
				ts_error_set(&lerr, rc, "%s", strerror(-rc));
		} else {
			rc = ts_source_read(&it, &own, &blen, &lerr);
			buf = own;
			/* Without io_uring the workers read: the same testing
			 * hook (TSRUN_FAULT_READ, reader.h) as the reader's. */
			int frc = e->reader ? rc : ts_reader_fault(it.is_range, rc, &blen);
			if (frc != rc) {
				rc = frc;
				ts_error_set(&lerr, rc, "%s", strerror(-rc));
			}
		}
		if (rc == 0) {
			atomic_fetch_add(&e->bytes, blen);
			rc = decode_sample(w, &plan->ops[0], buf, blen, epoch, index, &lerr);
		}
		free(own);
		if (rc == 0) {
			*first_op = 1;
			return 0;
		}
		if (plan->on_error == TS_ON_ERROR_FAIL || rc == -ENOMEM || rc == TS_E_NOMEM)
			return ts_error_set(err, rc, "%s: %s", it.path ? it.path : "(item)",
					    lerr.msg[0] ? lerr.msg : ts_error_name(rc));
		note_skip(e, it.path, lerr.msg[0] ? lerr.msg : ts_error_name(rc));
		data = NULL;
		read_status = 0;
	}
	return ts_error_set(err, TS_E_SOURCE,
			    "every item of epoch %llu failed to load; nothing to serve",
			    (unsigned long long)epoch);
}

/* Wait until ring slot seq may be written, or the engine stops. */
static int wait_slot(struct ts_engine *e, uint64_t seq)
{
	for (;;) {
		if (atomic_load(&e->stop))
			return -ECANCELED;
		int rc = ts_ring_wait_writable(e->ring, seq, 100);
		if (rc == 0)
			return 0;
		if (rc != -ETIMEDOUT && rc != -EAGAIN && rc != -EINTR)
			return rc;
	}
}

/* One-to-one: flag seq done and publish the contiguous prefix. */
static void finish_seq(struct ts_engine *e, uint64_t seq)
{
	pthread_mutex_lock(&e->head_mu);
	e->done[seq % e->capacity] = 1;
	uint64_t h = e->head;
	while (h < e->total && e->done[h % e->capacity]) {
		e->done[h % e->capacity] = 0;
		h++;
	}
	if (h != e->head) {
		e->head = h;
		ts_ring_publish(e->ring, e->seq_base + h);
	}
	pthread_mutex_unlock(&e->head_mu);
}

/* Load, decode and run the middle ops of position p into w->img; *op_at
 * is the op the caller continues with (OUTPUT, TILE or FILTER). */
static int prepare(struct worker *w, uint64_t p, const uint8_t *data,
		   size_t len, int read_status, uint64_t *epoch, uint64_t *index,
		   int32_t *label, size_t *op_at, struct ts_error *err)
{
	size_t first = 0;
	pos_split(w->e, p, epoch, index);
	*label = 0;
	int rc = load_sample(w, *epoch, *index, data, len, read_status, label, &first, err);
	if (rc)
		return rc;
	*op_at = apply_middle(w, first, *epoch, *index, &w->img, &rc, err);
	return rc;
}

/* Produce position p of a one-to-one pipeline straight into its slot. */
static int run_direct(struct worker *w, uint64_t p, const uint8_t *data,
		      size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	uint64_t epoch, index;
	int32_t label;
	size_t i;
	int rc = prepare(w, p, data, len, read_status, &epoch, &index, &label, &i, err);
	if (rc)
		return rc;
	uint64_t seq = e->seq_base + p;
	rc = wait_slot(e, seq);
	if (rc)
		return rc == -ECANCELED ? rc : ts_error_set(err, rc, "ring wait failed");
	void *slot = ts_ring_slot(e->ring, seq);
	rc = ts_out_write(&plan->ops[i], &w->img, plan->source.seed, epoch, index,
			  &w->tmp2, &w->tmp3, slot, plan->sample_bytes, err);
	if (rc)
		return rc;
	ts_ring_set_meta(e->ring, seq, label, (uint32_t)epoch, index);
	finish_seq(e, p);
	return 0;
}

/* Run plugin op o on img through this worker's host for it. Returns 0
 * (keep), 1 (dropped: by the plugin, or its failure skipped under
 * on_error = skip, which notes it) or a fatal error naming the plugin,
 * what happened and the file. tile is the tile number, or -1. */
static int run_plugin(struct worker *w, const struct ts_op *o,
		      struct ts_image *img, int tile, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	size_t k = 0;
	for (const struct ts_op *q = e->plan->ops; q < o; q++)
		k += q->kind == TS_OP_PLUGIN;
	struct ts_error perr = {0};
	int rc = ts_plugin_host_run(w->plugins[k], img, &perr);
	if (rc >= 0)
		return rc;
	char where[32] = "";
	if (tile >= 0)
		snprintf(where, sizeof(where), " (tile %d)", tile);
	if (rc != TS_E_PLUGIN || e->plan->on_error == TS_ON_ERROR_FAIL)
		return ts_error_set(err, rc, "%s on %s%s", perr.msg,
				    w->path ? w->path : "a synthetic sample", where);
	char why[sizeof(perr.msg) + sizeof(where)];
	snprintf(why, sizeof(why), "%s%s", perr.msg, where);
	note_skip(e, w->path, why);
	return 1;
}

/* Expanding pipelines: render every output of position p into staging,
 * then commit them in position order. */
static int run_staged(struct worker *w, uint64_t p, const uint8_t *data,
		      size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	uint64_t epoch, index;
	int32_t label;
	size_t i;
	int rc = prepare(w, p, data, len, read_status, &epoch, &index, &label, &i, err);
	if (rc)
		return rc;
	w->stage_n = 0;
	const struct ts_op *op = &plan->ops[i];
	/* Tiles: cut the image into the grid, each tile then goes through the
	 * rest of the ops (a filter, the output) on its own. */
	int nx = 1, ny = 1;
	const struct ts_op *tile = NULL;
	/* Plugins before any tile see the whole image; one that drops it
	 * leaves nothing of this position to commit (ny = 0). */
	while (ny && op->kind == TS_OP_PLUGIN) {
		rc = run_plugin(w, op, &w->img, -1, err);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			ny = 0;
			break;
		}
		i = apply_middle(w, i + 1, epoch, index, &w->img, &rc, err);
		if (rc)
			return rc;
		op = &plan->ops[i];
	}
	if (ny && op->kind == TS_OP_TILE) {
		tile = op;
		ts_aug_tile_grid(w->img.width, w->img.height, tile, &nx, &ny);
		i++;
	}
	for (int ty = 0; ty < ny; ty++) {
		for (int tx = 0; tx < nx; tx++) {
			struct ts_image *cur = &w->img;
			if (tile) {
				rc = ts_aug_crop(&w->img, &w->tmp3, tx * tile->stride_w,
						 ty * tile->stride_h, tile->size_w, tile->size_h);
				if (rc)
					return ts_error_set(err, rc, "tile crop failed");
				cur = &w->tmp3;
			}
			size_t j = i;
			bool keep = true;
			/* Each tile's random stream: (epoch, index, tile) folded
			 * into one index that no other sample uses. */
			uint64_t sub = (index << 20) ^ (uint64_t)(ty * nx + tx);
			for (; j < plan->n_ops && plan->ops[j].kind != TS_OP_OUTPUT; j++) {
				const struct ts_op *o = &plan->ops[j];
				if (o->kind == TS_OP_FILTER) {
					if (!ts_aug_filter_keep(o, cur)) {
						keep = false;
						break;
					}
					continue;
				}
				if (o->kind == TS_OP_PLUGIN) {
					rc = run_plugin(w, o, cur, tile ? ty * nx + tx : -1, err);
					if (rc < 0)
						return rc;
					if (rc == 1) {
						keep = false;
						break;
					}
					continue;
				}
				struct ts_rng rng;
				ts_rng_init(&rng, plan->source.seed, epoch, sub, (uint64_t)o->index);
				rc = ts_aug_apply(o, cur, &w->tmp1, &rng, err);
				if (rc)
					return rc;
			}
			if (!keep)
				continue;
			if (w->stage_n == w->stage_cap) {
				/* Tiles of a frame larger than any before: grow. The
				 * plan's bound, when it has one, caps it. */
				if (plan->max_out_per_in > 0 && w->stage_cap >= plan->max_out_per_in)
					return ts_error_set(err, TS_E_STATE,
							    "more than %d outputs from one sample",
							    plan->max_out_per_in);
				int32_t cap = w->stage_cap ? w->stage_cap * 2 : 16;
				if (plan->max_out_per_in > 0 && cap > plan->max_out_per_in)
					cap = plan->max_out_per_in;
				uint8_t *ns = realloc(w->stage, plan->sample_bytes * (size_t)cap);
				if (!ns)
					return ts_error_set(err, -ENOMEM, "out of memory for %d tiles", cap);
				w->stage = ns;
				w->stage_cap = cap;
			}
			uint8_t *dst = w->stage + (size_t)w->stage_n * plan->sample_bytes;
			rc = ts_out_write(&plan->ops[j], cur, plan->source.seed, epoch, sub,
					  &w->tmp2, &w->tmp1, dst, plan->sample_bytes, err);
			if (rc)
				return rc;
			w->stage_n++;
		}
	}
	/* Commit in position order. */
	pthread_mutex_lock(&e->mu);
	while (e->commit_pos != p && !atomic_load(&e->stop))
		pthread_cond_wait(&e->cv_commit, &e->mu);
	pthread_mutex_unlock(&e->mu);
	if (atomic_load(&e->stop))
		return -ECANCELED;
	if (epoch != e->out_epoch) {
		e->out_epoch = epoch;
		e->out_index = 0;
	}
	for (int32_t k = 0; k < w->stage_n; k++) {
		uint64_t seq = e->out_seq;
		rc = wait_slot(e, seq);
		if (rc)
			return rc == -ECANCELED ? rc : ts_error_set(err, rc, "ring wait failed");
		memcpy(ts_ring_slot(e->ring, seq), w->stage + (size_t)k * plan->sample_bytes,
		       plan->sample_bytes);
		ts_ring_set_meta(e->ring, seq, label, (uint32_t)epoch, e->out_index++);
		e->out_seq = seq + 1;
		ts_ring_publish(e->ring, e->out_seq);
	}
	pthread_mutex_lock(&e->mu);
	e->commit_pos = p + 1;
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* Bytes the output stage writes for img: the plan's fixed sample size, or
 * for a variable-size plan the size after the stage's own resize/crop. */
static size_t out_bytes(const struct ts_op *out, const struct ts_image *img)
{
	int w = img->width, h = img->height;
	enum ts_dtype t = img->dtype;
	for (size_t i = 0; i < out->n_parts; i++) {
		const struct ts_op *q = &out->parts[i];
		if (q->kind == TS_OP_RESIZE)
			ts_aug_resize_dims(w, h, q, &w, &h);
		else if (q->kind == TS_OP_CENTER_CROP) {
			w = q->size_w;
			h = q->size_h;
		} else if (q->kind == TS_OP_NORMALIZE)
			t = TS_DTYPE_F32;
		else if (q->kind == TS_OP_TO)
			t = q->dtype;
	}
	return (size_t)w * (size_t)h * (size_t)img->channels * ts_dtype_size(t);
}

/* Discard mode: produce position p into the worker's own buffer and fold
 * it into an order-independent digest. */
static int run_discard(struct worker *w, uint64_t p, const uint8_t *data,
		       size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	uint64_t epoch, index;
	int32_t label;
	size_t i;
	if (plan->expands)
		return ts_error_set(err, TS_E_ARG, "tile, filter and plugin pipelines need a ring");
	int rc = prepare(w, p, data, len, read_status, &epoch, &index, &label, &i, err);
	if (rc)
		return rc;
	size_t n = plan->sample_bytes ? plan->sample_bytes : out_bytes(&plan->ops[i], &w->img);
	if (n > w->out_cap) {
		uint8_t *o = realloc(w->out, n);
		if (!o)
			return ts_error_set(err, -ENOMEM, "out of memory");
		w->out = o;
		w->out_cap = n;
	}
	rc = ts_out_write(&plan->ops[i], &w->img, plan->source.seed, epoch, index,
			  &w->tmp2, &w->tmp3, w->out, n, err);
	if (rc)
		return rc;
	struct ts_digest d;
	ts_digest_init(&d);
	ts_digest_sample(&d, w->out, n, label);
	/* A sum of per-position hashes: the same for any completion order. */
	uint64_t x = d.h ^ (p * 0x9e3779b97f4a7c15ULL);
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	atomic_fetch_add(&e->unordered_digest, x);
	atomic_fetch_add(&e->discarded, 1);
	return 0;
}

/* Claim the next position; with the I/O thread, wait for its bytes.
 * Returns false when there is no more work. */
static bool claim(struct ts_engine *e, uint64_t *p, uint8_t **data,
		  size_t *len, int *status)
{
	pthread_mutex_lock(&e->mu);
	if (atomic_load(&e->stop) || e->next_claim >= e->total) {
		pthread_mutex_unlock(&e->mu);
		return false;
	}
	*p = e->next_claim++;
	*data = NULL;
	*len = 0;
	*status = 0;
	if (e->reader) {
		struct win_entry *we = &e->win[*p % e->wsize];
		while (!(we->state == WIN_READY && we->pos == *p) && !atomic_load(&e->stop)) {
			/* About to starve: the I/O thread refills now. */
			if (e->io_idle)
				pthread_cond_signal(&e->cv_space);
			pthread_cond_wait(&e->cv_ready, &e->mu);
		}
		if (atomic_load(&e->stop)) {
			pthread_mutex_unlock(&e->mu);
			return false;
		}
		*data = we->data;
		*len = we->len;
		*status = we->status;
		we->state = WIN_FREE;
		we->data = NULL;
		/* Wake the I/O thread for a quarter window at a time, so it
		 * submits many reads per io_uring_enter instead of one per
		 * claim (a futex round trip per image otherwise). */
		if (e->io_idle && ++e->freed >= (e->wsize + 3) / 4)
			pthread_cond_signal(&e->cv_space);
	}
	pthread_mutex_unlock(&e->mu);
	return true;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ts_engine *e = w->e;
	uint64_t p;
	uint8_t *data;
	size_t len;
	int status;
	while (claim(e, &p, &data, &len, &status)) {
		struct ts_error err = {0};
		int rc = !e->ring ? run_discard(w, p, data, len, status, &err)
			: e->plan->expands ? run_staged(w, p, data, len, status, &err)
			: run_direct(w, p, data, len, status, &err);
		if (data)
			ts_reader_release(e->reader, data);
		if (rc && rc != -ECANCELED) {
			if (!err.code)
				ts_error_set(&err, rc, "%s", ts_error_name(rc));
			set_fatal(e, &err);
		}
	}
	ts_aug_scratch_free();
	/* Plugin hosts would die with this thread anyway (PR_SET_PDEATHSIG);
	 * reap them now rather than leave zombies until destroy. */
	for (size_t k = 0; k < e->n_plugins; k++)
		ts_plugin_host_stop(w->plugins[k]);
	/* The last worker out ends the stream: consumers must learn at once
	 * that no more samples come, and why. */
	if (atomic_fetch_sub(&e->live_workers, 1) == 1) {
		pthread_mutex_lock(&e->mu);
		int code = e->fatal ? e->fatal
			 : e->next_claim >= e->total ? 0
			 : e->asked_stop ? TS_E_STOPPED : TS_E_PRODUCER;
		bool keep = e->handover && code == 0;
		e->finished = !keep;
		atomic_store(&e->stop, true);
		pthread_cond_broadcast(&e->cv_space);
		pthread_mutex_unlock(&e->mu);
		if (!keep && e->ring)
			ts_ring_finish(e->ring, code);
	}
	return NULL;
}

/* The I/O thread: keep the window full of reads in position order. */
static void *io_main(void *arg)
{
	struct ts_engine *e = arg;
	struct ts_read_done done[32];
	for (;;) {
		pthread_mutex_lock(&e->mu);
		while (!atomic_load(&e->stop) && ts_reader_in_flight(e->reader) == 0 &&
		       (e->next_submit >= e->total ||
			e->win[e->next_submit % e->wsize].state != WIN_FREE)) {
			e->io_idle = true;
			pthread_cond_wait(&e->cv_space, &e->mu);
			e->io_idle = false;
		}
		e->freed = 0;
		if (atomic_load(&e->stop)) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		/* Submit what fits. */
		while (e->next_submit < e->total &&
		       e->win[e->next_submit % e->wsize].state == WIN_FREE) {
			uint64_t p = e->next_submit;
			uint64_t epoch, index;
			pos_split(e, p, &epoch, &index);
			const uint32_t *perm = perm_get(e, epoch);
			if (!perm)
				break;
			struct ts_item it;
			ts_source_item(e->ix, perm[index], &it);
			int rc = ts_reader_submit(e->reader, &it, p);
			if (rc == -EBUSY)
				break;
			struct win_entry *we = &e->win[p % e->wsize];
			we->pos = p;
			if (rc) {
				we->state = WIN_READY;
				we->status = rc;
				we->data = NULL;
				we->len = 0;
				pthread_cond_broadcast(&e->cv_ready);
			} else {
				we->state = WIN_READING;
			}
			e->next_submit++;
		}
		pthread_mutex_unlock(&e->mu);
		int n = ts_reader_reap(e->reader, done, TS_ARRAY_LEN(done), 50);
		if (n <= 0)
			continue;
		pthread_mutex_lock(&e->mu);
		for (int i = 0; i < n; i++) {
			struct win_entry *we = &e->win[done[i].tag % e->wsize];
			we->state = WIN_READY;
			we->status = done[i].status;
			we->data = done[i].data;
			we->len = done[i].len;
		}
		pthread_cond_broadcast(&e->cv_ready);
		pthread_mutex_unlock(&e->mu);
	}
	/* Drain reads still in flight so their buffers come back. */
	while (ts_reader_in_flight(e->reader) > 0) {
		int n = ts_reader_reap(e->reader, done, TS_ARRAY_LEN(done), 100);
		for (int i = 0; i < n; i++)
			if (done[i].data)
				ts_reader_release(e->reader, done[i].data);
	}
	return NULL;
}

static int online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

int ts_engine_create(const struct ts_plan *plan, const struct ts_engine_opts *o,
		     struct ts_ring *ring, struct ts_engine **out,
		     struct ts_error *err)
{
	struct ts_engine_opts def = {.epochs = -1};
	if (!o)
		o = &def;
	if (!plan || !out)
		return ts_error_set(err, TS_E_ARG, "engine: plan and out are required");
	if (plan->n_ops == 0 || plan->ops[plan->n_ops - 1].kind != TS_OP_OUTPUT)
		return ts_error_set(err, TS_E_ARG, "engine: the plan does not end in an output stage");
	struct ts_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return ts_error_set(err, -ENOMEM, "out of memory");
	e->plan = plan;
	e->ring = ring;
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->head_mu, NULL);
	pthread_cond_init(&e->cv_ready, NULL);
	pthread_cond_init(&e->cv_space, NULL);
	pthread_cond_init(&e->cv_commit, NULL);
	int rc = ts_source_open(&plan->source, &e->ix, err);
	if (rc)
		goto fail;
	e->n = e->ix->n;
	if (e->n == 0) {
		rc = ts_error_set(err, TS_E_SOURCE, "the data source '%s' has no items",
				  plan->source.path ? plan->source.path : "synthetic");
		goto fail;
	}
	if (e->n > UINT32_MAX) {
		rc = ts_error_set(err, TS_E_SOURCE, "the data source has more than 2^32 items");
		goto fail;
	}
	e->seq_base = o->seq_base;
	e->out_seq = o->seq_base;
	e->start_epoch = o->start_epoch;
	e->start_index = o->start_index;
	if (e->start_index >= e->n) {
		rc = ts_error_set(err, TS_E_ARG,
				  "start index %llu is past the end of an epoch of %llu samples",
				  (unsigned long long)o->start_index, (unsigned long long)e->n);
		goto fail;
	}
	int epochs = o->epochs >= 0 ? o->epochs : plan->epochs;
	if (epochs == 0) {
		e->total = UINT64_MAX;
	} else if ((uint64_t)epochs <= e->start_epoch) {
		e->total = 0;
	} else {
		e->total = ((uint64_t)epochs - e->start_epoch) * e->n - e->start_index;
	}
	e->threads = o->threads > 0 ? o->threads : plan->threads > 0 ? plan->threads : online_cores();
	struct ts_ring_info ri = {.capacity = (uint64_t)e->threads * 4,
				  .sample_bytes = plan->sample_bytes};
	if (ring)
		ts_ring_get_info(ring, &ri);
	e->capacity = ri.capacity;
	if (ri.sample_bytes != plan->sample_bytes) {
		rc = ts_error_set(err, TS_E_ARG, "engine: ring sample size %zu differs from the plan's %zu",
				  ri.sample_bytes, plan->sample_bytes);
		goto fail;
	}
	if ((uint64_t)e->threads * 2 > e->capacity)
		e->threads = (int)(e->capacity / 2 > 0 ? e->capacity / 2 : 1);
	e->done = calloc(e->capacity, 1);
	e->workers = calloc((size_t)e->threads, sizeof(*e->workers));
	if (!e->done || !e->workers) {
		rc = ts_error_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	for (int i = 0; i < e->threads; i++) {
		struct worker *w = &e->workers[i];
		w->e = e;
		rc = ts_decoder_create(&w->dec, err);
		if (rc)
			goto fail;
	}
	/* Plugin ops: a host per worker; each plugin is loaded once now, in
	 * a child of its own, so a missing .so or symbol fails here. */
	for (size_t i = 0; i < plan->n_ops; i++)
		e->n_plugins += plan->ops[i].kind == TS_OP_PLUGIN;
	for (int i = 0; i < e->threads && e->n_plugins; i++) {
		struct worker *w = &e->workers[i];
		w->plugins = calloc(e->n_plugins, sizeof(*w->plugins));
		if (!w->plugins) {
			rc = ts_error_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t j = 0, k = 0; j < plan->n_ops; j++) {
			if (plan->ops[j].kind != TS_OP_PLUGIN)
				continue;
			rc = ts_plugin_host_create(&plan->ops[j], plan->source.base_dir,
						   &w->plugins[k], err);
			if (rc == 0 && i == 0)
				rc = ts_plugin_host_probe(w->plugins[k], err);
			if (rc)
				goto fail;
			k++;
		}
	}
	if (plan->source.kind != TS_SRC_SYNTHETIC) {
		unsigned depth = plan->queue_depth > 0 ? (unsigned)plan->queue_depth : 64;
		rc = ts_reader_create(depth, TS_READER_DEFAULT_BUF, &e->reader, err);
		if (rc)
			goto fail;
		if (!ts_reader_uses_uring(e->reader)) {
			const char *why = ts_reader_fallback_reason(e->reader);
			e->reader_note = ts_strdup(why ? why : "io_uring is not available");
			/* Plain reads happen in the workers themselves. */
			ts_reader_destroy(e->reader);
			e->reader = NULL;
		} else {
			e->wsize = depth;
			e->win = calloc(e->wsize, sizeof(*e->win));
			if (!e->win) {
				rc = ts_error_set(err, -ENOMEM, "out of memory");
				goto fail;
			}
		}
	}
	*out = e;
	return 0;
fail:
	ts_engine_destroy(e);
	return rc;
}

uint64_t ts_engine_epoch_size(const struct ts_engine *e)
{
	return e->n;
}

int ts_engine_start(struct ts_engine *e, struct ts_error *err)
{
	if (e->total == 0) {
		if (e->ring)
			ts_ring_finish(e->ring, 0);
		return 0;
	}
	if (e->reader) {
		if (pthread_create(&e->io_thread, NULL, io_main, e) != 0)
			return ts_error_set(err, -EAGAIN, "cannot start the reader thread");
		e->io_started = true;
	}
	atomic_store(&e->live_workers, e->threads);
	for (int i = 0; i < e->threads; i++) {
		if (pthread_create(&e->workers[i].thread, NULL, worker_main, &e->workers[i]) != 0) {
			struct ts_error se;
			ts_error_set(&se, -EAGAIN, "cannot start worker thread %d", i);
			set_fatal(e, &se);
			if (atomic_fetch_sub(&e->live_workers, e->threads - i) == e->threads - i) {
				e->finished = true;
				if (e->ring)
					ts_ring_finish(e->ring, -EAGAIN);
			}
			if (err)
				*err = se;
			return -EAGAIN;
		}
		e->workers[i].started = true;
	}
	return 0;
}

void ts_engine_stop(struct ts_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	/* Asked before the end: the stream ends "stopped", not "failed". */
	e->asked_stop = true;
	atomic_store(&e->stop, true);
	pthread_cond_broadcast(&e->cv_ready);
	pthread_cond_broadcast(&e->cv_space);
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
}

int ts_engine_join(struct ts_engine *e, struct ts_error *err)
{
	if (e->joined)
		goto out;
	for (int i = 0; i < e->threads; i++)
		if (e->workers[i].started)
			pthread_join(e->workers[i].thread, NULL);
	pthread_mutex_lock(&e->mu);
	bool asked = e->asked_stop;
	pthread_mutex_unlock(&e->mu);
	ts_engine_stop(e);
	if (e->io_started)
		pthread_join(e->io_thread, NULL);
	e->joined = true;
	if (e->ring && !e->finished && !(e->handover && !e->fatal))
		ts_ring_finish(e->ring, e->fatal ? e->fatal
				       : asked ? TS_E_STOPPED : TS_E_PRODUCER);
	e->finished = true;
out:
	if (e->fatal) {
		if (err)
			*err = e->fatal_err;
		return e->fatal;
	}
	return 0;
}

void ts_engine_stats(const struct ts_engine *e, struct ts_engine_stats *st)
{
	memset(st, 0, sizeof(*st));
	uint64_t head = e->ring ? ts_ring_written(e->ring)
			       : atomic_load(&((struct ts_engine *)e)->discarded);
	uint64_t mine = head > e->seq_base ? head - e->seq_base : 0;
	st->samples = head;
	st->bytes = atomic_load(&((struct ts_engine *)e)->bytes);
	st->skipped = atomic_load(&((struct ts_engine *)e)->skipped_n);
	st->epoch_size = e->n;
	if (!e->plan->expands)
		pos_split(e, mine, &st->epoch, &st->index);
	else {
		st->epoch = e->out_epoch;
		st->index = e->out_index;
	}
	st->threads = e->threads;
	st->uring = e->reader != NULL;
	st->idle = atomic_load(&((struct ts_engine *)e)->live_workers) == 0 &&
		   (e->threads == 0 || e->workers[0].started);
	st->done = e->joined;
}

uint64_t ts_engine_unordered_digest(const struct ts_engine *e)
{
	return atomic_load(&((struct ts_engine *)e)->unordered_digest);
}

int ts_engine_probe(const struct ts_plan *plan, const struct ts_engine_opts *o,
		    struct ts_error *err)
{
	struct ts_engine *n = NULL;
	int rc = ts_engine_create(plan, o, NULL, &n, err);
	ts_engine_destroy(n);
	return rc;
}

int ts_engine_check_reload(const struct ts_plan *cur, const struct ts_plan *next,
			   const struct ts_engine_opts *o, struct ts_error *err)
{
	if (!ts_plan_same_sample(cur, next))
		return ts_error_set(err, TS_E_CHECK,
				    "its samples are %dx%dx%d %s %s, the running ones "
				    "%dx%dx%d %s %s: a reload cannot change the sample shape, "
				    "with which connected trainers map the ring; restart to "
				    "change it", next->channels, next->height, next->width,
				    ts_dtype_name(next->dtype), ts_layout_name(next->layout),
				    cur->channels, cur->height, cur->width,
				    ts_dtype_name(cur->dtype), ts_layout_name(cur->layout));
	if (!ts_plan_same_device(cur, next))
		return ts_error_set(err, TS_E_CHECK,
				    "its device(cuda) stage differs from the running one (%s), "
				    "whose device ring connected trainers have open; restart "
				    "to change it",
				    cur->device.cuda ? "device(cuda) with other dtype, layout "
						       "or normalization"
						     : "which has no device stage");
	/* Its source must open now, not fail at the epoch boundary. */
	struct ts_engine_opts po = o ? *o : (struct ts_engine_opts){.epochs = -1};
	po.start_epoch = 0;
	po.start_index = 0;
	return ts_engine_probe(next, &po, err);
}

/* An engine for plan in ring from next_epoch at the ring's head. */
static int start_in_ring(const struct ts_plan *plan, const struct ts_engine_opts *o,
			 struct ts_ring *ring, uint64_t next_epoch,
			 struct ts_engine **out, struct ts_error *err)
{
	struct ts_engine_opts no = *o;
	no.start_epoch = next_epoch;
	no.start_index = 0;
	no.seq_base = ts_ring_written(ring);
	struct ts_engine *n = NULL;
	int rc = ts_engine_create(plan, &no, ring, &n, err);
	if (rc == 0)
		rc = ts_engine_start(n, err);
	if (rc) {
		ts_engine_destroy(n);
		return rc;
	}
	*out = n;
	return 0;
}

int ts_engine_takeover(struct ts_engine **e, const struct ts_plan *plan,
		       const struct ts_plan *fallback,
		       const struct ts_engine_opts *o, uint64_t next_epoch,
		       bool *fell_back, struct ts_error *err)
{
	struct ts_ring *ring = (*e)->ring;
	*fell_back = false;
	int rc = ts_engine_join(*e, err);
	if (rc)
		return rc;
	ts_engine_destroy(*e);
	*e = NULL;
	rc = start_in_ring(plan, o, ring, next_epoch, e, err);
	if (rc == 0)
		return 0;
	/* The new plan cannot start (its source went away since it was
	 * probed, say): the running one goes on from the same boundary. */
	struct ts_error ferr = {0};
	if (fallback && start_in_ring(fallback, o, ring, next_epoch, e, &ferr) == 0) {
		*fell_back = true;
		return rc;
	}
	ts_ring_finish(ring, rc);
	return rc;
}

int ts_engine_handover(struct ts_engine *e, uint64_t *next_epoch)
{
	pthread_mutex_lock(&e->mu);
	uint64_t p = e->next_claim, epoch, index;
	pos_split(e, p, &epoch, &index);
	uint64_t boundary = index == 0 ? p : p + (e->n - index);
	int rc = 0;
	if (boundary >= e->total || e->fatal) {
		rc = TS_E_STATE;
	} else {
		e->total = boundary;
		e->handover = true;
		*next_epoch = index == 0 ? epoch : epoch + 1;
	}
	pthread_cond_broadcast(&e->cv_ready);
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int ts_engine_reload_offer(struct ts_engine_reload *r, struct ts_engine *e,
			   const struct ts_plan *cur, struct ts_plan *next,
			   const struct ts_engine_opts *o, bool *replaced,
			   struct ts_error *err)
{
	*replaced = false;
	int rc = ts_engine_check_reload(cur, next, o, err);
	if (rc == 0 && !r->pending && ts_engine_handover(e, &r->epoch) != 0)
		rc = ts_error_set(err, TS_E_STATE, "the stream ends with the current epoch; "
				  "there is no next epoch to take over");
	if (rc) {
		ts_plan_destroy(next);
		return rc;
	}
	/* A second reload before the boundary replaces the first. */
	*replaced = r->pending != NULL;
	ts_plan_destroy(r->pending);
	r->pending = next;
	return 0;
}

int ts_engine_reload_poll(struct ts_engine_reload *r, struct ts_engine **e,
			  const struct ts_plan *cur, const struct ts_engine_opts *o,
			  enum ts_engine_reload_event *ev, struct ts_plan **taken,
			  struct ts_error *err)
{
	*ev = TS_RELOAD_NONE;
	if (!r->pending)
		return 0;
	struct ts_engine_stats es;
	ts_engine_stats(*e, &es);
	if (!es.idle)
		return 0;
	bool fell_back = false;
	int rc = ts_engine_takeover(e, r->pending, cur, o, r->epoch, &fell_back, err);
	if (rc == 0) {
		*taken = r->pending;
		r->pending = NULL;
		*ev = TS_RELOAD_TOOK_OVER;
		return 0;
	}
	ts_engine_reload_clear(r);
	if (fell_back) {
		*ev = TS_RELOAD_FELL_BACK;
		return 0;
	}
	return rc;
}

void ts_engine_reload_clear(struct ts_engine_reload *r)
{
	ts_plan_destroy(r->pending);
	r->pending = NULL;
}

size_t ts_engine_skipped(const struct ts_engine *e, const char *const **list)
{
	*list = (const char *const *)e->skipped;
	return e->n_skipped;
}

const char *ts_engine_reader_note(const struct ts_engine *e)
{
	return e->reader_note;
}

void ts_engine_destroy(struct ts_engine *e)
{
	if (!e)
		return;
	if (!e->joined && (e->io_started || (e->workers && e->threads > 0 && e->workers[0].started))) {
		ts_engine_stop(e);
		ts_engine_join(e, NULL);
	}
	if (e->workers) {
		for (int i = 0; i < e->threads; i++) {
			struct worker *w = &e->workers[i];
			ts_decoder_destroy(w->dec);
			for (size_t k = 0; w->plugins && k < e->n_plugins; k++)
				ts_plugin_host_destroy(w->plugins[k]);
			free(w->plugins);
			ts_image_free(&w->img);
			ts_image_free(&w->tmp1);
			ts_image_free(&w->tmp2);
			ts_image_free(&w->tmp3);
			free(w->stage);
			free(w->out);
		}
		free(e->workers);
	}
	if (e->win && e->reader)
		for (uint64_t i = 0; i < e->wsize; i++)
			if (e->win[i].data)
				ts_reader_release(e->reader, e->win[i].data);
	free(e->win);
	ts_reader_destroy(e->reader);
	for (unsigned i = 0; i < TS_ARRAY_LEN(e->perms); i++)
		free(e->perms[i].perm);
	for (size_t i = 0; i < e->n_skipped; i++)
		free(e->skipped[i]);
	free(e->skipped);
	free(e->skip_tab);
	free(e->reader_note);
	free(e->done);
	ts_source_index_destroy(e->ix);
	pthread_cond_destroy(&e->cv_ready);
	pthread_cond_destroy(&e->cv_space);
	pthread_cond_destroy(&e->cv_commit);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->head_mu);
	free(e);
}
