/*
 * kernel.h - the runtime's operator table (kernel.c, prefix ts_kernel_):
 * how a worker reaches the kernel of a plan op, without a switch over
 * kinds.
 *
 * Each operator family keeps its kernels in one file and ends that file
 * with its rows, one per op kind it runs (augment.c: ts_kernels_augment,
 * color.c: ts_kernels_color, ...), closed by TS_KERNEL_END. kernel.c
 * lists the families (naming no kind), as dsl/registry.c lists the
 * DSL's. Adding an operator's kernel is a row in its family's table:
 *
 *	{ .kind = TS_OP_POSTERIZE, .apply = k_posterize },
 *
 * and a new family is its table declared below and named in kernel.c's
 * families[]. Rows are designated initializers: hooks added later are
 * NULL in rows that do not set them.
 *
 * The contract of apply (the one hook every row has):
 *   - run op on *img, using *tmp as scratch; the two may be swapped
 *     (ts_image_swap), so the result is always in *img;
 *   - rng is the op's own stream, ts_rng_init(&rng, seed, epoch, index,
 *     op->index): an op with a probability draws its U(0, 1) from it
 *     first, and draws nothing more when it does not apply;
 *   - return 0, or a negative code (out of memory, TS_E_ARG, ...) with err
 *     filled (ts_error_set: what failed and why; err may be NULL);
 *   - thread safety: only its arguments (and per-thread scratch).
 * The call is one indirect call per op and sample; the pixel loops stay
 * inside the kernel.
 */
#ifndef TS_KERNEL_H
#define TS_KERNEL_H

#include "plan.h"
#include "image.h"
#include "rng.h"
#include "error.h"

struct ts_kernel {
	enum ts_op_kind kind;
	int (*apply)(const struct ts_op *op, struct ts_image *img,
		     struct ts_image *tmp, struct ts_rng *rng,
		     struct ts_error *err);
};

/* The end of a family's table. */
#define TS_KERNEL_END { .apply = NULL }

/* The families' tables (each in its family's file). */
extern const struct ts_kernel ts_kernels_augment[]; /* augment.c */
extern const struct ts_kernel ts_kernels_color[];   /* color.c */
extern const struct ts_kernel ts_kernels_filter[];  /* filter.c */

/* The row of kind k, or NULL when no family runs it (decode, tile,
 * filter, output and plugin are the engine's own stages). */
const struct ts_kernel *ts_kernel_find(enum ts_op_kind k);

/* Run op through its row's apply (the contract above). An op that no
 * family runs is TS_E_ARG ("tile is not a per-image op"). */
int ts_kernel_apply(const struct ts_op *op, struct ts_image *img,
		    struct ts_image *tmp, struct ts_rng *rng,
		    struct ts_error *err);

#endif
