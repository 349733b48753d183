/*
 * engine_load.c - position p's sample up to its last kernel op: its item
 * found in the epoch's order, its bytes (the I/O thread's, or read here),
 * the decode with the fused crop or resize done as an ROI + DCT-scaled
 * decode and one resample (or only the window a crop after the resize
 * keeps), and the middle ops run on the image; an item that fails under
 * on_error = skip is replaced by the next ones. With a decoded cache
 * (engine_cache.c), an item it holds is made from its entry instead (the
 * same pixels), and one it has room for is admitted the first time. What
 * the image then becomes (ring slot, staging, digest) is engine_sample.c's.
 */
#include "engine_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "profile.h"
#include "rng.h"
#include "barrier.h"
#include "util.h"

/* The item of (epoch, index) and its number in the data set. */
static int item_of(struct ts_engine *e, uint64_t epoch, uint64_t index, struct ts_item *it,
		   uint32_t *idp)
{
	pthread_mutex_lock(&e->mu);
	const uint32_t *perm = ts_engine_perm_get(e, epoch);
	/* The node's share of the epoch's order over the whole data set. */
	uint32_t id = perm ? perm[ts_share_node_pos(&e->node, index)] : 0;
	pthread_mutex_unlock(&e->mu);
	if (!perm)
		return TS_E_NOMEM;
	ts_source_item(e->ix, id, it);
	*idp = id;
	return 0;
}

int ts_engine_item_at(struct ts_engine *e, uint64_t epoch, uint64_t index,
		      struct ts_item *it)
{
	uint32_t id;
	return item_of(e, epoch, index, it, &id);
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
		o = o->output.n_parts > 0 ? &o->output.parts[0] : NULL;
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

/* What the decode op asks of the decoder for one sample (its fused op's
 * box as ROI and target), and what is left to do after it. */
struct decode_plan {
	const struct ts_op *f;      /* the fused op, or NULL */
	struct ts_decode_req req;
	bool resample, apply_after, windowed, drawn;
	int tw, th;
	struct ts_aug_window win;
	struct ts_kernel_box b;     /* the fused op's box: its resample filter */
};

static void plan_decode(const struct worker *w, const struct ts_op *op,
			const struct ts_decode_info *info, uint64_t epoch, uint64_t index,
			struct decode_plan *dp)
{
	const struct ts_plan *plan = w->e->plan;
	*dp = (struct decode_plan){.f = op->decode.fused,
				   .req = {.color = op->decode.color, .depth = op->decode.depth}};
	const struct ts_op *f = op->decode.fused;
	struct ts_kernel_box cb;
	if (f) {
		/* The fused op's box (kernel.h) as the decoder's ROI and
		 * target size; a box it cannot read (padded, or outside the
		 * image) leaves the op to run after a full decode. */
		const struct ts_kernel *k = ts_kernel_find(f->kind);
		struct ts_kernel_box *b = &dp->b;
		dp->apply_after = !k || !k->box;
		if (!dp->apply_after) {
			struct ts_rng rng;
			ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)f->index);
			k->box(f, info->width, info->height, &rng, b);
			dp->drawn = b->drawn;
			dp->apply_after = b->pads || b->x < 0 || b->y < 0 ||
					  b->x + b->cw > info->width || b->y + b->ch > info->height;
		}
		/* A fixed resize of the whole image, then a crop: decode
		 * and resample only the crop's window. */
		if (!dp->apply_after && !b->drawn && b->tw > 0 && b->x == 0 && b->y == 0 &&
		    b->cw == info->width && b->ch == info->height &&
		    crop_after_resize(plan, b->tw, b->th, &cb))
			dp->windowed = crop_window(info, b, &cb, b->tw, b->th, &dp->req, &dp->win);
		if (!dp->apply_after) {
			dp->resample = b->tw > 0;
			dp->tw = b->tw;
			dp->th = b->th;
		}
		if (!dp->apply_after && !dp->windowed) {
			dp->req.roi_x = b->x;
			dp->req.roi_y = b->y;
			dp->req.roi_w = b->cw;
			dp->req.roi_h = b->ch;
			dp->req.target_w = dp->tw;
			dp->req.target_h = dp->th;
		}
	}
	dp->req.strided = dp->windowed || dp->resample; /* a resample reads it */
}

/* Whether the decoded cache keeps this sample's item as a full-scale frame
 * (its fused op draws, or runs after a full decode) rather than as the
 * decode's output, which is then the same in every epoch. */
static bool keeps_frame(const struct decode_plan *dp)
{
	return dp->f && (dp->drawn || dp->apply_after);
}

/* Copy src's pixels into dst (compact rows). */
static int copy_image(struct ts_image *dst, const struct ts_image *src, struct ts_error *err)
{
	if (ts_image_reserve(dst, src->width, src->height, src->channels, src->dtype))
		return ts_error_set(err, TS_E_NOMEM, "out of memory for a %dx%d image",
				    src->width, src->height);
	size_t row = (size_t)src->width * (size_t)src->channels * ts_dtype_size(src->dtype);
	for (int y = 0; y < src->height; y++)
		memcpy(dst->data + (size_t)y * dst->stride, src->data + (size_t)y * src->stride,
		       row);
	return 0;
}

/*
 * The sample from a frame of its item (the decoded cache's: the whole
 * image at DCT scale fr->scale / 8), as the decoder would have made it
 * from the file: when the request decodes at that scale, its output is the
 * frame's window (decode.h, Exactness: scaled columns floor(roi_x * s) ..
 * ceil((roi_x + roi_w) * s) - 1, clamped), which the fused op's resample
 * then reads (prefetching its rows when cold: a frame from an earlier
 * epoch, in memory, not in the CPU's caches); *served false when it
 * decodes at another scale (the frame cannot stand in: the caller decodes
 * the file).
 */
static int from_frame(struct worker *w, const struct decode_plan *dp,
		      const struct ts_image *frame, const struct ts_cache_frame *fr, bool cold,
		      uint64_t epoch, uint64_t index, bool *served, struct ts_error *err)
{
	struct ts_decode_info info = {.format = (enum ts_format)fr->format,
				      .width = fr->full_w, .height = fr->full_h};
	struct ts_decode_geom g;
	*served = false;
	if (ts_decoder_geometry(&info, &dp->req, &g, NULL) < 0 || g.scale_num != fr->scale)
		return 0;
	const struct ts_decode_req *r = &dp->req;
	bool whole = r->roi_w <= 0 || r->roi_h <= 0;
	int x0 = whole ? 0 : (int)((long long)r->roi_x * g.scale_num / 8);
	int y0 = whole ? 0 : (int)((long long)r->roi_y * g.scale_num / 8);
	if (x0 + g.out_w > frame->width || y0 + g.out_h > frame->height)
		return 0; /* not this frame's geometry: decode the file */
	*served = true;
	if (dp->f && !dp->apply_after)
		ts_kernel_note_box(dp->f, &dp->b, g.scale_num);
	struct ts_image v = ts_image_view(frame, x0, y0, g.out_w, g.out_h);
	uint64_t t = ts_prof_now();
	int rc;
	if (!dp->apply_after && dp->resample && (v.width != dp->tw || v.height != dp->th)) {
		/* What crop_after_decode does, reading the frame in place. */
		const struct ts_aug_window win = {
			.full_w = v.width, .full_h = v.height, .rw = dp->tw, .rh = dp->th,
			.ow = dp->tw, .oh = dp->th, .cold = cold,
		};
		rc = ts_aug_resize_window(&v, &w->tmp1, &win, dp->b.interp, dp->b.antialias);
		if (rc)
			rc = ts_error_set(err, rc, "resize to %dx%d failed", dp->tw, dp->th);
		else
			ts_image_swap(&w->img, &w->tmp1);
	} else {
		rc = copy_image(&w->img, &v, err);
		if (rc == 0)
			rc = crop_after_decode(w, dp->f, dp->apply_after, dp->resample, dp->tw,
					       dp->th, &dp->b, NULL, epoch, index, err);
	}
	ts_prof_add(TS_PROF_RESAMPLE, t);
	return rc;
}

/* The DCT scale (eighths) a frame of item id is kept at: the one most of
 * its requests get, from 16 draws of the fused op's box on streams no
 * sample uses (the item's size decides it, not which draws); the larger
 * on a tie. PNG: full scale. */
static int frame_scale(const struct worker *w, const struct ts_op *op,
		       const struct ts_decode_info *info, uint32_t id)
{
	int count[9] = {0};
	for (uint64_t k = 0; k < 16; k++) {
		struct decode_plan dp;
		struct ts_decode_geom g;
		plan_decode(w, op, info, UINT64_MAX - k, id, &dp);
		if (ts_decoder_geometry(info, &dp.req, &g, NULL) == 0 && g.scale_num >= 1 &&
		    g.scale_num <= 8)
			count[g.scale_num]++;
	}
	int best = 8;
	for (int n = 4; n >= 1; n /= 2)
		if (count[n] > count[best])
			best = n;
	return best;
}

/* A claim on the decoded cache's entry of the item being decoded. */
struct cache_fill {
	uint32_t id;
	bool claimed;     /* the entry is ours to fill */
	bool pending;     /* w->img is the entry's image before ops[1] (the
			     caller admits it, maybe after more ops) */
};

/*
 * Admit the item of fc as a frame: the whole image decoded at the scale
 * most of its crops get (frame_scale) straight into the bytes its entry
 * reserves (no copy), then the sample made from it (from_frame). Returns
 * 0 or an error, the sample made; 1 when the caller is to decode the
 * sample from the file (the frame did not fit, or this request decodes at
 * another scale). t: when the decode's timing began.
 */
static int admit_frame(struct worker *w, const struct ts_op *op,
		       const struct ts_decode_info *info, const uint8_t *buf, size_t len,
		       const struct decode_plan *dp, uint64_t epoch, uint64_t index,
		       struct cache_fill *fc, uint64_t t, struct ts_error *err)
{
	struct ts_engine_cache *c = w->e->cache;
	struct ts_cache_frame fr = {.full_w = info->width, .full_h = info->height,
				    .format = (int)info->format,
				    .scale = frame_scale(w, op, info, fc->id)};
	struct ts_decode_req whole = {.color = op->decode.color, .depth = op->decode.depth,
				      .scale_num = fr.scale};
	struct ts_decode_geom g;
	int rc = ts_decoder_geometry(info, &whole, &g, err);
	if (rc)
		return rc; /* still claimed: the caller gives it back */
	enum ts_dtype dt = op->decode.depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8;
	int ch = op->decode.color == TS_COLOR_GRAY ? 1 : 3;
	size_t row = (size_t)g.out_w * (size_t)ch * ts_dtype_size(dt);
	uint64_t n = (uint64_t)row * (uint64_t)g.out_h;
	uint8_t *px = ts_engine_cache_reserve(c, fc->id, n);
	fc->claimed = false; /* final, or committed or dropped below */
	if (!px) {
		ts_prof_add(TS_PROF_DECODE, t); /* the header's */
		return 1; /* did not fit: the entry is final */
	}
	/* Exactly the bytes the decode's output takes (decode.h: compact
	 * rows when not strided), so ts_image_reserve never grows it. */
	struct ts_image frame = {.data = px, .capacity = (size_t)n};
	rc = ts_decoder_decode(w->dec, buf, len, &whole, &frame, NULL, err);
	ts_prof_add(TS_PROF_DECODE, t);
	ATOMIC_ADD(&w->e->decodes, 1); /* a count for stats */
	if (rc) {
		ts_engine_cache_drop(c, fc->id, n);
		return rc;
	}
	assert(frame.data == px && frame.stride == row && frame.width == g.out_w &&
	       frame.height == g.out_h && frame.channels == ch);
	ts_engine_cache_commit(c, fc->id, &frame, 0, &fr);
	bool served;
	rc = from_frame(w, dp, &frame, &fr, false, epoch, index, &served, err);
	return rc || served ? rc : 1;
}

/* Decode one encoded sample into w->img, with the fused crop or resize of
 * the decode op done as an ROI + DCT-scaled decode and one resample. With
 * fc (a claimed cache entry), the item is admitted: as a frame decoded
 * here at the scale most of its crops get (frame_scale; the sample then
 * made from it, or decoded from the file when its request is at another
 * scale), or, when nothing drew, as the decode's output (fc->pending: the
 * caller admits w->img). */
static int decode_item(struct worker *w, const struct ts_op *op, const uint8_t *buf,
		       size_t len, uint64_t epoch, uint64_t index, struct cache_fill *fc,
		       struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	struct ts_decode_info info;
	uint64_t t = ts_prof_now();
	int rc = ts_decoder_info(w->dec, buf, len, &info, err);
	if (rc)
		return rc;
	if ((rc = ts_engine_check_header(plan, &info, err)))
		return rc;
	struct decode_plan dp;
	plan_decode(w, op, &info, epoch, index, &dp);
	if (fc && fc->claimed && keeps_frame(&dp)) {
		rc = admit_frame(w, op, &info, buf, len, &dp, epoch, index, fc, t, err);
		if (rc <= 0)
			return rc;
		t = ts_prof_now();
	}
	struct ts_decode_geom geom;
	rc = ts_decoder_decode(w->dec, buf, len, &dp.req, &w->img, &geom, err);
	ts_prof_add(TS_PROF_DECODE, t);
	ATOMIC_ADD(&w->e->decodes, 1); /* a count for stats (views: one per sample) */
	if (rc)
		return rc;
	/* The rest is crop / resample (ts_prof_add on the way out). */
	t = ts_prof_now();
	if (dp.f && !dp.apply_after)
		ts_kernel_note_box(dp.f, &dp.b, geom.scale_num);
	rc = crop_after_decode(w, dp.f, dp.apply_after, dp.resample, dp.tw, dp.th, &dp.b,
			       dp.windowed ? &dp.win : NULL, epoch, index, err);
	ts_prof_add(TS_PROF_RESAMPLE, t);
	if (rc == 0 && fc && fc->claimed)
		fc->pending = true;
	return rc;
}

int ts_engine_decode_sample(struct worker *w, const struct ts_op *op,
			    const uint8_t *buf, size_t len, uint64_t epoch,
			    uint64_t index, struct ts_error *err)
{
	return decode_item(w, op, buf, len, epoch, index, NULL, err);
}

/* The sample from its item's decoded cache entry en: its image copied
 * (*first_op: the op it was cached before), or made from its frame.
 * *served false: a frame asked at another scale; decode the file. */
static int from_cache(struct worker *w, const struct ts_cache_entry *en, uint64_t epoch,
		      uint64_t index, size_t *first_op, bool *served, struct ts_error *err)
{
	const struct ts_engine *e = w->e;
	struct ts_image v = ts_engine_cache_image(e->cache, en);
	if (en->resume > 0) {
		*served = true;
		*first_op = en->resume;
		return copy_image(&w->img, &v, err);
	}
	struct ts_cache_frame fr = {.full_w = en->full_w, .full_h = en->full_h,
				    .format = en->format, .scale = en->scale};
	struct ts_decode_info info = {.format = (enum ts_format)en->format,
				      .width = en->full_w, .height = en->full_h};
	struct decode_plan dp;
	plan_decode(w, &e->plan->ops[0], &info, epoch, index, &dp);
	*first_op = 1;
	return from_frame(w, &dp, &v, &fr, true, epoch, index, served, err);
}

/* Admit the image of a pending fill: w->img before ops[first], carried
 * on over the kernel ops after it that draw nothing for this item (their
 * output is then the same in every epoch; an op with branches forks
 * streams the draw count does not see, so it ends the run). Returns the
 * op the sample goes on with; the ops run are the sample's. */
static size_t admit_image(struct worker *w, uint32_t id, size_t first, uint64_t epoch,
			  uint64_t index, int *rc, struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	size_t i = first;
	bool copied = false;
	*rc = 0;
	for (; i < plan->n_ops && i < UINT16_MAX; i++) {
		const struct ts_op *op = &plan->ops[i];
		const struct ts_kernel *k = ts_kernel_find(op->kind);
		size_t nb;
		ts_op_branches(op, &nb);
		if (!k || nb)
			break;
		if ((*rc = copy_image(&w->fill, &w->img, err)))
			break;
		copied = true;
		struct ts_rng rng;
		ts_rng_init(&rng, plan->source.seed, epoch, index, (uint64_t)op->index);
		if ((*rc = k->apply(op, &w->img, &w->tmp1, &rng, err)))
			break;
		if (rng.ctr != 0) /* it drew: w->fill is before it */
			break;
		copied = false;
	}
	if (*rc) {
		ts_engine_cache_abandon(w->e->cache, id);
		return i;
	}
	ts_engine_cache_put(w->e->cache, id, copied ? &w->fill : &w->img, (int)i, NULL);
	return copied ? i + 1 : i;
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
 * success w->img holds the decoded image and *label its label; from the
 * decoded cache when it holds the item; *fill set when the caller is to
 * admit the item's image (admit_image). */
static int load_sample(struct worker *w, uint64_t epoch, uint64_t index,
		       const uint8_t *data, size_t len, int read_status,
		       int32_t *label, size_t *first_op, struct cache_fill *fill,
		       struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	uint64_t key = ts_engine_key(e, index); /* the sample's streams */
	for (uint64_t k = 0; k < e->n; k++) {
		struct ts_item it;
		uint32_t id;
		int rc = item_of(e, epoch, (index + k) % e->n, &it, &id);
		if (rc)
			return ts_error_set(err, rc, "out of memory");
		*label = it.label;
		w->path = it.path;
		if (!ts_source_kind_encoded(plan->source.kind)) {
			*first_op = 0;
			return ts_source_synthetic(&plan->source, it.offset, &w->img, label);
		}
		const struct ts_cache_entry *en = ts_engine_cache_get(e->cache, id);
		*fill = (struct cache_fill){.id = id};
		if (en) {
			bool served;
			rc = from_cache(w, en, epoch, key, first_op, &served, err);
			if (rc || served) {
				ts_engine_cache_count(e->cache, TS_CACHE_HIT);
				return rc;
			}
			ts_engine_cache_count(e->cache, TS_CACHE_BYPASS);
		} else if (e->cache) {
			ts_engine_cache_count(e->cache, TS_CACHE_MISS);
			fill->claimed = ts_engine_cache_claim(e->cache, id);
		}
		uint8_t *own = NULL;
		const uint8_t *buf = NULL;
		size_t blen = 0;
		struct ts_error lerr = {0};
		rc = ts_engine_read_item(w, &it, k == 0, data, len, read_status, &own, &buf,
					 &blen, &lerr);
		if (rc == 0) {
			ATOMIC_ADD(&e->bytes, blen); /* a count for stats */
			rc = decode_item(w, &plan->ops[0], buf, blen, epoch, key, fill, &lerr);
		}
		free(own);
		if (rc == 0) {
			*first_op = 1;
			return 0;
		}
		if (fill->claimed)
			ts_engine_cache_abandon(e->cache, id);
		*fill = (struct cache_fill){0};
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
	struct cache_fill fill = {0};
	ts_engine_pos_split(w->e, p, epoch, index);
	*label = 0;
	int rc = load_sample(w, *epoch, *index, data, len, read_status, label, &first, &fill,
			     err);
	if (rc)
		return rc;
	uint64_t t = ts_prof_now();
	uint64_t key = ts_engine_key(w->e, *index); /* the sample's streams */
	if (fill.pending) {
		first = admit_image(w, fill.id, first, *epoch, key, &rc, err);
		if (rc) {
			ts_prof_add(TS_PROF_RESAMPLE, t);
			return rc;
		}
	}
	*op_at = ts_engine_apply_middle(w, first, *epoch, key, &w->img, &rc, err);
	ts_prof_add(TS_PROF_RESAMPLE, t);
	return rc;
}
