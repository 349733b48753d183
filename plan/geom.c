/*
 * geom.c - the geometric operators' matrices (geom.h), written as the
 * Python of torchvision 0.14 and Pillow 9.4 evaluates them: the same
 * operations on doubles in the same order, so that the matrix is the
 * same to the last bit (on a platform that does not fuse multiply-adds,
 * as the x86-64 baseline does not).
 */
#include "geom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* math.radians: x * (pi / 180), the constant rounded once. */
static double radians(double deg)
{
	return deg * (M_PI / 180.0);
}

/* Python's float x % 360.0: the result takes the divisor's sign, and a
 * zero is +0.0. */
static double py_mod360(double x)
{
	double r = fmod(x, 360.0);
	if (r != 0.0) {
		if (r < 0.0)
			r += 360.0;
	} else {
		r = 0.0;
	}
	return r;
}

/* Python's round(x, 15): the decimal rounding of the exact binary value,
 * half to even, read back. glibc's printf rounds the exact value the
 * same way, and strtod reads it back correctly rounded, as Python does. */
static double py_round15(double x)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%.15f", x);
	return strtod(buf, NULL);
}

/* Pillow's inner transform(x, y, matrix): a * x + b * y + c. */
static void apply(const double m[6], double x, double y, double *ox, double *oy)
{
	*ox = m[0] * x + m[1] * y + m[2];
	*oy = m[3] * x + m[4] * y + m[5];
}

enum ts_geom_path ts_geom_rotate(int w, int h, double angle,
				 const double *center, bool expand, double m[6],
				 int *ow, int *oh)
{
	angle = py_mod360(angle);
	*ow = w;
	*oh = h;
	if (!center) {
		if (angle == 0.0)
			return TS_GEOM_COPY;
		if (angle == 180.0)
			return TS_GEOM_ROT180;
		if ((angle == 90.0 || angle == 270.0) && (expand || w == h)) {
			*ow = h;
			*oh = w;
			return angle == 90.0 ? TS_GEOM_ROT90 : TS_GEOM_ROT270;
		}
	}
	const double cx = center ? center[0] : w / 2.0;
	const double cy = center ? center[1] : h / 2.0;
	const double a = -radians(angle);
	m[0] = py_round15(cos(a));
	m[1] = py_round15(sin(a));
	m[2] = 0.0;
	m[3] = py_round15(-sin(a));
	m[4] = py_round15(cos(a));
	m[5] = 0.0;
	double tx, ty;
	apply(m, -cx - 0.0, -cy - 0.0, &tx, &ty);
	m[2] = tx + cx;
	m[5] = ty + cy;
	if (expand) {
		/* The corners one by one, not in a loop: aarch64 GCC 12 stops
		 * with an internal error vectorising that loop's min/max
		 * reduction at -O3 (tree-vect-loop.cc:7457). */
		double x[4], y[4];
		apply(m, 0, 0, &x[0], &y[0]);
		apply(m, w, 0, &x[1], &y[1]);
		apply(m, w, h, &x[2], &y[2]);
		apply(m, 0, h, &x[3], &y[3]);
		const double xmin = fmin(fmin(fmin(x[0], x[1]), x[2]), x[3]);
		const double xmax = fmax(fmax(fmax(x[0], x[1]), x[2]), x[3]);
		const double ymin = fmin(fmin(fmin(y[0], y[1]), y[2]), y[3]);
		const double ymax = fmax(fmax(fmax(y[0], y[1]), y[2]), y[3]);
		const int nw = (int)(ceil(xmax) - floor(xmin));
		const int nh = (int)(ceil(ymax) - floor(ymin));
		apply(m, -(nw - w) / 2.0, -(nh - h) / 2.0, &tx, &ty);
		m[2] = tx;
		m[5] = ty;
		*ow = nw;
		*oh = nh;
	}
	return TS_GEOM_MATRIX;
}

void ts_geom_affine(int w, int h, double angle, const double translate[2],
		    double scale, const double shear[2], const double *center,
		    double m[6])
{
	const double cx = center ? center[0] : w * 0.5;
	const double cy = center ? center[1] : h * 0.5;
	const double tx = translate[0], ty = translate[1];
	const double rot = radians(angle);
	const double sx = radians(shear[0]);
	const double sy = radians(shear[1]);

	/* rotation times shear, without the scale */
	const double a = cos(rot - sy) / cos(sy);
	const double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
	const double c = sin(rot - sy) / cos(sy);
	const double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);

	/* its inverse (the determinant is 1), over the scale */
	m[0] = d / scale;
	m[1] = -b / scale;
	m[2] = 0.0 / scale;
	m[3] = -c / scale;
	m[4] = a / scale;
	m[5] = 0.0 / scale;
	/* then the inverse translations: C * RSS^-1 * C^-1 * T^-1 */
	m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
	m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
	m[2] += cx;
	m[5] += cy;
}

int ts_geom_perspective(const double start[8], const double end[8],
			double c[8])
{
	/* Each corner k gives two rows: the endpoint (x, y) maps to the
	 * startpoint (u, v):
	 *   a x + b y + c - g x u - h y u = u
	 *   d x + e y + f - g x v - h y v = v  */
	double A[8][9];
	for (int k = 0; k < 4; k++) {
		const double x = end[2 * k], y = end[2 * k + 1];
		const double u = start[2 * k], v = start[2 * k + 1];
		const double r0[9] = { x, y, 1, 0, 0, 0, -u * x, -u * y, u };
		const double r1[9] = { 0, 0, 0, x, y, 1, -v * x, -v * y, v };
		for (int j = 0; j < 9; j++) {
			A[2 * k][j] = r0[j];
			A[2 * k + 1][j] = r1[j];
		}
	}
	/* Gaussian elimination with partial pivoting */
	for (int col = 0; col < 8; col++) {
		int piv = col;
		for (int r = col + 1; r < 8; r++)
			if (fabs(A[r][col]) > fabs(A[piv][col]))
				piv = r;
		if (fabs(A[piv][col]) < 1e-12)
			return -1;
		if (piv != col)
			for (int j = 0; j < 9; j++) {
				double t = A[col][j];
				A[col][j] = A[piv][j];
				A[piv][j] = t;
			}
		for (int r = col + 1; r < 8; r++) {
			const double f = A[r][col] / A[col][col];
			for (int j = col; j < 9; j++)
				A[r][j] -= f * A[col][j];
		}
	}
	for (int r = 7; r >= 0; r--) {
		double s = A[r][8];
		for (int j = r + 1; j < 8; j++)
			s -= A[r][j] * c[j];
		c[r] = s / A[r][r];
	}
	return 0;
}
