/*
 * engine_sample.c - where the engine's work on position p goes, once
 * engine_load.c has its image: written by the output stage straight into
 * its ring slot and published in order (one-to-one pipelines); through
 * tiles, filters and plugins into staging committed in position order
 * (expanding pipelines; in bands of rows, engine_banded.c); or into a
 * worker buffer folded into a digest (discard mode). A sample that fails
 * under on_error = skip is counted and listed once (engine_skip.c).
 */
#include "engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "digest.h"
#include "profile.h"
#include "rng.h"
#include "trace.h"
#include "barrier.h"
#include "util.h"

#include <unistd.h>

/*
 * An epoch served past the planned ones for trainers that wanted it
 * (claim) that none of the connected trainers wants any more (they left
 * before its end): the stream ends here, normally, rather than wait for
 * trainers to read it. Checked by a writer blocked on slot seq. True when
 * it ended the stream (claims stop at once).
 */
static bool cut_unwanted(struct ts_engine *e, uint64_t seq)
{
	if (!e->per_trainer || seq < e->seq_base)
		return false;
	uint64_t p = seq - e->seq_base, epoch, index;
	if (p < e->planned_total)
		return false;
	ts_engine_pos_split(e, p, &epoch, &index);
	if (epoch >= UINT32_MAX || ts_ring_epoch_wanted(e->ring, (uint32_t)epoch))
		return false;
	pthread_mutex_lock(&e->mu);
	if (e->total > e->next_claim)
		e->total = e->next_claim;
	pthread_mutex_unlock(&e->mu);
	return true;
}

/* Wait until ring slot seq may be written, or the engine stops. */
static int wait_slot(struct ts_engine *e, uint64_t seq)
{
	for (;;) {
		if (smp_load_acquire(&e->stop)) /* pairs with the stopper's release */
			return -ECANCELED;
		int rc = ts_ring_wait_writable(e->ring, seq, 100);
		if (rc == 0)
			return 0;
		if (rc == -ETIMEDOUT && cut_unwanted(e, seq))
			return -ECANCELED;
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

/* Produce position p of a one-to-one pipeline straight into its slot. */
static int run_direct(struct worker *w, uint64_t p, const uint8_t *data,
		      size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	uint64_t epoch, index;
	int32_t label;
	size_t i;
	int rc = ts_engine_prepare(w, p, data, len, read_status, &epoch, &index, &label, &i,
				   err);
	if (rc)
		return rc;
	uint64_t seq = e->seq_base + p;
	uint64_t t = ts_prof_now();
	rc = wait_slot(e, seq);
	ts_prof_add(TS_PROF_RING, t);
	if (rc)
		return rc == -ECANCELED ? rc : ts_error_set(err, rc, "ring wait failed");
	void *slot = ts_ring_slot(e->ring, seq);
	const uint64_t key = ts_engine_key(e, index);
	if (plan->n_views) /* views(): the op at i is the views op */
		rc = ts_engine_views_write(w, &plan->ops[i], epoch, key, slot,
					   plan->sample_bytes, err);
	else
		rc = ts_out_write(&plan->ops[i], &w->img, plan->source.seed, epoch, key,
				  &w->tmp2, &w->tmp3, slot, plan->sample_bytes, err);
	if (rc)
		return rc;
	t = ts_prof_now();
	ts_ring_set_meta(e->ring, seq, label, (uint32_t)epoch, index);
	finish_seq(e, p);
	ts_prof_add(TS_PROF_RING, t);
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
		k += q->plugin != NULL;
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
	ts_engine_note_skip(e, w->path, why, true);
	return 1;
}

/* The ops after a tile (or the plugins) for one image cur, ops[i..]: a
 * filter or plugin may drop it; a kept one is written by the output stage
 * into the next staging slot. sub is its random stream, tile its number
 * (-1: no tile); *outs counts the outputs of this position. */
int ts_engine_stage_one(struct worker *w, struct ts_image *cur, size_t i,
			uint64_t epoch, uint64_t sub, int tile, int32_t *outs,
			struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	size_t j = i;
	int rc;
	for (; j < plan->n_ops && !ts_op_is_output(&plan->ops[j]); j++) {
		const struct ts_op *o = &plan->ops[j];
		if (o->kind == TS_OP_FILTER) {
			if (!ts_aug_filter_keep(o, cur))
				return 0;
			continue;
		}
		if (o->kind == TS_OP_PLUGIN) {
			rc = run_plugin(w, o, cur, tile, err);
			if (rc < 0)
				return rc;
			if (rc == 1)
				return 0;
			continue;
		}
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, sub, (uint64_t)o->index);
		rc = ts_kernel_apply(o, cur, &w->tmp1, &rng, err);
		if (rc)
			return rc;
	}
	/* The plan's bound, when it has one, caps the outputs of a sample
	 * (counted over the whole position: banded tiling flushes staging
	 * before the end). */
	if (plan->max_out_per_in > 0 && *outs >= plan->max_out_per_in)
		return ts_error_set(err, TS_E_STATE, "more than %d outputs from one sample",
				    plan->max_out_per_in);
	if (w->stage_n == w->stage_cap) {
		/* Tiles of a frame larger than any before: grow. */
		int32_t cap = w->stage_cap ? w->stage_cap * 2 : 16;
		if (plan->max_out_per_in > 0 && cap > plan->max_out_per_in)
			cap = plan->max_out_per_in;
		uint8_t *ns = realloc(w->stage, plan->sample_bytes * (size_t)cap);
		if (!ns)
			return ts_error_set(err, TS_E_NOMEM, "out of memory for %d tiles", cap);
		w->stage = ns;
		w->stage_cap = cap;
	}
	uint8_t *dst = w->stage + (size_t)w->stage_n * plan->sample_bytes;
	rc = ts_out_write(&plan->ops[j], cur, plan->source.seed, epoch, sub,
			  &w->tmp2, &w->tmp1, dst, plan->sample_bytes, err);
	if (rc)
		return rc;
	w->stage_n++;
	(*outs)++;
	return 0;
}

/* Wait until position p may commit (every earlier one has), or the
 * engine stops (-ECANCELED). */
int ts_engine_wait_turn(struct ts_engine *e, uint64_t p)
{
	pthread_mutex_lock(&e->mu);
	while (e->commit_pos != p && !smp_load_acquire(&e->stop))
		pthread_cond_wait(&e->cv_commit, &e->mu);
	pthread_mutex_unlock(&e->mu);
	return smp_load_acquire(&e->stop) ? -ECANCELED : 0;
}

/* Write the staged outputs of position p to the ring, in order; p holds
 * the commit turn (ts_engine_wait_turn). *begun: whether some of p's
 * outputs are already out (the stream's per-epoch index restarts at p's
 * first). */
int ts_engine_flush_stage(struct worker *w, uint64_t epoch, int32_t label,
			  bool *begun, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	if (!*begun) {
		*begun = true;
		if (epoch != e->out_epoch) {
			e->out_epoch = epoch;
			e->out_index = 0;
		}
	}
	for (int32_t k = 0; k < w->stage_n; k++) {
		uint64_t seq = e->out_seq;
		int rc = wait_slot(e, seq);
		if (rc)
			return rc == -ECANCELED ? rc : ts_error_set(err, rc, "ring wait failed");
		memcpy(ts_ring_slot(e->ring, seq), w->stage + (size_t)k * plan->sample_bytes,
		       plan->sample_bytes);
		ts_ring_set_meta(e->ring, seq, label, (uint32_t)epoch, e->out_index++);
		e->out_seq = seq + 1;
		ts_ring_publish(e->ring, e->out_seq);
	}
	w->stage_n = 0;
	return 0;
}

/* Position p is committed: the next may go. */
void ts_engine_end_turn(struct ts_engine *e, uint64_t p)
{
	pthread_mutex_lock(&e->mu);
	e->commit_pos = p + 1;
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
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
	if (ts_engine_banded(plan))
		return ts_engine_run_banded(w, p, data, len, read_status, err);
	int rc = ts_engine_prepare(w, p, data, len, read_status, &epoch, &index, &label, &i,
				   err);
	if (rc)
		return rc;
	w->stage_n = 0;
	const struct ts_op *op = &plan->ops[i];
	/* Tiles: cut the image into the grid, each tile then goes through the
	 * rest of the ops (a filter, the output) on its own. */
	int nx = 1, ny = 1;
	int32_t outs = 0;
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
		i = ts_engine_apply_middle(w, i + 1, epoch, ts_engine_key(e, index), &w->img,
					   &rc, err);
		if (rc)
			return rc;
		op = &plan->ops[i];
	}
	if (ny && op->kind == TS_OP_TILE) {
		tile = op;
		ts_aug_tile_grid(w->img.width, w->img.height, &tile->tile, &nx, &ny);
		i++;
	}
	for (int ty = 0; ty < ny; ty++) {
		for (int tx = 0; tx < nx; tx++) {
			struct ts_image *cur = &w->img;
			if (tile) {
				rc = ts_aug_crop(&w->img, &w->tmp3, tx * tile->tile.stride_w,
						 ty * tile->tile.stride_h, tile->tile.size_w,
						 tile->tile.size_h);
				if (rc)
					return ts_error_set(err, rc, "tile crop failed");
				cur = &w->tmp3;
			}
			/* Each tile's random stream: (epoch, index, tile) folded
			 * into one index that no other sample uses. */
			uint64_t sub = (ts_engine_key(e, index) << 20) ^ (uint64_t)(ty * nx + tx);
			rc = ts_engine_stage_one(w, cur, i, epoch, sub, tile ? ty * nx + tx : -1,
						 &outs, err);
			if (rc)
				return rc;
		}
	}
	/* Commit in position order. */
	bool begun = false;
	if ((rc = ts_engine_wait_turn(e, p)) ||
	    (rc = ts_engine_flush_stage(w, epoch, label, &begun, err)))
		return rc;
	ts_engine_end_turn(e, p);
	return 0;
}

/* Shape the output stage writes for img in a variable-size plan. */
static void out_shape(const struct ts_op *out, const struct ts_image *img,
		      uint64_t seed, struct ts_engine_sample *s)
{
	ts_out_shape(out, img, seed, s->epoch, s->key, &s->width, &s->height,
		     &s->dtype, &s->layout);
	s->channels = img->channels;
	s->bytes = (size_t)s->width * (size_t)s->height * (size_t)img->channels *
		   ts_dtype_size(s->dtype);
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
	int rc = ts_engine_prepare(w, p, data, len, read_status, &epoch, &index, &label, &i,
				   err);
	if (rc)
		return rc;
	const uint64_t key = ts_engine_key(e, index);
	struct ts_engine_sample smp = {.pos = p, .epoch = epoch, .index = index,
				       .key = key, .label = label, .path = w->path};
	if (!plan->n_views)
		out_shape(&plan->ops[i], &w->img, plan->source.seed, &smp);
	if (plan->sample_bytes) {
		smp.height = plan->height;
		smp.width = plan->width;
		smp.channels = plan->channels;
		smp.dtype = plan->dtype;
		smp.layout = plan->layout;
		smp.bytes = plan->sample_bytes;
	}
	size_t n = smp.bytes;
	const uint8_t *out = w->img.data;
	/* An output stage with nothing to do (a decode-only pipeline) would
	 * copy the image as it is: read it in place instead. */
	if (plan->sample_bytes ||
	    !ts_out_is_copy(&plan->ops[i], &w->img, plan->source.seed, epoch, key) ||
	    w->img.stride * (size_t)w->img.height != n) {
		if (n > w->out_cap) {
			uint8_t *o = realloc(w->out, n);
			if (!o)
				return ts_error_set(err, TS_E_NOMEM, "out of memory");
			w->out = o;
			w->out_cap = n;
		}
		rc = plan->n_views
			     ? ts_engine_views_write(w, &plan->ops[i], epoch, key, w->out, n, err)
			     : ts_out_write(&plan->ops[i], &w->img, plan->source.seed, epoch,
					    key, &w->tmp2, &w->tmp3, w->out, n, err);
		if (rc)
			return rc;
		out = w->out;
	}
	if (e->sink) {
		smp.data = out;
		e->sink(e->sink_arg, &smp);
	}
	ATOMIC_ADD(&e->discarded, 1);
	if (e->no_digest)
		return 0;
	struct ts_digest d;
	ts_digest_init(&d);
	ts_digest_sample(&d, out, n, label);
	/* A sum of per-position hashes: the same for any completion order. */
	uint64_t x = d.h ^ (p * 0x9e3779b97f4a7c15ULL);
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	ATOMIC_ADD(&e->unordered_digest, x); /* a sum: any order gives it */
	return 0;
}

static int run_sample(struct worker *w, uint64_t p, const uint8_t *data,
		      size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	return !e->ring ? run_discard(w, p, data, len, read_status, err)
	       : e->plan->expands ? run_staged(w, p, data, len, read_status, err)
	       : run_direct(w, p, data, len, read_status, err);
}

/* The trace line of position p (tsrun(1), `bench --trace`), from the
 * draws its kernels noted, written whole. */
static int write_trace(struct worker *w, uint64_t p, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	struct ts_trace *l = w->trace_line;
	uint64_t epoch, index;
	ts_engine_pos_split(e, p, &epoch, &index);
	ts_trace_reset(l);
	ts_trace_raw(l, "{\"epoch\": %llu, \"index\": %llu, \"key\": %llu, \"item\": ",
		     (unsigned long long)epoch, (unsigned long long)index,
		     (unsigned long long)ts_engine_key(e, index));
	if (w->path)
		ts_trace_str(l, w->path);
	else
		ts_trace_raw(l, "null");
	ts_trace_raw(l, ", \"draws\": [%s]%s}\n", w->trace->buf ? w->trace->buf : "",
		     w->trace->failed ? ", \"truncated\": true" : "");
	if (l->failed)
		return ts_error_set(err, TS_E_NOMEM, "out of memory for the trace line");
	int rc = 0;
	pthread_mutex_lock(&e->trace_mu);
	for (size_t off = 0; off < l->len;) {
		ssize_t n = write(e->trace_fd, l->buf + off, l->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&e->trace_mu);
	return rc ? ts_error_set(err, rc, "writing the trace failed: %s", ts_error_name(rc)) : 0;
}

int ts_engine_run_sample(struct worker *w, uint64_t p, const uint8_t *data,
			 size_t len, int read_status, struct ts_error *err)
{
	if (!w->e->trace)
		return run_sample(w, p, data, len, read_status, err);
	ts_trace_reset(w->trace);
	w->path = NULL;
	ts_trace_cur = w->trace;
	int rc = run_sample(w, p, data, len, read_status, err);
	ts_trace_cur = NULL;
	return rc ? rc : write_trace(w, p, err);
}
