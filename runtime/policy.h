/*
 * policy.h - the policy family's kernels (prefix ts_policy_):
 * random_apply and random_choice (which run their branches' ops through
 * ts_kernel_apply), random_erasing on the float tensor, and the augmentation
 * policies of torchvision 0.14 (rand_augment, trivial_augment_wide,
 * auto_augment) on uint8 images.
 *
 * Every choice draws from the op's counter-based stream (struct ts_rng),
 * in torchvision's order of draws, so a sample's output is the same for
 * any number of threads. The ops inside a branch draw from streams forked
 * off their policy's (ts_rng_fork with the op's index).
 *
 * Thread safety: every function works only on its arguments.
 */
#ifndef TS_POLICY_H
#define TS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include "plan.h"
#include "image.h"
#include "rng.h"
#include "error.h"

/* The kernels are reached through ts_kernels_policy (kernel.h). */

/* random_apply's draw: whether its ops run (U < p). random_choice's:
 * the alternative, by weight. */
bool ts_policy_apply_draw(const struct ts_op *op, struct ts_rng *rng);
size_t ts_policy_choice_draw(const struct ts_op *op, struct ts_rng *rng);

/* ---- random_erasing ---- */

/* RandomErasing.get_params on a C x H x W tensor: apply when U < p; then
 * up to 10 attempts of area = H*W*U(scale), r = exp(U(log ratio_lo, log
 * ratio_hi)), h = round(sqrt(area * r)), w = round(sqrt(area / r)),
 * accepted when h < H and w < W, then i = below(H - h + 1), j = below(W
 * - w + 1) (Python's round: half to even). Ten misses erase nothing (as
 * torchvision returns the image itself). The box is rows i..i+h,
 * columns j..j+w; apply false when nothing is erased. */
struct ts_erase_box {
	bool apply;
	int i, j, h, w;
};
void ts_policy_erase_box(const struct ts_op *op, int H, int W,
			 struct ts_rng *rng, struct ts_erase_box *box);

/* Fill the box of a C x H x W sample at dst, of dtype (float32,
 * float16, uint8, uint16: the float value converted as the output stage
 * converts it) and layout, with op's value: one for every channel, one
 * per channel, or (random) standard normal draws from rng in C, H, W
 * order. */
void ts_policy_erase_fill(const struct ts_op *op, const struct ts_erase_box *box,
			  struct ts_rng *rng, void *dst, enum ts_dtype dtype,
			  enum ts_layout layout, int C, int H, int W);

#endif
