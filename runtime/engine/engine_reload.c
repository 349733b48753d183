/*
 * engine_reload.c - the reload state machine: a new plan is checked
 * against the running one (same sample shape and device stage, its source
 * opens now), the running engine hands over at the next epoch boundary,
 * and a new engine takes over the same ring there, falling back to the
 * running plan when the new one cannot start.
 */
#include "engine_internal.h"

#include "util.h"

int ts_engine_check_reload(const struct ts_plan *cur, const struct ts_plan *next,
			   const struct ts_engine_opts *o, struct ts_error *err)
{
	if (!ts_plan_same_sample(cur, next) && (cur->n_views || next->n_views))
		return ts_error_set(err, TS_E_CHECK,
				    "its samples are %d view%s in %zu bytes, the running ones %d "
				    "view%s in %zu bytes: a reload cannot change the views of a "
				    "sample (their count, order, shapes and types), with which "
				    "connected trainers map the ring; restart to change them",
				    next->n_views, next->n_views == 1 ? "" : "s", next->sample_bytes,
				    cur->n_views, cur->n_views == 1 ? "" : "s", cur->sample_bytes);
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
	ts_ring_fail(ring, rc, err ? err->msg : NULL);
	return rc;
}

int ts_engine_handover(struct ts_engine *e, uint64_t *next_epoch)
{
	pthread_mutex_lock(&e->mu);
	uint64_t p = e->next_claim, epoch, index;
	ts_engine_pos_split(e, p, &epoch, &index);
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
