/* digest.c - stream digest: per sample a word-at-a-time multiply-mix hash,
 * chained so that order matters. */
#include "digest.h"

#include <stdio.h>
#include <string.h>

#define K1 0x9e3779b97f4a7c15ULL
#define K2 0xc2b2ae3d27d4eb4fULL

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

void ts_digest_init(struct ts_digest *d)
{
	d->h = 0x243f6a8885a308d3ULL;
	d->samples = 0;
}

/* Four independent lanes keep the multiplier pipeline busy; the lanes and
 * the length are folded together at the end of each sample. */
void ts_digest_sample(struct ts_digest *d, const void *data, size_t len,
		      int32_t label)
{
	const unsigned char *p = data;
	uint64_t a = d->h ^ K1, b = d->h ^ K2, c = ~d->h, e = d->h + K1;
	size_t i = 0;
	for (; i + 32 <= len; i += 32) {
		uint64_t w[4];
		memcpy(w, p + i, sizeof(w));
		a = (a ^ w[0]) * K1;
		b = (b ^ w[1]) * K2;
		c = (c ^ w[2]) * K1;
		e = (e ^ w[3]) * K2;
		a ^= a >> 29;
		b ^= b >> 31;
		c ^= c >> 27;
		e ^= e >> 30;
	}
	for (; i < len; i++)
		a = (a ^ p[i]) * K1;
	uint64_t h = mix(a) ^ mix(b + K1) ^ mix(c + K2) ^ mix(e ^ len);
	d->h = mix(d->h * K2 ^ h ^ ((uint64_t)(uint32_t)label << 1));
	d->samples++;
}

void ts_digest_hex(const struct ts_digest *d, char out[17])
{
	snprintf(out, 17, "%016llx", (unsigned long long)d->h);
}
