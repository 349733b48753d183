/*
 * memory.h - what a plan needs in memory (ring, scratch, io) and whether
 * that fits its serve block's budget. Internal to dsl/ and the CLI.
 * Pure functions; thread safe on distinct arguments.
 */
#ifndef TS_MEMORY_H
#define TS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "plan.h"

/* Recompute plan->mem_* and mem_threads for a machine with `cores`
 * online cores (used when threads is auto; <= 0 means this machine's).
 * `tsrun graph --cores N` uses it to show the estimate for another host. */
void ts_plan_estimate(struct ts_plan *plan, int cores);

/* Bytes of a ring of `samples` samples of plan's shape (slots, labels and
 * positions, rounded up to pages), as the estimate counts it; and the
 * most samples whose ring fits in `bytes` (0 when not even one does). */
uint64_t ts_plan_ring_bytes(const struct ts_plan *plan, int64_t samples);
/* The capacity ts_ring_create gives a ring asked for `samples` (at least
 * 2, a multiple of ts_plan_ring_unit: its sample area is whole pages). */
int64_t ts_plan_ring_capacity(const struct ts_plan *plan, int64_t samples);
uint64_t ts_plan_ring_unit(const struct ts_plan *plan);
int64_t ts_plan_ring_fit(const struct ts_plan *plan, uint64_t bytes);

/* Tiling straight after a decode (decode | tile, nothing fused into the
 * decode, files) is done in bands (runtime/engine_sample.c): a worker
 * decodes tile-height rows at a time, and writes its staged tiles to the
 * ring once they hold TS_PLAN_BAND_FLUSH bytes. The scratch term of such a
 * plan covers frames up to TS_PLAN_BAND_WIDTH pixels wide (any height);
 * man/tsrun-pipeline.5, MEMORY. */
#define TS_PLAN_BAND_FLUSH (2u * 1024u * 1024u)
#define TS_PLAN_BAND_WIDTH 8192
bool ts_plan_tiles_banded(const struct ts_plan *plan);

/* Whether plan (estimated) needs more than its memory budget: if so,
 * writes the breakdown ("plan needs ...: ring ..., scratch ..., io ...;
 * budget is ...") to msg and the setting to shrink, with the largest
 * value that fits, to hint, and returns true. */
bool ts_plan_over_budget(const struct ts_plan *plan, char *msg, size_t msg_n,
			 char *hint, size_t hint_n);

#endif
