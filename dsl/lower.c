/*
 * lower.c - fusion passes and the memory estimate.
 *
 * Fusion exists for speed, not for meaning: the fused plan computes what
 * the unfused one would. Decode + crop/resize becomes one ROI decode
 * (libjpeg-turbo decodes only the needed rows and columns, at a DCT scale
 * close to the target), and the trailing run of cheap per-pixel ops
 * becomes the OUTPUT op that writes straight into the ring slot.
 */
#include "lower.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define PAGE 4096u
#define MIB (1024u * 1024u)
#define VARIABLE_DECODE_SCRATCH (16u * MIB)
#define IO_BUFFER (1u * MIB)
#define RING_SLOT_EXTRA 16u /* label and stream position per sample */

static bool fuses_into_decode(enum ts_op_kind k)
{
	return k == TS_OP_RESIZE || k == TS_OP_CENTER_CROP ||
	       k == TS_OP_RANDOM_CROP || k == TS_OP_RANDOM_RESIZED_CROP;
}

static bool fuses_into_output(const struct ts_op *op)
{
	switch (op->kind) {
	case TS_OP_RESIZE:
	case TS_OP_CENTER_CROP:
	case TS_OP_FLIP:
	case TS_OP_NORMALIZE:
	case TS_OP_TO:
		return true;
	default:
		return false;
	}
}

static void op_free(struct ts_op *op)
{
	if (op->fused) {
		op_free(op->fused);
		free(op->fused);
	}
	for (size_t i = 0; i < op->n_parts; i++)
		op_free(&op->parts[i]);
	free(op->parts);
	free(op->plugin);
}

int ts_lower_ops(struct ts_op *ops, size_t n, struct ts_op **out,
		 size_t *n_out)
{
	struct ts_op *res = calloc(n + 1, sizeof(*res));
	struct ts_op *output = NULL;
	size_t n_res = 0, tail, i;
	int rc = TS_E_NOMEM;

	if (!res)
		goto fail;

	/* Pass 1: decode + the crop/resize right after it. */
	for (i = 0; i < n; i++) {
		res[n_res] = ops[i];
		if (ops[i].kind == TS_OP_DECODE && !ops[i].fused && i + 1 < n &&
		    fuses_into_decode(ops[i + 1].kind)) {
			struct ts_op *f = malloc(sizeof(*f));
			if (!f) {
				/* the rest of ops is still ours to free */
				for (size_t j = i; j < n; j++)
					op_free(&ops[j]);
				n = 0;
				goto fail;
			}
			*f = ops[i + 1];
			res[n_res].fused = f;
			res[n_res].out_h = f->out_h;
			res[n_res].out_w = f->out_w;
			res[n_res].out_c = f->out_c;
			res[n_res].out_dtype = f->out_dtype;
			res[n_res].out_layout = f->out_layout;
			i++;
		}
		n_res++;
	}
	free(ops);
	ops = NULL;
	n = 0;

	/* Pass 2: the trailing fusable run becomes OUTPUT. */
	/* The output stage resizes and crops first, then flips, normalizes
	 * and converts in one pass: so the tail it takes is geometry followed
	 * by point operations. A flip before a resize stays a stage of its
	 * own. */
	bool geometric = false;
	for (tail = n_res; tail > 0; tail--) {
		const struct ts_op *t = &res[tail - 1];
		if (!fuses_into_output(t) || t->fused)
			break;
		bool g = t->kind == TS_OP_RESIZE || t->kind == TS_OP_CENTER_CROP;
		if (!g && geometric)
			break;
		geometric = geometric || g;
	}
	output = &res[tail];
	{
		struct ts_op o = {0};
		size_t np = n_res - tail;
		bool ends_in_to = np > 0 && res[n_res - 1].kind == TS_OP_TO;
		const struct ts_op *last = n_res ? &res[n_res - 1] : NULL;

		o.kind = TS_OP_OUTPUT;
		o.parts = calloc(np + 1, sizeof(*o.parts));
		if (!o.parts)
			goto fail;
		memcpy(o.parts, &res[tail], np * sizeof(*o.parts));
		o.n_parts = np;
		if (!ends_in_to) {
			/* Always end with an explicit TO: the runtime reads the
			 * final dtype and layout from it. */
			struct ts_op *to = &o.parts[np];
			*to = (struct ts_op){ .kind = TS_OP_TO, .index = -1 };
			if (last) {
				to->loc = last->loc;
				to->dtype = last->out_dtype;
				to->layout = last->out_layout;
				to->out_h = last->out_h;
				to->out_w = last->out_w;
				to->out_c = last->out_c;
				to->out_dtype = last->out_dtype;
				to->out_layout = last->out_layout;
			}
			o.n_parts++;
		}
		o.loc = o.parts[0].loc;
		o.index = o.parts[0].index;
		o.out_h = o.parts[o.n_parts - 1].out_h;
		o.out_w = o.parts[o.n_parts - 1].out_w;
		o.out_c = o.parts[o.n_parts - 1].out_c;
		o.out_dtype = o.parts[o.n_parts - 1].out_dtype;
		o.out_layout = o.parts[o.n_parts - 1].out_layout;
		*output = o;
		n_res = tail + 1;
	}
	*out = res;
	*n_out = n_res;
	return 0;
fail:
	if (res) {
		for (size_t j = 0; j < n_res; j++)
			op_free(&res[j]);
		free(res);
	}
	for (size_t j = 0; j < n; j++)
		op_free(&ops[j]);
	free(ops);
	return rc;
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
	if (op->kind == TS_OP_DECODE)
		*variable = true; /* the decoded frame before any crop */
	if (op->kind != TS_OP_OUTPUT) {
		if (op->out_h && op->out_w) {
			uint64_t b = op_bytes(op);
			if (b > *max_fixed)
				*max_fixed = b;
		} else {
			*variable = true;
		}
	}
	if (op->fused)
		scan(op->fused, max_fixed, variable);
	for (size_t i = 0; i < op->n_parts; i++)
		scan(&op->parts[i], max_fixed, variable);
}

uint64_t ts_plan_ring_bytes(const struct ts_plan *plan, int64_t samples)
{
	uint64_t ring;

	/* saturate: an absurd ring must read as "too big", not wrap */
	if (__builtin_mul_overflow((uint64_t)(samples > 0 ? samples : 0),
				   (uint64_t)plan->sample_bytes + RING_SLOT_EXTRA, &ring) ||
	    ring > UINT64_MAX / 2)
		ring = UINT64_MAX / 2;
	return (ring + PAGE - 1) / PAGE * PAGE;
}

int64_t ts_plan_ring_fit(const struct ts_plan *plan, uint64_t bytes)
{
	uint64_t slot = (uint64_t)plan->sample_bytes + RING_SLOT_EXTRA;

	/* n slots round up to at most `bytes` exactly when they fit in the
	 * whole pages of it */
	return (int64_t)(bytes / PAGE * PAGE / slot);
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
	if (plan->source.kind == TS_SRC_SYNTHETIC) {
		uint64_t b = (uint64_t)plan->source.height * plan->source.width *
			     plan->source.channels * (plan->source.depth == 16 ? 2 : 1);
		max_fixed = b;
	}
	for (size_t i = 0; i < plan->n_ops; i++)
		scan(&plan->ops[i], &max_fixed, &variable);
	per_thread = 2 * max_fixed;
	if (variable && per_thread < VARIABLE_DECODE_SCRATCH)
		per_thread = VARIABLE_DECODE_SCRATCH;
	/* Each worker's plugin host shares a pixel memfd with it: input and
	 * output of one image, grown by doubling from 1 MiB (so up to 4x
	 * the image). The host process's own memory is not ours to count. */
	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct ts_op *op = &plan->ops[i];
		uint64_t b = op->out_h && op->out_w ? 4 * op_bytes(op)
						    : VARIABLE_DECODE_SCRATCH;
		if (op->kind == TS_OP_PLUGIN)
			per_thread += b > MIB ? b : MIB;
	}

	ring = ts_plan_ring_bytes(plan, plan->ring_samples);

	plan->mem_threads = threads;
	plan->mem_ring = ring;
	plan->mem_scratch = (uint64_t)threads * per_thread;
	plan->mem_io = plan->source.kind == TS_SRC_SYNTHETIC
			       ? 0 : (uint64_t)plan->queue_depth * IO_BUFFER;
	plan->mem_total = plan->mem_ring + plan->mem_scratch + plan->mem_io;
}
