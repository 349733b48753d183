/*
 * filter.h - the neighbourhood filters (prefix ts_filter_): adjust_sharpness
 * as torchvision 0.14 computes it on a PIL image (ImageEnhance.Sharpness:
 * the SMOOTH 3x3 filter, then a blend) and gaussian_blur as its
 * F.gaussian_blur computes it (a separable Gaussian of torch's weights,
 * reflect padding, in float, rounded half to even).
 *
 * Images are struct ts_image, HWC with 1 to 4 channels. Every function
 * leaves its result in *img; tmp is scratch (reserved here) and may be
 * swapped with img. The kernel rows (kernel.h) are ts_kernels_filter,
 * at the end of filter.c. Thread safety: each function works only on its
 * arguments.
 */
#ifndef TS_FILTER_H
#define TS_FILTER_H

#include <stdbool.h>
#include "plan.h"
#include "image.h"
#include "rng.h"
#include "error.h"

/* ImageEnhance.Sharpness(img).enhance(factor), uint8: the degenerate
 * image is ImageFilter.SMOOTH (kernel [1 1 1; 1 5 1; 1 1 1] / 13 in C
 * floats, plus 0.5, truncated and clipped; the outermost rows and
 * columns copied), an image smaller than 3x3 is its own degenerate;
 * then ImagingBlend(degenerate, img, factor). Every channel alike.
 * Returns 0, or TS_E_NOMEM (img unchanged). */
int ts_filter_sharpness(struct ts_image *img, struct ts_image *tmp, float factor);

/* torchvision's _get_gaussian_kernel1d in float32: x = -(k-1)/2 ..
 * (k-1)/2, w = exp(-0.5 * (x / sigma)^2) / the sum. k odd >= 1, sigma > 0;
 * w has k entries. */
void ts_filter_gaussian_kernel(int k, float sigma, float *w);

/* F.gaussian_blur(img, [kw, kh], [sx, sy]): each output is the sum of
 * the kh x kw neighbourhood weighted by the outer product of the 1-D
 * kernels, the image mirrored about its edge pixels (torch's reflect
 * padding; repeated for an image smaller than the kernel's radius, where
 * torchvision raises), computed in float32 (columns, then rows) and
 * rounded half to even (uint8, uint16) or kept (float32). kw, kh odd >= 1.
 * Returns 0, -EINVAL (a kernel side or dtype it cannot take) or TS_E_NOMEM. */
int ts_filter_gaussian(struct ts_image *img, struct ts_image *tmp, int kw,
		       int kh, float sx, float sy);

/* The sigma of a gaussian_blur op for one sample: op->blur.sigma_lo when the
 * range is a point (no draw), else one U(lo, hi) from rng, as
 * GaussianBlur.get_params draws it (the same sigma on both axes). */
double ts_filter_sigma(const struct ts_op *op, struct ts_rng *rng);

#endif
