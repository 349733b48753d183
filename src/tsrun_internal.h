/*
 * tsrun_internal.h - what the CLI needs of the embedding API beyond
 * tsrun.h: wrapping a plan it compiled itself (with its own diagnostics
 * printing) and reaching the engine's figures. Not installed.
 */
#ifndef TSRUN_INTERNAL_H
#define TSRUN_INTERNAL_H

#include "plan.h"
#include "tsrun.h"

/* A pipeline around an already checked plan; takes ownership of plan
 * (also on failure). Returns NULL when out of memory. */
struct ts_pipeline *ts_pipeline_wrap(struct ts_plan *plan);

/* The plan inside a pipeline (owned by it). */
const struct ts_plan *ts_pipeline_plan(const struct ts_pipeline *p);

/* Streams opened on p from now on write the draw trace (engine.h's
 * ts_engine_opts.trace, `tsrun bench --trace`) to fd, which stays the
 * caller's and must outlive them; fd < 0: none. */
void ts_pipeline_set_trace(struct ts_pipeline *p, int fd);
/* The running engine's figures (the decoded cache's among them, which
 * struct ts_stream_stats does not carry). */
struct ts_engine_stats;
void ts_stream_engine_stats(const struct ts_stream *s, struct ts_engine_stats *st);

#endif
