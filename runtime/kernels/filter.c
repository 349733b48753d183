/*
 * filter.c - the neighbourhood filters (filter.h): adjust_sharpness with
 * PIL's arithmetic (bit-exact with torchvision 0.14 on PIL images) and
 * gaussian_blur with torchvision's weights and reflect border (within
 * one level of its float32 conv2d, which sums in another order), on
 * uint8, uint16 and the float32 tensor (there unrounded: within the two
 * float32 sums' error bounds of torchvision's tensor path).
 */
#include "filter.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "trace.h"
#include "util.h"

/* PIL's sharpness is exact only if every float product rounds before
 * the sum it enters, as PIL's own build (no FMA) does: no contraction. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* GCC's -O2 leaves the long blur loops scalar; ask for the vectorizer. */
#if defined(__GNUC__) && !defined(__clang__)
#define TS_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off")))
#else
#define TS_VECTORIZE
#endif

/* ---- adjust_sharpness ------------------------------------------------ */

int ts_filter_sharpness(struct ts_image *img, struct ts_image *tmp, float factor)
{
	const int W = img->width, H = img->height, C = img->channels;
	/* ImagingFilter: an image smaller than the kernel is copied, and the
	 * blend of an image with itself is the image. */
	if (W < 3 || H < 3)
		return 0;
	int rc = ts_image_reserve(tmp, W, H, C, TS_DTYPE_U8);
	if (rc < 0)
		return rc;
	const size_t row = (size_t)W * C;
	memcpy(tmp->data, img->data, row);
	memcpy(tmp->data + (size_t)(H - 1) * tmp->stride,
	       img->data + (size_t)(H - 1) * img->stride, row);
	for (int y = 1; y < H - 1; y++) {
		const uint8_t *up = img->data + (size_t)(y - 1) * img->stride;
		const uint8_t *mid = up + img->stride;
		const uint8_t *dn = mid + img->stride;
		uint8_t *d = tmp->data + (size_t)y * tmp->stride;
		memcpy(d, mid, (size_t)C);
		memcpy(d + row - C, mid + row - C, (size_t)C);
		/* PIL's kernel, in its order (pixel.h) */
		ts_px_sharpen_row(d + C, up + C, mid + C, dn + C, (size_t)C, row - 2 * (size_t)C);
	}
	for (int y = 0; y < H; y++)
		ts_px_blend_row(img->data + (size_t)y * img->stride,
				tmp->data + (size_t)y * tmp->stride, row, factor);
	return 0;
}

/* ---- gaussian_blur --------------------------------------------------- */

void ts_filter_gaussian_kernel(int k, float sigma, float *w)
{
	/* torch.linspace(-h, h, k) of a whole h is exact: the integers. */
	const int h = (k - 1) / 2;
	float sum = 0.0f;
	for (int i = 0; i < k; i++) {
		float x = (float)(i - h) / sigma;
		w[i] = expf(-0.5f * (x * x));
		sum += w[i];
	}
	for (int i = 0; i < k; i++)
		w[i] /= sum;
}

/* Index i mirrored into [0, n) about the edge pixels (torch's reflect:
 * -1 -> 1, n -> n - 2), as often as it takes. */
static int reflect(int i, int n)
{
	if (n == 1)
		return 0;
	const int period = 2 * (n - 1);
	i %= period;
	if (i < 0)
		i += period;
	return i < n ? i : period - i;
}

/* acc[i] += w * row[i], the vertical pass over one source row. */
TS_VECTORIZE static void add_row(float *acc, const uint8_t *row, enum ts_dtype t,
				 size_t n, float w)
{
	if (t == TS_DTYPE_U8) {
		for (size_t i = 0; i < n; i++)
			acc[i] += w * (float)row[i];
	} else if (t == TS_DTYPE_U16) {
		const uint16_t *r = (const uint16_t *)(const void *)row;
		for (size_t i = 0; i < n; i++)
			acc[i] += w * (float)r[i];
	} else {
		const float *r = (const float *)(const void *)row;
		for (size_t i = 0; i < n; i++)
			acc[i] += w * r[i];
	}
}

/* out[i] += w * pad[i], one horizontal tap over the padded row. */
TS_VECTORIZE static void add_tap(float *out, const float *pad, size_t n, float w)
{
	for (size_t i = 0; i < n; i++)
		out[i] += w * pad[i];
}

static void store_row(uint8_t *d, enum ts_dtype t, const float *v, size_t n)
{
	if (t == TS_DTYPE_U8) {
		for (size_t i = 0; i < n; i++) {
			float r = rintf(v[i]); /* torch.round: half to even */
			d[i] = (uint8_t)(r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r);
		}
	} else if (t == TS_DTYPE_U16) {
		uint16_t *o = (uint16_t *)(void *)d;
		for (size_t i = 0; i < n; i++) {
			float r = rintf(v[i]);
			o[i] = (uint16_t)(r < 0.0f ? 0.0f : r > 65535.0f ? 65535.0f : r);
		}
	} else {
		memcpy(d, v, n * sizeof(float));
	}
}

int ts_filter_gaussian(struct ts_image *img, struct ts_image *tmp, int kw,
		       int kh, float sx, float sy)
{
	const int W = img->width, H = img->height, C = img->channels;
	const enum ts_dtype t = img->dtype;
	if (kw < 1 || kh < 1 || !(kw & 1) || !(kh & 1) || !(sx > 0.0f) ||
	    !(sy > 0.0f) || t == TS_DTYPE_F16)
		return -EINVAL;
	if (W <= 0 || H <= 0 || (kw == 1 && kh == 1))
		return 0;
	int rc = ts_image_reserve(tmp, W, H, C, t);
	if (rc < 0)
		return rc;
	const int rx = kw / 2, ry = kh / 2;
	const size_t n = (size_t)W * C, np = (size_t)(W + 2 * rx) * C;
	/* weights x, weights y, the column sums (padded), one output row */
	float *buf = malloc(sizeof(float) * ((size_t)kw + (size_t)kh + np + n));
	if (!buf)
		return TS_E_NOMEM;
	float *wx = buf, *wy = wx + kw, *pad = wy + kh, *out = pad + np;
	ts_filter_gaussian_kernel(kw, sx, wx);
	ts_filter_gaussian_kernel(kh, sy, wy);
	float *acc = pad + (size_t)rx * C;
	for (int y = 0; y < H; y++) {
		memset(acc, 0, n * sizeof(float));
		for (int i = 0; i < kh; i++) {
			const uint8_t *s = img->data + (size_t)reflect(y + i - ry, H) * img->stride;
			add_row(acc, s, t, n, wy[i]);
		}
		for (int x = 0; x < rx; x++) {
			int l = reflect(x - rx, W), r = reflect(W + x, W);
			for (int c = 0; c < C; c++) {
				pad[(size_t)x * C + c] = acc[(size_t)l * C + c];
				acc[n + (size_t)x * C + c] = acc[(size_t)r * C + c];
			}
		}
		memset(out, 0, n * sizeof(float));
		for (int j = 0; j < kw; j++)
			add_tap(out, pad + (size_t)j * C, n, wx[j]);
		store_row(tmp->data + (size_t)y * tmp->stride, t, out, n);
	}
	free(buf);
	ts_image_swap(img, tmp);
	return 0;
}

double ts_filter_sigma(const struct ts_op *op, struct ts_rng *rng)
{
	if (!(op->blur.sigma_lo < op->blur.sigma_hi))
		return op->blur.sigma_lo;
	/* torch.empty(1).uniform_(lo, hi): a float32 draw */
	float s = (float)ts_rng_range(rng, op->blur.sigma_lo, op->blur.sigma_hi);
	ts_trace_note(ts_op_kind_name(op->kind), op->index, "\"sigma\": %.9g", s);
	return s;
}

/* ---- the family's table (kernel.h) ------------------------------------ */

/* wide: gaussian_blur's uint16 and float32 too */
static int refuse(const struct ts_op *op, const struct ts_image *img, bool wide,
		  struct ts_error *err)
{
	if (img->channels >= 1 && img->channels <= 4 &&
	    (img->dtype == TS_DTYPE_U8 ||
	     (wide && (img->dtype == TS_DTYPE_U16 || img->dtype == TS_DTYPE_F32))))
		return 0;
	return ts_error_set(err, TS_E_ARG,
			    "%s needs %s data with 1 to 4 channels, got %s x %d",
			    ts_op_kind_name(op->kind),
			    wide ? "uint8, uint16 or float32" : "uint8",
			    ts_dtype_name(img->dtype), img->channels);
}

static int failed(const struct ts_op *op, int rc, struct ts_error *err)
{
	if (rc == 0)
		return 0;
	return ts_error_set(err, rc == TS_E_NOMEM ? TS_E_NOMEM : TS_E_ARG, "%s: %s",
			    ts_op_kind_name(op->kind),
			    rc == TS_E_NOMEM ? "out of memory" : "invalid kernel or image");
}

static int k_sharpness(const struct ts_op *op, struct ts_image *img,
		       struct ts_image *tmp, struct ts_rng *rng, struct ts_error *err)
{
	int rc = refuse(op, img, false, err);
	if (rc)
		return rc;
	/* PIL takes the factor as a C float (ImagingBlend's alpha) */
	return failed(op, ts_filter_sharpness(img, tmp, (float)op->color.factor), err);
}

static int k_gaussian_blur(const struct ts_op *op, struct ts_image *img,
			   struct ts_image *tmp, struct ts_rng *rng, struct ts_error *err)
{
	int rc = refuse(op, img, true, err);
	if (rc)
		return rc;
	float s = (float)ts_filter_sigma(op, rng);
	return failed(op, ts_filter_gaussian(img, tmp, op->blur.kernel_w, op->blur.kernel_h, s, s), err);
}

const struct ts_kernel ts_kernels_filter[] = {
	{ .kind = TS_OP_ADJUST_SHARPNESS, .apply = k_sharpness },
	{ .kind = TS_OP_GAUSSIAN_BLUR, .apply = k_gaussian_blur },
	TS_KERNEL_END,
};
