/*
 * engine_views.c - views(...) (dsl/ops_views.c): the views of one decoded
 * image written into its slot, one after another as plan->views lays them
 * out. The image was decoded once (with nothing fused into its decode)
 * and went through the stages before views once; each view then runs its
 * group's ops on the image: those before the group's OUTPUT on a copy of
 * it (w->view), the OUTPUT (which leaves its input as it is) straight
 * from the image when the group has nothing else. View v draws under its
 * own seed, ts_plan_view_seed(seed, v), with the group's ops numbered
 * from 1 as after a source: so the views differ from one another, and the
 * output is the same for any thread count.
 */
#include "engine_internal.h"

#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "profile.h"
#include "rng.h"
#include "trace.h"
#include "util.h"

/* *dst = a copy of src's pixels (rows packed), in dst's own buffer. */
static int copy_image(struct ts_image *dst, const struct ts_image *src)
{
	if (ts_image_reserve(dst, src->width, src->height, src->channels, src->dtype) < 0)
		return TS_E_NOMEM;
	size_t row = (size_t)src->width * (size_t)src->channels * ts_dtype_size(src->dtype);
	for (int y = 0; y < src->height; y++)
		memcpy(dst->data + (size_t)y * dst->stride,
		       src->data + (size_t)y * src->stride, row);
	return 0;
}

int ts_engine_views_write(struct worker *w, const struct ts_op *vo, uint64_t epoch,
			  uint64_t index, uint8_t *dst, size_t bytes,
			  struct ts_error *err)
{
	const struct ts_plan *plan = w->e->plan;
	int v = 0, rc;

	if (bytes != plan->sample_bytes)
		return ts_error_set(err, TS_E_ARG, "views: a slot of %zu bytes for a sample of %zu",
				    bytes, plan->sample_bytes);
	for (size_t g = 0; g < vo->views.n_branches; g++) {
		const struct ts_op_branch *br = &vo->views.branches[g];
		const struct ts_op *out = &br->ops[br->n_ops - 1];
		for (int k = 0; k < br->views; k++, v++) {
			const struct ts_plan_view *pv = &plan->views[v];
			uint64_t seed = ts_plan_view_seed(plan->source.seed, v);
			const struct ts_image *src = &w->img;
			uint64_t t = ts_prof_now();
			if (ts_trace_cur)
				ts_trace_cur->view = v; /* its draws say which view */
			if (br->n_ops > 1) {
				if (copy_image(&w->view, &w->img) < 0)
					return ts_error_set(err, TS_E_NOMEM,
							    "out of memory for a copy of a %dx%d image",
							    w->img.width, w->img.height);
				for (size_t j = 0; j + 1 < br->n_ops; j++) {
					struct ts_rng rng;
					ts_rng_init(&rng, seed, epoch, index, (uint64_t)br->ops[j].index);
					rc = ts_kernel_apply(&br->ops[j], &w->view, &w->tmp1, &rng, err);
					if (rc)
						return rc;
				}
				src = &w->view;
			}
			ts_prof_add(TS_PROF_RESAMPLE, t);
			rc = ts_out_write(out, src, seed, epoch, index, &w->tmp2, &w->tmp3,
					  dst + pv->offset, pv->bytes, err);
			if (rc)
				return rc;
		}
	}
	if (ts_trace_cur)
		ts_trace_cur->view = -1;
	return 0;
}
