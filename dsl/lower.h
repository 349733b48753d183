/*
 * lower.h - from the checked stage list to the plan's op list: fusion
 * passes (memory.h has the memory estimate). Internal to dsl/ and the CLI.
 * Pure functions; thread safe on distinct arguments.
 */
#ifndef TS_LOWER_H
#define TS_LOWER_H

#include <stddef.h>
#include <stdint.h>
#include "plan.h"

/* Fuse the per-sample ops (in pipeline order, shapes filled) into the
 * plan's op list: decode + a following resize/crop becomes one DECODE
 * with .fused; the trailing run of resize, center_crop, flip, normalize
 * and to becomes one OUTPUT whose .parts always end with a TO that names
 * the final dtype and layout. Takes ownership of ops (and everything they
 * own) in every case. Returns 0 with *out and *n_out set, or TS_E_NOMEM. */
int ts_lower_ops(struct ts_op *ops, size_t n, struct ts_op **out,
		 size_t *n_out);

#endif
