/*
 * augment.c - augment kernels with torchvision/PIL numerics.
 *
 * Measured against torchvision 0.14 + Pillow 9.4 by tests/torch-equal.py:
 * resize (bilinear antialiased, box, nearest) of uint8 images is bit-exact
 * with PIL's Image.resize (max abs diff 0), as are flip, grayscale and the
 * ColorJitter adjustments for given factors. Resize itself is in
 * augment_resize.c.
 */
#include "augment.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "augment_internal.h"
#include "color.h"
#include "kernel.h"
#include "trace.h"
#include "util.h"

/* ---- Box choices ---- */

void ts_aug_resize_dims(int w, int h, const struct ts_op_resize *resize, int *ow,
			int *oh)
{
	if (resize->size_w > 0) {
		*ow = resize->size_w;
		*oh = resize->size_h;
		return;
	}
	int size = resize->size_h;
	int shorter = w <= h ? w : h, longer = w <= h ? h : w;
	/* Python: int(size * long / short): exact product, true division,
	 * truncation. */
	int nl = (int)((double)((int64_t)size * longer) / (double)shorter);
	/* max_size: int(max_size * new_short / new_long), max_size */
	if (resize->max_size > 0 && nl > resize->max_size) {
		size = (int)((double)((int64_t)resize->max_size * size) / (double)nl);
		size = size < 1 ? 1 : size; /* torchvision fails at 0 */
		nl = resize->max_size;
	}
	if (w <= h) {
		*ow = size;
		*oh = nl;
	} else {
		*ow = nl;
		*oh = size;
	}
}

/* One axis of CenterCrop: torchvision pads (c - n) // 2 before when the
 * crop is larger, else int(round((n - c) / 2.0)) with round-half-even. */
static int center_start(int n, int c)
{
	if (c > n)
		return -((c - n) / 2);
	return (int)rint((double)(n - c) / 2.0);
}

void ts_aug_center_box(int w, int h, int cw, int ch, int *x, int *y)
{
	*x = center_start(w, cw);
	*y = center_start(h, ch);
}

void ts_aug_rrc_box(int w, int h, const struct ts_op_crop *rrc, struct ts_rng *rng,
		    int *x, int *y, int *cw, int *ch)
{
	double area = (double)w * (double)h;
	double lr0 = log(rrc->ratio_lo), lr1 = log(rrc->ratio_hi);
	for (int attempt = 0; attempt < 10; attempt++) {
		double target = area * ts_rng_range(rng, rrc->scale_lo,
						    rrc->scale_hi);
		double ar = exp(ts_rng_range(rng, lr0, lr1));
		/* compared as doubles: for a huge w * h the side need not
		 * fit an int (converting it would be undefined) */
		double twd = rint(sqrt(target * ar)), thd = rint(sqrt(target / ar));
		if (twd > 0 && twd <= w && thd > 0 && thd <= h) {
			int tw = (int)twd, th = (int)thd;
			*y = (int)ts_rng_below(rng, (uint64_t)(h - th + 1));
			*x = (int)ts_rng_below(rng, (uint64_t)(w - tw + 1));
			*cw = tw;
			*ch = th;
			return;
		}
	}
	double in_ratio = (double)w / (double)h;
	double rmin = fmin(rrc->ratio_lo, rrc->ratio_hi);
	double rmax = fmax(rrc->ratio_lo, rrc->ratio_hi);
	int tw, th;
	if (in_ratio < rmin) {
		tw = w;
		th = (int)rint(tw / rmin);
	} else if (in_ratio > rmax) {
		th = h;
		tw = (int)rint(th * rmax);
	} else {
		tw = w;
		th = h;
	}
	*x = (w - tw) / 2;
	*y = (h - th) / 2;
	*cw = tw;
	*ch = th;
}

void ts_aug_random_crop_box(int w, int h, const struct ts_op_crop *rc,
			    struct ts_rng *rng, int *x, int *y)
{
	int p = rc->padding > 0 ? rc->padding : 0;
	int pw = w + 2 * p, ph = h + 2 * p;
	int cw = rc->size_w, ch = rc->size_h;
	int yy, xx;
	if (ph == ch && pw == cw) {
		yy = 0;
		xx = 0;
	} else {
		yy = ph >= ch ? (int)ts_rng_below(rng, (uint64_t)(ph - ch + 1))
			      : -((ch - ph) / 2);
		xx = pw >= cw ? (int)ts_rng_below(rng, (uint64_t)(pw - cw + 1))
			      : -((cw - pw) / 2);
	}
	*x = xx - p;
	*y = yy - p;
}

void ts_aug_tile_grid(int w, int h, const struct ts_op_tile *tile, int *nx,
		      int *ny)
{
	int sw = tile->stride_w > 0 ? tile->stride_w : tile->size_w;
	int sh = tile->stride_h > 0 ? tile->stride_h : tile->size_h;
	*nx = w >= tile->size_w && sw > 0 ? (w - tile->size_w) / sw + 1 : 0;
	*ny = h >= tile->size_h && sh > 0 ? (h - tile->size_h) / sh + 1 : 0;
}

/* ---- Crop, flip ---- */

int ts_aug_crop(const struct ts_image *in, struct ts_image *out, int x, int y,
		int cw, int ch)
{
	int rc = ts_image_reserve(out, cw, ch, in->channels, in->dtype);
	if (rc < 0)
		return rc;
	const size_t px = (size_t)in->channels * ts_dtype_size(in->dtype);
	/* Columns of the window that lie inside the image. */
	int x0 = x < 0 ? 0 : x;
	int x1 = x + cw > in->width ? in->width : x + cw;
	for (int r = 0; r < ch; r++) {
		uint8_t *d = out->data + (size_t)r * out->stride;
		int sy = y + r;
		if (sy < 0 || sy >= in->height || x1 <= x0) {
			memset(d, 0, (size_t)cw * px);
			continue;
		}
		size_t lead = (size_t)(x0 - x) * px;
		size_t body = (size_t)(x1 - x0) * px;
		memset(d, 0, lead);
		memcpy(d + lead, in->data + (size_t)sy * in->stride + (size_t)x0 * px,
		       body);
		memset(d + lead + body, 0, (size_t)cw * px - lead - body);
	}
	return 0;
}

/* Each row mirrored in place, px bytes a pixel (a constant where it is
 * inlined). */
static inline __attribute__((always_inline)) void flip_rows(struct ts_image *img,
							      const size_t px)
{
	uint8_t t[16];
	for (int y = 0; y < img->height; y++) {
		uint8_t *a = img->data + (size_t)y * img->stride;
		uint8_t *b = a + (size_t)(img->width - 1) * px;
		for (; a < b; a += px, b -= px) {
			memcpy(t, a, px);
			memcpy(a, b, px);
			memcpy(b, t, px);
		}
	}
}

void ts_aug_flip(struct ts_image *img, bool horizontal)
{
	const size_t px = (size_t)img->channels * ts_dtype_size(img->dtype);
	const size_t row = (size_t)img->width * px;
	if (!horizontal) {
		uint8_t t[256];
		for (int y = 0; y < img->height / 2; y++) {
			uint8_t *a = img->data + (size_t)y * img->stride;
			uint8_t *b = img->data + (size_t)(img->height - 1 - y) * img->stride;
			for (size_t o = 0; o < row; o += sizeof(t)) {
				size_t n = row - o < sizeof(t) ? row - o : sizeof(t);
				memcpy(t, a + o, n);
				memcpy(a + o, b + o, n);
				memcpy(b + o, t, n);
			}
		}
		return;
	}
	/* The pixel size a constant in each loop, so that the swaps are a
	 * few moves rather than three library memcpy calls per pixel. */
	switch (px) {
	case 1:
		flip_rows(img, 1);
		break;
	case 3:
		for (int y = 0; y < img->height; y++)
			ts_px_flip3(img->data + (size_t)y * img->stride, (size_t)img->width);
		break;
	case 4:
		flip_rows(img, 4);
		break;
	case 12:
		flip_rows(img, 12);
		break;
	default:
		flip_rows(img, px);
	}
}

/* ---- Colour ---- */

static inline uint8_t gray_u8(const uint8_t *p)
{
	return (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

static float full_scale(enum ts_dtype t)
{
	return t == TS_DTYPE_U8 ? 255.0f : t == TS_DTYPE_U16 ? 65535.0f : 1.0f;
}

/* Float images: torchvision's tensor blend, clamped to full scale. */
static void blend_float(struct ts_image *img, const float *deg, bool per_pixel,
			float alpha)
{
	const int C = img->channels;
	const float maxv = full_scale(img->dtype);
	for (int y = 0; y < img->height; y++) {
		uint8_t *r = img->data + (size_t)y * img->stride;
		for (int x = 0; x < img->width; x++)
			for (int c = 0; c < C; c++) {
				size_t i = (size_t)x * C + c;
				float a = per_pixel ? deg[(size_t)y * img->width + x] : deg[0];
				float v = a + alpha * (ts_aug_load_f(r, img->dtype, i) - a);
				v = v < 0.0f ? 0.0f : v > maxv ? maxv : v;
				if (img->dtype == TS_DTYPE_U16)
					ts_aug_store_f(r, img->dtype, i, v);
				else
					((float *)(void *)r)[i] = v;
			}
	}
}

static float gray_f(const uint8_t *row, enum ts_dtype t, size_t i, int C)
{
	if (C < 3)
		return ts_aug_load_f(row, t, i);
	return 0.299f * ts_aug_load_f(row, t, i) + 0.587f * ts_aug_load_f(row, t, i + 1) +
	       0.114f * ts_aug_load_f(row, t, i + 2);
}

void ts_aug_brightness(struct ts_image *img, float factor)
{
	const size_t n = (size_t)img->width * img->channels;
	if (img->dtype != TS_DTYPE_U8) {
		float zero = 0.0f;
		blend_float(img, &zero, false, factor);
		return;
	}
	for (int y = 0; y < img->height; y++)
		ts_px_blend_const(img->data + (size_t)y * img->stride, n, 0, factor);
}

void ts_aug_contrast(struct ts_image *img, float factor)
{
	const int C = img->channels;
	const size_t npix = (size_t)img->width * img->height;
	if (img->dtype != TS_DTYPE_U8) {
		double sum = 0.0;
		for (int y = 0; y < img->height; y++) {
			const uint8_t *r = img->data + (size_t)y * img->stride;
			for (int x = 0; x < img->width; x++)
				sum += gray_f(r, img->dtype, (size_t)x * C, C);
		}
		float mean = (float)(sum / (double)npix);
		blend_float(img, &mean, false, factor);
		return;
	}
	/* ImageEnhance.Contrast: the mean of the L image (an exact integer
	 * sum, as ImageStat's histogram gives), rounded by int(m + 0.5). */
	uint64_t sum = 0;
	for (int y = 0; y < img->height; y++) {
		const uint8_t *r = img->data + (size_t)y * img->stride;
		if (C < 3) {
			for (int x = 0; x < img->width; x++)
				sum += r[(size_t)x * C];
			continue;
		}
		uint8_t g[256];
		for (int x = 0; x < img->width; x += 256) {
			size_t k = img->width - x < 256 ? (size_t)(img->width - x) : 256;
			ts_px_gray(g, r + (size_t)x * C, k, C);
			for (size_t i = 0; i < k; i++)
				sum += g[i];
		}
	}
	int mean = (int)((double)sum / (double)npix + 0.5);
	const size_t n = (size_t)img->width * C;
	for (int y = 0; y < img->height; y++)
		ts_px_blend_const(img->data + (size_t)y * img->stride, n, mean, factor);
}

void ts_aug_saturation(struct ts_image *img, float factor)
{
	const int C = img->channels;
	if (C < 3)
		return;
	if (img->dtype == TS_DTYPE_U8 && C == 3) {
		for (int y = 0; y < img->height; y++)
			ts_px_color3(img->data + (size_t)y * img->stride, (size_t)img->width, factor);
		return;
	}
	for (int y = 0; y < img->height; y++) {
		uint8_t *r = img->data + (size_t)y * img->stride;
		for (int x = 0; x < img->width; x++) {
			size_t i = (size_t)x * C;
			if (img->dtype == TS_DTYPE_U8) {
				int g = gray_u8(r + i);
				r[i] = ts_aug_blend_u8(g, r[i], factor);
				r[i + 1] = ts_aug_blend_u8(g, r[i + 1], factor);
				r[i + 2] = ts_aug_blend_u8(g, r[i + 2], factor);
			} else {
				float g = gray_f(r, img->dtype, i, C);
				float maxv = full_scale(img->dtype);
				for (int c = 0; c < 3; c++) {
					float v = g + factor * (ts_aug_load_f(r, img->dtype, i + c) - g);
					v = v < 0.0f ? 0.0f : v > maxv ? maxv : v;
					ts_aug_store_f(r, img->dtype, i + c, v);
				}
			}
		}
	}
}

void ts_aug_jitter_params(const struct ts_op *op, struct ts_rng *rng,
			  int order[4], float f[3], double *hue)
{
	/* torch.randperm(4) then the factors in fixed order. Without hue
	 * the permutation is of the three others (the draws, and so the
	 * results, of a pipeline without hue stay what they were); the
	 * order of the adjustments that run is uniform either way. */
	const int n = op->jitter.hue > 0.0 ? 4 : 3;
	for (int i = 0; i < 4; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)ts_rng_below(rng, (uint64_t)i + 1);
		int t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	const double v[3] = { op->jitter.brightness, op->jitter.contrast, op->jitter.saturation };
	for (int k = 0; k < 3; k++) {
		f[k] = 1.0f;
		if (v[k] > 0.0)
			f[k] = (float)ts_rng_range(rng, fmax(0.0, 1.0 - v[k]),
						   1.0 + v[k]);
	}
	*hue = op->jitter.hue > 0.0 ? ts_rng_range(rng, -op->jitter.hue, op->jitter.hue) : 0.0;
}

int ts_aug_color_jitter(struct ts_image *img, const struct ts_op *op,
			struct ts_rng *rng)
{
	int order[4];
	float f[3];
	double hue;
	ts_aug_jitter_params(op, rng, order, f, &hue);
	const double v[4] = { op->jitter.brightness, op->jitter.contrast, op->jitter.saturation,
			      op->jitter.hue };
	if (ts_trace_cur) {
		/* torchvision's fn_idx and factors (a parameter left at 0
		 * has factor 1 and is not applied, torchvision's None) */
		static const char *const names[4] = { "brightness", "contrast", "saturation",
						       "hue" };
		ts_trace_note("color_jitter", op->index,
			      "\"order\": [\"%s\", \"%s\", \"%s\", \"%s\"], \"brightness\": %.9g, "
			      "\"contrast\": %.9g, \"saturation\": %.9g, \"hue\": %.17g",
			      names[order[0]], names[order[1]], names[order[2]], names[order[3]],
			      (double)f[0], (double)f[1], (double)f[2], hue);
	}
	for (int k = 0; k < 4; k++) {
		int a = order[k];
		if (v[a] <= 0.0)
			continue;
		if (a == 0)
			ts_aug_brightness(img, f[0]);
		else if (a == 1)
			ts_aug_contrast(img, f[1]);
		else if (a == 2)
			ts_aug_saturation(img, f[2]);
		else if (img->dtype == TS_DTYPE_U8)
			ts_color_hue(img, hue);
		else
			return -EINVAL;
	}
	return 0;
}

int ts_aug_grayscale(const struct ts_image *in, struct ts_image *out,
		     int channels)
{
	if (channels != 1 && channels != 3)
		return -EINVAL;
	int rc = ts_image_reserve(out, in->width, in->height, channels, in->dtype);
	if (rc < 0)
		return rc;
	const int C = in->channels;
	for (int y = 0; y < in->height; y++) {
		const uint8_t *s = in->data + (size_t)y * in->stride;
		uint8_t *d = out->data + (size_t)y * out->stride;
		for (int x = 0; x < in->width; x++) {
			size_t i = (size_t)x * C, o = (size_t)x * channels;
			if (in->dtype == TS_DTYPE_U8) {
				uint8_t g = C >= 3 ? gray_u8(s + i) : s[i];
				for (int c = 0; c < channels; c++)
					d[o + c] = g;
			} else {
				float g = gray_f(s, in->dtype, i, C);
				for (int c = 0; c < channels; c++)
					ts_aug_store_f(d, in->dtype, o + c, g);
			}
		}
	}
	return 0;
}

/* ---- Normalize / to outside the fused tail ---- */

/* Element i of a row as a float in [0, 1] (float images are already). */
static inline float unit_value(const uint8_t *row, enum ts_dtype t, size_t i)
{
	if (t == TS_DTYPE_U8)
		return (float)row[i] / 255.0f;
	if (t == TS_DTYPE_U16)
		return (float)((const uint16_t *)(const void *)row)[i] / 65535.0f;
	return ((const float *)(const void *)row)[i];
}

/* What a kernel of this family reports when it fails. */
static int failed(const struct ts_op *op, int rc, struct ts_error *err)
{
	if (rc == 0)
		return 0;
	return ts_error_set(err, rc, "%s: %s", ts_op_kind_name(op->kind),
			    rc == TS_E_NOMEM ? "out of memory" : "invalid image or size");
}

static int apply_normalize(const struct ts_op *op, struct ts_image *img,
			   struct ts_image *tmp)
{
	const int C = img->channels;
	int rc = ts_image_reserve(tmp, img->width, img->height, C, TS_DTYPE_F32);
	if (rc < 0)
		return rc;
	float mean[4], istd[4];
	for (int c = 0; c < C; c++) {
		int k = c < op->norm.n_mean ? c : 0;
		mean[c] = op->norm.mean[k];
		istd[c] = op->norm.std[k];
	}
	for (int y = 0; y < img->height; y++) {
		const uint8_t *s = img->data + (size_t)y * img->stride;
		float *d = (float *)(void *)(tmp->data + (size_t)y * tmp->stride);
		for (int x = 0; x < img->width; x++)
			for (int c = 0; c < C; c++) {
				size_t i = (size_t)x * C + c;
				d[i] = (unit_value(s, img->dtype, i) - mean[c]) / istd[c];
			}
	}
	ts_image_swap(img, tmp);
	return 0;
}

static int apply_to(const struct ts_op *op, struct ts_image *img,
		    struct ts_image *tmp, struct ts_error *err)
{
	enum ts_dtype to = op->to.dtype;
	if (to == TS_DTYPE_F16)
		return ts_error_set(err, TS_E_ARG,
				    "to(float16) runs only in the output stage");
	if (to == img->dtype)
		return 0;
	int rc = ts_image_reserve(tmp, img->width, img->height, img->channels, to);
	if (rc < 0)
		return failed(op, rc, err);
	const size_t n = (size_t)img->width * img->channels;
	for (int y = 0; y < img->height; y++) {
		const uint8_t *s = img->data + (size_t)y * img->stride;
		uint8_t *d = tmp->data + (size_t)y * tmp->stride;
		for (size_t i = 0; i < n; i++) {
			if (to == TS_DTYPE_F32) {
				((float *)(void *)d)[i] = unit_value(s, img->dtype, i);
			} else if (to == TS_DTYPE_U8 && img->dtype == TS_DTYPE_U16) {
				d[i] = (uint8_t)((((const uint16_t *)(const void *)s)[i] + 128) / 257);
			} else if (to == TS_DTYPE_U16 && img->dtype == TS_DTYPE_U8) {
				((uint16_t *)(void *)d)[i] = (uint16_t)(s[i] * 257);
			} else {
				float v = ((const float *)(const void *)s)[i];
				float m = full_scale(to);
				float r = rintf(v * m);
				r = r < 0.0f ? 0.0f : r > m ? m : r;
				if (to == TS_DTYPE_U8)
					d[i] = (uint8_t)r;
				else
					((uint16_t *)(void *)d)[i] = (uint16_t)r;
			}
		}
	}
	ts_image_swap(img, tmp);
	return 0;
}

/* Crop a box (possibly padded) of *img through tmp, result in *img. */
static int crop_swap(struct ts_image *img, struct ts_image *tmp, int x, int y,
		     int cw, int ch)
{
	if (x == 0 && y == 0 && cw == img->width && ch == img->height)
		return 0;
	int rc = ts_aug_crop(img, tmp, x, y, cw, ch);
	if (rc == 0)
		ts_image_swap(img, tmp);
	return rc;
}

/* ---- The family's table (kernel.h) ---- */

/* The geometry ops are a box of their input (kernel.h), maybe resampled:
 * the box hooks below choose it, k_box applies it. */
static void box_resize(const struct ts_op *op, int w, int h, struct ts_rng *rng,
		       struct ts_kernel_box *b)
{
	*b = (struct ts_kernel_box){ .cw = w, .ch = h, .interp = op->resize.interp,
				     .antialias = op->resize.antialias };
	ts_aug_resize_dims(w, h, &op->resize, &b->tw, &b->th);
}

static void box_center_crop(const struct ts_op *op, int w, int h,
			    struct ts_rng *rng, struct ts_kernel_box *b)
{
	*b = (struct ts_kernel_box){ .cw = op->crop.size_w, .ch = op->crop.size_h };
	ts_aug_center_box(w, h, b->cw, b->ch, &b->x, &b->y);
}

static void box_random_crop(const struct ts_op *op, int w, int h,
			    struct ts_rng *rng, struct ts_kernel_box *b)
{
	*b = (struct ts_kernel_box){ .cw = op->crop.size_w, .ch = op->crop.size_h,
				     .pads = op->crop.padding > 0, .drawn = true };
	ts_aug_random_crop_box(w, h, &op->crop, rng, &b->x, &b->y);
}

static void box_random_resized_crop(const struct ts_op *op, int w, int h,
				    struct ts_rng *rng, struct ts_kernel_box *b)
{
	*b = (struct ts_kernel_box){ .tw = op->crop.size_w, .th = op->crop.size_h, .drawn = true,
				     .interp = op->crop.interp, .antialias = op->crop.antialias };
	ts_aug_rrc_box(w, h, &op->crop, rng, &b->x, &b->y, &b->cw, &b->ch);
}

/* A geometry op's apply: its row's box on *img through tmp, the result in
 * *img: a resample straight from a view of the box (no crop copy), or the
 * crop (padded). */
static int k_box(const struct ts_op *op, struct ts_image *img,
		 struct ts_image *tmp, struct ts_rng *rng, struct ts_error *err)
{
	struct ts_kernel_box b;
	ts_kernel_find(op->kind)->box(op, img->width, img->height, rng, &b);
	ts_kernel_note_box(op, &b, 8);
	int rc;
	if (b.tw > 0) {
		struct ts_image view = ts_image_view(img, b.x, b.y, b.cw, b.ch);
		rc = ts_aug_resize(&view, tmp, b.tw, b.th, b.interp, b.antialias);
		if (rc == 0)
			ts_image_swap(img, tmp);
	} else {
		rc = crop_swap(img, tmp, b.x, b.y, b.cw, b.ch);
	}
	return failed(op, rc, err);
}

/* The ops with an out-of-place form (into) run in place through it. */
static int swap_into(int rc, struct ts_image *img, struct ts_image *tmp)
{
	if (rc == 0)
		ts_image_swap(img, tmp);
	return rc < 0 ? rc : 0;
}

static int into_color_jitter(const struct ts_op *op, const struct ts_image *in,
			     struct ts_image *out, struct ts_rng *rng,
			     struct ts_error *err)
{
	int rc = ts_aug_crop(in, out, 0, 0, in->width, in->height);
	if (rc == 0)
		rc = ts_aug_color_jitter(out, op, rng);
	return failed(op, rc, err);
}

static int k_color_jitter(const struct ts_op *op, struct ts_image *img,
			  struct ts_image *tmp, struct ts_rng *rng,
			  struct ts_error *err)
{
	return failed(op, ts_aug_color_jitter(img, op, rng), err);
}

/* GRAYSCALE applies when U < p (p >= 1: always, without a draw), and
 * always when the channel count must change. */
static int into_grayscale(const struct ts_op *op, const struct ts_image *in,
			  struct ts_image *out, struct ts_rng *rng,
			  struct ts_error *err)
{
	int chn = op->gray.channels > 0 ? op->gray.channels : in->channels;
	bool apply = op->gray.p >= 1.0 || chn != in->channels ||
		     ts_rng_uniform(rng) < op->gray.p;
	if (op->gray.p < 1.0)
		ts_trace_note("grayscale", op->index, "\"applied\": %s",
			      apply ? "true" : "false");
	if (!apply)
		return 1;
	return failed(op, ts_aug_grayscale(in, out, chn), err);
}

static int k_grayscale(const struct ts_op *op, struct ts_image *img,
		       struct ts_image *tmp, struct ts_rng *rng,
		       struct ts_error *err)
{
	return swap_into(into_grayscale(op, img, tmp, rng, err), img, tmp);
}

/* flip, normalize and to fold into the output stage's final pass
 * (tail), or run on their own (apply). */
static bool flip_draw(const struct ts_op *op, struct ts_rng *rng)
{
	bool f = ts_rng_uniform(rng) < op->flip.p;
	ts_trace_note("flip", op->index, "\"direction\": \"%s\", \"flipped\": %s",
		      op->flip.horizontal ? "horizontal" : "vertical", f ? "true" : "false");
	return f;
}

static void tail_flip(const struct ts_op *op, struct ts_rng *rng,
		      struct ts_kernel_tail *t)
{
	if (flip_draw(op, rng)) {
		if (op->flip.horizontal)
			t->hflip = !t->hflip;
		else
			t->vflip = !t->vflip;
	}
}

static int k_flip(const struct ts_op *op, struct ts_image *img,
		  struct ts_image *tmp, struct ts_rng *rng, struct ts_error *err)
{
	if (flip_draw(op, rng))
		ts_aug_flip(img, op->flip.horizontal);
	return 0;
}

static void tail_normalize(const struct ts_op *op, struct ts_rng *rng,
			   struct ts_kernel_tail *t)
{
	t->normalize = true;
	t->dtype = TS_DTYPE_F32;
	for (int c = 0; c < 4; c++) {
		int k = c < op->norm.n_mean ? c : 0;
		t->mean[c] = op->norm.mean[k];
		t->std[c] = op->norm.std[k];
	}
}

static int k_normalize(const struct ts_op *op, struct ts_image *img,
		       struct ts_image *tmp, struct ts_rng *rng,
		       struct ts_error *err)
{
	return failed(op, apply_normalize(op, img, tmp), err);
}

static void tail_to(const struct ts_op *op, struct ts_rng *rng,
		    struct ts_kernel_tail *t)
{
	t->dtype = op->to.dtype;
	t->layout = op->to.layout;
}

static int k_to(const struct ts_op *op, struct ts_image *img,
		struct ts_image *tmp, struct ts_rng *rng, struct ts_error *err)
{
	return apply_to(op, img, tmp, err);
}

const struct ts_kernel ts_kernels_augment[] = {
	{ .kind = TS_OP_RESIZE, .apply = k_box, .box = box_resize },
	{ .kind = TS_OP_CENTER_CROP, .apply = k_box, .box = box_center_crop },
	{ .kind = TS_OP_RANDOM_CROP, .apply = k_box, .box = box_random_crop },
	{ .kind = TS_OP_RANDOM_RESIZED_CROP, .apply = k_box,
	  .box = box_random_resized_crop },
	{ .kind = TS_OP_FLIP, .apply = k_flip, .tail = tail_flip },
	{ .kind = TS_OP_COLOR_JITTER, .apply = k_color_jitter, .into = into_color_jitter },
	{ .kind = TS_OP_GRAYSCALE, .apply = k_grayscale, .into = into_grayscale },
	{ .kind = TS_OP_NORMALIZE, .apply = k_normalize, .tail = tail_normalize },
	{ .kind = TS_OP_TO, .apply = k_to, .tail = tail_to },
	TS_KERNEL_END,
};

bool ts_aug_filter_keep(const struct ts_op *filter, const struct ts_image *img)
{
	const int C = img->channels;
	const float limit = (float)filter->filter.threshold;
	size_t over = 0;
	for (int y = 0; y < img->height; y++) {
		const uint8_t *r = img->data + (size_t)y * img->stride;
		for (int x = 0; x < img->width; x++) {
			float s = 0.0f;
			for (int c = 0; c < C; c++)
				s += unit_value(r, img->dtype, (size_t)x * C + c);
			if (s / (float)C > limit)
				over++;
		}
	}
	double npix = (double)img->width * img->height;
	return (double)over <= filter->filter.max_fraction * npix;
}
