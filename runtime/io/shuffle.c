/* shuffle.c - per-epoch permutations from the counter-based RNG. */
#include "shuffle.h"

#include "rng.h"

/* RNG stream id of the shuffle: far above any operator position, so the
 * permutation never shares random numbers with a sample's augmentation. */
#define SHUFFLE_STREAM UINT64_C(0x73687566666c6521)

/*
 * Fisher-Yates (Durstenfeld) from the end down: each element's final
 * place is drawn unbiased from the positions not yet fixed. The stream is
 * keyed by (seed, epoch) alone, so n and the seed fully determine the
 * order and a resumed run recomputes it without any saved state.
 */
void ts_shuffle_perm(uint64_t seed, uint64_t epoch, bool shuffle,
		     uint32_t *perm, size_t n)
{
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	if (!shuffle || n < 2)
		return;

	struct ts_rng rng;
	ts_rng_init(&rng, seed, epoch, 0, SHUFFLE_STREAM);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)ts_rng_below(&rng, (uint64_t)i + 1);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}
