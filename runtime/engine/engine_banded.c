/*
 * engine_banded.c - tile pipelines whose tiles are cut from bands of rows
 * (a decode with nothing fused into it straight followed by the tile, of
 * files): a frame is decoded a band at a time, each band's tiles staged
 * and flushed to the ring as staging fills, so a worker holds one band
 * and its tiles rather than the whole frame; a file found corrupt is
 * replaced while none of its tiles is out.
 */
#include "engine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "memory.h"
#include "profile.h"
#include "barrier.h"
#include "util.h"

/* Whether the ops make the tiles of each frame cut from bands of rows
 * decoded one at a time (ts_engine_run_banded): a decode with nothing
 * fused into it straight followed by the tile, of files. TSRUN_TILE_WHOLE_FRAME set (a
 * testing hook) decodes every frame whole, as before banding. */
bool ts_engine_banded(const struct ts_plan *plan)
{
	return ts_plan_tiles_banded(plan) && !getenv("TSRUN_TILE_WHOLE_FRAME");
}

/*
 * The tiles of one frame, encoded in buf, cut as the whole-frame path
 * cuts them (tile (tx, ty) at (tx * stride_w, ty * stride_h), row-major)
 * but from a band of tile->tile.size_h rows in w->img decoded row by row: the
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
			uint64_t epoch, uint64_t key, int32_t label, int32_t *outs,
			bool *begun, bool *dec_failed, struct ts_error *lerr,
			struct ts_error *err)
{
	struct ts_engine *e = w->e;
	const struct ts_plan *plan = e->plan;
	const struct ts_op *dop = &plan->ops[0], *tile = &plan->ops[1];
	struct ts_decode_req req = {.color = dop->decode.color, .depth = dop->decode.depth};
	struct ts_decode_info info;
	uint64_t t = ts_prof_now();
	int rc = ts_decoder_info(w->dec, buf, len, &info, lerr);
	if (rc == 0)
		rc = ts_engine_check_header(plan, &info, lerr);
	bool whole = rc == 0 && info.progressive;
	if (rc == 0)
		rc = whole ? ts_engine_decode_sample(w, dop, buf, len, epoch, key, lerr)
			   : ts_decoder_rows_begin(w->dec, buf, len, &req, &info, lerr);
	ts_prof_add(TS_PROF_DECODE, t);
	if (rc) {
		*dec_failed = true;
		return rc;
	}
	int nx, ny;
	ts_aug_tile_grid(info.width, info.height, &tile->tile, &nx, &ny);
	int sh = tile->tile.stride_h > 0 ? tile->tile.stride_h : tile->tile.size_h;
	int sw = tile->tile.stride_w > 0 ? tile->tile.stride_w : tile->tile.size_w;
	int bh = tile->tile.size_h, have = 0, next = 0; /* rows in the band; next row */
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
			rc = ts_aug_crop(&w->img, &w->tmp3, tx * sw, y0, tile->tile.size_w,
					 tile->tile.size_h);
			if (rc) {
				ts_decoder_rows_end(w->dec);
				return ts_error_set(err, rc, "tile crop failed");
			}
			/* Each tile's random stream: as run_staged's (engine_sample.c). */
			uint64_t sub = (key << 20) ^ (uint64_t)(ty * nx + tx);
			rc = ts_engine_stage_one(w, &w->tmp3, 2, epoch, sub, ty * nx + tx, outs,
						 err);
			if (rc) {
				ts_decoder_rows_end(w->dec);
				return rc;
			}
		}
		if ((size_t)w->stage_n * sb >= TS_PLAN_BAND_FLUSH) {
			if ((rc = ts_engine_wait_turn(e, p)) == 0)
				rc = ts_engine_flush_stage(w, epoch, label, begun, err);
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
 * A tile pipeline in bands (ts_engine_banded): position p's frame is read
 * and tiled by banded_frame. A file that does not decode is replaced by
 * the next items, as load_sample (engine_load.c) does, while none of its
 * tiles is out; one found corrupt after some were flushed (frames over
 * TS_PLAN_BAND_FLUSH bytes of tiles) keeps those, is listed as skipped
 * and not replaced.
 */
int ts_engine_run_banded(struct worker *w, uint64_t p, const uint8_t *data,
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
		if ((rc = ts_engine_item_at(e, epoch, (index + k) % e->n, &it)))
			return ts_error_set(err, rc, "out of memory");
		label = it.label;
		w->path = it.path;
		uint8_t *own = NULL;
		const uint8_t *buf = NULL;
		size_t blen = 0;
		struct ts_error lerr = {0};
		bool dec_failed = false;
		rc = ts_engine_read_item(w, &it, k == 0, data, len, read_status, &own, &buf,
					 &blen, &lerr);
		if (rc == 0) {
			ATOMIC_ADD(&e->bytes, blen); /* a count for stats */
			rc = banded_frame(w, p, buf, blen, epoch, ts_engine_key(e, index), label,
					  &outs, &begun,
					  &dec_failed, &lerr, err);
		} else {
			dec_failed = true;
		}
		free(own);
		if (rc == 0)
			break;
		if (!dec_failed)
			return rc;
		if (plan->on_error == TS_ON_ERROR_FAIL || rc == TS_E_NOMEM)
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
	if ((rc = ts_engine_wait_turn(e, p)) ||
	    (rc = ts_engine_flush_stage(w, epoch, label, &begun, err)))
		return rc;
	ts_engine_end_turn(e, p);
	return 0;
}
