/* digest.c - stream digest: per sample libxxhash's XXH3 (64-bit), seeded
 * with the digest so far and the label, so that order and labels matter.
 * XXH3 runs at memory speed (tens of GB/s with SSE2/AVX2), which keeps
 * this bench-only work a small part of `tsrun bench`'s CPU figure. Where
 * the library has its x86 dispatch (Debian's does; meson checks), the
 * AVX2/AVX-512 variant this CPU runs is used; the value is the same. */
#include "digest.h"

#include <stdio.h>

#include <xxhash.h>
#if defined(TS_HAVE_XXH_DISPATCH)
#include <xxh_x86dispatch.h>
#define hash64 XXH3_64bits_withSeed_dispatch
#else
#define hash64 XXH3_64bits_withSeed
#endif

void ts_digest_init(struct ts_digest *d)
{
	d->h = 0x243f6a8885a308d3ULL;
	d->samples = 0;
}

void ts_digest_sample(struct ts_digest *d, const void *data, size_t len,
		      int32_t label)
{
	const uint64_t seed = d->h ^ ((uint64_t)(uint32_t)label * 0x9e3779b97f4a7c15ULL);
	d->h = hash64(data, len, seed);
	d->samples++;
}

void ts_digest_hex(const struct ts_digest *d, char out[17])
{
	snprintf(out, 17, "%016llx", (unsigned long long)d->h);
}
