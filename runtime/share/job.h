/*
 * job.h - the data-parallel jobs a server knows (tensorsocket(7)): the
 * ranks of one job name it, their rank and the world size; each reads its
 * share of every epoch (share.h) from one start, which the first rank's
 * join policy picks and the ring holds until every rank has come. A rank
 * that leaves while the stream runs fails its job: the other ranks' readers
 * return TS_E_JOB, and the name is free for a new job at once (a restart).
 *
 * Used by the server thread only (no locking here; the ring locks its own
 * state). Functions return 0 or a negative code and fill err.
 */
#ifndef TS_JOB_H
#define TS_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include "error.h"
#include "ring.h"

struct ts_jobs;

/* What a rank asks for, from its hello. */
struct ts_job_req {
	const char *name;
	uint32_t rank, world;      /* rank < world */
	bool job_drop;             /* equal shares by drop (else pad) */
};

/* A member's place in the table: slot -1 when not a member. */
struct ts_job_ticket {
	int slot;
	uint32_t gen;
	uint32_t rank;
	uint32_t pid;
};

int ts_jobs_create(struct ts_jobs **out, struct ts_error *err);
/* Drops the jobs and their holds on r. NULL is a no-op. */
void ts_jobs_destroy(struct ts_jobs *t, struct ts_ring *r);

/*
 * Admit a rank: attach it to r (as ts_ring_attach, req giving its batch,
 * join policy and pid) at its job's start. Every rank of a job must ask
 * for the same world size, batch size, join policy, trainer drop_last and
 * job drop; the rank must not be connected already. TS_E_REFUSED (err
 * says what differs) otherwise; then nothing is attached. On success *out
 * and *pos as ts_ring_attach, *ticket for ts_jobs_leave.
 */
int ts_jobs_attach(struct ts_jobs *t, struct ts_ring *r,
		   const struct ts_job_req *jr, const struct ts_ring_join_req *req,
		   bool drop_last, struct ts_ring_consumer **out,
		   struct ts_ring_join_pos *pos, struct ts_job_ticket *ticket,
		   struct ts_error *err);

/*
 * A member leaves (call before detaching its consumer). early: the stream
 * still runs, so the job fails: every other member is told
 * (ts_ring_consumer_fail_job) and the job is forgotten. Otherwise the job
 * is forgotten with its last member. A stale ticket is a no-op.
 */
void ts_jobs_leave(struct ts_jobs *t, struct ts_ring *r,
		   const struct ts_job_ticket *ticket, bool early);

#endif
