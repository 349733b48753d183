/*
 * kernel.c - the families of kernels (kernel.h) and the lookup from an op
 * kind to its row. The families are listed here; their rows, and so the
 * kinds, live in each family's file.
 */
#include "kernel.h"

#include "trace.h"
#include "util.h"

static const struct ts_kernel *const families[] = {
	ts_kernels_augment, ts_kernels_color, ts_kernels_filter, ts_kernels_geometry,
	ts_kernels_policy, ts_kernels_augmix,
};

/* A linear scan: a few dozen rows, once per op and sample, against
 * kernels that touch every pixel. */
const struct ts_kernel *ts_kernel_find(enum ts_op_kind k)
{
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (const struct ts_kernel *r = families[f]; r->apply; r++)
			if (r->kind == k)
				return r;
	return NULL;
}

void ts_kernel_note_box(const struct ts_op *op, const struct ts_kernel_box *b,
			int scale)
{
	if (!ts_trace_cur || !b->drawn)
		return;
	if (b->tw > 0)
		ts_trace_note(ts_op_kind_name(op->kind), op->index,
			      "\"top\": %d, \"left\": %d, \"height\": %d, \"width\": %d, "
			      "\"size\": [%d, %d], \"scale\": %d",
			      b->y, b->x, b->ch, b->cw, b->th, b->tw, scale);
	else
		ts_trace_note(ts_op_kind_name(op->kind), op->index,
			      "\"top\": %d, \"left\": %d, \"height\": %d, \"width\": %d",
			      b->y, b->x, b->ch, b->cw);
}

int ts_kernel_apply(const struct ts_op *op, struct ts_image *img,
		    struct ts_image *tmp, struct ts_rng *rng,
		    struct ts_error *err)
{
	const struct ts_kernel *k = ts_kernel_find(op->kind);
	if (!k)
		return ts_error_set(err, TS_E_ARG, "%s is not a per-image op",
				    ts_op_kind_name(op->kind));
	return k->apply(op, img, tmp, rng, err);
}
