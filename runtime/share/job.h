/*
 * job.h - the data-parallel jobs a server knows (tensorsocket(7)): the
 * ranks of one job name it, their rank and the world size; a job is its
 * user's (two users' jobs of one name are two jobs). Each rank reads its
 * share of every epoch (share.h) from one start. Ranks that come first
 * wait, reading and holding nothing, so a job short of ranks never stops
 * another trainer; the last one starts the job at its first rank's join
 * policy. A job that waits past the serve setting job_timeout fails: its
 * ranks' readers return TS_E_JOB naming the missing ranks. A rank that
 * leaves while the stream runs fails its started job: the other ranks'
 * readers return TS_E_JOB, and the name is free for a new job at once (a
 * restart).
 *
 * Used by the server thread only (no locking here; the ring locks its own
 * state). Functions return 0 or a negative code and fill err.
 */
#ifndef TS_JOB_H
#define TS_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "error.h"
#include "ring.h"

struct ts_job_table;

/* What a rank asks for, from its hello. */
struct ts_job_req {
	const char *name;
	uid_t uid;                 /* the rank's user (SO_PEERCRED) */
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

int ts_job_create(struct ts_job_table **out, struct ts_error *err);
/* Drops the jobs (their consumers are the server's). NULL is a no-op. */
void ts_job_destroy(struct ts_job_table *t);

/*
 * Admit a rank of user jr->uid's job jr->name: attach it to r waiting
 * (req giving its batch, join policy and pid, SO_PEERCRED's), and, when it
 * is the last rank to come, start every rank at one position
 * (ts_ring_consumer_start_job). Every rank of a job must ask for the same
 * world size, batch size, join policy, trainer drop_last and job drop; the
 * rank must not be connected already. TS_E_REFUSED (err says what
 * differs) otherwise; then nothing is attached. On success *out as
 * ts_ring_attach, *ticket for ts_job_leave. now: the monotonic clock, for
 * the wait.
 */
int ts_job_attach(struct ts_job_table *t, struct ts_ring *r,
		   const struct ts_job_req *jr, const struct ts_ring_join_req *req,
		   bool drop_last, double now, struct ts_ring_consumer **out,
		   struct ts_job_ticket *ticket, struct ts_error *err);

/*
 * A member leaves (call before detaching its consumer). early: the stream
 * still runs, so a started job fails: every other member is told
 * (ts_ring_consumer_fail_job) and the job is forgotten. A job still
 * waiting only frees the rank's place. Otherwise the job is forgotten
 * with its last member. A stale ticket is a no-op.
 */
void ts_job_leave(struct ts_job_table *t, struct ts_ring *r,
		   const struct ts_job_ticket *ticket, bool early);

/*
 * End one job that has waited timeout_ms or more for its ranks since its
 * first waiting rank came: its waiting ranks are told which ranks never
 * came (ts_ring_consumer_job_timeout; their readers return TS_E_JOB), it
 * is forgotten, and note gets a line for the producer's log. Returns
 * true when it ended one (call again for the next), false when none is
 * due.
 */
bool ts_job_expire(struct ts_job_table *t, struct ts_ring *r, double now,
		    uint32_t timeout_ms, char *note, size_t note_len);

#endif
