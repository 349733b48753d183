/*
 * augmix.h - augmix, torchvision 0.14's AugMix (prefix ts_augmix_):
 * mixture_width chains of 1 to 3 (or chain_depth) ops drawn from its
 * augmentation space, each chain's result weighted by a Dirichlet draw,
 * mixed with the original by a Beta draw, in float32, truncated back to
 * uint8.
 *
 * torchvision's AugMix turns a PIL image into a uint8 tensor before its
 * ops run, so the ops here are the tensor path's (functional_tensor.py):
 * affine and rotate by grid_sample (align_corners false, zeros padding,
 * the fill as a mask channel, rounded), the colour ops' float32 _blend
 * truncated, autocontrast in float32, adjust_sharpness's 3x3 kernel;
 * posterize, solarize and equalize are the colour family's (the tensor
 * path's integer arithmetic is PIL's). The kernel is reached through
 * ts_kernels_augmix (kernel.h).
 *
 * Thread safety: every function works only on its arguments.
 */
#ifndef TS_AUGMIX_H
#define TS_AUGMIX_H

#include <stdbool.h>
#include "error.h"
#include "image.h"
#include "plan.h"
#include "policy.h"
#include "rng.h"

/* The checker's bounds of mixture_width and chain_depth. */
#define TS_AUGMIX_MAX_WIDTH 16
#define TS_AUGMIX_MAX_DEPTH 16

/* AugMix's augmentation space in its order (the dict's keys): the first
 * 9, and with all_ops the 4 enhancements after them. */
#define TS_AUGMIX_OPS 13
enum ts_policy_opname ts_augmix_op(int index);

/* One op of a chain: its index in the space, the magnitude bin (-1 for
 * AutoContrast and Equalize, which have no table), the sign draw (-1 for
 * an unsigned op; 1 negates), and the magnitude _apply_op receives. */
struct ts_augmix_step {
	int index, bin, sign;
	struct ts_policy_step step;
};

/* A sample's draws: the Beta weights (the original's, the chains'), the
 * Dirichlet weights of the chains, each chain's depth and ops. */
struct ts_augmix_draw {
	float m[2];
	float w[TS_AUGMIX_MAX_WIDTH];
	int width;
	int depth[TS_AUGMIX_MAX_WIDTH];
	struct ts_augmix_step steps[TS_AUGMIX_MAX_WIDTH][TS_AUGMIX_MAX_DEPTH];
};

/* The draws of op (TS_OP_AUGMIX) on a w x h image, in torchvision's
 * order: the Beta pair (two Gamma(alpha) draws, normalized), the
 * mixture_width Dirichlet weights (as many Gamma draws, normalized), each
 * rounded to float32; then per chain its depth (1 + below(3) when
 * chain_depth <= 0), and per op its index below(9 or 13), its bin
 * below(severity) when it has a table, its sign below(2) when signed. */
void ts_augmix_draw(const struct ts_op *op, int w, int h, struct ts_rng *rng,
		    struct ts_augmix_draw *d);

/* One op of the space on a uint8 image (1 or 3 channels) as
 * torchvision's _apply_op does it on a uint8 tensor; fill NULL for
 * fill = None, else one value per channel. tmp is scratch. Returns 0,
 * TS_E_NOMEM, or TS_E_ARG for an op outside AugMix's space. */
int ts_augmix_apply_step(const struct ts_policy_step *s, struct ts_image *img,
			 struct ts_image *tmp, bool bilinear, const float *fill);

/* torch.sum of n contiguous float32 values, rounded as torch 1.13 sums
 * them on one thread (augmix.c says how): Contrast's mean gray level. */
float ts_augmix_torch_sum(const float *x, size_t n);

/* The mixing on a w x h x c uint8 image: the original and the chains'
 * results, as d weighs them. Through tmp; fills err on failure. */
int ts_augmix_apply(const struct ts_op *op, const struct ts_augmix_draw *d,
		    struct ts_image *img, struct ts_image *tmp,
		    struct ts_error *err);

#endif
