/*
 * ring_finisher.h - the one thread between a staged ring's writers and its
 * consumers (ring.h, "staged publication"). It takes what the writers
 * published, passes it through a fill function in chunks that never
 * cross the ring's wrap (the device ring's filler: copy to the GPU and run
 * the finishing kernel), and only then makes it visible to consumers.
 * When the writers end the stream it ends it after the last chunk; when
 * a fill fails it ends the stream with that error.
 *
 * Nothing here prints or exits. One finisher per ring.
 */
#ifndef TS_RING_FINISHER_H
#define TS_RING_FINISHER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ring.h"

/* Process n samples starting at ring seq, whose host bytes are at host
 * (n samples, the ring's sample_stride apart). 0 or a negative code with
 * err set. */
typedef int (*ts_finisher_fill)(void *arg, const void *host, uint64_t seq,
				size_t n, struct ts_error *err);

struct ts_finisher;

struct ts_finisher_stats {
	uint64_t samples;      /* made visible */
	uint64_t fills;        /* fill calls */
	double fill_s;         /* seconds inside fill */
};

/* Start the thread on a ring created with params.staged, from its
 * current visible head, at most chunk samples per fill (>= 1). */
int ts_finisher_start(struct ts_ring *ring, size_t chunk, ts_finisher_fill fill,
		      void *arg, struct ts_finisher **out, struct ts_error *err);

/* Figures so far. Thread-safe. */
void ts_finisher_stats(struct ts_finisher *f, struct ts_finisher_stats *out);

/* Stop (at once if the stream has not ended: what is written but not
 * finished stays invisible) and join. Returns 0 or the fill error that
 * ended the stream, with err. NULL is a no-op. */
int ts_finisher_stop(struct ts_finisher *f, struct ts_error *err);

#endif
