/*
 * rng.c - counter-based RNG: the key is a hash of (seed, epoch, index,
 * stream); output i is a strong 64-bit mix of key + i * golden. The mix is
 * splitmix64's finaliser, which passes BigCrush as a counter-mode
 * generator; it is not for cryptography.
 */
#include "rng.h"

#define GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t ts_rng_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void ts_rng_init(struct ts_rng *r, uint64_t seed, uint64_t epoch,
		 uint64_t index, uint64_t stream)
{
	uint64_t k = ts_rng_mix64(seed + GOLDEN);
	k = ts_rng_mix64(k ^ (epoch + 0x632be59bd9b4e019ULL));
	k = ts_rng_mix64(k ^ (index + 0x8cb92ba72f3d8dd7ULL));
	k = ts_rng_mix64(k ^ (stream + 0xd6e8feb86659fd93ULL));
	r->key = k;
	r->ctr = 0;
}

void ts_rng_fork(const struct ts_rng *parent, uint64_t stream,
		 struct ts_rng *child)
{
	child->key = ts_rng_mix64(parent->key ^ ts_rng_mix64(stream + 0x3c6ef372fe94f82bULL));
	child->ctr = 0;
}

uint64_t ts_rng_u64(struct ts_rng *r)
{
	r->ctr++;
	return ts_rng_mix64(r->key + r->ctr * GOLDEN);
}

double ts_rng_uniform(struct ts_rng *r)
{
	return (double)(ts_rng_u64(r) >> 11) * 0x1.0p-53;
}

double ts_rng_range(struct ts_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * ts_rng_uniform(r);
}

uint64_t ts_rng_below(struct ts_rng *r, uint64_t n)
{
	/* Lemire's multiply-shift with rejection: unbiased for any n. */
	uint64_t x = ts_rng_u64(r);
	__uint128_t m = (__uint128_t)x * n;
	uint64_t l = (uint64_t)m;
	if (l < n) {
		uint64_t t = -n % n;
		while (l < t) {
			x = ts_rng_u64(r);
			m = (__uint128_t)x * n;
			l = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}
