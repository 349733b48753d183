/*
 * preview.c - run a plan for a few samples and keep copies of them
 * (preview.h): a one-to-one plan in discard mode through a sink, a tile,
 * filter or plugin plan into a ring of its own read as a trainer reads
 * it, --stages as one run per cut of the plan, views split into a shot
 * each; then the picture of them (preview_sheet.c), and the API.
 */
#include "preview_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barrier.h"
#include "engine.h"
#include "pngwrite.h"
#include "ring.h"
#include "source.h"
#include "util.h"

/* What the sink fills: n shots by stream position. */
struct collect {
	struct shot *shots;
	size_t n;
	uint64_t max_bytes;     /* copies refused above this, in all */
	uint64_t bytes;         /* kept so far, by all workers (ATOMIC_ADD) */
	bool failed;            /* out of memory, or over max_bytes */
};

static void shot_fini(struct shot *s)
{
	free(s->path);
	free(s->class_name);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

/* Discard mode's sink: keep positions 0..n-1. Worker threads call it
 * concurrently, each with its own position, so each writes its own shot. */
static void sink(void *arg, const struct ts_engine_sample *s)
{
	struct collect *c = arg;
	if (s->pos >= c->n)
		return;
	struct shot *d = &c->shots[s->pos];
	/* The workers' sum: a full-barrier add, so no two both see room
	 * for the same bytes. failed is read after ts_engine_join, which
	 * orders these stores before it. */
	if (ATOMIC_ADD(&c->bytes, s->bytes) > c->max_bytes) {
		WRITE_ONCE(c->failed, true);
		return;
	}
	d->data = malloc(s->bytes ? s->bytes : 1);
	d->path = s->path ? ts_strdup(s->path) : NULL;
	if (!d->data || (s->path && !d->path)) {
		WRITE_ONCE(c->failed, true); /* read after the join, as above */
		return;
	}
	memcpy(d->data, s->data, s->bytes);
	d->bytes = s->bytes;
	d->epoch = s->epoch;
	d->index = s->index;
	d->key = s->key;
	d->label = s->label;
	d->height = s->height;
	d->width = s->width;
	d->channels = s->channels;
	d->dtype = s->dtype;
	d->layout = s->layout;
	d->view = -1;
	d->have = true;
}

/* The class names of the shots' labels, from the engine's index. */
static int name_classes(const struct ts_engine *e, struct shot *shots, size_t n)
{
	const struct ts_index *ix = ts_engine_index(e);
	if (!ix || !ix->classes)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!shots[i].have || shots[i].label < 0 ||
		    (size_t)shots[i].label >= ix->n_classes)
			continue;
		shots[i].class_name = ts_strdup(ix->classes[shots[i].label]);
		if (!shots[i].class_name)
			return TS_E_NOMEM;
	}
	return 0;
}

/* Run a one-to-one plan in discard mode for positions 0..n-1 from the
 * start position into shots. */
static int run_discard(const struct ts_plan *plan, const struct ts_preview_opts *o,
		       uint64_t max_bytes, struct shot *shots, size_t n,
		       struct ts_error *err)
{
	struct collect c = {.shots = shots, .n = n, .max_bytes = max_bytes};
	struct ts_engine_opts eo = {
		.threads = o->threads, .epochs = 0, /* forever, cut by limit */
		.start_epoch = o->start_epoch, .start_index = o->start_index,
		.limit = n, .sink = sink, .sink_arg = &c,
	};
	struct ts_engine *e = NULL;
	int rc = ts_engine_create(plan, &eo, NULL, &e, err);
	if (rc == 0)
		rc = ts_engine_start(e, err);
	if (rc == 0)
		rc = ts_engine_join(e, err);
	if (rc == 0 && READ_ONCE(c.failed)) /* the workers are joined */
		rc = ts_error_set(err, TS_E_NOMEM,
				  "the samples take more than %" PRIu64 " MiB to keep; "
				  "ask for fewer samples", max_bytes >> 20);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!shots[i].have)
			rc = ts_error_set(err, TS_E_STATE, "sample %zu was not produced", i);
	if (rc == 0)
		rc = name_classes(e, shots, n);
	ts_engine_destroy(e);
	return rc;
}

/* Tile, filter and plugin plans: run into a ring of our own and read the
 * first n samples from it as an in-process trainer does. The ring keeps
 * label and position, not the file. Returns the number read in *got
 * (fewer than n when the stream ended: a filter dropped the rest of
 * `limit` positions). */
static int run_ring(const struct ts_plan *plan, const struct ts_preview_opts *o,
		    struct shot *shots, size_t n, size_t *got, struct ts_error *err)
{
	struct ts_ring_params rp = {
		.height = plan->height, .width = plan->width, .channels = plan->channels,
		.dtype = plan->dtype, .layout = plan->layout,
		.sample_bytes = plan->sample_bytes,
		.capacity = n < 32 ? 64 : 2 * (uint64_t)n,
		.epochs = 0,
	};
	struct ts_ring *ring = NULL;
	struct ts_ring_local *local = NULL;
	struct ts_engine *e = NULL;
	*got = 0;
	int rc = ts_ring_create(&rp, &ring, err);
	if (rc == 0)
		rc = ts_ring_local_create(ring, (uint32_t)n, TS_JOIN_NOW, false, &local, err);
	/* A filter may drop nearly everything: look at no more than 64
	 * source items per sample asked for, so the preview ends. */
	struct ts_engine_opts eo = {
		.threads = o->threads, .epochs = 0,
		.start_epoch = o->start_epoch, .start_index = o->start_index,
		.limit = 64 * (uint64_t)n,
	};
	if (rc == 0)
		rc = ts_engine_create(plan, &eo, ring, &e, err);
	if (rc == 0)
		rc = ts_engine_start(e, err);
	while (rc == 0 && *got < n) {
		struct ts_ring_batch b;
		rc = ts_ring_local_next(local, &b, 1000, err);
		if (rc == -ETIMEDOUT) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		for (size_t k = 0; k < b.n && *got < n && rc == 0; k++) {
			struct shot *d = &shots[(*got)++];
			d->data = malloc(plan->sample_bytes);
			if (!d->data) {
				rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
				break;
			}
			memcpy(d->data, (const uint8_t *)b.data + k * b.sample_stride,
			       plan->sample_bytes);
			d->bytes = plan->sample_bytes;
			d->epoch = b.epoch;
			d->index = b.index + k;
			d->key = ts_engine_key(e, d->index);
			d->label = b.labels[k];
			d->height = plan->height;
			d->width = plan->width;
			d->channels = plan->channels;
			d->dtype = plan->dtype;
			d->layout = plan->layout;
			d->view = -1;
			d->have = true;
		}
		ts_ring_local_release(local, &b);
	}
	if (rc == TS_E_EOS)
		rc = 0;
	else if (rc && e) {
		/* the engine's own error says more than the ring's */
		struct ts_error eerr = {0};
		ts_engine_stop(e);
		ts_ring_local_destroy(local);
		local = NULL;
		if (ts_engine_join(e, &eerr)) {
			rc = eerr.code;
			if (err)
				*err = eerr;
		}
	}
	if (rc == 0 && e)
		rc = name_classes(e, shots, *got);
	if (e) {
		ts_engine_stop(e);
		ts_ring_local_destroy(local);
		local = NULL;
		ts_engine_join(e, NULL);
		ts_engine_destroy(e);
	}
	ts_ring_local_destroy(local);
	ts_ring_destroy(ring);
	return rc;
}

/* ---- views ------------------------------------------------------------- */

/* views(...): view v of sample in as a shot of its own into *out. */
static int view_shot(const struct ts_plan *plan, const struct shot *in, int v,
		     struct shot *out)
{
	const struct ts_plan_view *pv = &plan->views[v];
	*out = *in;
	out->data = malloc(pv->bytes);
	out->path = in->path ? ts_strdup(in->path) : NULL;
	out->class_name = in->class_name ? ts_strdup(in->class_name) : NULL;
	if (!out->data || (in->path && !out->path) || (in->class_name && !out->class_name)) {
		shot_fini(out);
		return TS_E_NOMEM;
	}
	memcpy(out->data, (const uint8_t *)in->data + pv->offset, pv->bytes);
	out->bytes = pv->bytes;
	out->height = pv->height;
	out->width = pv->width;
	out->channels = pv->channels;
	out->dtype = pv->dtype;
	out->layout = pv->layout;
	out->view = v;
	return 0;
}

/* views(...): the n whole samples of *shots replaced by their views, a
 * sample's n_views in a row (sample i's view v at i * n_views + v). */
static int expand_views(const struct ts_plan *plan, struct shot **shots, size_t *n)
{
	size_t k = (size_t)plan->n_views, m = *n * k;
	struct shot *out = calloc(m ? m : 1, sizeof(*out));
	int rc = out ? 0 : TS_E_NOMEM;
	for (size_t i = 0; i < *n && rc == 0; i++)
		for (size_t v = 0; v < k && rc == 0; v++)
			rc = view_shot(plan, &(*shots)[i], (int)v, &out[i * k + v]);
	struct shot *drop = rc ? out : *shots;
	size_t n_drop = rc ? m : *n;
	for (size_t i = 0; drop && i < n_drop; i++)
		shot_fini(&drop[i]);
	free(drop);
	if (rc)
		return rc;
	*shots = out;
	*n = m;
	return 0;
}

static int make_stages(struct ts_preview *p, const struct ts_plan *plan,
		       const struct ts_preview_opts *o, uint64_t max_bytes,
		       struct ts_error *err)
{
	size_t n = (size_t)o->samples;
	/* Stages up to the first tile, filter or plugin: after one, a
	 * sample is no longer one row. */
	size_t k_n = 0;
	while (k_n < plan->n_ops && !ts_op_expands(&plan->ops[k_n]) &&
	       !(plan->ops[k_n].flags & TS_OPF_VIEWS))
		k_n++;
	bool whole = k_n == plan->n_ops;
	/* views(...): the stages before it, then one column per view */
	size_t n_views = (size_t)plan->n_views, k_all = k_n + n_views;
	if (k_n == 0)
		return ts_error_set(err, TS_E_ARG, "--stages: the pipeline starts with a %s, "
				    "which has no single-sample stages to show",
				    ts_op_kind_name(plan->ops[0].kind));
	struct ts_plan_prefix *pre = calloc(k_n, sizeof(*pre));
	const struct ts_plan **plans = calloc(k_all, sizeof(*plans));
	p->stage_names = calloc(k_all, sizeof(*p->stage_names));
	p->shots = calloc(k_all * n, sizeof(*p->shots));
	int rc = 0;
	if (!pre || !plans || !p->stage_names || !p->shots)
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
	p->n_shots = p->shots ? k_all * n : 0;
	size_t made = 0;
	for (size_t k = 0; rc == 0 && k < k_n; k++) {
		if (whole && k == k_n - 1) {
			plans[k] = plan;
		} else {
			rc = ts_plan_prefix_init(&pre[k], plan, k + 1);
			if (rc) {
				ts_error_set(err, rc, "cannot cut the plan after stage %zu", k);
				break;
			}
			made = k + 1;
			plans[k] = &pre[k].plan;
		}
		p->stage_names[k] = ts_preview_stage_name(&plan->ops[k]);
		if (!p->stage_names[k]) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			break;
		}
		p->n_stages = k + 1;
		rc = run_discard(plans[k], o, max_bytes, &p->shots[k * n], n, err);
	}
	struct shot *whole_shots = n_views ? calloc(n, sizeof(*whole_shots)) : NULL;
	if (rc == 0 && n_views && !whole_shots)
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
	if (rc == 0 && n_views)
		rc = run_discard(plan, o, max_bytes, whole_shots, n, err);
	for (size_t v = 0; rc == 0 && v < n_views; v++) {
		size_t k = k_n + v;
		plans[k] = plan;
		if (ts_preview_append(&p->stage_names[k], "view %zu (group %d)", v,
				      plan->views[v].group))
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		p->n_stages = k + 1;
		for (size_t i = 0; rc == 0 && i < n; i++)
			if (view_shot(plan, &whole_shots[i], (int)v, &p->shots[k * n + i]))
				rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; whole_shots && i < n; i++)
		shot_fini(&whole_shots[i]);
	free(whole_shots);
	if (n_views)
		whole = true; /* every stage is shown: the views are the last */
	char note[160] = "";
	if (rc == 0 && !whole)
		snprintf(note, sizeof(note), "stages after the %s are not shown: from there "
			 "one source item makes any number of samples",
			 ts_op_kind_name(plan->ops[k_n].kind));
	if (rc == 0)
		rc = ts_preview_make_caption(p, plan, o, n, true, note[0] ? note : NULL)
			     ? ts_error_set(err, TS_E_NOMEM, "out of memory") : 0;
	if (rc == 0)
		rc = ts_preview_compose_stages(p, plan, plans, n, o, max_bytes, err);
	for (size_t k = 0; pre && k < made; k++)
		ts_plan_prefix_fini(&pre[k]);
	free(pre);
	free(plans);
	return rc;
}

int ts_preview_make(const struct ts_plan *plan, const struct ts_preview_opts *o,
		    struct ts_preview **out, struct ts_error *err)
{
	if (!plan || !o || !out)
		return ts_error_set(err, TS_E_ARG, "preview: plan, options and out are required");
	if (o->samples < 1 || o->samples > TS_PREVIEW_MAX_SAMPLES)
		return ts_error_set(err, TS_E_ARG, "preview: %d samples asked for; 1 to %d fit "
				    "in one picture", o->samples, TS_PREVIEW_MAX_SAMPLES);
	uint64_t max_bytes = o->max_bytes ? o->max_bytes : TS_PREVIEW_MAX_BYTES;
	int rc = ts_preview_precheck(plan, o, max_bytes, err);
	if (rc)
		return rc;
	struct ts_preview *p = calloc(1, sizeof(*p));
	if (!p)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	/* The samples themselves may take more than the picture (float32 is
	 * four bytes a value, a decoded file more than its cell): keep up
	 * to 4x the picture's limit of them. */
	uint64_t keep = 4 * max_bytes;
	if (o->stages) {
		rc = make_stages(p, plan, o, keep, err);
	} else if (!plan->expands) {
		p->shots = calloc((size_t)o->samples, sizeof(*p->shots));
		p->n_shots = p->shots ? (size_t)o->samples : 0;
		rc = p->shots ? run_discard(plan, o, keep, p->shots, p->n_shots, err)
			      : ts_error_set(err, TS_E_NOMEM, "out of memory");
		if (rc == 0 && plan->n_views && expand_views(plan, &p->shots, &p->n_shots))
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		if (rc == 0 &&
		    ts_preview_make_caption(p, plan, o, (size_t)o->samples, true, NULL))
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		if (rc == 0)
			rc = ts_preview_compose_grid(p, plan, o, max_bytes, err);
	} else if (plan->sample_bytes == 0) {
		rc = ts_error_set(err, TS_E_ARG, "preview: a %s pipeline needs samples of a "
				  "fixed size", "tile, filter or plugin");
	} else {
		size_t got = 0;
		p->shots = calloc((size_t)o->samples, sizeof(*p->shots));
		rc = p->shots ? run_ring(plan, o, p->shots, (size_t)o->samples, &got, err)
			      : ts_error_set(err, TS_E_NOMEM, "out of memory");
		p->n_shots = got;
		if (rc == 0 && got == 0)
			rc = ts_error_set(err, TS_E_SOURCE, "no sample came out of the first %d "
					  "source items from %" PRIu64 ":%" PRIu64,
					  64 * o->samples, o->start_epoch, o->start_index);
		if (rc == 0 && ts_preview_make_caption(p, plan, o, got, false, NULL))
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		if (rc == 0)
			rc = ts_preview_compose_grid(p, plan, o, max_bytes, err);
		p->n_shots = p->shots ? (size_t)o->samples : 0;
	}
	if (rc) {
		ts_preview_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

const struct ts_image *ts_preview_image(const struct ts_preview *p)
{
	return &p->canvas;
}

size_t ts_preview_cells(const struct ts_preview *p, const struct ts_preview_cell **cells)
{
	*cells = p->cells;
	return p->n_cells;
}

const char *ts_preview_caption(const struct ts_preview *p)
{
	return p->caption ? p->caption : "";
}

size_t ts_preview_stages(const struct ts_preview *p, const char *const **names)
{
	*names = (const char *const *)p->stage_names;
	return p->n_stages;
}

int ts_preview_write_png(const struct ts_preview *p, const char *path,
			 struct ts_error *err)
{
	return ts_pngwrite_file(&p->canvas, path, p->caption, err);
}

void ts_preview_destroy(struct ts_preview *p)
{
	if (!p)
		return;
	ts_image_free(&p->canvas);
	free(p->cells);
	free(p->caption);
	for (size_t k = 0; k < p->n_stages; k++)
		free(p->stage_names[k]);
	free(p->stage_names);
	for (size_t i = 0; i < p->n_shots; i++)
		shot_fini(&p->shots[i]);
	free(p->shots);
	free(p);
}
