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
 *	{ .kind = TS_OP_<NAME>, .apply = k_<name> },
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
 *   - return 0, or a negative code (TS_E_NOMEM, TS_E_ARG, ...) with err
 *     filled (ts_error_set: what failed and why; err may be NULL);
 *   - thread safety: only its arguments (and per-thread scratch).
 * The call is one indirect call per op and sample; the pixel loops stay
 * inside the kernel.
 *
 * The fused stages reach a kernel through its optional hooks, so that
 * neither the decode nor the output stage names a kind:
 *   - box: a geometry op (a window of its input, maybe resampled): the
 *     decode runs it as an ROI + DCT-scaled decode, the output stage as a
 *     view of its input (no copy) or one resample;
 *   - into: an op the output stage runs out of place (its input is not
 *     its own to change);
 *   - tail: an op that folds into the output stage's final pass (flip,
 *     normalize, dtype and layout: output.c's per-pixel loops);
 *   - post: a tail op that writes into the finished slot after that pass
 *     (random_erasing's box, in the slot's dtype and layout).
 * The checker's flags (dsl/registry.h: TS_OPF_FUSE_DECODE, FUSE_OUTPUT,
 * GEOMETRY) decide what is fused; a fused op's row must have the hook.
 */
#ifndef TS_KERNEL_H
#define TS_KERNEL_H

#include <stdbool.h>
#include "plan.h"
#include "image.h"
#include "rng.h"
#include "error.h"

/* A geometry op's window of a w x h image: the box it reads, x, y, cw x
 * ch in image coordinates (pixels outside the image are zeros,
 * torchvision's padding), and the size it resamples the box to, tw x th
 * (0: none, the box as it is; a resampled box lies inside the image). */
struct ts_kernel_box {
	int x, y, cw, ch;
	int tw, th;
	/* With tw > 0: the resample's filter, set by the op's own hook
	 * (every place that resamples a box, fused into the decode, on its
	 * own, in the output stage, reads these and nothing else of op) */
	enum ts_interp interp;
	bool antialias;
	bool pads;    /* drawn in a padded image (random_crop's padding): a
			 decoder's ROI does not stand in for it */
	bool drawn;   /* depends on the rng's draws (a random crop), not on
			 the image's size alone */
};

/* What the output stage's final pass does, as the tail ops' rows set it
 * in order; output.c starts it at the image's dtype, NHWC. */
struct ts_kernel_tail {
	bool hflip, vflip;
	bool normalize;
	float mean[4], std[4];
	enum ts_dtype dtype;
	enum ts_layout layout;
};

struct ts_kernel {
	enum ts_op_kind kind;
	int (*apply)(const struct ts_op *op, struct ts_image *img,
		     struct ts_image *tmp, struct ts_rng *rng,
		     struct ts_error *err);
	/* Optional (NULL when none), as above. box draws from rng what
	 * apply would. into writes the op's result on in (a view,
	 * unchanged) into out and returns 0, or 1 when the op leaves in as
	 * it is (out untouched), or a negative code with err filled. tail
	 * draws from rng what apply would. */
	void (*box)(const struct ts_op *op, int w, int h, struct ts_rng *rng,
		    struct ts_kernel_box *b);
	int (*into)(const struct ts_op *op, const struct ts_image *in,
		    struct ts_image *out, struct ts_rng *rng,
		    struct ts_error *err);
	void (*tail)(const struct ts_op *op, struct ts_rng *rng,
		     struct ts_kernel_tail *t);
	/* Optional, for a tail op that writes into the finished slot after
	 * the final pass (random_erasing): dst holds the c x h x w sample in
	 * t's dtype and layout; it draws from rng what apply would. Its
	 * tail hook is then not called (the row still has one, to be a
	 * tail op). */
	void (*post)(const struct ts_op *op, struct ts_rng *rng, void *dst,
		     const struct ts_kernel_tail *t, int c, int h, int w);
};

/* The end of a family's table. */
#define TS_KERNEL_END { .apply = NULL }

/* The families' tables (each in its family's file). */
extern const struct ts_kernel ts_kernels_augment[]; /* augment.c */
extern const struct ts_kernel ts_kernels_color[];   /* color.c */
extern const struct ts_kernel ts_kernels_filter[];  /* filter.c */
extern const struct ts_kernel ts_kernels_geometry[]; /* geometry.c */
extern const struct ts_kernel ts_kernels_policy[];  /* policy.c */
extern const struct ts_kernel ts_kernels_augmix[];  /* augmix.c */

/* The row of kind k, or NULL when no family runs it (decode, tile,
 * filter, output and plugin are the engine's own stages). */
const struct ts_kernel *ts_kernel_find(enum ts_op_kind k);

/* Note a drawn box (b->drawn: random_crop, random_resized_crop) in the
 * calling thread's trace (trace.h), if it has one: top, left, height,
 * width in op's input (negative into random_crop's padding), the size it
 * is resampled to, and scale, the eighths the decode scaled the image by
 * first (8 when it did not; fused into a JPEG decode, the box is in the
 * full-resolution image all the same). Called where a box is applied. */
void ts_kernel_note_box(const struct ts_op *op, const struct ts_kernel_box *b,
			int scale);

/* Run op through its row's apply (the contract above). An op that no
 * family runs is TS_E_ARG ("tile is not a per-image op"). */
int ts_kernel_apply(const struct ts_op *op, struct ts_image *img,
		    struct ts_image *tmp, struct ts_rng *rng,
		    struct ts_error *err);

#endif
