/*
 * status.h - what `tsrun run` shows while it serves: a one-line status
 * updated in place on a terminal (plain periodic lines otherwise), one
 * JSON object per update for --stats-json, a status file next to the
 * socket that `tsrun stat` reads, and the summary at exit. CLI only.
 */
#ifndef TS_STATUS_H
#define TS_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "plan.h"
#include "ring.h"

struct ts_status;

/* The status file of a socket: "<socket>.status.json". Malloc'd. */
char *ts_status_path(const char *socket_path);

int ts_status_create(const struct ts_plan *plan, const char *file,
		     const char *socket_path, uint64_t epochs,
		     uint64_t start_epoch, bool quiet, struct ts_status **out);

/* Record a snapshot: redraw the line on tty (or print a plain line every
 * 10 s when tty is not a terminal), append a JSON object to json when
 * non-NULL, and rewrite the status file. */
void ts_status_update(struct ts_status *s, const struct ts_engine_stats *es,
		      const struct ts_ring_stat *rs, FILE *tty, FILE *json);

/* The plan that took over after a reload (borrowed, as at create). */
void ts_status_set_plan(struct ts_status *s, const struct ts_plan *plan,
			const char *file);

/* Erase the in-place line before other output. */
void ts_status_clear(struct ts_status *s, FILE *tty);

/* The final summary: images served, per-consumer throughput, CPU time,
 * peak memory, skipped files. */
void ts_status_summary(struct ts_status *s, const struct ts_engine_stats *es,
		       const struct ts_ring_stat *rs, const char *const *skipped,
		       size_t n_skipped, FILE *out);

/* Removes the status file. NULL is a no-op. */
/* Whether a --stats-json write failed (and was said in the log). */
bool ts_status_json_failed(const struct ts_status *s);

void ts_status_destroy(struct ts_status *s);

/* What a status file holds, as `tsrun stat` and `tsrun reload` read it. */
struct ts_status_consumer {
	long pid;
	double batch, position, lag, rate;
	/* The trainer's own accounting (-1: unknown, an older client):
	 * images handed to it, seconds connected, the fraction of its time
	 * it waited for batches in the window and since it connected. */
	double images, connected_s, wait, wait_total;
	char job[64];             /* "" without */
};

struct ts_status_info {
	char pipeline[256], file[1024], socket[1024], state[32];
	double pid, epoch, epochs, index, epoch_size, samples, rate;
	double ring_fill, capacity, skipped, threads, batch;
	long holding_back; /* -1: null */
	/* The producer's time in the window (window_s long) and since it
	 * started, fractions of its writers' time (-1: unknown): working,
	 * waiting for a free slot, idle. */
	double window_s;
	double prod_work, prod_slot, prod_idle;
	double prod_work_total, prod_slot_total, prod_idle_total;
	char who_waits[512];      /* in words; "" when nothing to say */
	/* the decoded cache (all 0 without one): its size and bytes used,
	 * items held, lookups and hits, 1 when its pages are locked */
	double cache_bytes, cache_used, cache_items, cache_lookups, cache_hits, cache_locked;
	bool has_pid, has_consumers;
	struct ts_status_consumer *consumers;
	size_t n_consumers;
};

/* Parse the status file's text. False for a truncated or garbage file, or
 * one without a valid pid and consumer list. st starts zeroed; free its
 * consumers with ts_status_info_free. */
bool ts_status_parse(const char *text, size_t len, struct ts_status_info *st);
void ts_status_info_free(struct ts_status_info *st);

/* A serving tsrun rewrites its status file every second; one older than
 * this is stale (a stopped or killed tsrun). */
#define TS_STATUS_STALE_S 5.0
/* A status file is a few KiB (one line per trainer); a bigger one is
 * not tsrun's. */
#define TS_STATUS_MAX_BYTES (1u << 20)

/* The status as Prometheus text (exposition format 0.0.4: # HELP, # TYPE,
 * one series per trainer labelled pid, batch and job) into f. */
void ts_status_metrics(const struct ts_status_info *st, FILE *f);

/* Read and parse the status file of socket_path (ts_status_path): *text
 * (malloc'd, len bytes) as read, *st parsed, *age seconds since it was
 * written (>= 0). Returns 0; -errno when it cannot be read (-ENOENT: no
 * file); TS_E_PROTOCOL when it is not a status file (truncated or
 * garbage). Free *text and ts_status_info_free(st) in every case. */
int ts_status_load(const char *socket_path, char **text, size_t *len,
		   struct ts_status_info *st, double *age);

#endif
