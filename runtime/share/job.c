/* job.c - the server's table of data-parallel jobs: admission of ranks,
 * the job's start once all have come (or the end of its wait), and a
 * rank's departure. */
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
	uid_t uid;                 /* a job is its user's: (uid, name) */
	char name[TS_PROTO_JOB_MAX + 1];
	uint32_t world, batch;
	enum ts_ring_join join;
	bool drop_last, job_drop;
	bool started;              /* every rank came; the stream is theirs */
	double since;              /* the first rank waiting came then */
	struct ts_ring_join_pos start;
	unsigned present;          /* members attached now */
	struct ts_ring_consumer *member[TS_RING_MAX_CONSUMERS];
	uint32_t pid[TS_RING_MAX_CONSUMERS];
};

struct ts_job_table {
	struct job jobs[MAX_JOBS];
};

int ts_job_create(struct ts_job_table **out, struct ts_error *err)
{
	struct ts_job_table *t = calloc(1, sizeof(*t));
	if (!t)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	*out = t;
	return 0;
}

static void job_free(struct job *j)
{
	uint32_t gen = j->gen + 1;
	memset(j, 0, sizeof(*j));
	j->gen = gen;
}

void ts_job_destroy(struct ts_job_table *t)
{
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

int ts_job_attach(struct ts_job_table *t, struct ts_ring *r,
		   const struct ts_job_req *jr, const struct ts_ring_join_req *req,
		   bool drop_last, double now, struct ts_ring_consumer **out,
		   struct ts_job_ticket *ticket, struct ts_error *err)
{
	struct job *j = NULL, *free_slot = NULL;
	int rc;

	if (jr->world == 0 || jr->world > TS_RING_MAX_CONSUMERS || jr->rank >= jr->world)
		return ts_error_set(err, TS_E_REFUSED,
				    "rank %u of %u: a job has 1 to %d ranks, numbered from 0",
				    jr->rank, jr->world, TS_RING_MAX_CONSUMERS);
	for (size_t i = 0; i < MAX_JOBS; i++) {
		struct job *x = &t->jobs[i];
		if (x->used && x->uid == jr->uid && strcmp(x->name, jr->name) == 0)
			j = x;
		else if (!x->used && !free_slot)
			free_slot = x;
	}
	if (j) {
		rc = job_matches(j, jr, req, drop_last, err);
		if (rc)
			return rc;
		if (j->member[jr->rank])
			return ts_error_set(err, TS_E_REFUSED,
					    "rank %u of job '%s' is already connected (pid %u); "
					    "give each process of the job its own rank",
					    jr->rank, jr->name, j->pid[jr->rank]);
		if (j->started)
			return ts_error_set(err, TS_E_REFUSED,
					    "job '%s' has started without rank %u; start its "
					    "ranks again, or give this one another job name",
					    jr->name, jr->rank);
	} else if (!free_slot) {
		return ts_error_set(err, TS_E_REFUSED, "too many jobs (at most %d)", MAX_JOBS);
	}
	/* Every rank waits, holding nothing, until the last one comes; the
	 * job's start is picked then (ts_ring_consumer_start_job). */
	struct ts_ring_join_req rq = *req;
	rq.job_wait = true;
	struct ts_ring_consumer *c = NULL;
	rc = ts_ring_attach(r, &rq, &c, NULL, err);
	if (rc < 0)
		return rc;
	if (!j) {
		j = free_slot;
		uint32_t gen = j->gen;
		memset(j, 0, sizeof(*j));
		j->used = true;
		j->gen = gen;
		j->uid = jr->uid;
		snprintf(j->name, sizeof(j->name), "%s", jr->name);
		j->world = jr->world;
		j->batch = req->batch;
		j->join = req->join;
		j->drop_last = drop_last;
		j->job_drop = jr->job_drop;
	}
	if (j->present == 0)
		j->since = now;
	j->member[jr->rank] = c;
	j->pid[jr->rank] = req->pid > 0 ? (uint32_t)req->pid : 0;
	if (++j->present == j->world) {
		/* Every rank is in: they start together, at the first rank's
		 * policy applied now. */
		ts_ring_consumer_start_job(r, j->member, j->world, j->join, &j->start);
		j->started = true;
	}
	*out = c;
	*ticket = (struct ts_job_ticket){ (int)(j - t->jobs), j->gen, jr->rank,
					  j->pid[jr->rank] };
	return 0;
}

void ts_job_leave(struct ts_job_table *t, struct ts_ring *r,
		   const struct ts_job_ticket *tk, bool early)
{
	if (tk->slot < 0 || tk->slot >= MAX_JOBS)
		return;
	struct job *j = &t->jobs[tk->slot];
	if (!j->used || j->gen != tk->gen || tk->rank >= j->world || !j->member[tk->rank])
		return;
	j->member[tk->rank] = NULL;
	j->present--;
	if (early && j->started) {
		for (uint32_t k = 0; k < j->world; k++)
			if (j->member[k])
				ts_ring_consumer_fail_job(r, j->member[k], tk->rank, tk->pid);
		job_free(j);
		return;
	}
	/* A rank that leaves a job still waiting fails nothing: its place
	 * is free for a new process (the waiting clock runs on). */
	if (j->present == 0)
		job_free(j);
}

bool ts_job_expire(struct ts_job_table *t, struct ts_ring *r, double now,
		    uint32_t timeout_ms, char *note, size_t note_len)
{
	for (size_t i = 0; i < MAX_JOBS; i++) {
		struct job *j = &t->jobs[i];
		if (!j->used || j->started || j->present == 0 ||
		    (now - j->since) * 1e3 < timeout_ms)
			continue;
		uint64_t missing = 0;
		char miss[160] = "", came[160] = "";
		size_t nm = 0, nc = 0;
		for (uint32_t k = 0; k < j->world; k++) {
			if (!j->member[k]) {
				missing |= 1ull << k;
				if (nm < sizeof(miss))
					nm += (size_t)snprintf(miss + nm, sizeof(miss) - nm,
							       "%s%u", nm ? ", " : "", k);
			} else if (nc < sizeof(came)) {
				nc += (size_t)snprintf(came + nc, sizeof(came) - nc,
						       "%s%u (pid %u)", nc ? ", " : "", k,
						       j->pid[k]);
			}
		}
		for (uint32_t k = 0; k < j->world; k++)
			if (j->member[k])
				ts_ring_consumer_job_timeout(r, j->member[k], missing, timeout_ms);
		snprintf(note, note_len,
			 "job '%s' (uid %u): rank%s %s of %u did not connect within %g s "
			 "(serve setting job_timeout); its rank%s %s get%s an error",
			 j->name, (unsigned)j->uid, j->world - j->present > 1 ? "s" : "", miss,
			 j->world, timeout_ms / 1e3, j->present > 1 ? "s" : "", came,
			 j->present > 1 ? "" : "s");
		job_free(j);
		return true;
	}
	return false;
}
