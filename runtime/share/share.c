/* share.c - node shares (shard) and rank shares (groups) of an epoch; the
 * rules are stated in share.h and in tsrun-pipeline(5) / tensorsocket(7). */
#include "share.h"

#include <errno.h>
#include <stdlib.h>

#include "util.h"

uint64_t ts_share_node_size(const struct ts_share_node *s)
{
	uint64_t k = s->count ? s->count : 1;
	return s->drop ? s->total / k : (s->total + k - 1) / k;
}

uint64_t ts_share_node_pos(const struct ts_share_node *s, uint64_t i)
{
	uint64_t k = s->count ? s->count : 1;
	/* DistributedSampler pads by repeating the order from its start:
	 * position p past the end is p mod total. */
	return ((uint64_t)s->index + k * i) % s->total;
}

/* An environment variable as a non-negative int: 0, or TS_E_SOURCE for a
 * malformed value; *present says whether it is set (and not empty). */
static int env_int(const char *name, int *out, bool *present,
		   struct ts_error *err)
{
	const char *v = getenv(name);
	*present = v && *v;
	if (!*present)
		return 0;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || x < 0 || x > INT32_MAX)
		return ts_error_set(err, TS_E_SOURCE,
				    "environment variable %s='%s' is not a non-negative integer",
				    name, v);
	*out = (int)x;
	return 0;
}

int ts_share_node_resolve(int index, int count, int *out_index,
			  int *out_count, const char **from,
			  struct ts_error *err)
{
	/* The node's index and the node count: torchrun's GROUP_RANK and
	 * GROUP_WORLD_SIZE, Slurm's SLURM_NODEID and SLURM_NNODES. Not RANK
	 * and WORLD_SIZE: those count processes, not nodes. */
	static const char *const pairs[][3] = {
		{"GROUP_RANK", "GROUP_WORLD_SIZE", "GROUP_RANK/GROUP_WORLD_SIZE"},
		{"SLURM_NODEID", "SLURM_NNODES", "SLURM_NODEID/SLURM_NNODES"},
	};
	int i = 0, c = 1;
	const char *f = NULL;

	if (count == 0) {
		i = 0;
		c = 1;
	} else if (index == -1 && count == -1) {
		for (size_t p = 0; p < TS_ARRAY_LEN(pairs); p++) {
			bool hi, hc;
			int ri = 0, rc = 0;
			int e = env_int(pairs[p][0], &ri, &hi, err);
			if (e)
				return e;
			e = env_int(pairs[p][1], &rc, &hc, err);
			if (e)
				return e;
			if (hi != hc)
				return ts_error_set(err, TS_E_SOURCE,
						    "%s is set but %s is not: set both (the node's index and the node count) or neither",
						    hi ? pairs[p][0] : pairs[p][1],
						    hi ? pairs[p][1] : pairs[p][0]);
			if (hi) {
				if (rc < 1 || ri >= rc)
					return ts_error_set(err, TS_E_SOURCE,
							    "%s=%d and %s=%d do not name a node: the index must be in 0..%s-1",
							    pairs[p][0], ri, pairs[p][1], rc,
							    pairs[p][1]);
				i = ri;
				c = rc;
				f = pairs[p][2];
				break;
			}
		}
	} else {
		i = index;
		c = count;
		if (c < 1 || i < 0 || i >= c)
			return ts_error_set(err, TS_E_SOURCE,
					    "shard(%d, %d): the index must be in 0..count-1",
					    index, count);
	}
	*out_index = i;
	*out_count = c;
	if (from)
		*from = f;
	return 0;
}

/* The rest of an epoch after the full rounds, and each rank's part of it. */
static void rank_rest(const struct ts_share_rank *s, uint64_t *rounds,
		      uint64_t *q)
{
	uint64_t round = (uint64_t)s->world * s->batch;
	*rounds = s->epoch_size / round;
	uint64_t m = s->epoch_size - *rounds * round;
	*q = s->drop ? m / s->world : (m + s->world - 1) / s->world;
}

uint64_t ts_share_rank_size(const struct ts_share_rank *s)
{
	uint64_t r, q;
	rank_rest(s, &r, &q);
	return r * s->batch + q;
}

bool ts_share_rank_next(const struct ts_share_rank *s, uint64_t i,
			uint64_t *first, uint64_t *n)
{
	uint64_t rounds, q, round = (uint64_t)s->world * s->batch;
	rank_rest(s, &rounds, &q);
	for (uint64_t j = i / round; j < rounds; j++) {
		uint64_t at = (j * s->world + s->rank) * s->batch;
		if (at >= i) {
			*first = at;
			*n = s->batch;
			return true;
		}
	}
	if (q == 0)
		return false;
	uint64_t at = rounds * round + (uint64_t)s->rank * q;
	if (at + q > s->epoch_size)
		at = s->epoch_size - q;
	if (at < i)
		return false;
	*first = at;
	*n = q;
	return true;
}
