/*
 * lower.c - fusion passes (the memory estimate is in memory.c).
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

#include "registry.h"
#include "util.h"

/* What the operator's registry row says of k (0 for the output stage). */
static unsigned flags_of(enum ts_op_kind k)
{
	const struct ts_opdef *d = ts_registry_of_kind((int)k);
	return d ? d->flags : 0;
}

static bool fuses_into_decode(enum ts_op_kind k)
{
	return flags_of(k) & TS_OPF_FUSE_DECODE;
}

static bool fuses_into_output(const struct ts_op *op)
{
	return flags_of(op->kind) & TS_OPF_FUSE_OUTPUT;
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
		if ((flags_of(ops[i].kind) & TS_OPF_ENCODED) && !ops[i].decode.fused && i + 1 < n &&
		    fuses_into_decode(ops[i + 1].kind)) {
			struct ts_op *f = malloc(sizeof(*f));
			if (!f) {
				/* the rest of ops is still ours to free */
				for (size_t j = i; j < n; j++)
					ts_plan_op_fini(&ops[j]);
				n = 0;
				goto fail;
			}
			*f = ops[i + 1];
			res[n_res].decode.fused = f;
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
		if (!fuses_into_output(t) || ts_op_fused(t))
			break;
		bool g = flags_of(t->kind) & TS_OPF_GEOMETRY;
		if (!g && geometric)
			break;
		geometric = geometric || g;
	}
	output = &res[tail];
	{
		struct ts_op o = {0};
		size_t np = n_res - tail;
		bool ends_in_to = np > 0 && ts_ops_image_is_to(&res[n_res - 1]);
		const struct ts_op *last = n_res ? &res[n_res - 1] : NULL;

		o.kind = TS_OP_OUTPUT;
		o.output.parts = calloc(np + 1, sizeof(*o.output.parts));
		if (!o.output.parts)
			goto fail;
		memcpy(o.output.parts, &res[tail], np * sizeof(*o.output.parts));
		o.output.n_parts = np;
		if (!ends_in_to) {
			/* Always end with an explicit TO: the runtime reads the
			 * final dtype and layout from it. */
			ts_plan_op_to(&o.output.parts[np], last,
					last ? last->out_layout : TS_LAYOUT_NHWC);
			o.output.n_parts++;
		}
		o.loc = o.output.parts[0].loc;
		o.index = o.output.parts[0].index;
		o.out_h = o.output.parts[o.output.n_parts - 1].out_h;
		o.out_w = o.output.parts[o.output.n_parts - 1].out_w;
		o.out_c = o.output.parts[o.output.n_parts - 1].out_c;
		o.out_dtype = o.output.parts[o.output.n_parts - 1].out_dtype;
		o.out_layout = o.output.parts[o.output.n_parts - 1].out_layout;
		*output = o;
		n_res = tail + 1;
	}
	*out = res;
	*n_out = n_res;
	return 0;
fail:
	if (res) {
		for (size_t j = 0; j < n_res; j++)
			ts_plan_op_fini(&res[j]);
		free(res);
	}
	for (size_t j = 0; j < n; j++)
		ts_plan_op_fini(&ops[j]);
	free(ops);
	return rc;
}
