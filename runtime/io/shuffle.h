/*
 * shuffle.h - the per-epoch permutation of a data set. A permutation is a
 * pure function of (seed, epoch, n): any process, thread or resumed run
 * that asks for epoch e gets the same order, so a stream position
 * (epoch, index) is a complete checkpoint.
 */
#ifndef TS_SHUFFLE_H
#define TS_SHUFFLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Fill perm[0..n) with the order of epoch `epoch`: a Fisher-Yates shuffle
 * driven by the counter-based RNG keyed by (seed, epoch) when shuffle is
 * true, the identity 0, 1, ..., n-1 otherwise. n must fit in uint32_t.
 * perm is caller-owned. Reentrant; no allocation.
 */
void ts_shuffle_perm(uint64_t seed, uint64_t epoch, bool shuffle,
		     uint32_t *perm, size_t n);

#endif
