/*
 * engine.c - the engine that turns a plan into a stream of samples in a
 * ring: creation, destruction, stats, and stream positions to source
 * items. Its other parts (per-sample work, threads, reload) are listed
 * in engine_internal.h.
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
#include "engine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "barrier.h"
#include "shuffle.h"
#include "trace.h"
#include "util.h"

/* Position p -> (epoch, index). */
void ts_engine_pos_split(const struct ts_engine *e, uint64_t p, uint64_t *epoch,
		      uint64_t *index)
{
	uint64_t abs = e->start_index + p;
	*epoch = e->start_epoch + abs / e->n;
	*index = abs % e->n;
}

/* The index a sample's random streams are keyed by: its position in
 * the whole epoch's order, before shard() takes the node's share, so that
 * no two nodes draw alike; without a shard it is the index itself. Not
 * wrapped as ts_share_node_pos wraps the item: the samples that pad a
 * node's share repeat an item, not another sample's draws. */
uint64_t ts_engine_key(const struct ts_engine *e, uint64_t index)
{
	uint64_t k = e->node.count ? e->node.count : 1;
	return (uint64_t)e->node.index + k * index;
}

/* The permutation of an epoch; computed once and kept for the few epochs
 * in flight. Called with e->mu held. */
const uint32_t *ts_engine_perm_get(struct ts_engine *e, uint64_t epoch)
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
		pc->perm = malloc(sizeof(uint32_t) * e->node.total);
		if (!pc->perm)
			return NULL;
	}
	ts_shuffle_perm(e->plan->source.seed, epoch, e->plan->source.shuffle,
			pc->perm, e->node.total);
	pc->epoch = epoch;
	return pc->perm;
}

int ts_engine_online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* The source listed, and this node's share of it (shard). */
static int open_source(struct ts_engine *e, const struct ts_plan *plan, struct ts_ring *ring,
		       struct ts_error *err)
{
	int rc = ts_source_open(&plan->source, &e->ix, err);
	if (rc)
		return rc;
	if (e->ix->n > UINT32_MAX) {
		rc = ts_error_set(err, TS_E_SOURCE, "the data source has more than 2^32 items");
		return rc;
	}
	int node = 0, nodes = 1;
	rc = ts_share_node_resolve(plan->source.shard_index, plan->source.shard_count,
				   &node, &nodes, NULL, err);
	if (rc)
		return rc;
	e->node = (struct ts_share_node){ e->ix->n, (uint32_t)node, (uint32_t)nodes,
					  plan->source.shard_drop };
	e->n = ts_share_node_size(&e->node);
	if (ring && plan->source.shard_count != 0)
		ts_ring_set_node(ring, (uint32_t)node, (uint32_t)nodes);
	if (e->n == 0) {
		rc = ts_error_set(err, TS_E_SOURCE,
				  "'%s' has %zu items: too few for one on each of %d nodes with "
				  "drop_last = true; use shard(drop_last = false), which repeats some",
				  e->ix->root, e->ix->n, nodes);
		return rc;
	}
	return 0;
}

/* The workers: a decoder each, the trace's records, and a host per
 * plugin op; each plugin is loaded once now, in a child of its own, so a
 * missing .so or symbol fails here. */
static int create_workers(struct ts_engine *e, const struct ts_plan *plan, struct ts_error *err)
{
	int rc = 0;
	e->done = calloc(e->capacity, 1);
	e->workers = calloc((size_t)e->threads, sizeof(*e->workers));
	if (!e->done || !e->workers) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		return rc;
	}
	for (int i = 0; i < e->threads; i++) {
		struct worker *w = &e->workers[i];
		w->e = e;
		rc = ts_decoder_create(&w->dec, err);
		if (rc)
			return rc;
		if (e->trace) {
			w->trace = calloc(1, sizeof(*w->trace));
			w->trace_line = calloc(1, sizeof(*w->trace_line));
			if (!w->trace || !w->trace_line) {
				return ts_error_set(err, TS_E_NOMEM, "out of memory");
			}
		}
	}
	for (size_t i = 0; i < plan->n_ops; i++)
		e->n_plugins += plan->ops[i].plugin != NULL;
	for (int i = 0; i < e->threads && e->n_plugins; i++) {
		struct worker *w = &e->workers[i];
		w->plugins = calloc(e->n_plugins, sizeof(*w->plugins));
		if (!w->plugins) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			return rc;
		}
		for (size_t j = 0, k = 0; j < plan->n_ops; j++) {
			if (!plan->ops[j].plugin)
				continue;
			rc = ts_plugin_host_create(&plan->ops[j], plan->source.base_dir,
						   &w->plugins[k], err);
			if (rc == 0 && i == 0)
				rc = ts_plugin_host_probe(w->plugins[k], err);
			if (rc)
				return rc;
			k++;
		}
	}
	return 0;
}

/* The reader of an encoded source: io_uring, or plain reads in the
 * workers (the note says why). */
static int create_reader(struct ts_engine *e, const struct ts_plan *plan, struct ts_error *err)
{
	int rc = 0;
	if (ts_source_kind_encoded(plan->source.kind)) {
		unsigned depth = plan->queue_depth > 0 ? (unsigned)plan->queue_depth : 64;
		rc = ts_reader_create(depth, TS_READER_DEFAULT_BUF, &e->reader, err);
		if (rc)
			return rc;
		ts_reader_set_max_file(e->reader, plan->max_file_size);
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
				rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
				return rc;
			}
		}
	}
	return 0;
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
	if (plan->n_ops == 0 || !ts_op_is_output(&plan->ops[plan->n_ops - 1]))
		return ts_error_set(err, TS_E_ARG, "engine: the plan does not end in an output stage");
	struct ts_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	e->plan = plan;
	e->ring = ring;
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->head_mu, NULL);
	pthread_mutex_init(&e->trace_mu, NULL);
	pthread_cond_init(&e->cv_ready, NULL);
	pthread_cond_init(&e->cv_space, NULL);
	pthread_cond_init(&e->cv_commit, NULL);
	int rc = open_source(e, plan, ring, err);
	if (rc)
		goto fail;
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
	if (o->limit && o->limit < e->total)
		e->total = o->limit;
	/* Epochs count per trainer (tensorsocket(7)): a trainer that joined
	 * late still gets its epochs, so the stream grows an epoch at a
	 * time while one wants it. Not with a limit (bench). */
	e->per_trainer = ring && epochs > 0 && !o->limit;
	/* A trainer resuming before the first sample is published is placed
	 * from where this stream begins (run --start). */
	if (ring && o->seq_base == 0 && ts_ring_head(ring) == 0)
		ts_ring_set_origin(ring, (uint32_t)e->start_epoch, e->start_index);
	e->planned_total = e->total;
	e->sink = o->sink;
	e->sink_arg = o->sink_arg;
	e->no_digest = o->no_digest;
	e->trace = o->trace;
	e->trace_fd = o->trace_fd;
	e->threads = o->threads > 0 ? o->threads : plan->threads > 0 ? plan->threads : ts_engine_online_cores();
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
	if ((rc = create_workers(e, plan, err)))
		goto fail;
	if ((rc = create_reader(e, plan, err)))
		goto fail;
	/* The decoded cache: the serve block's (or the caller's) size, for
	 * the whole data set's items (a node's share changes every epoch). */
	uint64_t cache = o->cache == UINT64_MAX ? 0 : o->cache ? o->cache : plan->mem_cache;
	if (cache && ts_engine_cache_applies(plan)) {
		rc = ts_engine_cache_create(cache, e->ix->n, &e->cache, err);
		if (rc)
			goto fail;
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

const struct ts_index *ts_engine_index(const struct ts_engine *e)
{
	return e->ix;
}

void ts_engine_stats(const struct ts_engine *e, struct ts_engine_stats *st)
{
	memset(st, 0, sizeof(*st));
	uint64_t head = e->ring ? ts_ring_written(e->ring)
			       : READ_ONCE(e->discarded); /* stats: untorn */
	uint64_t mine = head > e->seq_base ? head - e->seq_base : 0;
	st->samples = head;
	st->bytes = READ_ONCE(e->bytes);       /* stats: untorn, unordered */
	st->decodes = READ_ONCE(e->decodes);   /* stats: untorn, unordered */
	st->skipped = READ_ONCE(e->skipped_n);
	st->epoch_size = e->n;
	if (!e->plan->expands)
		ts_engine_pos_split(e, mine, &st->epoch, &st->index);
	else {
		st->epoch = e->out_epoch;
		st->index = e->out_index;
	}
	st->threads = e->threads;
	st->uring = e->reader != NULL;
	/* acquire: pairs with the last worker's ATOMIC_SUB, after which it
	 * touches nothing a takeover would */
	st->idle = smp_load_acquire(&e->live_workers) == 0 &&
		   (e->threads == 0 || e->workers[0].started);
	st->done = e->joined;
	ts_engine_cache_stats(e->cache, st);
	/* counts for stats: whole once the workers are joined */
	st->cpu_first_user = (double)READ_ONCE(e->cpu_us[0]) / 1e6;
	st->cpu_first_sys = (double)READ_ONCE(e->cpu_us[1]) / 1e6;
	st->cpu_later_user = (double)READ_ONCE(e->cpu_us[2]) / 1e6;
	st->cpu_later_sys = (double)READ_ONCE(e->cpu_us[3]) / 1e6;
}

uint64_t ts_engine_unordered_digest(const struct ts_engine *e)
{
	return READ_ONCE(e->unordered_digest); /* read after join */
}

int ts_engine_probe(const struct ts_plan *plan, const struct ts_engine_opts *o,
		    struct ts_error *err)
{
	struct ts_engine *n = NULL;
	int rc = ts_engine_create(plan, o, NULL, &n, err);
	ts_engine_destroy(n);
	return rc;
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
			ts_image_free(&w->view);
			ts_image_free(&w->fill);
			free(w->stage);
			free(w->out);
			ts_trace_fini(w->trace);
			ts_trace_fini(w->trace_line);
			free(w->trace);
			free(w->trace_line);
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
	free(e->skipped_plen);
	free(e->skip_tab);
	free(e->reader_note);
	free(e->done);
	ts_engine_cache_destroy(e->cache);
	ts_source_index_destroy(e->ix);
	pthread_cond_destroy(&e->cv_ready);
	pthread_cond_destroy(&e->cv_space);
	pthread_cond_destroy(&e->cv_commit);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->head_mu);
	pthread_mutex_destroy(&e->trace_mu);
	free(e);
}
