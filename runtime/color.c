/*
 * color.c - the colour family's kernels (color.h), reached from
 * ts_aug_apply through ts_color_apply and the table at the end.
 *
 * The table-driven ops build one 256-entry lookup table per channel with
 * ImageOps' arithmetic (PIL's Image.point applies them the same way) and
 * map every pixel through it; the enhancements reuse augment.c's
 * ImageEnhance blends, which color_jitter uses too.
 */
#include "color.h"

#include <stdint.h>
#include <string.h>

#include "augment.h"
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
		for (int x = 0; x < img->width; x++)
			for (int c = 0; c < C; c++)
				r[(size_t)x * C + c] = lut[c][r[(size_t)x * C + c]];
	}
}

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
		for (int x = 0; x < img->width; x++)
			for (int c = 0; c < C; c++)
				h[c][r[(size_t)x * C + c]]++;
	}
}

void ts_color_invert(struct ts_image *img)
{
	uint8_t lut[256];
	for (int i = 0; i < 256; i++)
		lut[i] = (uint8_t)(255 - i);
	map_lut(img, lut);
}

void ts_color_posterize(struct ts_image *img, int bits)
{
	uint8_t lut[256];
	const int mask = ~((1 << (8 - bits)) - 1);
	for (int i = 0; i < 256; i++)
		lut[i] = (uint8_t)(i & mask);
	map_lut(img, lut);
}

void ts_color_solarize(struct ts_image *img, double threshold)
{
	uint8_t lut[256];
	/* Python compares the int level with the float threshold exactly,
	 * as a double comparison does. */
	for (int i = 0; i < 256; i++)
		lut[i] = (uint8_t)((double)i < threshold ? i : 255 - i);
	map_lut(img, lut);
}

void ts_color_autocontrast(struct ts_image *img)
{
	uint64_t h[4][256];
	uint8_t lut[4][256];
	histograms(img, h);
	for (int c = 0; c < img->channels; c++) {
		int lo = 0, hi = 255;
		while (lo < 256 && !h[c][lo])
			lo++;
		while (hi >= 0 && !h[c][hi])
			hi--;
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

/* ---- the family's table ---------------------------------------------- */

static void run_invert(const struct ts_op *op, struct ts_image *img)
{
	ts_color_invert(img);
}

static void run_posterize(const struct ts_op *op, struct ts_image *img)
{
	ts_color_posterize(img, op->bits);
}

static void run_solarize(const struct ts_op *op, struct ts_image *img)
{
	ts_color_solarize(img, op->threshold);
}

static void run_autocontrast(const struct ts_op *op, struct ts_image *img)
{
	ts_color_autocontrast(img);
}

static void run_equalize(const struct ts_op *op, struct ts_image *img)
{
	ts_color_equalize(img);
}

/* PIL takes the factor as a C float (ImagingBlend's alpha). */
static void run_brightness(const struct ts_op *op, struct ts_image *img)
{
	ts_aug_brightness(img, (float)op->factor);
}

static void run_contrast(const struct ts_op *op, struct ts_image *img)
{
	ts_aug_contrast(img, (float)op->factor);
}

static void run_saturation(const struct ts_op *op, struct ts_image *img)
{
	ts_aug_saturation(img, (float)op->factor);
}

static const struct {
	enum ts_op_kind kind;
	bool random;              /* has a probability p */
	void (*run)(const struct ts_op *op, struct ts_image *img);
} kernels[] = {
	{ TS_OP_INVERT, true, run_invert },
	{ TS_OP_POSTERIZE, true, run_posterize },
	{ TS_OP_SOLARIZE, true, run_solarize },
	{ TS_OP_AUTOCONTRAST, true, run_autocontrast },
	{ TS_OP_EQUALIZE, true, run_equalize },
	{ TS_OP_ADJUST_BRIGHTNESS, false, run_brightness },
	{ TS_OP_ADJUST_CONTRAST, false, run_contrast },
	{ TS_OP_ADJUST_SATURATION, false, run_saturation },
};

static int find(enum ts_op_kind k)
{
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (kernels[i].kind == k)
			return (int)i;
	return -1;
}

bool ts_color_has(enum ts_op_kind k)
{
	return find(k) >= 0;
}

int ts_color_apply(const struct ts_op *op, struct ts_image *img,
		   struct ts_rng *rng, struct ts_error *err)
{
	int i = find(op->kind);
	if (i < 0)
		return ts_error_set(err, TS_E_ARG, "%s is not a colour op",
				    ts_op_kind_name(op->kind));
	if (img->dtype != TS_DTYPE_U8 || img->channels < 1 || img->channels > 4)
		return ts_error_set(err, TS_E_ARG,
				    "%s needs uint8 pixels with 1 to 4 channels, got %s x %d",
				    ts_op_kind_name(op->kind), ts_dtype_name(img->dtype),
				    img->channels);
	/* torchvision's Random* classes: apply when torch.rand(1) < p. */
	if (kernels[i].random && op->p < 1.0 && !(ts_rng_uniform(rng) < op->p))
		return 0;
	kernels[i].run(op, img);
	return 0;
}
