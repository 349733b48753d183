/*
 * color.c - the colour family's kernels (color.h) and their rows of the
 * kernel table (kernel.h) at the end.
 *
 * The table-driven ops build one 256-entry lookup table per channel with
 * ImageOps' arithmetic (PIL's Image.point applies them the same way) and
 * map every pixel through it; the enhancements reuse augment.c's
 * ImageEnhance blends, which color_jitter uses too.
 */
#include "color.h"
#include "kernel.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "pixel.h"
#include "trace.h"
#include "util.h"

/* Map every pixel of the uint8 image through lut[c], c its channel. */
static void map_luts(struct ts_image *img, uint8_t lut[][256])
{
	const int C = img->channels;
	for (int y = 0; y < img->height; y++) {
		uint8_t *r = img->data + (size_t)y * img->stride;
		if (C == 1) {
			for (int x = 0; x < img->width; x++)
				r[x] = lut[0][r[x]];
			continue;
		}
		if (C == 3) {
			/* the channel count a constant: three lookups a pixel */
			for (uint8_t *e = r + (size_t)img->width * 3; r < e; r += 3) {
				r[0] = lut[0][r[0]];
				r[1] = lut[1][r[1]];
				r[2] = lut[2][r[2]];
			}
			continue;
		}
		for (int x = 0; x < img->width; x++)
			for (int c = 0; c < C; c++)
				r[(size_t)x * C + c] = lut[c][r[(size_t)x * C + c]];
	}
}

/* Every byte of the image's rows through pixel.h's row kernel f. */
#define EACH_ROW(img, call)                                                    \
	do {                                                                   \
		const size_t n_ = (size_t)(img)->width * (img)->channels;      \
		for (int y_ = 0; y_ < (img)->height; y_++) {                   \
			uint8_t *r = (img)->data + (size_t)y_ * (img)->stride; \
			call;                                                  \
		}                                                              \
	} while (0)

/* One table for every channel. */
static void map_lut(struct ts_image *img, const uint8_t lut[256])
{
	uint8_t luts[4][256];
	for (int c = 0; c < img->channels && c < 4; c++)
		memcpy(luts[c], lut, 256);
	map_luts(img, luts);
}

/* Per-channel histograms, as Image.histogram counts them. */
static void histograms(const struct ts_image *img, uint64_t h[][256])
{
	const int C = img->channels;
	memset(h, 0, sizeof(uint64_t) * 256 * (size_t)C);
	for (int y = 0; y < img->height; y++) {
		const uint8_t *r = img->data + (size_t)y * img->stride;
		if (C == 3) {
			for (const uint8_t *e = r + (size_t)img->width * 3; r < e; r += 3) {
				h[0][r[0]]++;
				h[1][r[1]]++;
				h[2][r[2]]++;
			}
			continue;
		}
		for (int x = 0; x < img->width; x++)
			for (int c = 0; c < C; c++)
				h[c][r[(size_t)x * C + c]]++;
	}
}

/* invert, posterize and solarize are one table for every channel with an
 * arithmetic form: pixel.h's vector rows instead of the lookups. */
void ts_color_invert(struct ts_image *img)
{
	EACH_ROW(img, ts_px_mask(r, n_, 0xff, 0xff));
}

void ts_color_posterize(struct ts_image *img, int bits)
{
	const int mask = ~((1 << (8 - bits)) - 1);
	EACH_ROW(img, ts_px_mask(r, n_, (uint8_t)mask, 0));
}

void ts_color_solarize(struct ts_image *img, double threshold)
{
	/* Python compares the int level with the float threshold exactly,
	 * as a double comparison does: the levels from the first one that
	 * is not below it are inverted (all of them for a NaN). */
	int t = 0;
	while (t < 256 && (double)t < threshold)
		t++;
	EACH_ROW(img, ts_px_solarize(r, n_, t));
}

void ts_color_autocontrast(struct ts_image *img)
{
	uint8_t lut[4][256];
	/* ImageOps.autocontrast without a cut-off: each channel's first and
	 * last used level, its smallest and largest value */
	uint8_t mn[4] = { 255, 255, 255, 255 }, mx[4] = { 0, 0, 0, 0 };
	ts_px_minmax(img->data, img->stride, (size_t)img->width, (size_t)img->height,
		     img->channels, mn, mx);
	for (int c = 0; c < img->channels; c++) {
		const int lo = mn[c], hi = mx[c];
		if (hi <= lo) {
			for (int i = 0; i < 256; i++)
				lut[c][i] = (uint8_t)i;
			continue;
		}
		const double scale = 255.0 / (hi - lo);
		const double offset = -lo * scale;
		for (int i = 0; i < 256; i++) {
			/* Python rounds the product before the sum: a volatile
			 * keeps the compiler from fusing them into an FMA. */
			volatile double t = i * scale;
			double v = t + offset;
			int q = (int)v; /* int() truncates toward zero */
			lut[c][i] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
		}
	}
	map_luts(img, lut);
}

void ts_color_equalize(struct ts_image *img)
{
	uint64_t h[4][256];
	uint8_t lut[4][256];
	histograms(img, h);
	for (int c = 0; c < img->channels; c++) {
		uint64_t total = 0, last = 0;
		int used = 0;
		for (int i = 0; i < 256; i++) {
			if (!h[c][i])
				continue;
			total += h[c][i];
			last = h[c][i];
			used++;
		}
		uint64_t step = used > 1 ? (total - last) / 255 : 0;
		if (!step) {
			for (int i = 0; i < 256; i++)
				lut[c][i] = (uint8_t)i;
			continue;
		}
		uint64_t n = step / 2;
		for (int i = 0; i < 256; i++) {
			uint64_t v = n / step;
			/* Image.point clips a table entry to 0..255 */
			lut[c][i] = (uint8_t)(v > 255 ? 255 : v);
			n += h[c][i];
		}
	}
	map_luts(img, lut);
}

void ts_color_gamma(struct ts_image *img, double gamma, double gain)
{
	if (img->dtype == TS_DTYPE_U8) {
		uint8_t lut[256];
		for (int i = 0; i < 256; i++) {
			/* Python: (255 + 1 - 1e-3) * gain * pow(i / 255.0, gamma),
			 * left to right, int() truncating; point() clips */
			volatile double a = (255 + 1 - 1e-3) * gain;
			double v = a * pow(i / 255.0, gamma);
			lut[i] = (uint8_t)(v >= 255.0 ? 255 : v <= 0.0 ? 0 : (int)v);
		}
		map_lut(img, lut);
		return;
	}
	/* uint16: the same formula on 0..65535; through a table when the
	 * image has more values than the table has entries (fewer pow()
	 * calls), else value by value (or when the table cannot be had). */
	const size_t n = (size_t)img->width * img->channels;
	volatile double a = (65535 + 1 - 1e-3) * gain;
	uint16_t *lut = n * (size_t)img->height > 65536 ? malloc(65536 * sizeof(*lut)) : NULL;
	for (int i = 0; lut && i < 65536; i++) {
		double v = a * pow(i / 65535.0, gamma);
		lut[i] = (uint16_t)(v >= 65535.0 ? 65535 : v <= 0.0 ? 0 : (int)v);
	}
	for (int y = 0; y < img->height; y++) {
		uint16_t *r = (uint16_t *)(void *)(img->data + (size_t)y * img->stride);
		for (size_t i = 0; i < n; i++) {
			if (lut) {
				r[i] = lut[r[i]];
				continue;
			}
			double v = a * pow(r[i] / 65535.0, gamma);
			r[i] = (uint16_t)(v >= 65535.0 ? 65535 : v <= 0.0 ? 0 : (int)v);
		}
	}
	free(lut);
}

static uint8_t clip8(int v)
{
	return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One pixel to PIL's 8-bit HSV. The mix of float variables and double
 * constants is PIL's: each step rounds where its C code does. */
static void to_hsv(const uint8_t *px, uint8_t *hsv)
{
	const int r = px[0], g = px[1], b = px[2];
	const int hi = r > g ? (r > b ? r : b) : (g > b ? g : b);
	const int lo = r < g ? (r < b ? r : b) : (g < b ? g : b);
	hsv[2] = (uint8_t)hi;
	if (hi == lo) {
		hsv[0] = hsv[1] = 0;
		return;
	}
	const float span = (float)(hi - lo);
	const float s = span / (float)hi;
	const float dr = (float)(hi - r) / span, dg = (float)(hi - g) / span,
		    db = (float)(hi - b) / span;
	float h;
	if (r == hi)
		h = db - dg;
	else if (g == hi)
		h = (float)(2.0 + dr - db);
	else
		h = (float)(4.0 + dg - dr);
	/* fmod(x, 1.0) of x in (0, 2), without the call: exact either way */
	const double x = h / 6.0 + 1.0;
	h = (float)(x >= 1.0 ? x - 1.0 : x);
	hsv[0] = clip8((int)(h * 255.0));
	hsv[1] = clip8((int)(s * 255.0));
}

/* round() of a non-negative value without the call: the fraction
 * x - (int)x is exact. */
static inline int round_pos(double x)
{
	const int r = (int)x;
	return r + (x - r >= 0.5);
}

/* from_hsv's per-level terms (pixel.h), once per image. */
static void hsv_tabs_init(struct ts_px_hsv_tabs *t)
{
	for (int k = 0; k < 256; k++) {
		const double sector = (float)k * 6.0 / 255.0;
		const int i = (int)sector; /* floor: sector >= 0 */
		t->sector[k] = i % 6;
		t->f[k] = (float)(sector - (float)i);
		t->fs[k] = (float)((float)k / 255.0);
	}
}

/* PIL's 8-bit HSV back to RGB, rounding half away from zero. */
static void from_hsv(const uint8_t *hsv, uint8_t *px, const struct ts_px_hsv_tabs *tab)
{
	const int v = hsv[2];
	if (hsv[1] == 0) {
		px[0] = px[1] = px[2] = (uint8_t)v;
		return;
	}
	const float f = tab->f[hsv[0]];
	const float fs = tab->fs[hsv[1]];
	/* volatile: the products round before the subtractions, as in PIL,
	 * never fused into an FMA */
	volatile float fsf = fs * f;
	volatile double fsg = fs * (1.0 - f);
	const uint8_t p = clip8(round_pos((float)v * (1.0 - fs)));
	const uint8_t q = clip8(round_pos((float)v * (1.0 - fsf)));
	const uint8_t t = clip8(round_pos((float)v * (1.0 - fsg)));
	/* per sector, which of v, p, q, t each channel takes */
	static const uint8_t pick[6][3] = {
		{ 0, 3, 1 }, { 2, 0, 1 }, { 1, 0, 3 }, { 1, 2, 0 }, { 3, 1, 0 }, { 0, 1, 2 },
	};
	const uint8_t vpqt[4] = { (uint8_t)v, p, q, t };
	const uint8_t *k = pick[tab->sector[hsv[0]]];
	px[0] = vpqt[k[0]];
	px[1] = vpqt[k[1]];
	px[2] = vpqt[k[2]];
}

void ts_color_hue(struct ts_image *img, double factor)
{
	const int C = img->channels;
	if (C < 3)
		return;
	struct ts_px_hsv_tabs tab;
	hsv_tabs_init(&tab);
	/* np.uint8(factor * 255): truncated toward zero, then modulo 256 */
	const uint8_t shift = (uint8_t)((int)(factor * 255.0) & 255);
	for (int y = 0; y < img->height; y++) {
		uint8_t *r = img->data + (size_t)y * img->stride;
		/* the vector rows take packed RGB, the C loop the rest */
		int x = C == 3 ? (int)ts_px_hue3(r, (size_t)img->width, shift, &tab) : 0;
		for (; x < img->width; x++) {
			uint8_t hsv[3];
			to_hsv(r + (size_t)x * C, hsv);
			hsv[0] = (uint8_t)(hsv[0] + shift);
			from_hsv(hsv, r + (size_t)x * C, &tab);
		}
	}
}

/* ---- the family's table (kernel.h) ------------------------------------ */

/* Whether to run a colour op on img: 1 yes, 0 not this time, or TS_E_ARG
 * for an image that is not uint8. The ops with a probability (random)
 * follow torchvision's Random* classes: apply when torch.rand(1) < p
 * (p >= 1: always, without a draw). */
static int gate(const struct ts_op *op, const struct ts_image *img,
		struct ts_rng *rng, bool random, struct ts_error *err)
{
	if (img->dtype != TS_DTYPE_U8 || img->channels < 1 || img->channels > 4)
		return ts_error_set(err, TS_E_ARG,
				    "%s needs uint8 pixels with 1 to 4 channels, got %s x %d",
				    ts_op_kind_name(op->kind), ts_dtype_name(img->dtype),
				    img->channels);
	if (!random || op->color.p >= 1.0)
		return 1;
	bool on = ts_rng_uniform(rng) < op->color.p;
	ts_trace_note(ts_op_kind_name(op->kind), op->index, "\"applied\": %s",
		      on ? "true" : "false");
	return on;
}

/* A kernel row's apply: gate, then the in-place kernel. */
#define COLOR_KERNEL(name, random, call)                                      \
	static int k_##name(const struct ts_op *op, struct ts_image *img,     \
			    struct ts_image *tmp, struct ts_rng *rng,          \
			    struct ts_error *err)                              \
	{                                                                      \
		int rc = gate(op, img, rng, random, err);                      \
		if (rc > 0)                                                    \
			call;                                                  \
		return rc < 0 ? rc : 0;                                        \
	}

COLOR_KERNEL(invert, true, ts_color_invert(img))
COLOR_KERNEL(posterize, true, ts_color_posterize(img, op->color.bits))
COLOR_KERNEL(solarize, true, ts_color_solarize(img, op->color.level))
COLOR_KERNEL(autocontrast, true, ts_color_autocontrast(img))
COLOR_KERNEL(equalize, true, ts_color_equalize(img))
/* PIL takes the enhancement factor as a C float (ImagingBlend's alpha). */
COLOR_KERNEL(brightness, false, ts_aug_brightness(img, (float)op->color.factor))
COLOR_KERNEL(contrast, false, ts_aug_contrast(img, (float)op->color.factor))
COLOR_KERNEL(saturation, false, ts_aug_saturation(img, (float)op->color.factor))
COLOR_KERNEL(hue, false, ts_color_hue(img, op->color.factor))

/* adjust_gamma takes uint16 too: its own gate. */
static int k_gamma(const struct ts_op *op, struct ts_image *img,
		   struct ts_image *tmp, struct ts_rng *rng, struct ts_error *err)
{
	if (img->dtype == TS_DTYPE_U16 && img->channels >= 1 && img->channels <= 4) {
		ts_color_gamma(img, op->color.gamma, op->color.gain);
		return 0;
	}
	int rc = gate(op, img, rng, false, err);
	if (rc > 0)
		ts_color_gamma(img, op->color.gamma, op->color.gain);
	return rc < 0 ? rc : 0;
}

const struct ts_kernel ts_kernels_color[] = {
	{ .kind = TS_OP_INVERT, .apply = k_invert },
	{ .kind = TS_OP_POSTERIZE, .apply = k_posterize },
	{ .kind = TS_OP_SOLARIZE, .apply = k_solarize },
	{ .kind = TS_OP_AUTOCONTRAST, .apply = k_autocontrast },
	{ .kind = TS_OP_EQUALIZE, .apply = k_equalize },
	{ .kind = TS_OP_ADJUST_BRIGHTNESS, .apply = k_brightness },
	{ .kind = TS_OP_ADJUST_CONTRAST, .apply = k_contrast },
	{ .kind = TS_OP_ADJUST_SATURATION, .apply = k_saturation },
	{ .kind = TS_OP_ADJUST_HUE, .apply = k_hue },
	{ .kind = TS_OP_ADJUST_GAMMA, .apply = k_gamma },
	TS_KERNEL_END,
};
