/*
 * geometry.h - the geometry family's kernels (prefix ts_geometry_): rotate,
 * affine, perspective, pad and erase as torchvision 0.14 computes them on
 * PIL images (Pillow 9.4's Image.rotate / Image.transform, numpy's pad),
 * and the draws of random_rotation, random_affine and random_perspective
 * as torchvision's get_params makes them, from the op's counter-based
 * stream.
 *
 * Interpolation follows Pillow's transform filters: nearest takes the
 * pixel under the sampled point (for an affine map, in Pillow's 16.16
 * fixed point or its scale-only table, as Pillow picks them), bilinear
 * blends the four neighbours in double and truncates. Points outside the
 * input keep the fill colour.
 *
 * The rows of the kernel table (kernel.h, ts_kernels_geometry) run
 * them for the plan's ops. Images are struct ts_image, HWC with 1 to 4
 * channels; rotate, affine
 * and perspective take uint8, pad uint8 or uint16, erase any dtype. A
 * kernel that takes (img, tmp) leaves its result in *img and uses *tmp
 * as scratch (the two are swapped). Thread safety: each function works
 * only on its arguments.
 */
#ifndef TS_GEOMETRY_H
#define TS_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>
#include "plan.h"
#include "image.h"
#include "rng.h"
#include "error.h"

/* An op's fill (or erase value: n_fill values, 0, 1 or one per channel)
 * per channel as torchvision's _parse_fill makes it for a PIL image: one
 * number for every channel, each int() (truncated toward zero) and
 * clamped to 0..255. */
void ts_geometry_fill_u8(int n_fill, const double values[4], int channels,
			 uint8_t fill[4]);

/*
 * F.rotate(img, angle, interpolation, expand, center, fill) on a PIL
 * image: Image.rotate's fast paths (a copy or a transpose when center is
 * NULL and the angle is a multiple of 90 it takes) or its affine
 * transform. angle in degrees counter-clockwise; center (x, y) or NULL;
 * interp TS_INTERP_NEAREST or TS_INTERP_BILINEAR. uint8 only. Returns 0,
 * TS_E_ARG or TS_E_NOMEM.
 */
int ts_geometry_rotate(struct ts_image *img, struct ts_image *tmp, double angle,
		  enum ts_interp interp, bool expand, const double *center,
		  const uint8_t fill[4]);

/*
 * F.affine(img, angle, translate, scale, shear, interpolation, fill,
 * center) on a PIL image (angle clockwise in degrees, translate in
 * pixels, shear (x, y) in degrees, center NULL: the image's centre). The
 * output has the input's size. RandAugment's ShearX is
 * ts_geometry_affine(img, tmp, 0, {0, 0}, 1, {degrees(atan(m)), 0}, {0, 0},
 * ...), its TranslateX ts_geometry_affine(img, tmp, 0, {(int)m, 0}, 1, {0, 0},
 * NULL, ...). uint8 only. Returns 0, TS_E_ARG or TS_E_NOMEM.
 */
int ts_geometry_affine(struct ts_image *img, struct ts_image *tmp, double angle,
		  const double translate[2], double scale,
		  const double shear[2], const double *center,
		  enum ts_interp interp, const uint8_t fill[4]);

/* Image.transform(size, AFFINE, m, resample, fillcolor = fill) of src
 * into dst (ow x oh): the engine under ts_geometry_rotate and ts_geometry_affine,
 * m as geom.h describes it. */
int ts_geometry_transform_affine(const struct ts_image *src, struct ts_image *dst,
			    int ow, int oh, const double m[6],
			    enum ts_interp interp, const uint8_t fill[4]);

/* F.perspective(img, startpoints, endpoints, interpolation, fill) on a
 * PIL image: start and end are the four corners (x, y), top-left,
 * top-right, bottom-right, bottom-left. uint8 only. Returns 0, TS_E_ARG
 * (degenerate corners) or TS_E_NOMEM. */
int ts_geometry_perspective(struct ts_image *img, struct ts_image *tmp,
		       const double start[8], const double end[8],
		       enum ts_interp interp, const uint8_t fill[4]);

/* F.pad(img, padding = [left, top, right, bottom], fill, padding_mode)
 * on a PIL image: negative sides crop first; constant pads with fill
 * (per channel, in the image's levels), edge / reflect / symmetric as
 * np.pad does. uint8 or uint16. Returns 0, TS_E_ARG (nothing left after
 * cropping) or TS_E_NOMEM. */
int ts_geometry_pad(struct ts_image *img, struct ts_image *tmp, const int pad[4],
	       enum ts_pad_mode mode, const double fill[4]);

/* F.erase(img, i, j, h, w, v): the rows i..i+h-1 and columns j..j+w-1
 * (clipped to the image) set to value (per channel; converted to the
 * image's dtype as a tensor assignment truncates), in place. */
void ts_geometry_erase(struct ts_image *img, int i, int j, int h, int w,
		  const double value[4]);

/* random_rotation's draw: RandomRotation.get_params, angle ~
 * U(degrees[0], degrees[1]). */
double ts_geometry_rotation_draw(const struct ts_op *op, struct ts_rng *rng);

/* random_affine's draw for a w x h image: RandomAffine.get_params, in
 * its order (angle; tx, ty rounded half to even when translate is set;
 * the scale when set; shear x, then y, when set). */
struct ts_geometry_affine_draw {
	double angle;
	double translate[2];
	double scale;
	double shear[2];
};
void ts_geometry_affine_draw(const struct ts_op *op, int w, int h,
			struct ts_rng *rng, struct ts_geometry_affine_draw *out);

/* random_perspective's draw for a w x h image: whether it applies (one
 * U(0, 1) below p, drawn first), then RandomPerspective.get_params: the
 * startpoints (the image's corners) and the eight endpoint coordinates
 * drawn as its torch.randint calls, in their order. */
bool ts_geometry_perspective_draw(const struct ts_op *op, int w, int h,
			     struct ts_rng *rng, double start[8], double end[8]);

#endif
