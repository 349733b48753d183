/* job.c - the server's table of data-parallel jobs: admission of ranks at
 * their job's start, the hold on that start, and a rank's departure. */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "util.h"

#define MAX_JOBS TS_RING_MAX_CONSUMERS

struct job {
	bool used;
	uint32_t gen;              /* bumped when the slot is freed */
	char name[TS_PROTO_JOB_MAX + 1];
	uint32_t world, batch;
	enum ts_ring_join join;
	bool drop_last, job_drop;
	struct ts_ring_join_pos start;
	int hold;                  /* ts_ring_hold id until complete; -1 */
	unsigned present;          /* members attached now */
	struct ts_ring_consumer *member[TS_RING_MAX_CONSUMERS];
	uint32_t pid[TS_RING_MAX_CONSUMERS];
};

struct ts_jobs {
	struct job jobs[MAX_JOBS];
};

int ts_jobs_create(struct ts_jobs **out, struct ts_error *err)
{
	struct ts_jobs *t = calloc(1, sizeof(*t));
	if (!t)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < MAX_JOBS; i++)
		t->jobs[i].hold = -1;
	*out = t;
	return 0;
}

static void job_free(struct ts_ring *r, struct job *j)
{
	if (j->hold >= 0)
		ts_ring_unhold(r, j->hold);
	uint32_t gen = j->gen + 1;
	memset(j, 0, sizeof(*j));
	j->gen = gen;
	j->hold = -1;
}

void ts_jobs_destroy(struct ts_jobs *t, struct ts_ring *r)
{
	if (!t)
		return;
	for (size_t i = 0; i < MAX_JOBS; i++)
		if (t->jobs[i].used)
			job_free(r, &t->jobs[i]);
	free(t);
}

static const char *join_name(enum ts_ring_join j)
{
	return j == TS_JOIN_NEXT_EPOCH ? "next_epoch" : "now";
}

/* Does a later rank ask for what the job's first did? */
static int job_matches(const struct job *j, const struct ts_job_req *jr,
		       const struct ts_ring_join_req *req, bool drop_last,
		       struct ts_error *err)
{
	const char *what = NULL;
	char mine[32] = "", theirs[32] = "";
	if (jr->world != j->world) {
		what = "world size";
		snprintf(mine, sizeof(mine), "%u", jr->world);
		snprintf(theirs, sizeof(theirs), "%u", j->world);
	} else if (req->batch != j->batch) {
		what = "batch size";
		snprintf(mine, sizeof(mine), "%u", req->batch);
		snprintf(theirs, sizeof(theirs), "%u", j->batch);
	} else if (req->join != j->join) {
		what = "join policy";
		snprintf(mine, sizeof(mine), "%s", join_name(req->join));
		snprintf(theirs, sizeof(theirs), "%s", join_name(j->join));
	} else if (drop_last != j->drop_last) {
		what = "drop_last";
		snprintf(mine, sizeof(mine), "%s", drop_last ? "true" : "false");
		snprintf(theirs, sizeof(theirs), "%s", j->drop_last ? "true" : "false");
	} else if (jr->job_drop != j->job_drop) {
		what = "job_drop_last";
		snprintf(mine, sizeof(mine), "%s", jr->job_drop ? "true" : "false");
		snprintf(theirs, sizeof(theirs), "%s", j->job_drop ? "true" : "false");
	}
	if (!what)
		return 0;
	return ts_error_set(err, TS_E_REFUSED,
			    "rank %u of job '%s' asks for %s %s, but its other ranks "
			    "have %s: every rank of a job must ask for the same",
			    jr->rank, jr->name, what, mine, theirs);
}

int ts_jobs_attach(struct ts_jobs *t, struct ts_ring *r,
		   const struct ts_job_req *jr, const struct ts_ring_join_req *req,
		   bool drop_last, struct ts_ring_consumer **out,
		   struct ts_ring_join_pos *pos, struct ts_job_ticket *ticket,
		   struct ts_error *err)
{
	struct job *j = NULL, *free_slot = NULL;
	int rc;

	if (jr->world == 0 || jr->world > TS_RING_MAX_CONSUMERS || jr->rank >= jr->world)
		return ts_error_set(err, TS_E_REFUSED,
				    "rank %u of %u: a job has 1 to %d ranks, numbered from 0",
				    jr->rank, jr->world, TS_RING_MAX_CONSUMERS);
	for (size_t i = 0; i < MAX_JOBS; i++) {
		struct job *x = &t->jobs[i];
		if (x->used && strcmp(x->name, jr->name) == 0)
			j = x;
		else if (!x->used && !free_slot)
			free_slot = x;
	}
	struct ts_ring_join_req rq = *req;
	if (j) {
		rc = job_matches(j, jr, req, drop_last, err);
		if (rc)
			return rc;
		if (j->member[jr->rank])
			return ts_error_set(err, TS_E_REFUSED,
					    "rank %u of job '%s' is already connected (pid %u); "
					    "give each process of the job its own rank",
					    jr->rank, jr->name, j->pid[jr->rank]);
		rq.fixed = true;
		rq.fixed_start = j->start.start;
		rq.fixed_min_epoch = j->start.min_epoch;
	} else if (!free_slot) {
		return ts_error_set(err, TS_E_REFUSED, "too many jobs (at most %d)", MAX_JOBS);
	}
	struct ts_ring_consumer *c = NULL;
	struct ts_ring_join_pos p;
	rc = ts_ring_attach(r, &rq, &c, &p, err);
	if (rc < 0)
		return rc;
	if (!j) {
		j = free_slot;
		int hold = -1;
		/* The first rank: the job starts where it does, and the ring
		 * keeps that start until the others are there. Before the
		 * welcome, so this rank has released nothing yet. */
		if (jr->world > 1 && (rc = ts_ring_hold(r, p.start, &hold, err)) < 0) {
			ts_ring_detach(r, c);
			return rc;
		}
		uint32_t gen = j->gen;
		memset(j, 0, sizeof(*j));
		j->used = true;
		j->gen = gen;
		snprintf(j->name, sizeof(j->name), "%s", jr->name);
		j->world = jr->world;
		j->batch = req->batch;
		j->join = req->join;
		j->drop_last = drop_last;
		j->job_drop = jr->job_drop;
		j->start = p;
		j->hold = hold;
	}
	j->member[jr->rank] = c;
	j->pid[jr->rank] = req->pid > 0 ? (uint32_t)req->pid : 0;
	if (++j->present == j->world && j->hold >= 0) {
		/* Every rank is in: they hold the ring themselves now. */
		ts_ring_unhold(r, j->hold);
		j->hold = -1;
	}
	*out = c;
	*pos = p;
	*ticket = (struct ts_job_ticket){ (int)(j - t->jobs), j->gen, jr->rank,
					  j->pid[jr->rank] };
	return 0;
}

void ts_jobs_leave(struct ts_jobs *t, struct ts_ring *r,
		   const struct ts_job_ticket *tk, bool early)
{
	if (tk->slot < 0 || tk->slot >= MAX_JOBS)
		return;
	struct job *j = &t->jobs[tk->slot];
	if (!j->used || j->gen != tk->gen || tk->rank >= j->world || !j->member[tk->rank])
		return;
	j->member[tk->rank] = NULL;
	j->present--;
	if (early) {
		for (uint32_t k = 0; k < j->world; k++)
			if (j->member[k])
				ts_ring_consumer_fail_job(r, j->member[k], tk->rank, tk->pid);
		job_free(r, j);
		return;
	}
	if (j->present == 0)
		job_free(r, j);
}
