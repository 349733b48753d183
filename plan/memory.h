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
 * 2, a multiple of ts_plan_ring_unit: its sample area is whole pages),
 * the bytes from one of its slots to the next, and the unit. */
int64_t ts_plan_ring_capacity(const struct ts_plan *plan, int64_t samples);
uint64_t ts_plan_ring_stride(const struct ts_plan *plan, int64_t samples);
uint64_t ts_plan_ring_unit(const struct ts_plan *plan, int64_t samples);
int64_t ts_plan_ring_fit(const struct ts_plan *plan, uint64_t bytes);

/*
 * How a ring of `want` samples of sample_bytes is laid out: the stride
 * from one slot to the next and the capacity. The ring maps its sample
 * area twice, back to back, so that a batch across the wrap is
 * contiguous: the area must be whole pages, and with slots sample_bytes
 * apart the capacity is a multiple of page / gcd(sample_bytes, page)
 * samples (a 268,203-byte 299x299x3 uint8 sample: 4,096 of them, 1 GiB
 * where 512 asked need 131 MiB). Slots padded to 64 bytes need a
 * multiple of 64 samples at most, padded to a page none. The stride is
 * sample_bytes (batches contiguous, as consumers mostly see them) unless
 * that makes the sample area more than an eighth and more than 2 MiB
 * larger than the smaller of the two padded layouts (64 bytes on a
 * tie), which it then is. ts_ring_create lays rings out with it;
 * test-ring checks the plan's figures against real rings. False when no
 * layout fits 2^32 samples and 2^44 bytes.
 */
bool ts_plan_ring_layout(uint64_t sample_bytes, uint64_t want, uint64_t page,
			 uint64_t *stride, uint64_t *cap);

/* Tiling straight after a decode (decode | tile, nothing fused into the
 * decode, files) is done in bands (runtime/engine_banded.c): a worker
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
