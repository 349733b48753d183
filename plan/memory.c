/*
 * memory.c - the memory estimate of a plan (ring, per-worker scratch,
 * io buffers) and the budget check against a serve block's memory
 * setting, with the hint that names what to shrink.
 */
#include "memory.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define PAGE 4096u
#define MIB (1024u * 1024u)
#define VARIABLE_DECODE_SCRATCH (16u * MIB)
#define IO_BUFFER (1u * MIB)
#define RING_SLOT_EXTRA 16u /* label and stream position per sample */
/* tsrun's own resident memory before any pipeline: code, libraries,
 * thread stacks and the allocator (3.6 MiB for bench, 4.0 for run of a
 * tiny synthetic pipeline on x86-64, for any thread count). Peak RSS is
 * what a budget holds, so the figure counts it. */
#define PROCESS_BASE (4u * MIB)

/* What the operator's registry row says of op (0 for the output stage). */
static unsigned flags_of(const struct ts_op *op)
{
	return op->flags;
}

static uint64_t op_bytes(const struct ts_op *op)
{
	return (uint64_t)op->out_h * (uint64_t)op->out_w * (uint64_t)op->out_c *
	       ts_dtype_size(op->out_dtype);
}

/* Largest per-sample buffer a worker holds, and whether some stage has a
 * size only known at run time (a full decode of a file). */
static void scan(const struct ts_op *op, uint64_t *max_fixed, bool *variable)
{
	if (flags_of(op) & TS_OPF_ENCODED)
		*variable = true; /* the decoded frame before any crop */
	if (!ts_op_is_output(op)) {
		if (op->out_h && op->out_w) {
			uint64_t b = op_bytes(op);
			if (b > *max_fixed)
				*max_fixed = b;
		} else {
			*variable = true;
		}
	}
	size_t np, nb;
	const struct ts_op *parts = ts_op_parts(op, &np);
	const struct ts_op_branch *br = ts_op_branches(op, &nb);
	if (ts_op_fused(op))
		scan(ts_op_fused(op), max_fixed, variable);
	for (size_t i = 0; i < np; i++)
		scan(&parts[i], max_fixed, variable);
	/* the policy family: the ops inside random_apply / random_choice
	 * hold the worker's images too (a resize before a crop there) */
	for (size_t k = 0; k < nb; k++)
		for (size_t i = 0; i < br[k].n_ops; i++)
			scan(&br[k].ops[i], max_fixed, variable);
}

/* The most any one op's kernel holds beyond the image and tmp (its
 * row's scratch_images, times its image, or the variable decode's figure
 * when the size is known only at run time), branch ops included. */
static uint64_t kernel_scratch(const struct ts_op *ops, size_t n)
{
	uint64_t most = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ts_op *op = &ops[i];
		uint64_t b = 0;
		if (op->scratch_images)
			b = op->scratch_images *
			    (op->out_h && op->out_w ? op_bytes(op) : VARIABLE_DECODE_SCRATCH);
		size_t nb;
		const struct ts_op_branch *br = ts_op_branches(op, &nb);
		for (size_t k = 0; k < nb; k++) {
			uint64_t in = kernel_scratch(br[k].ops, br[k].n_ops);
			b = in > b ? in : b;
		}
		most = b > most ? b : most;
	}
	return most;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

bool ts_plan_ring_layout(uint64_t sample_bytes, uint64_t want, uint64_t page,
			 uint64_t *stride, uint64_t *cap)
{
	const uint64_t sb = sample_bytes ? sample_bytes : 1;
	const uint64_t cand[3] = { sb, ts_round_up(sb, 64), ts_round_up(sb, page) };
	const uint64_t n = want < 2 ? 2 : want;
	uint64_t area[3] = {0}, caps[3] = {0};

	if (sb > (1ull << 40) || n > (1ull << 32))
		return false;
	for (int i = 0; i < 3; i++) {
		const uint64_t s = cand[i];
		const uint64_t c = ts_round_up(n, page / gcd_u64(s, page));
		if (c <= (1ull << 32) && c <= (1ull << 44) / s) {
			area[i] = c * s;
			caps[i] = c;
		}
	}
	/* the smaller padded layout (64 bytes on a tie) */
	int pad = area[1] && (!area[2] || area[1] <= area[2]) ? 1 : 2;
	if (!area[pad] && !area[0])
		return false;
	/* unpadded unless that costs more than an eighth and 2 MiB */
	uint64_t slack = area[pad] / 8 > (2u << 20) ? area[pad] / 8 : (2u << 20);
	int k = area[0] && (!area[pad] || area[0] <= area[pad] + slack) ? 0 : pad;
	*stride = cand[k];
	*cap = caps[k];
	return true;
}

/* The layout ts_ring_create gives a ring asked for `samples` of plan's
 * shape; false for one too large to make. */
static bool plan_layout(const struct ts_plan *plan, int64_t samples, uint64_t *stride,
			uint64_t *cap)
{
	return ts_plan_ring_layout((uint64_t)plan->sample_bytes,
				   samples < 2 ? 2 : (uint64_t)samples, PAGE, stride, cap);
}

uint64_t ts_plan_ring_stride(const struct ts_plan *plan, int64_t samples)
{
	uint64_t stride, cap;
	return plan_layout(plan, samples, &stride, &cap) ? stride : (uint64_t)plan->sample_bytes;
}

uint64_t ts_plan_ring_unit(const struct ts_plan *plan, int64_t samples)
{
	uint64_t stride = ts_plan_ring_stride(plan, samples);
	return PAGE / gcd_u64(stride ? stride : 1, PAGE);
}

int64_t ts_plan_ring_capacity(const struct ts_plan *plan, int64_t samples)
{
	uint64_t stride, cap;
	if (!plan_layout(plan, samples, &stride, &cap))
		return samples < 2 ? 2 : samples;
	return (int64_t)cap;
}

uint64_t ts_plan_ring_bytes(const struct ts_plan *plan, int64_t samples)
{
	uint64_t stride, cap;

	/* header page + sample area + labels and positions, in pages; a
	 * ring too large to lay out reads as "too big" (the layout's limits,
	 * 2^32 samples and 2^44 bytes, keep the products below from
	 * wrapping) */
	if (!plan_layout(plan, samples, &stride, &cap))
		return UINT64_MAX / 2;
	return PAGE + ts_round_up(cap * stride, PAGE) +
	       ts_round_up(cap * (uint64_t)RING_SLOT_EXTRA, PAGE);
}

int64_t ts_plan_ring_fit(const struct ts_plan *plan, uint64_t bytes)
{
	uint64_t slot = (uint64_t)plan->sample_bytes + RING_SLOT_EXTRA;
	uint64_t hi = bytes > PAGE ? (bytes - PAGE) / slot : 0, lo = 2;

	if (hi > (1ull << 32))
		hi = 1ull << 32;
	if (hi < 2 || ts_plan_ring_bytes(plan, 2) > bytes)
		return 0;
	/* the most samples asked whose ring fits (a ring's bytes grow with
	 * what it is asked), then the capacity that ring has */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (ts_plan_ring_bytes(plan, (int64_t)mid) <= bytes)
			lo = mid;
		else
			hi = mid - 1;
	}
	return ts_plan_ring_capacity(plan, (int64_t)lo);
}

bool ts_plan_tiles_banded(const struct ts_plan *plan)
{
	return ts_source_kind_encoded(plan->source.kind) && plan->n_ops >= 2 &&
	       (flags_of(&plan->ops[0]) & TS_OPF_ENCODED) && !ts_op_fused(&plan->ops[0]) &&
	       (flags_of(&plan->ops[1]) & TS_OPF_BANDS) &&
	       plan->ops[1].tile.size_h > 0 && plan->ops[1].tile.size_w > 0;
}

/* A worker's scratch in a banded tile plan with frames TS_PLAN_BAND_WIDTH
 * wide: the band of decoded rows, the tiles of one band row staged (on top
 * of up to TS_PLAN_BAND_FLUSH already there) and the largest per-tile
 * buffers, twice, as scan counts them (the crop, the ops' and the output
 * stage's temporaries). */
static uint64_t band_scratch(const struct ts_plan *plan, uint64_t max_fixed)
{
	const struct ts_op *d = &plan->ops[0], *t = &plan->ops[1];
	uint64_t px = (uint64_t)(d->decode.color == TS_COLOR_GRAY ? 1 : 3) *
		      (d->decode.depth == 16 ? 2 : 1);
	uint64_t band = (uint64_t)TS_PLAN_BAND_WIDTH * (uint64_t)t->tile.size_h * px;
	uint64_t nx = TS_PLAN_BAND_WIDTH >= t->tile.size_w
			      ? (uint64_t)(TS_PLAN_BAND_WIDTH - t->tile.size_w) /
					(uint64_t)(t->tile.stride_w > 0 ? t->tile.stride_w
									: t->tile.size_w) + 1
			      : 0;
	return band + TS_PLAN_BAND_FLUSH + nx * plan->sample_bytes + 2 * max_fixed;
}

void ts_plan_estimate(struct ts_plan *plan, int cores)
{
	uint64_t max_fixed = 0, per_thread, ring;
	bool variable = false;
	int threads = plan->threads;

	if (threads <= 0) {
		threads = cores > 0 ? cores : (int)sysconf(_SC_NPROCESSORS_ONLN);
		if (threads <= 0)
			threads = 1;
	}
	if (!ts_source_kind_encoded(plan->source.kind)) {
		/* synthetic(): the generated frame */
		uint64_t b = (uint64_t)plan->source.height * plan->source.width *
			     plan->source.channels * (plan->source.depth == 16 ? 2 : 1);
		max_fixed = b;
	}
	for (size_t i = 0; i < plan->n_ops; i++)
		scan(&plan->ops[i], &max_fixed, &variable);
	per_thread = 2 * max_fixed;
	per_thread += kernel_scratch(plan->ops, plan->n_ops);
	if (variable && per_thread < VARIABLE_DECODE_SCRATCH)
		per_thread = VARIABLE_DECODE_SCRATCH;
	/* views(...): a view whose group has ops before its output stage
	 * runs them on its own copy of the decoded image (runtime/
	 * engine_views.c), one more image per worker */
	for (size_t i = 0; plan->n_views && i < plan->n_ops; i++) {
		const struct ts_op *vo = &plan->ops[i];
		for (size_t g = 0; (vo->flags & TS_OPF_VIEWS) && g < vo->views.n_branches; g++)
			if (vo->views.branches[g].n_ops > 1) {
				per_thread += variable ? VARIABLE_DECODE_SCRATCH / 2 : max_fixed;
				g = vo->views.n_branches;
			}
	}
	/* the decoded cache: a worker admitting an item as the image before
	 * an op holds a copy of it besides its images (a frame is decoded
	 * straight into the cache's arena, which mem_cache counts) */
	bool cached = (plan->cache_bytes || plan->cache_auto) &&
		      ts_source_kind_encoded(plan->source.kind) && !ts_plan_tiles_banded(plan);
	if (cached)
		per_thread += variable ? VARIABLE_DECODE_SCRATCH / 2 : max_fixed;
	if (ts_plan_tiles_banded(plan)) {
		uint64_t b = band_scratch(plan, max_fixed);
		if (b > per_thread)
			per_thread = b;
	}
	/* Each worker's plugin host shares a pixel memfd with it: input and
	 * output of one image, grown by doubling from 1 MiB (so up to 4x
	 * the image). The host process's own memory is not ours to count. */
	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct ts_op *op = &plan->ops[i];
		uint64_t b = op->out_h && op->out_w ? 4 * op_bytes(op)
						    : VARIABLE_DECODE_SCRATCH;
		if (op->plugin)
			per_thread += b > MIB ? b : MIB;
	}

	/* the capacity the ring will have: what graph shows and the
	 * budget counts */
	plan->ring_samples = ts_plan_ring_capacity(plan, plan->ring_samples);
	ring = ts_plan_ring_bytes(plan, plan->ring_samples);

	plan->mem_threads = threads;
	plan->mem_ring = ring;
	plan->mem_scratch = (uint64_t)threads * per_thread;
	plan->mem_io = ts_source_kind_encoded(plan->source.kind)
			       ? (uint64_t)plan->queue_depth * IO_BUFFER : 0;
	plan->mem_process = PROCESS_BASE;
	plan->mem_total = plan->mem_ring + plan->mem_scratch + plan->mem_io + plan->mem_process;
	/* The cache's arena is counted whole (its pages fill as items are
	 * admitted, and stay); auto takes what the budget leaves, in whole
	 * MiB (none when the rest already fills it: the budget check then
	 * says what to shrink). */
	plan->mem_cache = 0;
	if (cached && plan->cache_auto && plan->memory_budget > plan->mem_total)
		plan->mem_cache = (plan->memory_budget - plan->mem_total) / MIB * MIB;
	else if (cached && !plan->cache_auto)
		plan->mem_cache = plan->cache_bytes;
	plan->mem_total += plan->mem_cache;
}

/* How many of the units (threads, queue slots) that make up term fit in
 * what budget leaves after the other terms. */
static uint64_t units_fit(uint64_t term, int units, uint64_t budget, uint64_t others)
{
	uint64_t per = term / (uint64_t)units;
	uint64_t room = budget > others ? budget - others : 0;
	return per ? room / per : 0;
}

/* The hint of a plan over its budget: name the term that dominates and
 * the setting that shrinks it (ring: ring, scratch: threads, io:
 * queue_depth) with the largest value that fits when the other terms stay
 * as they are, and the memory that would fit the plan as it is. */
static void budget_hint(const struct ts_plan *plan, char *hint, size_t n)
{
	uint64_t budget = plan->memory_budget;
	uint64_t ring = plan->mem_ring, scratch = plan->mem_scratch,
		 io = plan->mem_io, base = plan->mem_process;
	uint64_t mib = 1024 * 1024;
	char raise[64];

	snprintf(raise, sizeof(raise), "raise memory to %llu MiB",
		 (unsigned long long)((plan->mem_total + mib - 1) / mib));
	/* The cache is the term a user sizes by hand: when it alone is over
	 * what the rest leaves, say how large a cache fits. */
	if (plan->mem_cache && plan->mem_total - plan->mem_cache <= budget) {
		uint64_t room = budget - (plan->mem_total - plan->mem_cache);
		snprintf(hint, n, "use a smaller cache (cache = %llu MiB fits, or cache = auto "
			 "for what the budget leaves) or %s",
			 (unsigned long long)(room / mib), raise);
		return;
	}
	base += plan->mem_cache; /* the cache counts as fixed beside the others */
	if (ring >= scratch && ring >= io) {
		uint64_t room = budget > scratch + io + base ? budget - scratch - io - base : 0;
		int64_t fit = ts_plan_ring_fit(plan, room);
		int batch = plan->batch > 0 ? plan->batch : 1;

		if (fit >= batch && fit < plan->ring_samples && batch > 1)
			snprintf(hint, n, "the ring dominates: use a smaller ring "
				 "(ring = %lld batches fits) or %s",
				 (long long)(fit / batch), raise);
		else if (fit >= batch && fit < plan->ring_samples)
			snprintf(hint, n, "the ring dominates: use a smaller ring "
				 "(ring = %lld samples fits) or %s",
				 (long long)fit, raise);
		else if (ts_plan_ring_capacity(plan, batch) > (int64_t)batch)
			snprintf(hint, n, "the ring dominates: its %llu-byte slots fill "
				 "whole pages only %llu at a time, so it holds at least %llu; "
				 "%s", (unsigned long long)ts_plan_ring_stride(plan, batch),
				 (unsigned long long)ts_plan_ring_unit(plan, batch),
				 (unsigned long long)ts_plan_ring_capacity(plan, batch), raise);
		else if (plan->n_views) {
			char b[32];
			ts_plan_format_size((uint64_t)batch * plan->sample_bytes, b, sizeof(b));
			snprintf(hint, n, "the ring dominates, but even a ring of one batch "
				 "does not fit: a batch of %d samples of %d views is %s; make "
				 "fewer or smaller views, use a smaller batch, or %s", batch,
				 plan->n_views, b, raise);
		} else
			snprintf(hint, n, "the ring dominates, but even a ring of "
				 "one batch does not fit: %s", raise);
	} else if (scratch >= io) {
		int threads = plan->mem_threads > 0 ? plan->mem_threads : 1;
		uint64_t fit = units_fit(scratch, threads, budget, ring + io + base);

		if (fit >= 1 && fit < (uint64_t)threads)
			snprintf(hint, n, "scratch dominates: use fewer threads "
				 "(threads = %llu fits) or %s",
				 (unsigned long long)fit, raise);
		else if (threads > 1)
			snprintf(hint, n, "scratch dominates, but even threads = 1 "
				 "does not fit: %s", raise);
		else
			snprintf(hint, n, "scratch dominates and threads is "
				 "already 1: %s", raise);
	} else {
		int depth = plan->queue_depth > 0 ? plan->queue_depth : 1;
		uint64_t fit = units_fit(io, depth, budget, ring + scratch + base);

		if (fit >= 1 && fit < (uint64_t)depth)
			snprintf(hint, n, "io dominates: lower queue_depth "
				 "(queue_depth = %llu fits) or %s",
				 (unsigned long long)fit, raise);
		else
			snprintf(hint, n, "io dominates, but even queue_depth = 1 "
				 "does not fit: %s", raise);
	}
}

bool ts_plan_over_budget(const struct ts_plan *plan, char *msg, size_t msg_n,
			 char *hint, size_t hint_n)
{
	char total[32], ring[32], slot[32], scratch[32], io[32], base[32], budget[32];

	if (!plan->memory_budget || plan->mem_total <= plan->memory_budget ||
	    !plan->sample_bytes)
		return false;
	ts_plan_format_size(plan->mem_total, total, sizeof(total));
	ts_plan_format_size(plan->mem_ring, ring, sizeof(ring));
	ts_plan_format_size(plan->sample_bytes, slot, sizeof(slot));
	ts_plan_format_size(plan->mem_scratch, scratch, sizeof(scratch));
	ts_plan_format_size(plan->mem_io, io, sizeof(io));
	ts_plan_format_size(plan->mem_process, base, sizeof(base));
	ts_plan_format_size(plan->memory_budget, budget, sizeof(budget));
	budget_hint(plan, hint, hint_n);
	char cache[48] = "";
	if (plan->mem_cache) {
		memcpy(cache, ", cache ", 9);
		ts_plan_format_size(plan->mem_cache, cache + 8, sizeof(cache) - 8);
	}
	snprintf(msg, msg_n,
		 "plan needs %s: ring %s (%lld samples x %s), scratch %s, io %s, process %s%s; "
		 "budget is %s",
		 total, ring, (long long)plan->ring_samples, slot, scratch, io, base, cache,
		 budget);
	return true;
}
