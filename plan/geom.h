/*
 * geom.h - the matrices of the geometric operators (prefix ts_geom_), in
 * the arithmetic torchvision 0.14 and Pillow 9.4 use for PIL images, so
 * that a kernel sampling through them lands on the pixels torchvision's
 * does: Image.rotate's matrix and expanded size, F.affine's inverse
 * affine matrix, F.perspective's coefficients. The checker uses the
 * rotated size (rotate(expand = true) of a fixed-size image), the
 * kernels (runtime/geometry.c) the matrices.
 *
 * A matrix m[6] maps the centre of an output pixel, (x + 0.5, y + 0.5),
 * to the input point (m0 x + m1 y + m2, m3 x + m4 y + m5): the inverse
 * map PIL's Image.transform(AFFINE) takes. Pure functions, thread safe.
 */
#ifndef TS_GEOM_H
#define TS_GEOM_H

#include <stdbool.h>

/* How Image.rotate does it: a plain copy or transpose (its fast paths,
 * taken when no centre is given), or an affine transform. */
enum ts_geom_path {
	TS_GEOM_MATRIX,   /* Image.transform(AFFINE) through m */
	TS_GEOM_COPY,     /* angle 0 (modulo 360) */
	TS_GEOM_ROT90,    /* Transpose.ROTATE_90: counter-clockwise */
	TS_GEOM_ROT180,
	TS_GEOM_ROT270,
};

/* Image.rotate(angle, expand = expand, center = center) of a w x h image
 * (angle in degrees, counter-clockwise; center NULL: the image's centre,
 * (w / 2, h / 2), and the fast paths apply). Writes the output size and,
 * for TS_GEOM_MATRIX, m. The angle is reduced modulo 360 as Python's %
 * does; cos and sin are rounded to 15 decimals as Pillow rounds them. */
enum ts_geom_path ts_geom_rotate(int w, int h, double angle,
				 const double *center, bool expand, double m[6],
				 int *ow, int *oh);

/* torchvision's F.affine on a PIL image of w x h: the inverse of
 * T * C * R(angle) * S(scale) * Shear(shear) * C^-1 (angle clockwise in
 * degrees, translate in pixels, shear in degrees (x, y)), about center
 * ((w * 0.5, h * 0.5) when NULL), as _get_inverse_affine_matrix computes
 * it. */
void ts_geom_affine(int w, int h, double angle, const double translate[2],
		    double scale, const double shear[2], const double *center,
		    double m[6]);

/* F.perspective's coefficients (a..h: the output point (x, y) samples
 * ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1)))
 * mapping the four endpoints onto the four startpoints, each (x, y) in
 * the order top-left, top-right, bottom-right, bottom-left. Solved in
 * double (torchvision solves the same 8 x 8 system in float32 by least
 * squares). Returns 0, or -1 when the corners are degenerate (three on a
 * line) and the system has no solution. */
int ts_geom_perspective(const double start[8], const double end[8],
			double c[8]);

#endif
