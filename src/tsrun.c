/*
 * tsrun.c - the embedding API (tsrun.h): the compiler, the engine and an
 * in-process consumer of the same ring the server shares, with no socket.
 */
#include "tsrun.h"
#include "tsrun_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"
#include "engine.h"
#include "memory.h"
#include "ring.h"
#include "util.h"

struct ts_pipeline {
	struct ts_plan *plan;
	int trace_fd;                  /* ts_pipeline_set_trace; -1: none */
};

struct ts_stream {
	const struct ts_pipeline *p;
	struct ts_plan *plan;          /* the running plan: p's, or a reload's */
	struct ts_engine_reload reload;   /* a plan waiting for the boundary */
	struct ts_stream_opts opts;
	struct ts_ring *ring;
	struct ts_ring_local *local;
	struct ts_engine *engine;
	struct ts_ring_batch cur;
	bool have_cur;
	int status;            /* sticky: TS_E_EOS or the engine's error */
	struct ts_error status_err;
	uint64_t reloads_failed;       /* could not start at their boundary */
	uint64_t cache;                /* the decoded cache's bytes, for every
					  engine (a reload's too); UINT64_MAX:
					  none */
};

TS_EXPORT int ts_pipeline_compile(const char *text, size_t len,
				  const char *name, const char *pipeline,
				  const char *base_dir,
				  struct ts_pipeline **out, char **diagnostics,
				  struct ts_error *err)
{
	if (!text || !out)
		return ts_error_set(err, TS_E_ARG, "ts_pipeline_compile: text and out are required");
	if (!name)
		name = "<string>";
	struct ts_diags d;
	ts_diags_init(&d, name, text, len);
	struct ts_ast_program prog = {0};
	struct ts_plan *plan = NULL;
	int rc = ts_dsl_parse(text, len, &d, &prog);
	if (rc == 0)
		rc = ts_dsl_check(&prog, pipeline, name, base_dir ? base_dir : ".", &d, &plan);
	ts_ast_program_destroy(&prog);
	if (rc) {
		const struct ts_diag *first = NULL;
		for (size_t i = 0; i < d.n && !first; i++)
			if (d.items[i].sev == TS_SEV_ERROR)
				first = &d.items[i];
		if (first)
			ts_error_set_at(err, rc, first->loc, "%s:%d:%d: %s", name,
					first->loc.first_line, first->loc.first_column, first->msg);
		else
			ts_error_set(err, rc, "%s: %s", name, ts_error_name(rc));
		if (diagnostics)
			*diagnostics = ts_diags_render(&d);
		ts_diags_fini(&d);
		return rc;
	}
	ts_diags_fini(&d);
	struct ts_pipeline *p = calloc(1, sizeof(*p));
	if (!p) {
		ts_plan_destroy(plan);
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	}
	p->plan = plan;
	p->trace_fd = -1;
	*out = p;
	return 0;
}

struct ts_pipeline *ts_pipeline_wrap(struct ts_plan *plan)
{
	struct ts_pipeline *p = calloc(1, sizeof(*p));
	if (!p) {
		ts_plan_destroy(plan);
		return NULL;
	}
	p->plan = plan;
	p->trace_fd = -1;
	return p;
}

void ts_pipeline_set_trace(struct ts_pipeline *p, int fd)
{
	p->trace_fd = fd;
}

const struct ts_plan *ts_pipeline_plan(const struct ts_pipeline *p)
{
	return p->plan;
}

void ts_stream_engine_stats(const struct ts_stream *s, struct ts_engine_stats *st)
{
	ts_engine_stats(s->engine, st);
}

TS_EXPORT uint64_t ts_pipeline_memory(const struct ts_pipeline *p, int threads)
{
	const struct ts_plan *pl = p->plan;
	if (threads <= 0 || pl->mem_threads <= 0)
		return pl->mem_total;
	/* The plan's scratch figure is for its own thread count. */
	uint64_t per = pl->mem_scratch / (uint64_t)pl->mem_threads;
	return pl->mem_ring + pl->mem_io + pl->mem_process + per * (uint64_t)threads;
}

TS_EXPORT int ts_pipeline_views(const struct ts_pipeline *p, int i,
				struct ts_stream_view *out)
{
	const struct ts_plan *pl = p->plan;
	if (out && i >= 0 && i < pl->n_views) {
		const struct ts_plan_view *v = &pl->views[i];
		*out = (struct ts_stream_view){
			.height = v->height, .width = v->width, .channels = v->channels,
			.dtype = v->dtype,
			.layout = v->layout,
			.group = v->group, .offset = v->offset, .bytes = v->bytes,
		};
	}
	return pl->n_views;
}

TS_EXPORT void ts_pipeline_shape(const struct ts_pipeline *p, int *height,
				 int *width, int *channels,
				 enum ts_dtype *dtype,
				 enum ts_layout *layout, int *batch)
{
	const struct ts_plan *pl = p->plan;
	if (height)
		*height = pl->height;
	if (width)
		*width = pl->width;
	if (channels)
		*channels = pl->channels;
	if (dtype)
		*dtype = pl->dtype;
	if (layout)
		*layout = pl->layout;
	if (batch)
		*batch = pl->batch;
}

TS_EXPORT void ts_pipeline_destroy(struct ts_pipeline *p)
{
	if (!p)
		return;
	ts_plan_destroy(p->plan);
	free(p);
}

/* The decoded cache's bytes for a stream of pl opened with opts (0: none):
 * opts.cache, or the pipeline's setting; auto takes what budget leaves
 * beyond need, the rest of the plan (whole MiB). */
static int stream_cache(const struct ts_plan *pl, const struct ts_stream_opts *opts,
			uint64_t budget, uint64_t need, uint64_t *out, struct ts_error *err)
{
	const uint64_t mib = 1u << 20;
	bool applies = ts_source_kind_encoded(pl->source.kind) && !ts_plan_tiles_banded(pl);
	uint64_t c = opts->cache;
	*out = 0;
	if (c == 0)
		c = pl->cache_auto ? TS_STREAM_CACHE_AUTO : pl->cache_bytes;
	if (c == TS_STREAM_CACHE_OFF || c == 0 || !applies)
		return 0;
	if (c == TS_STREAM_CACHE_AUTO) {
		if (!budget)
			return ts_error_set(err, TS_E_ARG,
					    "cache = auto takes what the memory budget leaves, but "
					    "there is none: set memory_budget (or the serve block's "
					    "memory), or give the cache a size");
		c = budget > need ? (budget - need) / mib * mib : 0;
	}
	*out = c;
	return 0;
}

TS_EXPORT int ts_pipeline_open(const struct ts_pipeline *p,
			       const struct ts_stream_opts *opts,
			       struct ts_stream **out, struct ts_error *err)
{
	struct ts_stream_opts known = {.size = sizeof(known), .epochs = -1};
	if (!p || !out)
		return ts_error_set(err, TS_E_ARG, "ts_pipeline_open: pipeline and out are required");
	/* the fields the caller's header has; defaults for the rest */
	if (opts) {
		int src = ts_sized_in(&known, sizeof(known), opts, "struct ts_stream_opts",
				      "struct ts_stream_opts o = { .size = sizeof o }", err);
		if (src)
			return src;
	}
	opts = &known;
	/* the ring and the protocol carry an epoch in 32 bits */
	if (opts->start_epoch > UINT32_MAX)
		return ts_error_set(err, TS_E_ARG,
				    "ts_pipeline_open: start_epoch %llu is past the last epoch "
				    "a stream can count (%u: the ring holds epochs in 32 "
				    "bits); resume from an epoch at most that",
				    (unsigned long long)opts->start_epoch, UINT32_MAX);
	const struct ts_plan *pl = p->plan;
	uint64_t budget = opts->memory_budget ? opts->memory_budget : pl->memory_budget;
	uint64_t cache;
	uint64_t need = ts_pipeline_memory(p, opts->threads) - pl->mem_cache;
	int rc = stream_cache(pl, opts, budget, need, &cache, err);
	if (rc)
		return rc;
	need += cache;
	if (budget && need > budget)
		return ts_error_set(err, TS_E_BUDGET,
				    "the plan needs %llu bytes (ring %llu, scratch %llu, io %llu, "
				    "process %llu, cache %llu) but the budget is %llu; use a "
				    "smaller ring or cache, or fewer threads",
				    (unsigned long long)need, (unsigned long long)pl->mem_ring,
				    (unsigned long long)(need - pl->mem_ring - pl->mem_io -
							 pl->mem_process - cache),
				    (unsigned long long)pl->mem_io,
				    (unsigned long long)pl->mem_process, (unsigned long long)cache,
				    (unsigned long long)budget);
	/* decode | resize(64): samples of varying size have no ring slot
	 * (the ring said only "invalid sample shape") */
	if (pl->sample_bytes == 0)
		return ts_error_set(err, TS_E_ARG,
				    "pipeline '%s': its samples have no fixed size, so they "
				    "cannot be streamed; add center_crop, resize([h, w]) or "
				    "random_resized_crop",
				    pl->name ? pl->name : "");
	size_t batch = opts->batch ? opts->batch : (size_t)pl->batch;
	struct ts_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	s->p = p;
	s->plan = p->plan;
	s->opts = *opts;
	uint64_t cap = (uint64_t)pl->ring_samples;
	if (cap < 2 * batch)
		cap = 2 * batch;
	struct ts_ring_params rp = {
		.height = pl->height, .width = pl->width, .channels = pl->channels,
		.dtype = pl->dtype, .layout = pl->layout,
		.sample_bytes = pl->sample_bytes, .capacity = cap,
		.n_views = pl->n_views, .views = pl->views,
		.epochs = (uint32_t)(opts->epochs >= 0 ? opts->epochs : pl->epochs),
	};
	rc = ts_ring_create(&rp, &s->ring, err);
	if (rc)
		goto fail;
	rc = ts_ring_local_create(s->ring, (uint32_t)batch, TS_JOIN_NOW,
				  opts->drop_last != 0, &s->local, err);
	if (rc)
		goto fail;
	s->cache = cache ? cache : UINT64_MAX;
	struct ts_engine_opts eo = {
		.threads = opts->threads, .epochs = opts->epochs,
		.start_epoch = opts->start_epoch, .start_index = opts->start_index,
		.trace = p->trace_fd >= 0, .trace_fd = p->trace_fd,
		.cache = s->cache,
	};
	rc = ts_engine_create(pl, &eo, s->ring, &s->engine, err);
	if (rc)
		goto fail;
	rc = ts_engine_start(s->engine, err);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	ts_stream_close(s);
	return rc;
}

/* Engine options of a plan taking over: the stream keeps its length, the
 * epochs it was opened with. */
static struct ts_engine_opts engine_opts(const struct ts_stream *s)
{
	struct ts_engine_opts eo = {
		.threads = s->opts.threads,
		.epochs = s->opts.epochs >= 0 ? s->opts.epochs : s->p->plan->epochs,
		.trace = s->p->trace_fd >= 0, .trace_fd = s->p->trace_fd,
		.cache = s->cache,
	};
	return eo;
}

/* A reloaded plan takes over once the running engine reached its epoch
 * boundary: the new engine goes on in the same ring from its head. */
static int takeover(struct ts_stream *s, struct ts_error *err)
{
	struct ts_engine_opts eo = engine_opts(s);
	enum ts_engine_reload_event ev;
	struct ts_plan *taken = NULL;
	struct ts_error terr = {0};
	int rc = ts_engine_reload_poll(&s->reload, &s->engine, s->plan, &eo, &ev, &taken,
				       &terr);
	if (rc) {
		if (err)
			*err = terr;
		return rc;
	}
	if (ev == TS_RELOAD_FELL_BACK) {
		/* Probed at reload, gone since: the running plan went on. */
		s->reloads_failed++;
	} else if (ev == TS_RELOAD_TOOK_OVER) {
		if (s->plan != s->p->plan)
			ts_plan_destroy(s->plan);
		s->plan = taken;
	}
	return 0;
}

TS_EXPORT int ts_stream_reload(struct ts_stream *s, const char *text,
			       size_t len, const char *name,
			       const char *pipeline, const char *base_dir,
			       char **diagnostics, struct ts_error *err)
{
	if (!s || !text)
		return ts_error_set(err, TS_E_ARG, "ts_stream_reload: stream and text are required");
	struct ts_pipeline *np = NULL;
	int rc = ts_pipeline_compile(text, len, name, pipeline, base_dir, &np, diagnostics, err);
	if (rc)
		return rc;
	struct ts_plan *next = np->plan;
	np->plan = NULL;
	ts_pipeline_destroy(np);
	struct ts_engine_opts eo = engine_opts(s);
	bool replaced;
	return ts_engine_reload_offer(&s->reload, s->engine, s->plan, next, &eo, &replaced, err);
}

TS_EXPORT int ts_stream_next(struct ts_stream *s, struct ts_stream_batch *b,
			     struct ts_error *err)
{
	if (!s || !b)
		return ts_error_set(err, TS_E_ARG, "ts_stream_next: stream and batch are required");
	if (s->status) {
		if (err)
			*err = s->status_err;
		return s->status;
	}
	if (s->have_cur) {
		ts_ring_local_release(s->local, &s->cur);
		s->have_cur = false;
	}
	int rc;
	for (;;) {
		rc = ts_ring_local_next(s->local, &s->cur, s->reload.pending ? 20 : 1000, err);
		if (rc != -ETIMEDOUT)
			break;
		rc = takeover(s, err);
		if (rc)
			break;
	}
	if (rc) {
		/* The engine's own error says more than the ring's. */
		struct ts_error eerr = {0};
		if (rc != TS_E_EOS && s->engine) {
			int erc = ts_engine_join(s->engine, &eerr);
			if (erc) {
				rc = erc;
				if (err)
					*err = eerr;
			}
		} else {
			ts_error_set(err, rc, "end of stream");
		}
		s->status = rc;
		if (err)
			s->status_err = *err;
		else
			ts_error_set(&s->status_err, rc, "%s", ts_error_name(rc));
		return rc;
	}
	s->have_cur = true;
	const struct ts_plan *pl = s->plan;
	memset(b, 0, sizeof(*b)); /* the reserved words too */
	b->data = s->cur.data;
	b->labels = s->cur.labels;
	b->n = s->cur.n;
	b->height = pl->height;
	b->width = pl->width;
	b->channels = pl->channels;
	b->dtype = pl->dtype;
	b->layout = pl->layout;
	b->sample_bytes = pl->sample_bytes;
	b->sample_stride = s->cur.sample_stride;
	b->epoch = s->cur.epoch;
	b->index = s->cur.index;
	return 0;
}

TS_EXPORT uint64_t ts_stream_skipped(const struct ts_stream *s)
{
	struct ts_engine_stats st;
	ts_engine_stats(s->engine, &st);
	return st.skipped;
}

TS_EXPORT void ts_stream_stats(const struct ts_stream *s,
				struct ts_stream_stats *st)
{
	struct ts_engine_stats es;
	ts_engine_stats(s->engine, &es);
	memset(st, 0, sizeof(*st));
	st->samples = es.samples;
	st->bytes_read = es.bytes;
	st->skipped = es.skipped;
	st->epoch_size = es.epoch_size;
	st->threads = es.threads;
	st->uring = es.uring;
	st->reloads_failed = s->reloads_failed;
}

TS_EXPORT size_t ts_stream_skipped_paths(const struct ts_stream *s,
					 const char *const **list)
{
	return ts_engine_skipped(s->engine, list);
}

TS_EXPORT const char *ts_stream_note(const struct ts_stream *s)
{
	return ts_engine_reader_note(s->engine);
}

TS_EXPORT void ts_stream_close(struct ts_stream *s)
{
	if (!s)
		return;
	if (s->engine) {
		ts_engine_stop(s->engine);
		/* Let workers blocked on a full ring go: the consumer leaves. */
		ts_ring_local_destroy(s->local);
		s->local = NULL;
		ts_engine_join(s->engine, NULL);
		ts_engine_destroy(s->engine);
	}
	ts_ring_local_destroy(s->local);
	ts_ring_destroy(s->ring);
	if (s->plan != s->p->plan)
		ts_plan_destroy(s->plan);
	ts_engine_reload_clear(&s->reload);
	free(s);
}
