/*
 * engine_sample.c - the engine's per-sample work: position p's item
 * loaded (from the I/O thread's bytes or read here), decoded with its
 * fused crop, run through the middle ops and plugins, and written by the
 * output stage straight into its ring slot (one-to-one pipelines), into
 * staging committed in position order (tile, filter, plugin), or into a
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
#include "barrier.h"
#include "memory.h"
#include "util.h"

static int item_at(struct ts_engine *e, uint64_t epoch, uint64_t index,
		   struct ts_item *it)
{
	pthread_mutex_lock(&e->mu);
	const uint32_t *perm = ts_engine_perm_get(e, epoch);
	/* The node's share of the epoch's order over the whole data set. */
	uint32_t id = perm ? perm[ts_share_node_pos(&e->node, index)] : 0;
	pthread_mutex_unlock(&e->mu);
	if (!perm)
		return TS_E_NOMEM;
	ts_source_item(e->ix, id, it);
	return 0;
}

/* The fused op's work left after the ROI decode: the op itself when the
 * decoder could not do its crop, else the resample to its size (only the
 * window win of it when win is set). */
static int crop_after_decode(struct worker *w, const struct ts_op *f,
			     bool apply_after, bool resample, int tw, int th,
			     const struct ts_aug_window *win, uint64_t epoch,
			     uint64_t index, struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	int rc;
	if (f && apply_after) {
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)f->index);
		return ts_kernel_apply(f, &w->img, &w->tmp1, &rng, err);
	}
	if (win) {
		rc = ts_aug_resize_window(&w->img, &w->tmp1, win, f->interp, f->antialias);
		if (rc)
			return ts_error_set(err, rc, "resize to %dx%d (its %dx%d center) failed",
					    tw, th, win->ow, win->oh);
		ts_image_swap(&w->img, &w->tmp1);
		return 0;
	}
	if (resample && (w->img.width != tw || w->img.height != th)) {
		rc = ts_aug_resize(&w->img, &w->tmp1, tw, th, f->interp, f->antialias);
		if (rc)
			return ts_error_set(err, rc, "resize to %dx%d failed", tw, th);
		ts_image_swap(&w->img, &w->tmp1);
	}
	ts_image_compact(&w->img); /* decoded at its size already: may be strided */
	return 0;
}

/* The crop that comes straight after the decode's fused resize (the val
 * recipe: resize(256) | center_crop(224), the crop maybe the first part
 * of the output stage): a fixed box (kernel.h) inside the tw x th resize,
 * not resampled, in *cb; NULL when the op after it is none such. */
static const struct ts_op *crop_after_resize(const struct ts_plan *plan, int tw,
					     int th, struct ts_kernel_box *cb)
{
	if (plan->n_ops < 2)
		return NULL;
	const struct ts_op *o = &plan->ops[1];
	if (ts_op_is_output(o))
		o = o->n_parts > 0 ? &o->parts[0] : NULL;
	const struct ts_kernel *k = o ? ts_kernel_find(o->kind) : NULL;
	if (!k || !k->box)
		return NULL;
	/* A box that draws is refused below: a throwaway stream will do. */
	struct ts_rng rng;
	ts_rng_init(&rng, 0, 0, 0, 0);
	k->box(o, tw, th, &rng, cb);
	if (cb->drawn || cb->pads || cb->tw > 0 || cb->x < 0 || cb->y < 0 ||
	    cb->x + cb->cw > tw || cb->y + cb->ch > th)
		return NULL;
	return o;
}

/*
 * Resize to tw x th then center crop cc, as one: the decode covers only the
 * source pixels the crop's outputs read (ts_aug_resize_span), at the DCT
 * scale the whole image's decode would get, and only the crop's window of
 * the resize is computed; the pixels are those of the whole resize cropped
 * (the same coefficients per output), and the crop after it then takes the
 * whole image. False (nothing set) when the crop needs padding or the
 * interpolation is nearest; TSRUN_DECODE_WHOLE set (a testing hook) always.
 */
static bool crop_window(const struct ts_decode_info *info, const struct ts_op *f,
			const struct ts_kernel_box *cc, int tw, int th,
			struct ts_decode_req *req, struct ts_aug_window *win)
{
	if (f->interp == TS_INTERP_NEAREST || getenv("TSRUN_DECODE_WHOLE"))
		return false;
	struct ts_decode_req whole = *req;
	whole.target_w = tw;
	whole.target_h = th;
	struct ts_decode_geom g;
	if (ts_decoder_geometry(info, &whole, &g, NULL) < 0)
		return false;
	const int n = g.scale_num;
	const int cx = cc->x, cy = cc->y;
	int x0, x1, y0, y1;
	ts_aug_resize_span(g.out_w, tw, f->interp, f->antialias, cx, cc->cw, &x0, &x1);
	ts_aug_resize_span(g.out_h, th, f->interp, f->antialias, cy, cc->ch, &y0, &y1);
	/* Scaled pixel i covers full-resolution [i * 8 / n, (i + 1) * 8 / n):
	 * this region's decode at n/8 starts at scaled (x0, y0) and ends at
	 * x1, y1 (the scaled image's edge when clamped). */
	long long rx1 = (long long)x1 * 8 / n, ry1 = (long long)y1 * 8 / n;
	req->roi_x = x0 * 8 / n;
	req->roi_y = y0 * 8 / n;
	req->roi_w = (int)(rx1 < info->width ? rx1 : info->width) - req->roi_x;
	req->roi_h = (int)(ry1 < info->height ? ry1 : info->height) - req->roi_y;
	req->scale_num = n;
	*win = (struct ts_aug_window){
		.full_w = g.out_w, .full_h = g.out_h, .in_x = x0, .in_y = y0,
		.rw = tw, .rh = th, .ox = cx, .oy = cy, .ow = cc->cw, .oh = cc->ch,
	};
	return true;
}

/* The header's size, checked before anything is computed from it or
 * allocated for it: a 19 KB progressive JPEG can declare 16384 x
 * 16384 and cost 805 MB to decode, in every worker at once. The banded
 * tile path checks it too (the same files cost it time, if not memory). */
static int check_header(const struct ts_plan *plan, const struct ts_decode_info *info,
			struct ts_error *err)
{
	if (info->width <= 0 || info->height <= 0 || info->width > TS_DECODE_MAX_DIM ||
	    info->height > TS_DECODE_MAX_DIM)
		return ts_error_set(err, TS_E_DECODE, "image too large: %dx%d (limit %d "
				    "pixels a side)", info->width, info->height, TS_DECODE_MAX_DIM);
	if ((uint64_t)info->width * (uint64_t)info->height > plan->max_image_pixels)
		return ts_error_set(err, TS_E_DECODE,
				    "image is %dx%d (%.1f Mpx), more than max_image_pixels "
				    "(%.1f Mpx): not decoded; raise max_image_pixels in the "
				    "serve block if it is meant", info->width, info->height,
				    (double)info->width * (double)info->height / 1e6,
				    (double)plan->max_image_pixels / 1e6);
	return 0;
}

/* Decode one encoded sample into w->img, with the fused crop or resize of
 * the decode op done as an ROI + DCT-scaled decode and one resample. */
static int decode_sample(struct worker *w, const struct ts_op *op,
			 const uint8_t *buf, size_t len, uint64_t epoch,
			 uint64_t index, struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	struct ts_decode_info info;
	uint64_t t = ts_prof_now();
	int rc = ts_decoder_info(w->dec, buf, len, &info, err);
	if (rc)
		return rc;
	if ((rc = check_header(plan, &info, err)))
		return rc;
	struct ts_decode_req req = {.color = op->color, .depth = op->depth};
	const struct ts_op *f = op->fused;
	bool resample = false, apply_after = false, windowed = false;
	int tw = 0, th = 0;
	struct ts_kernel_box cb;
	struct ts_aug_window win;
	if (f) {
		/* The fused op's box (kernel.h) as the decoder's ROI and
		 * target size; a box it cannot read (padded, or outside the
		 * image) leaves the op to run after a full decode. */
		const struct ts_kernel *k = ts_kernel_find(f->kind);
		struct ts_kernel_box b = {0};
		apply_after = !k || !k->box;
		if (!apply_after) {
			struct ts_rng rng;
			ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)f->index);
			k->box(f, info.width, info.height, &rng, &b);
			apply_after = b.pads || b.x < 0 || b.y < 0 ||
				      b.x + b.cw > info.width || b.y + b.ch > info.height;
		}
		/* A fixed resize of the whole image, then a crop: decode
		 * and resample only the crop's window. */
		if (!apply_after && !b.drawn && b.tw > 0 && b.x == 0 && b.y == 0 &&
		    b.cw == info.width && b.ch == info.height &&
		    crop_after_resize(plan, b.tw, b.th, &cb))
			windowed = crop_window(&info, f, &cb, b.tw, b.th, &req, &win);
		if (!apply_after) {
			resample = b.tw > 0;
			tw = b.tw;
			th = b.th;
		}
		if (!apply_after && !windowed) {
			req.roi_x = b.x;
			req.roi_y = b.y;
			req.roi_w = b.cw;
			req.roi_h = b.ch;
			req.target_w = tw;
			req.target_h = th;
		}
	}
	struct ts_decode_geom geom;
	req.strided = windowed || resample; /* a resample reads it (crop_after_decode) */
	rc = ts_decoder_decode(w->dec, buf, len, &req, &w->img, &geom, err);
	ts_prof_add(TS_PROF_DECODE, t);
	ATOMIC_ADD(&w->e->decodes, 1); /* a count for stats (views: one per sample) */
	if (rc)
		return rc;
	/* The rest is crop / resample (ts_prof_add on the way out). */
	t = ts_prof_now();
	rc = crop_after_decode(w, f, apply_after, resample, tw, th, windowed ? &win : NULL,
			       epoch, index, err);
	ts_prof_add(TS_PROF_RESAMPLE, t);
	return rc;
}

/* Everything between the decode (or synthetic source) and the output
 * stage, for one image: ops[first..] up to the first without a kernel
 * row (the output, a tile, a filter or a plugin). Returns the index of
 * the op it stopped at. */
static size_t apply_middle(struct worker *w, size_t first, uint64_t epoch,
			   uint64_t index, struct ts_image *img, int *rc,
			   struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	size_t i = first;
	*rc = 0;
	for (; i < plan->n_ops; i++) {
		const struct ts_op *op = &plan->ops[i];
		const struct ts_kernel *k = ts_kernel_find(op->kind);
		if (!k)
			break; /* an engine stage: output, tile, filter, plugin */
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)op->index);
		*rc = k->apply(op, img, &w->tmp1, &rng, err);
		if (*rc)
			break;
	}
	return i;
}

/* The bytes of item it: the I/O thread's (pre-read data/len, or its
 * read_status) when pre is set and it read them, else read here into
 * *own (the caller frees it). Errors are in lerr. */
static int read_item(struct worker *w, const struct ts_item *it, bool pre,
		     const uint8_t *data, size_t len, int read_status,
		     uint8_t **own, const uint8_t **buf, size_t *blen,
		     struct ts_error *lerr)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	int rc;
	if (pre && (data || read_status)) {
		/* The I/O thread already read it (or failed to). */
		*buf = data;
		*blen = len;
		rc = read_status;
		if (rc == -ESPIPE)
			ts_error_set(lerr, rc, "%s", TS_SOURCE_NOT_REGULAR);
		else if (rc == -EFBIG)
			ts_source_too_big(it->is_range ? it->size : ts_source_file_size(it->path),
					  plan->max_file_size, lerr);
		else if (rc)
			ts_error_set(lerr, rc, "%s", ts_error_name(rc));
		return rc;
	}
	uint64_t t = ts_prof_now();
	rc = ts_source_read(it, plan->max_file_size, own, blen, lerr);
	ts_prof_add(TS_PROF_READ, t);
	*buf = *own;
	/* Without io_uring the workers read: the same testing hook
	 * (TSRUN_FAULT_READ, reader.h) as the reader's. */
	int frc = e->reader ? rc : ts_reader_fault(it->is_range, rc, blen);
	if (frc != rc) {
		rc = frc;
		ts_error_set(lerr, rc, "%s", ts_error_name(rc));
	}
	return rc;
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
		if (!ts_source_kind_encoded(plan->source.kind)) {
			*first_op = 0;
			return ts_source_synthetic(&plan->source, it.offset, &w->img, label);
		}
		uint8_t *own = NULL;
		const uint8_t *buf = NULL;
		size_t blen = 0;
		struct ts_error lerr = {0};
		rc = read_item(w, &it, k == 0, data, len, read_status, &own, &buf, &blen, &lerr);
		if (rc == 0) {
			ATOMIC_ADD(&e->bytes, blen); /* a count for stats */
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
		ts_engine_note_skip(e, it.path, lerr.msg[0] ? lerr.msg : ts_error_name(rc),
				    k == 0);
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
		if (smp_load_acquire(&e->stop)) /* pairs with the stopper's release */
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
	ts_engine_pos_split(w->e, p, epoch, index);
	*label = 0;
	int rc = load_sample(w, *epoch, *index, data, len, read_status, label, &first, err);
	if (rc)
		return rc;
	uint64_t t = ts_prof_now();
	*op_at = apply_middle(w, first, *epoch, *index, &w->img, &rc, err);
	ts_prof_add(TS_PROF_RESAMPLE, t);
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
	uint64_t t = ts_prof_now();
	rc = wait_slot(e, seq);
	ts_prof_add(TS_PROF_RING, t);
	if (rc)
		return rc == -ECANCELED ? rc : ts_error_set(err, rc, "ring wait failed");
	void *slot = ts_ring_slot(e->ring, seq);
	if (plan->n_views) /* views(): the op at i is the views op */
		rc = ts_engine_views_write(w, &plan->ops[i], epoch, index, slot,
					   plan->sample_bytes, err);
	else
		rc = ts_out_write(&plan->ops[i], &w->img, plan->source.seed, epoch, index,
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
static int stage_one(struct worker *w, struct ts_image *cur, size_t i,
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
static int wait_turn(struct ts_engine *e, uint64_t p)
{
	pthread_mutex_lock(&e->mu);
	while (e->commit_pos != p && !smp_load_acquire(&e->stop))
		pthread_cond_wait(&e->cv_commit, &e->mu);
	pthread_mutex_unlock(&e->mu);
	return smp_load_acquire(&e->stop) ? -ECANCELED : 0;
}

/* Write the staged outputs of position p to the ring, in order; p holds
 * the commit turn (wait_turn). *begun: whether some of p's outputs are
 * already out (the stream's per-epoch index restarts at p's first). */
static int flush_stage(struct worker *w, uint64_t epoch, int32_t label,
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
static void end_turn(struct ts_engine *e, uint64_t p)
{
	pthread_mutex_lock(&e->mu);
	e->commit_pos = p + 1;
	pthread_cond_broadcast(&e->cv_commit);
	pthread_mutex_unlock(&e->mu);
}

/* Whether the ops make the tiles of each frame cut from bands of rows
 * decoded one at a time (run_banded): a decode with nothing fused into it
 * straight followed by the tile, of files. TSRUN_TILE_WHOLE_FRAME set (a
 * testing hook) decodes every frame whole, as before banding. */
static bool banded(const struct ts_plan *plan)
{
	return ts_plan_tiles_banded(plan) && !getenv("TSRUN_TILE_WHOLE_FRAME");
}

/*
 * The tiles of one frame, encoded in buf, cut as the whole-frame path
 * cuts them (tile (tx, ty) at (tx * stride_w, ty * stride_h), row-major)
 * but from a band of tile->size_h rows in w->img decoded row by row: the
 * band moves down by stride_h rows, keeping the rows two bands share
 * (stride < size) or skipping those no tile covers (stride > size), and
 * the rows below the last band are decoded only to find corrupt data as a
 * whole decode would. Interlaced PNGs and progressive JPEGs are decoded
 * whole (every row of them is needed before the first). Staging is
 * flushed to the ring once it holds TS_PLAN_BAND_FLUSH bytes (waiting for
 * p's turn), so a worker holds one band, the tiles of one band row and
 * that much staging, not the frame. *dec_failed: the error is the file's
 * (its bytes do not decode), not the pipeline's.
 */
static int banded_frame(struct worker *w, uint64_t p, const uint8_t *buf, size_t len,
			uint64_t epoch, uint64_t index, int32_t label, int32_t *outs,
			bool *begun, bool *dec_failed, struct ts_error *lerr,
			struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	const struct ts_op *dop = &plan->ops[0], *tile = &plan->ops[1];
	struct ts_decode_req req = {.color = dop->color, .depth = dop->depth};
	struct ts_decode_info info;
	uint64_t t = ts_prof_now();
	int rc = ts_decoder_info(w->dec, buf, len, &info, lerr);
	if (rc == 0)
		rc = check_header(plan, &info, lerr);
	bool whole = rc == 0 && info.progressive;
	if (rc == 0)
		rc = whole ? decode_sample(w, dop, buf, len, epoch, index, lerr)
			   : ts_decoder_rows_begin(w->dec, buf, len, &req, &info, lerr);
	ts_prof_add(TS_PROF_DECODE, t);
	if (rc) {
		*dec_failed = true;
		return rc;
	}
	int nx, ny;
	ts_aug_tile_grid(info.width, info.height, tile, &nx, &ny);
	int sh = tile->stride_h > 0 ? tile->stride_h : tile->size_h;
	int sw = tile->stride_w > 0 ? tile->stride_w : tile->size_w;
	int bh = tile->size_h, have = 0, next = 0; /* rows in the band; next row */
	if (!whole && ny > 0 &&
	    ts_image_reserve(&w->img, info.width, bh, req.color == TS_COLOR_GRAY ? 1 : 3,
			     req.depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8) < 0) {
		ts_decoder_rows_end(w->dec);
		return ts_error_set(err, TS_E_NOMEM, "out of memory for a %dx%d band of rows",
				    info.width, bh);
	}
	size_t sb = plan->sample_bytes;
	for (int ty = 0; ty < ny; ty++) {
		int y0 = 0;
		if (whole) {
			y0 = ty * sh;
		} else {
			/* Move the band to rows [ty * sh, ty * sh + bh). */
			int top = ty * sh, keep = have - (top - (next - have));
			if (keep > 0 && keep < have)
				memmove(w->img.data, w->img.data + (size_t)(have - keep) * w->img.stride,
					(size_t)keep * w->img.stride);
			have = keep > 0 ? keep : 0;
			t = ts_prof_now();
			rc = 0;
			if (next < top) {
				rc = ts_decoder_rows_read(w->dec, NULL, 0, top - next, lerr);
				next = top;
			}
			if (rc == 0)
				rc = ts_decoder_rows_read(w->dec,
							  w->img.data + (size_t)have * w->img.stride,
							  w->img.stride, bh - have, lerr);
			ts_prof_add(TS_PROF_DECODE, t);
			if (rc) {
				ts_decoder_rows_end(w->dec);
				*dec_failed = true;
				return rc;
			}
			next += bh - have;
			have = bh;
		}
		for (int tx = 0; tx < nx; tx++) {
			rc = ts_aug_crop(&w->img, &w->tmp3, tx * sw, y0, tile->size_w, tile->size_h);
			if (rc) {
				ts_decoder_rows_end(w->dec);
				return ts_error_set(err, rc, "tile crop failed");
			}
			/* Each tile's random stream: as run_staged's. */
			uint64_t sub = (index << 20) ^ (uint64_t)(ty * nx + tx);
			rc = stage_one(w, &w->tmp3, 2, epoch, sub, ty * nx + tx, outs, err);
			if (rc) {
				ts_decoder_rows_end(w->dec);
				return rc;
			}
		}
		if ((size_t)w->stage_n * sb >= TS_PLAN_BAND_FLUSH) {
			if ((rc = wait_turn(e, p)) == 0)
				rc = flush_stage(w, epoch, label, begun, err);
			if (rc) {
				ts_decoder_rows_end(w->dec);
				return rc;
			}
		}
	}
	rc = 0;
	if (!whole) {
		/* The rest, for its errors; one row of scratch at a time. */
		t = ts_prof_now();
		rc = ts_decoder_rows_read(w->dec, NULL, 0, info.height - next, lerr);
		ts_prof_add(TS_PROF_DECODE, t);
		ts_decoder_rows_end(w->dec);
		*dec_failed = rc != 0;
	}
	return rc;
}

/*
 * A tile pipeline in bands (banded()): position p's frame is read and
 * tiled by banded_frame. A file that does not decode is replaced by the
 * next items, as load_sample does, while none of its tiles is out; one
 * found corrupt after some were flushed (frames over TS_PLAN_BAND_FLUSH
 * bytes of tiles) keeps those, is listed as skipped and not replaced.
 */
static int run_banded(struct worker *w, uint64_t p, const uint8_t *data,
		      size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	uint64_t epoch, index;
	bool begun = false;
	int32_t label = 0, outs = 0;
	int rc;
	ts_engine_pos_split(e, p, &epoch, &index);
	w->stage_n = 0;
	for (uint64_t k = 0;; k++) {
		if (k == e->n)
			return ts_error_set(err, TS_E_SOURCE,
					    "every item of epoch %llu failed to load; nothing to serve",
					    (unsigned long long)epoch);
		struct ts_item it;
		if ((rc = item_at(e, epoch, (index + k) % e->n, &it)))
			return ts_error_set(err, rc, "out of memory");
		label = it.label;
		w->path = it.path;
		uint8_t *own = NULL;
		const uint8_t *buf = NULL;
		size_t blen = 0;
		struct ts_error lerr = {0};
		bool dec_failed = false;
		rc = read_item(w, &it, k == 0, data, len, read_status, &own, &buf, &blen, &lerr);
		if (rc == 0) {
			ATOMIC_ADD(&e->bytes, blen); /* a count for stats */
			rc = banded_frame(w, p, buf, blen, epoch, index, label, &outs, &begun,
					  &dec_failed, &lerr, err);
		} else {
			dec_failed = true;
		}
		free(own);
		if (rc == 0)
			break;
		if (!dec_failed)
			return rc;
		if (plan->on_error == TS_ON_ERROR_FAIL || rc == -ENOMEM || rc == TS_E_NOMEM)
			return ts_error_set(err, rc, "%s: %s", it.path ? it.path : "(item)",
					    lerr.msg[0] ? lerr.msg : ts_error_name(rc));
		ts_engine_note_skip(e, it.path, lerr.msg[0] ? lerr.msg : ts_error_name(rc),
				    k == 0);
		if (begun) {
			/* Tiles of it are out: what else it staged goes too. */
			break;
		}
		w->stage_n = 0;
		outs = 0;
		data = NULL;
		read_status = 0;
	}
	if ((rc = wait_turn(e, p)) || (rc = flush_stage(w, epoch, label, &begun, err)))
		return rc;
	end_turn(e, p);
	return 0;
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
	if (banded(plan))
		return run_banded(w, p, data, len, read_status, err);
	int rc = prepare(w, p, data, len, read_status, &epoch, &index, &label, &i, err);
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
			/* Each tile's random stream: (epoch, index, tile) folded
			 * into one index that no other sample uses. */
			uint64_t sub = (index << 20) ^ (uint64_t)(ty * nx + tx);
			rc = stage_one(w, cur, i, epoch, sub, tile ? ty * nx + tx : -1, &outs, err);
			if (rc)
				return rc;
		}
	}
	/* Commit in position order. */
	bool begun = false;
	if ((rc = wait_turn(e, p)) || (rc = flush_stage(w, epoch, label, &begun, err)))
		return rc;
	end_turn(e, p);
	return 0;
}

/* Shape the output stage writes for img in a variable-size plan. */
static void out_shape(const struct ts_op *out, const struct ts_image *img,
		      uint64_t seed, struct ts_engine_sample *s)
{
	ts_out_shape(out, img, seed, s->epoch, s->index, &s->width, &s->height,
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
	int rc = prepare(w, p, data, len, read_status, &epoch, &index, &label, &i, err);
	if (rc)
		return rc;
	struct ts_engine_sample smp = {.pos = p, .epoch = epoch, .index = index,
				       .label = label, .path = w->path};
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
	    !ts_out_is_copy(&plan->ops[i], &w->img, plan->source.seed, epoch, index) ||
	    w->img.stride * (size_t)w->img.height != n) {
		if (n > w->out_cap) {
			uint8_t *o = realloc(w->out, n);
			if (!o)
				return ts_error_set(err, TS_E_NOMEM, "out of memory");
			w->out = o;
			w->out_cap = n;
		}
		rc = plan->n_views
			     ? ts_engine_views_write(w, &plan->ops[i], epoch, index, w->out, n, err)
			     : ts_out_write(&plan->ops[i], &w->img, plan->source.seed, epoch,
					    index, &w->tmp2, &w->tmp3, w->out, n, err);
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

int ts_engine_run_sample(struct worker *w, uint64_t p, const uint8_t *data,
			 size_t len, int read_status, struct ts_error *err)
{
	struct ts_engine *e = w->e;
	return !e->ring ? run_discard(w, p, data, len, read_status, err)
	       : e->plan->expands ? run_staged(w, p, data, len, read_status, err)
	       : run_direct(w, p, data, len, read_status, err);
}
