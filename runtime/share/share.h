/*
 * share.h - who reads which samples of an epoch: a node's share of the
 * data set (shard) and a rank's share of the stream (groups).
 *
 * Nodes. Each epoch the whole data set (total items, listed in the same
 * order on every node) is put in the epoch's order: the permutation keyed
 * by (seed, epoch) with shuffle, the listing order without. Node k of K
 * takes positions k, k + K, k + 2K, ... of that order, size() of them:
 * floor(total / K) with drop, ceil(total / K) without, where positions at
 * or past total wrap to the start (p mod total), as DistributedSampler's
 * drop_last=True / False do. Every node gets the same number; together
 * they read every item once (drop: all but total mod K of them; pad: the
 * first ceil * K - total positions twice).
 *
 * Ranks. A job of w ranks reading an epoch of M samples (the stream's
 * (epoch, index) positions) with batch B splits it into rounds of w * B:
 * in full round j (j < R = floor(M / (w * B))), rank r reads indices
 * [(j * w + r) * B, +B). The m = M - R * w * B samples left give each rank
 * one last span of q samples: q = floor(m / w) with drop (the last
 * m mod w samples are read by none), q = ceil(m / w) without, rank r's
 * span starting at min(R * w * B + r * q, M - q) (so the last ranks' spans
 * overlap at the epoch's end: the pad). Each rank reads R * B + q samples,
 * DistributedSampler's num_samples, in contiguous spans of the ring.
 *
 * Pure functions; reentrant. ts_share_node_resolve reads the environment.
 */
#ifndef TS_SHARE_H
#define TS_SHARE_H

#include <stdbool.h>
#include <stdint.h>
#include "error.h"

/* A node's share: count 1 (index 0) means the whole data set. */
struct ts_share_node {
	uint64_t total;     /* items in the data set */
	uint32_t index, count;
	bool drop;          /* floor (drop) or ceil (pad) */
};

/* Items per epoch of this node: 0 only when drop and total < count. */
uint64_t ts_share_node_size(const struct ts_share_node *s);

/* The position in the epoch's order of the node's item i (< size). */
uint64_t ts_share_node_pos(const struct ts_share_node *s, uint64_t i);

/*
 * The node's (index, count) from shard(index, count) as the plan holds it:
 * count 0 is 0 of 1 (no shard); index and count -1 read GROUP_RANK and
 * GROUP_WORLD_SIZE (torchrun), else SLURM_NODEID and SLURM_NNODES (Slurm),
 * else 0 of 1. *from gets the variables' names ("GROUP_RANK/GROUP_WORLD_SIZE")
 * or NULL when none were read. Returns 0 or TS_E_SOURCE (an invalid pair,
 * one variable of a pair without the other, a malformed value; err says
 * which and what to set).
 */
int ts_share_node_resolve(int index, int count, int *out_index,
			  int *out_count, const char **from,
			  struct ts_error *err);

/* A rank's share of every epoch. */
struct ts_share_rank {
	uint64_t epoch_size;   /* M, > 0 */
	uint32_t rank, world;  /* rank < world */
	uint32_t batch;        /* B, > 0 */
	bool drop;             /* floor (drop) or ceil (pad) of the rest */
};

/* Samples per epoch of this rank: R * B + q. */
uint64_t ts_share_rank_size(const struct ts_share_rank *s);

/*
 * The rank's first span that starts at or after index i of an epoch:
 * true and [*first, *first + *n) (n <= batch), or false when the rank has
 * nothing left in this epoch at or after i.
 */
bool ts_share_rank_next(const struct ts_share_rank *s, uint64_t i,
			uint64_t *first, uint64_t *n);

#endif
