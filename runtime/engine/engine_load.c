/*
 * engine_load.c - position p's sample up to its last kernel op: its item
 * found in the epoch's order, its bytes (the I/O thread's, or read here),
 * the decode with the fused crop or resize done as an ROI + DCT-scaled
 * decode and one resample (or only the window a crop after the resize
 * keeps), and the middle ops run on the image; an item that fails under
 * on_error = skip is replaced by the next ones. What the image then
 * becomes (ring slot, staging, digest) is engine_sample.c's.
 */
#include "engine_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "augment.h"
#include "kernel.h"
#include "profile.h"
#include "rng.h"
#include "barrier.h"
#include "util.h"

int ts_engine_item_at(struct ts_engine *e, uint64_t epoch, uint64_t index,
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
 * decoder could not do its crop, else the resample to its size with the
 * filter its box b names (only the window win of it when win is set). */
static int crop_after_decode(struct worker *w, const struct ts_op *f,
			     bool apply_after, bool resample, int tw, int th,
			     const struct ts_kernel_box *b,
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
		rc = ts_aug_resize_window(&w->img, &w->tmp1, win, b->interp, b->antialias);
		if (rc)
			return ts_error_set(err, rc, "resize to %dx%d (its %dx%d center) failed",
					    tw, th, win->ow, win->oh);
		ts_image_swap(&w->img, &w->tmp1);
		return 0;
	}
	if (resample && (w->img.width != tw || w->img.height != th)) {
		rc = ts_aug_resize(&w->img, &w->tmp1, tw, th, b->interp, b->antialias);
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
static bool crop_window(const struct ts_decode_info *info, const struct ts_kernel_box *b,
			const struct ts_kernel_box *cc, int tw, int th,
			struct ts_decode_req *req, struct ts_aug_window *win)
{
	if (b->interp == TS_INTERP_NEAREST || getenv("TSRUN_DECODE_WHOLE"))
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
	ts_aug_resize_span(g.out_w, tw, b->interp, b->antialias, cx, cc->cw, &x0, &x1);
	ts_aug_resize_span(g.out_h, th, b->interp, b->antialias, cy, cc->ch, &y0, &y1);
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
int ts_engine_check_header(const struct ts_plan *plan, const struct ts_decode_info *info,
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
int ts_engine_decode_sample(struct worker *w, const struct ts_op *op,
			    const uint8_t *buf, size_t len, uint64_t epoch,
			    uint64_t index, struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	struct ts_decode_info info;
	uint64_t t = ts_prof_now();
	int rc = ts_decoder_info(w->dec, buf, len, &info, err);
	if (rc)
		return rc;
	if ((rc = ts_engine_check_header(plan, &info, err)))
		return rc;
	struct ts_decode_req req = {.color = op->color, .depth = op->depth};
	const struct ts_op *f = op->fused;
	bool resample = false, apply_after = false, windowed = false;
	int tw = 0, th = 0;
	struct ts_kernel_box cb, b = {0};
	struct ts_aug_window win;
	if (f) {
		/* The fused op's box (kernel.h) as the decoder's ROI and
		 * target size; a box it cannot read (padded, or outside the
		 * image) leaves the op to run after a full decode. */
		const struct ts_kernel *k = ts_kernel_find(f->kind);
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
			windowed = crop_window(&info, &b, &cb, b.tw, b.th, &req, &win);
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
	if (f && !apply_after)
		ts_kernel_note_box(f, &b, geom.scale_num);
	rc = crop_after_decode(w, f, apply_after, resample, tw, th, &b,
			       windowed ? &win : NULL, epoch, index, err);
	ts_prof_add(TS_PROF_RESAMPLE, t);
	return rc;
}

/* Everything between the decode (or synthetic source) and the output
 * stage, for one image: ops[first..] up to the first without a kernel
 * row (the output, a tile, a filter or a plugin). Returns the index of
 * the op it stopped at. */
size_t ts_engine_apply_middle(struct worker *w, size_t first, uint64_t epoch,
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
int ts_engine_read_item(struct worker *w, const struct ts_item *it, bool pre,
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
		int rc = ts_engine_item_at(e, epoch, (index + k) % e->n, &it);
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
		rc = ts_engine_read_item(w, &it, k == 0, data, len, read_status, &own, &buf,
					 &blen, &lerr);
		if (rc == 0) {
			ATOMIC_ADD(&e->bytes, blen); /* a count for stats */
			rc = ts_engine_decode_sample(w, &plan->ops[0], buf, blen, epoch,
						     ts_engine_key(e, index), &lerr);
		}
		free(own);
		if (rc == 0) {
			*first_op = 1;
			return 0;
		}
		if (plan->on_error == TS_ON_ERROR_FAIL || rc == TS_E_NOMEM)
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

/* Load, decode and run the middle ops of position p into w->img; *op_at
 * is the op the caller continues with (OUTPUT, TILE or FILTER). */
int ts_engine_prepare(struct worker *w, uint64_t p, const uint8_t *data,
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
	*op_at = ts_engine_apply_middle(w, first, *epoch, ts_engine_key(w->e, *index), &w->img,
					&rc, err);
	ts_prof_add(TS_PROF_RESAMPLE, t);
	return rc;
}
