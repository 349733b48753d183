/*
 * augmix.c - augmix's kernel (augmix.h): torchvision 0.14's AugMix, its
 * draws, its tensor-path ops and its float32 mixing.
 *
 * Every float32 expression below is the one torch evaluates, one rounding
 * per torch op (the build compiles without contraction); where torch's own
 * kernel contracts a multiply-add (grid_sample's AVX2 code), fmaf says so.
 */
#include "augmix.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "color.h"
#include "kernel.h"
#include "trace.h"
#include "util.h"

static const enum ts_policy_opname space[TS_AUGMIX_OPS] = {
	TS_PA_SHEAR_X, TS_PA_SHEAR_Y, TS_PA_TRANSLATE_X, TS_PA_TRANSLATE_Y,
	TS_PA_ROTATE, TS_PA_POSTERIZE, TS_PA_SOLARIZE, TS_PA_AUTOCONTRAST,
	TS_PA_EQUALIZE, TS_PA_BRIGHTNESS, TS_PA_COLOR, TS_PA_CONTRAST,
	TS_PA_SHARPNESS,
};

enum ts_policy_opname ts_augmix_op(int index)
{
	return index >= 0 && index < TS_AUGMIX_OPS ? space[index] : TS_PA_IDENTITY;
}

/* ---- the draws ------------------------------------------------------- */

/* A standard normal (Box-Muller, one of the pair). */
static double normal(struct ts_rng *rng)
{
	double u1 = 1.0 - ts_rng_uniform(rng); /* (0, 1]: log is finite */
	double u2 = ts_rng_uniform(rng);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Gamma(alpha, 1): Marsaglia and Tsang's method, with alpha below 1
 * boosted (Gamma(alpha + 1) U^(1 / alpha)); at least FLT_MIN, as torch
 * clamps its samples, so that a tiny alpha never divides 0 by 0. */
static double gamma_draw(double alpha, struct ts_rng *rng)
{
	double boost = 1.0;
	if (alpha < 1.0) {
		double u = 1.0 - ts_rng_uniform(rng);
		boost = pow(u, 1.0 / alpha);
		alpha += 1.0;
	}
	const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	double v;
	for (;;) {
		double x = normal(rng);
		v = 1.0 + c * x;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = 1.0 - ts_rng_uniform(rng);
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			break;
	}
	double g = d * v * boost;
	return g > FLT_MIN ? g : FLT_MIN;
}

/* n Gamma(alpha) draws normalized: a Dirichlet(alpha, ..., alpha). */
static void dirichlet(double alpha, int n, struct ts_rng *rng, float *out)
{
	double g[TS_AUGMIX_MAX_WIDTH], sum = 0;
	for (int i = 0; i < n; i++)
		sum += g[i] = gamma_draw(alpha, rng);
	for (int i = 0; i < n; i++)
		out[i] = (float)(g[i] / sum);
}

/* The op's magnitude table for 10 bins (_PARAMETER_MAX) on a w x h
 * image; 0 for AutoContrast and Equalize (a 0-d tensor). */
static int table(enum ts_policy_opname o, int w, int h, float *mag, bool *sg)
{
	switch (o) {
	case TS_PA_TRANSLATE_X:
	case TS_PA_TRANSLATE_Y:
		/* image_size[1] / 3.0 (a Python float), as float32 */
		*sg = true;
		ts_policy_linspace(0.0f, (float)((o == TS_PA_TRANSLATE_X ? w : h) / 3.0), 10,
				   mag);
		return 10;
	case TS_PA_POSTERIZE:
		/* 4 - (arange(10) / (9 / 4)).round().int(), in float32 */
		*sg = false;
		for (int i = 0; i < 10; i++)
			mag[i] = (float)(4 - (int)rintf((float)i / 2.25f));
		return 10;
	default:
		/* ShearX/Y 0..0.3, Rotate 0..30, Solarize 255..0, the
		 * enhancements 0..0.9: RandAugment's tables */
		return ts_policy_table(TS_OP_RAND_AUGMENT, o, 10, w, h, mag, sg);
	}
}

void ts_augmix_draw(const struct ts_op *op, int w, int h, struct ts_rng *rng,
		    struct ts_augmix_draw *d)
{
	const int n_ops = op->policy.augmix_all_ops ? TS_AUGMIX_OPS : 9;
	const int width = op->policy.augmix_width < 1 ? 1
			  : op->policy.augmix_width > TS_AUGMIX_MAX_WIDTH ? TS_AUGMIX_MAX_WIDTH
								  : op->policy.augmix_width;
	memset(d, 0, sizeof(*d));
	d->width = width;
	dirichlet(op->policy.augmix_alpha, 2, rng, d->m);
	dirichlet(op->policy.augmix_alpha, width, rng, d->w);
	for (int k = 0; k < width; k++) {
		int depth = op->policy.augmix_depth > 0 ? op->policy.augmix_depth
						 : 1 + (int)ts_rng_below(rng, 3);
		if (depth > TS_AUGMIX_MAX_DEPTH)
			depth = TS_AUGMIX_MAX_DEPTH;
		d->depth[k] = depth;
		for (int i = 0; i < depth; i++) {
			struct ts_augmix_step *s = &d->steps[k][i];
			float mag[10];
			bool sg = false;
			s->index = (int)ts_rng_below(rng, (uint64_t)n_ops);
			s->step.op = space[s->index];
			int nt = table(s->step.op, w, h, mag, &sg);
			s->bin = -1;
			s->sign = -1;
			s->step.magnitude = 0.0;
			if (nt > 0) {
				s->bin = (int)ts_rng_below(rng, (uint64_t)op->policy.augmix_severity);
				s->step.magnitude = (double)mag[s->bin];
			}
			if (sg) {
				s->sign = (int)ts_rng_below(rng, 2);
				if (s->sign)
					s->step.magnitude = -s->step.magnitude;
			}
		}
	}
}

/* ---- the tensor path's ops ------------------------------------------ */

/* float to uint8 as Tensor.to(torch.uint8) after clamp(0, 255):
 * truncation. */
static inline uint8_t trunc8(float v)
{
	if (!(v > 0.0f))
		return 0;
	return v >= 255.0f ? 255 : (uint8_t)v;
}

/* _blend(img1, img2, ratio): ratio img1 + (1 - ratio) img2, each product
 * float32, clamped, truncated. */
static inline uint8_t blend(float r, float q, float a, float b)
{
	return trunc8(r * a + q * b);
}

/* rgb_to_grayscale's (0.2989 r + 0.587 g) + 0.114 b, truncated. */
static inline uint8_t gray(const uint8_t *p)
{
	return trunc8(0.2989f * (float)p[0] + 0.587f * (float)p[1] + 0.114f * (float)p[2]);
}

/* torch.sum of n float32 values as torch 1.13 sums them on one thread
 * (SumKernel.cpp's cascade_sum of a contiguous row): vectors of 8 lanes,
 * four of them interleaved, each added into multi_row_sum's first of 4
 * levels, a level carried up every 2^max(4, CeilLog2(rows) / 4) rows;
 * then the levels, the leftover vectors, the four rows, the leftover
 * values and the lanes, in that order. On several threads torch splits
 * the sum (two-pass reduction) and its rounding depends on their number. */
float ts_augmix_torch_sum(const float *x, size_t n)
{
	const size_t nv = n / 8, rows = nv / 4;
	int lp = 1;
	if (rows > 2)
		lp = 64 - __builtin_clzll((unsigned long long)(rows - 1));
	lp = lp / 4 > 4 ? lp / 4 : 4;
	const size_t step = (size_t)1 << lp, mask = step - 1;
	float acc[4][4][8];
	memset(acc, 0, sizeof(acc));
	size_t i = 0;
	for (; i + step <= rows;) {
		for (size_t j = 0; j < step; j++, i++)
			for (int k = 0; k < 4; k++)
				for (int l = 0; l < 8; l++)
					acc[0][k][l] += x[(i * 4 + (size_t)k) * 8 + (size_t)l];
		for (int j = 1; j < 4; j++) {
			for (int k = 0; k < 4; k++)
				for (int l = 0; l < 8; l++) {
					acc[j][k][l] += acc[j - 1][k][l];
					acc[j - 1][k][l] = 0.0f;
				}
			if ((i & (mask << (j * lp))) != 0)
				break;
		}
	}
	for (; i < rows; i++)
		for (int k = 0; k < 4; k++)
			for (int l = 0; l < 8; l++)
				acc[0][k][l] += x[(i * 4 + (size_t)k) * 8 + (size_t)l];
	for (int j = 1; j < 4; j++)
		for (int k = 0; k < 4; k++)
			for (int l = 0; l < 8; l++)
				acc[0][k][l] += acc[j][k][l];
	for (size_t v = rows * 4; v < nv; v++)
		for (int l = 0; l < 8; l++)
			acc[0][0][l] += x[v * 8 + (size_t)l];
	for (int k = 1; k < 4; k++)
		for (int l = 0; l < 8; l++)
			acc[0][0][l] += acc[0][k][l];
	float sum = 0.0f;
	for (size_t t = nv * 8; t < n; t++)
		sum += x[t];
	for (int l = 0; l < 8; l++)
		sum += acc[0][0][l];
	return sum;
}

/* adjust_brightness (blend with 0), adjust_saturation (with the gray
 * level; 1 channel: unchanged), adjust_contrast (with the mean gray
 * level, float32, over the whole image). */
static int enhance(struct ts_image *img, enum ts_policy_opname o, double factor)
{
	const int W = img->width, H = img->height, C = img->channels;
	const float r = (float)factor, q = (float)(1.0 - factor);
	float mean = 0.0f;
	if (o == TS_PA_COLOR && C == 1)
		return 0;
	if (o == TS_PA_CONTRAST) {
		/* torch.mean on the CPU: torch.sum of the gray levels as
		 * float32, divided by the count */
		const size_t n = (size_t)W * H;
		float *g = malloc((n ? n : 1) * sizeof(float));
		if (!g)
			return TS_E_NOMEM;
		for (int y = 0; y < H; y++) {
			const uint8_t *p = img->data + (size_t)y * img->stride;
			for (int x = 0; x < W; x++)
				g[(size_t)y * W + x] = (float)(C == 3 ? gray(p + 3 * x) : p[x]);
		}
		mean = ts_augmix_torch_sum(g, n) / (float)n;
		free(g);
	}
	for (int y = 0; y < H; y++) {
		uint8_t *p = img->data + (size_t)y * img->stride;
		for (int x = 0; x < W; x++, p += C) {
			float g = o == TS_PA_CONTRAST ? mean
				  : o == TS_PA_COLOR  ? (float)gray(p)
						      : 0.0f;
			for (int c = 0; c < C; c++)
				p[c] = blend(r, q, (float)p[c], g);
		}
	}
	return 0;
}

/* adjust_sharpness: the blend with the 3x3 [1 1 1; 1 5 1; 1 1 1] / 13
 * blur (rounded; the edge rows and columns the image's own). k / 13 for
 * an integer k is never a half, so torch's float32 conv2d rounds to the
 * same level as the exact sum: (2k + 13) / 26. */
static int sharpness(struct ts_image *img, struct ts_image *tmp, double factor)
{
	const int W = img->width, H = img->height, C = img->channels;
	if (W <= 2 || H <= 2)
		return 0;
	int rc = ts_image_reserve(tmp, W, H, C, TS_DTYPE_U8);
	if (rc < 0)
		return rc;
	const float r = (float)factor, q = (float)(1.0 - factor);
	const size_t row = (size_t)W * C;
	for (int y = 0; y < H; y++) {
		const uint8_t *m = img->data + (size_t)y * img->stride;
		uint8_t *d = tmp->data + (size_t)y * tmp->stride;
		for (size_t i = 0; i < row; i++) {
			int x = (int)(i / (size_t)C);
			int deg = m[i];
			if (y > 0 && y < H - 1 && x > 0 && x < W - 1) {
				const uint8_t *u = m - img->stride, *n = m + img->stride;
				int k = 5 * m[i] + m[i - C] + m[i + C] + u[i - C] + u[i] + u[i + C] +
					n[i - C] + n[i] + n[i + C];
				deg = (2 * k + 13) / 26;
			}
			d[i] = blend(r, q, (float)m[i], (float)deg);
		}
	}
	ts_image_swap(img, tmp);
	return 0;
}

/* autocontrast: per channel (x - min) * (1 / (max - min) * 255) in float32,
 * truncated; a flat channel unchanged (min 0, scale 1). */
static void autocontrast(struct ts_image *img)
{
	const int W = img->width, H = img->height, C = img->channels;
	float lo[4], scale[4];
	for (int c = 0; c < C; c++) {
		int mn = 255, mx = 0;
		for (int y = 0; y < H; y++) {
			const uint8_t *p = img->data + (size_t)y * img->stride + c;
			for (int x = 0; x < W; x++) {
				int v = p[(size_t)x * C];
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
		}
		lo[c] = (float)mn;
		/* bound / (max - min): Tensor.__rtruediv__ is
		 * reciprocal() * bound, two roundings */
		scale[c] = (1.0f / ((float)mx - (float)mn)) * 255.0f;
		if (!isfinite(scale[c])) {
			lo[c] = 0.0f;
			scale[c] = 1.0f;
		}
	}
	for (int y = 0; y < H; y++) {
		uint8_t *p = img->data + (size_t)y * img->stride;
		for (int x = 0; x < W; x++, p += C)
			for (int c = 0; c < C; c++)
				p[c] = trunc8(((float)p[c] - lo[c]) * scale[c]);
	}
}

/* _get_inverse_affine_matrix(center, angle, translate, 1.0, shear) in
 * double, as Python evaluates it (math.radians: x * (pi / 180)). */
static void inverse_matrix(double cx, double cy, double angle, double tx, double ty,
			   double shx, double shy, double m[6])
{
	const double d2r = M_PI / 180.0;
	const double rot = angle * d2r, sx = shx * d2r, sy = shy * d2r;
	const double a = cos(rot - sy) / cos(sy);
	const double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
	const double c = sin(rot - sy) / cos(sy);
	const double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);
	m[0] = d;
	m[1] = -b;
	m[2] = 0.0;
	m[3] = -c;
	m[4] = a;
	m[5] = 0.0;
	m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
	m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
	m[2] += cx;
	m[5] += cy;
}

/* F_t.affine / F_t.rotate (no expand): _gen_affine_grid's float32 grid
 * (the base grid's half-integers times theta^T / (w/2, h/2), summed x, y,
 * 1 in order), grid_sample with align_corners false and zeros padding
 * (the unnormalize (g + 1) * (size / 2) - 0.5 and the bilinear sum as its
 * AVX2 kernel contracts them), the fill through the mask channel when
 * given, rounded half to even. */
static int grid_affine(struct ts_image *img, struct ts_image *tmp, const double m[6],
		       bool bilinear, const float *fill)
{
	const int W = img->width, H = img->height, C = img->channels;
	int rc = ts_image_reserve(tmp, W, H, C, TS_DTYPE_U8);
	if (rc < 0)
		return rc;
	float th[6], R[3][2];
	const float s[2] = { (float)(0.5 * W), (float)(0.5 * H) };
	for (int i = 0; i < 6; i++)
		th[i] = (float)m[i];
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < 2; j++)
			R[k][j] = th[j * 3 + k] / s[j];
	const float sfx = (float)W / 2.0f, sfy = (float)H / 2.0f;
	const float x0 = (float)(-W * 0.5 + 0.5), y0 = (float)(-H * 0.5 + 0.5);
	for (int y = 0; y < H; y++) {
		const float by = y0 + (float)y; /* linspace's half-integers: exact */
		uint8_t *d = tmp->data + (size_t)y * tmp->stride;
		for (int x = 0; x < W; x++, d += C) {
			const float bx = x0 + (float)x;
			const float gx = (bx * R[0][0] + by * R[1][0]) + R[2][0];
			const float gy = (bx * R[0][1] + by * R[1][1]) + R[2][1];
			const float ix = fmaf(gx + 1.0f, sfx, -0.5f);
			const float iy = fmaf(gy + 1.0f, sfy, -0.5f);
			float v[4] = { 0, 0, 0, 0 }, mask = 0.0f;
			if (!bilinear) {
				const float rx = nearbyintf(ix), ry = nearbyintf(iy);
				const bool in = rx > -1.0f && rx < (float)W && ry > -1.0f &&
						ry < (float)H;
				mask = in ? 1.0f : 0.0f;
				if (in) {
					const uint8_t *p = img->data + (size_t)ry * img->stride +
							   (size_t)rx * C;
					for (int c = 0; c < C; c++)
						v[c] = (float)p[c];
				}
			} else {
				const float xw = floorf(ix), yn = floorf(iy);
				const float w = ix - xw, e = 1.0f - w, n = iy - yn, so = 1.0f - n;
				const float wt[4] = { so * e, so * w, n * e, n * w }; /* nw ne sw se */
				const int xi[4] = { (int)xw, (int)xw + 1, (int)xw, (int)xw + 1 };
				const int yi[4] = { (int)yn, (int)yn, (int)yn + 1, (int)yn + 1 };
				bool ok[4];
				for (int k = 0; k < 4; k++)
					ok[k] = xi[k] > -1 && xi[k] < W && yi[k] > -1 && yi[k] < H;
				/* nw v + ne v + sw v + se v as GCC contracts the
				 * kernel's Vectorized expression: fma(ne, nw
				 * product), then fma of sw, then of se (found
				 * equal to torch on every pixel of the tests) */
				for (int c = 0; c <= C; c++) {
					float val[4];
					for (int k = 0; k < 4; k++)
						val[k] = !ok[k] ? 0.0f
							 : c == C ? 1.0f
								  : (float)img->data[(size_t)yi[k] * img->stride +
										     (size_t)xi[k] * C + c];
					float acc = fmaf(val[1], wt[1], val[0] * wt[0]);
					acc = fmaf(val[2], wt[2], acc);
					acc = fmaf(val[3], wt[3], acc);
					if (c == C)
						mask = acc;
					else
						v[c] = acc;
				}
			}
			for (int c = 0; c < C; c++) {
				float o = v[c];
				if (fill) {
					if (!bilinear)
						o = mask < 0.5f ? fill[c] : o;
					else
						o = o * mask + (1.0f - mask) * fill[c];
				}
				float r = nearbyintf(o);
				d[c] = (uint8_t)(r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r);
			}
		}
	}
	ts_image_swap(img, tmp);
	return 0;
}

int ts_augmix_apply_step(const struct ts_policy_step *s, struct ts_image *img,
			 struct ts_image *tmp, bool bilinear, const float *fill)
{
	const double mg = s->magnitude, r2d = 180.0 / M_PI;
	const int W = img->width, H = img->height;
	double m[6];
	switch (s->op) {
	case TS_PA_SHEAR_X: /* center [0, 0]: (-w / 2, -h / 2) from the centre */
		inverse_matrix(-W * 0.5, -H * 0.5, 0.0, 0.0, 0.0, atan(mg) * r2d, 0.0, m);
		return grid_affine(img, tmp, m, bilinear, fill);
	case TS_PA_SHEAR_Y:
		inverse_matrix(-W * 0.5, -H * 0.5, 0.0, 0.0, 0.0, 0.0, atan(mg) * r2d, m);
		return grid_affine(img, tmp, m, bilinear, fill);
	case TS_PA_TRANSLATE_X: /* int(magnitude) */
		inverse_matrix(0.0, 0.0, 0.0, trunc(mg), 0.0, 0.0, 0.0, m);
		return grid_affine(img, tmp, m, bilinear, fill);
	case TS_PA_TRANSLATE_Y:
		inverse_matrix(0.0, 0.0, 0.0, 0.0, trunc(mg), 0.0, 0.0, m);
		return grid_affine(img, tmp, m, bilinear, fill);
	case TS_PA_ROTATE: /* F.rotate passes -angle */
		inverse_matrix(0.0, 0.0, -mg, 0.0, 0.0, 0.0, 0.0, m);
		return grid_affine(img, tmp, m, bilinear, fill);
	case TS_PA_BRIGHTNESS:
	case TS_PA_COLOR:
	case TS_PA_CONTRAST:
		return enhance(img, s->op, 1.0 + mg);
	case TS_PA_SHARPNESS:
		return sharpness(img, tmp, 1.0 + mg);
	case TS_PA_POSTERIZE: /* img & -(2^(8 - bits)), as PIL's table */
		ts_color_posterize(img, (int)mg);
		return 0;
	case TS_PA_SOLARIZE: /* where(img >= threshold, 255 - img, img) */
		ts_color_solarize(img, mg);
		return 0;
	case TS_PA_AUTOCONTRAST:
		autocontrast(img);
		return 0;
	case TS_PA_EQUALIZE: /* _scale_channel's table is PIL's */
		ts_color_equalize(img);
		return 0;
	default:
		return TS_E_ARG;
	}
}

/* ---- the mixing ------------------------------------------------------ */

int ts_augmix_apply(const struct ts_op *op, const struct ts_augmix_draw *d,
		    struct ts_image *img, struct ts_image *tmp, struct ts_error *err)
{
	const int W = img->width, H = img->height, C = img->channels;
	const size_t row = (size_t)W * C, n = row * (size_t)H;
	struct ts_image aug = { 0 };
	float fill[4], *mix = NULL;
	int rc = 0;
	for (int c = 0; c < 4; c++)
		fill[c] = (float)(op->policy.n_fill > 1 ? op->policy.fill[c < op->policy.n_fill ? c : 0]
						      : op->policy.fill[0]);
	mix = malloc((n ? n : 1) * sizeof(float));
	if (!mix || ts_image_reserve(&aug, W, H, C, TS_DTYPE_U8) < 0) {
		rc = TS_E_NOMEM;
		goto out;
	}
	/* mix = m[0] * batch */
	for (int y = 0; y < H; y++) {
		const uint8_t *p = img->data + (size_t)y * img->stride;
		for (size_t i = 0; i < row; i++)
			mix[(size_t)y * row + i] = d->m[0] * (float)p[i];
	}
	for (int k = 0; k < d->width; k++) {
		/* combined_weights: Dirichlet * m[1], float32 */
		const float cw = d->w[k] * d->m[1];
		for (int y = 0; y < H; y++)
			memcpy(aug.data + (size_t)y * aug.stride, img->data + (size_t)y * img->stride,
			       row);
		for (int i = 0; i < d->depth[k]; i++) {
			rc = ts_augmix_apply_step(&d->steps[k][i].step, &aug, tmp,
						  op->policy.interp == TS_INTERP_BILINEAR,
						  op->policy.augmix_fill ? fill : NULL);
			if (rc < 0)
				goto out;
		}
		/* mix.add_(combined_weights[:, i] * aug) */
		for (int y = 0; y < H; y++) {
			const uint8_t *p = aug.data + (size_t)y * aug.stride;
			float *mr = mix + (size_t)y * row;
			for (size_t i = 0; i < row; i++)
				mr[i] = mr[i] + cw * (float)p[i];
		}
	}
	/* .to(uint8): truncation */
	for (int y = 0; y < H; y++) {
		uint8_t *p = img->data + (size_t)y * img->stride;
		for (size_t i = 0; i < row; i++)
			p[i] = trunc8(mix[(size_t)y * row + i]);
	}
out:
	free(mix);
	ts_image_free(&aug);
	if (rc < 0)
		return ts_error_set(err, rc, "augmix: %s",
				    rc == TS_E_NOMEM ? "out of memory" : "an op outside its space");
	return 0;
}

/* The draws into the trace (tsrun(1)): the Beta pair, the Dirichlet
 * weights, and per chain its ops, as torchvision's forward draws them. */
static void note(const struct ts_op *op, const struct ts_augmix_draw *d)
{
	struct ts_trace *t = ts_trace_cur;
	if (!t)
		return;
	struct ts_trace ch = {0};
	ts_trace_raw(&ch, "\"m\": [%.9g, %.9g], \"weights\": [", (double)d->m[0],
		     (double)d->m[1]);
	for (int k = 0; k < d->width; k++)
		ts_trace_raw(&ch, "%s%.9g", k ? ", " : "", (double)d->w[k]);
	ts_trace_raw(&ch, "], \"chains\": [");
	for (int k = 0; k < d->width; k++) {
		ts_trace_raw(&ch, "%s[", k ? ", " : "");
		for (int i = 0; i < d->depth[k]; i++) {
			const struct ts_augmix_step *s = &d->steps[k][i];
			ts_trace_raw(&ch, "%s{\"name\": \"%s\", \"index\": %d, \"bin\": ",
				     i ? ", " : "", ts_policy_op_name(s->step.op), s->index);
			if (s->bin >= 0)
				ts_trace_raw(&ch, "%d", s->bin);
			else
				ts_trace_raw(&ch, "null");
			if (s->sign >= 0)
				ts_trace_raw(&ch, ", \"sign\": %d", s->sign);
			else
				ts_trace_raw(&ch, ", \"sign\": null");
			ts_trace_raw(&ch, ", \"magnitude\": %.17g}", s->step.magnitude);
		}
		ts_trace_raw(&ch, "]");
	}
	ts_trace_raw(&ch, "]");
	if (ch.failed)
		t->failed = true;
	else
		ts_trace_note("augmix", op->index, "%s", ch.buf);
	ts_trace_fini(&ch);
}

static int k_augmix(const struct ts_op *op, struct ts_image *img, struct ts_image *tmp,
		    struct ts_rng *rng, struct ts_error *err)
{
	struct ts_augmix_draw *d;
	if (img->dtype != TS_DTYPE_U8 || (img->channels != 1 && img->channels != 3))
		return ts_error_set(err, TS_E_ARG,
				    "augmix takes uint8 pixels with 1 or 3 channels, got %s x %d",
				    ts_dtype_name(img->dtype), img->channels);
	/* about 5 KiB of draws: off the worker's stack */
	d = malloc(sizeof(*d));
	if (!d)
		return ts_error_set(err, TS_E_NOMEM, "augmix: out of memory");
	ts_augmix_draw(op, img->width, img->height, rng, d);
	note(op, d);
	int rc = ts_augmix_apply(op, d, img, tmp, err);
	free(d);
	return rc;
}

/* ---- the family's table (kernel.h) ------------------------------------ */

const struct ts_kernel ts_kernels_augmix[] = {
	{ .kind = TS_OP_AUGMIX, .apply = k_augmix },
	TS_KERNEL_END,
};
