/*
 * digest.h - the stream digest printed by `tsrun bench` and `tsrun
 * consume`: a 64-bit hash over every sample's bytes and label, in stream
 * order. Two runs, thread counts or consumers that saw the same samples
 * print the same digest. Not cryptographic; XXH3 (libxxhash), fast.
 */
#ifndef TS_DIGEST_H
#define TS_DIGEST_H

#include <stddef.h>
#include <stdint.h>

struct ts_digest {
	uint64_t h;
	uint64_t samples;
};

void ts_digest_init(struct ts_digest *d);
/* Fold one sample (its bytes and its label) into the digest. */
void ts_digest_sample(struct ts_digest *d, const void *data, size_t len,
		      int32_t label);
/* The digest as 16 lowercase hex digits plus NUL. */
void ts_digest_hex(const struct ts_digest *d, char out[17]);

#endif
