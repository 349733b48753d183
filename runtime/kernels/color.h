/*
 * color.h - the colour family's kernels (prefix ts_color_): invert,
 * posterize, solarize, autocontrast, equalize and the fixed-factor
 * adjust_brightness / adjust_contrast / adjust_saturation and
 * adjust_hue, as
 * torchvision 0.14's functional API computes them on PIL images (the
 * path a DataLoader takes): ImageOps' lookup tables and ImageEnhance's
 * blends, bit-exact on uint8.
 *
 * Images are struct ts_image, uint8 HWC with 1 or 3 channels (the checker
 * refuses anything else); every kernel works in place. Their rows of the
 * kernel table (kernel.h, at the end of color.c) refuse other images
 * (TS_E_ARG) and apply the ops with a probability p when U(0, 1) < p
 * (p >= 1: always, without a draw). Thread safety: each function works
 * only on its arguments.
 */
#ifndef TS_COLOR_H
#define TS_COLOR_H

#include <stdbool.h>
#include "plan.h"
#include "image.h"
#include "rng.h"
#include "error.h"

/* ImageOps.invert: x -> 255 - x. */
void ts_color_invert(struct ts_image *img);
/* ImageOps.posterize: x -> x & ~(2^(8 - bits) - 1), bits 1..8. */
void ts_color_posterize(struct ts_image *img, int bits);
/* ImageOps.solarize: x -> x < threshold ? x : 255 - x. */
void ts_color_solarize(struct ts_image *img, double threshold);
/* ImageOps.autocontrast (cutoff 0): per channel, its lowest level lo and
 * highest hi; when hi > lo, x -> int(x * s - lo * s) clamped to 0..255
 * with s = 255.0 / (hi - lo), in double as Python computes it. */
void ts_color_autocontrast(struct ts_image *img);
/* ImageOps.equalize: per channel, with h its histogram and step = (the
 * pixel count less the last used level's) // 255, x -> (step // 2 +
 * h[0] + ... + h[x - 1]) // step clamped to 255; unchanged when the
 * channel uses one level only or step is 0. */
void ts_color_equalize(struct ts_image *img);
/* torchvision's adjust_hue on a PIL image: convert("HSV") (colorsys'
 * formulas in PIL's float/double mix, H and S truncated to 0..255), H
 * plus np.uint8(factor * 255) modulo 256, convert("RGB") (rounded).
 * factor -0.5..0.5; a 1-channel image is left as it is. */
void ts_color_hue(struct ts_image *img, double factor);

/* torchvision's adjust_gamma on a PIL image: the point table
 * int(255.999 * gain * (x / 255.0) ** gamma), clipped to 0..255, in
 * double as Python computes it (a gray image's RGB round trip is exact).
 * uint16 images take the same formula on 0..65535 (65535.999, clipped). */
void ts_color_gamma(struct ts_image *img, double gamma, double gain);

#endif
