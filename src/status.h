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
void ts_status_destroy(struct ts_status *s);

#endif
