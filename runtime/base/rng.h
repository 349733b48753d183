/*
 * rng.h - counter-based random numbers. A stream is a pure function of
 * (seed, epoch, index, stream id) and a counter, so every sample's random
 * choices are the same whichever worker thread draws them and in whatever
 * order samples finish. No state is shared between streams.
 */
#ifndef TS_RNG_H
#define TS_RNG_H

#include <stdint.h>

struct ts_rng {
	uint64_t key;
	uint64_t ctr;
};

/* The stream of sample (epoch, index) for the op at position stream. */
void ts_rng_init(struct ts_rng *r, uint64_t seed, uint64_t epoch,
		 uint64_t index, uint64_t stream);
uint64_t ts_rng_u64(struct ts_rng *r);
/* splitmix64's finaliser: a strong 64-bit mix, the generator's core; also
 * the synthetic source's per-image hash. */
uint64_t ts_rng_mix64(uint64_t z);
/* The stream `stream` forked off parent's: a pure function of parent's
 * key (not of how much of it was drawn) and stream, so the ops inside a
 * policy (random_apply, random_choice) draw the same whatever ran before
 * them. */
void ts_rng_fork(const struct ts_rng *parent, uint64_t stream,
		 struct ts_rng *child);
/* Uniform in [0, 1), 53 bits. */
double ts_rng_uniform(struct ts_rng *r);
/* Uniform in [lo, hi). */
double ts_rng_range(struct ts_rng *r, double lo, double hi);
/* Uniform integer in [0, n), unbiased; n > 0. */
uint64_t ts_rng_below(struct ts_rng *r, uint64_t n);

#endif
