/*
 * ring_internal.h - what ring.c (the ring, its writers and publication)
 * and ring_consumer.c (trainers attached to it: attach, holds, the stall
 * clock, detach) share: the producer side's structures and three of
 * ring.c's steps. Internal to those two files.
 */
#ifndef TS_RING_INTERNAL_H
#define TS_RING_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ring.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

struct ts_ring_consumer {
	int ctl_fd;
	struct ts_ring_ctl *ctl;
	pid_t pid;
	uint32_t batch;
	uint64_t start;
	bool local;
	int slot;            /* index in ring->watch */
	int refs;            /* producer waiters sleeping on ctl */
	bool dead;
	/* A rank of a job still waiting for its other ranks: under the
	 * lock; it bounds no writer and counts as no trainer. */
	bool job_wait;
	uint32_t end_epoch;  /* ctl.end_epoch, as the producer wrote it */
	uint64_t last_release;
	double last_time;
	double rate;
	/* Stall clock (ts_ring_consumer_held): the release position it
	 * last saw and since when the ring has been full up to it (< 0:
	 * not holding). */
	uint64_t stall_release;
	double stall_since;
	double attached;     /* ts_clock_now() at attach */
	char job[TS_RING_JOB_MAX + 1];  /* its job's name, or "" */
};

struct ts_ring {
	int fd;
	struct ts_ring_hdr *hdr;
	uint8_t *data;                 /* 2 * data_bytes, double mapped */
	struct ts_ring_meta *meta;
	uint8_t *label_region;         /* label tensors, or MAP_FAILED */
	size_t data_bytes, meta_bytes, label_region_bytes;
	uint64_t capacity, sample_bytes, label_bytes;
	uint64_t sample_stride;        /* slot to slot (struct ts_ring_hdr) */
	unsigned min_consumers;
	bool started;           /* min_consumers was reached once */

	pthread_mutex_t lock;          /* consumers, limit recomputation */
	struct ts_ring_consumer *consumers[TS_RING_MAX_CONSUMERS];
	size_t n_consumers;
	/* ctl pages publish() scans for sleeping consumers, read without
	 * the lock; pub_active keeps a detach from unmapping one mid-scan */
	struct ts_ring_ctl *watch[TS_RING_MAX_CONSUMERS];
	uint32_t pub_active;
	uint64_t consumer_wakes;       /* publishes that issued a futex wake */

	uint32_t origin_epoch;         /* the stream's first position, under */
	uint64_t origin_index;         /* the lock (ts_ring_set_origin) */
	uint64_t limit;                /* seqs < limit may be written */
	uint64_t populated;            /* slots [0, populated) are faulted in
					  (first lap; ring.c prefault) */
	uint64_t want;                 /* the highest seq a writer waited for
					  (under the lock): a writer waits
					  while want >= limit */
	uint32_t prod_seq;             /* futex: attach/detach/publish/finish */
	uint32_t prod_waiters;
	uint32_t finished;
	uint32_t producer_blocked;
	/* Staged publication: writers' head, the end they asked for, and a
	 * futex the finisher sleeps on (process-local). */
	bool staged;
	uint64_t written;
	uint32_t end_asked;
	uint32_t stage_seq;
	uint32_t stage_waiting;
	double last_stat;
	/* Detached consumers' final figures (a ring of the last ones). */
	struct ts_ring_consumer_stat departed[TS_RING_MAX_CONSUMERS];
	size_t n_departed;
	/* Writers' time blocked, ns summed over threads (ts_ring_stat's
	 * wait_*_s): statistics, relaxed adds. */
	uint64_t wait_slot_ns, wait_idle_ns, wait_self_ns;
	double created;                /* ts_clock_now() at create */
};

/* Wake writers waiting on prod_seq (after a change to the head, the
 * consumer table or finished). */
void ts_ring_wake_producers(struct ts_ring *r);
/* Wait until no publish() is scanning the watch array. */
void ts_ring_quiesce_publish(struct ts_ring *r);
/* Unmap and free a consumer no longer in the tables. */
void ts_ring_free_consumer(struct ts_ring *r, struct ts_ring_consumer *c);

#endif
