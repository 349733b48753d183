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

/* ---- rand_augment, trivial_augment_wide, auto_augment ---- */

/* The ops of torchvision 0.14's _apply_op, RandAugment's and
 * TrivialAugmentWide's augmentation spaces in their order (the first
 * 14; AutoAugment's adds INVERT and has no IDENTITY). */
enum ts_policy_opname {
	TS_PA_IDENTITY, TS_PA_SHEAR_X, TS_PA_SHEAR_Y, TS_PA_TRANSLATE_X,
	TS_PA_TRANSLATE_Y, TS_PA_ROTATE, TS_PA_BRIGHTNESS, TS_PA_COLOR,
	TS_PA_CONTRAST, TS_PA_SHARPNESS, TS_PA_POSTERIZE, TS_PA_SOLARIZE,
	TS_PA_AUTOCONTRAST, TS_PA_EQUALIZE, TS_PA_INVERT,
	TS_PA_COUNT
};

/* torchvision's name of an op: "ShearX". */
const char *ts_policy_op_name(enum ts_policy_opname op);

/* One op a policy applies, with its signed magnitude (the value
 * _apply_op receives: float32 table values as Python floats). */
struct ts_policy_step {
	enum ts_policy_opname op;
	double magnitude;
};

/* The most steps one draw makes (rand_augment's num_ops bound). */
#define TS_POLICY_MAX_STEPS 64

/* The magnitude table of op in the space of policy kind k
 * (rand_augment's, trivial_augment_wide's or auto_augment's kind)
 * with bins bins, for a w x h image: into mag (bins values), as
 * torch.linspace and torch.arange compute them in float32. Returns the
 * count written, 0 for an op without a table (a 0-d tensor: magnitude
 * 0), and whether the op is signed. */
int ts_policy_table(enum ts_op_kind k, enum ts_policy_opname op, int bins, int w,
		    int h, float *mag, bool *is_signed);

/* torch.linspace(start, end, steps) in float32, value for value as torch
 * 1.13's CPU kernel computes it (policy.c says how). */
void ts_policy_linspace(float start, float end, int steps, float *out);

/* The draws of a policy op on a w x h image into steps (at most
 * TS_POLICY_MAX_STEPS), in torchvision's order of draws, each torch
 * randint / rand a draw of rng:
 *   rand_augment: per op, its index below(14), then, for a signed op,
 *     below(2) (1 negates);
 *   trivial_augment_wide: the index below(14), for an op with a table
 *     its bin below(bins), for a signed op below(2) (1 negates);
 *   auto_augment: the sub-policy below(25), two U(0, 1), two below(2);
 *     sub-op i applies when U_i <= its p, negated when signed and its
 *     draw is 0 (only the applied ones are written).
 * Returns the number of steps. */
int ts_policy_draw(const struct ts_op *op, int w, int h, struct ts_rng *rng,
		   struct ts_policy_step *steps);

/* _apply_op(img, name, magnitude, interpolation, fill) on a uint8 image,
 * with *tmp as scratch (the result in *img). Returns 0, TS_E_NOMEM (-ENOMEM) or
 * TS_E_ARG (err filled). */
int ts_policy_apply_step(const struct ts_policy_step *s, struct ts_image *img,
			 struct ts_image *tmp, enum ts_interp interp,
			 const uint8_t fill[4], struct ts_error *err);

#endif
