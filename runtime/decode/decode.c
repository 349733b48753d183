/* decode.c - format sniffing, request geometry and dispatch to the JPEG
 * and PNG back ends (decode_jpeg.c, decode_png.c). */
#include "decode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

struct ts_decoder {
	/* Created on first use, so a JPEG-only data set never pays for the
	 * PNG state and vice versa. */
	struct ts_decoder_jpeg *jpeg;
	struct ts_decoder_png *png;
	enum ts_format rows;    /* row-wise decode in progress, or UNKNOWN */
};

int ts_decoder_create(struct ts_decoder **out, struct ts_error *err)
{
	struct ts_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return ts_error_set(err, TS_E_NOMEM, "out of memory creating a decoder");
	*out = d;
	return 0;
}

void ts_decoder_destroy(struct ts_decoder *d)
{
	if (!d)
		return;
	ts_decoder_rows_end(d);
	ts_decoder_jpeg_destroy(d->jpeg);
	ts_decoder_png_destroy(d->png);
	free(d);
}

enum ts_format ts_decoder_sniff(const uint8_t *buf, size_t len)
{
	static const uint8_t png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

	if (buf && len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff)
		return TS_FORMAT_JPEG;
	if (buf && len >= 8 && memcmp(buf, png_sig, 8) == 0)
		return TS_FORMAT_PNG;
	return TS_FORMAT_UNKNOWN;
}

/* The error for data that is neither format: show the first bytes, which
 * usually tell the user what the file really is (GIF8, RIFF, <htm). */
static int unknown_format(const uint8_t *buf, size_t len, struct ts_error *err)
{
	char hex[3 * 8 + 1] = "";
	size_t n = len < 8 ? len : 8;

	if (len == 0)
		return ts_error_set(err, TS_E_DECODE, "empty file: not a JPEG or PNG image");
	for (size_t i = 0, pos = 0; i < n; i++)
		pos += (size_t)snprintf(hex + pos, sizeof(hex) - pos, i ? " %02x" : "%02x",
					buf[i]);
	return ts_error_set(err, TS_E_DECODE, "not a JPEG or PNG file (starts with %s)", hex);
}

void ts_decoder_rows_end(struct ts_decoder *d)
{
	if (!d)
		return;
	if (d->rows == TS_FORMAT_JPEG)
		ts_decoder_jpeg_rows_end(d->jpeg);
	else if (d->rows == TS_FORMAT_PNG)
		ts_decoder_png_rows_end(d->png);
	d->rows = TS_FORMAT_UNKNOWN;
}

int ts_decoder_rows_begin(struct ts_decoder *d, const uint8_t *buf, size_t len,
			  const struct ts_decode_req *req, struct ts_decode_info *info,
			  struct ts_error *err)
{
	int rc;

	if (!d || !req || !info || (!buf && len))
		return ts_error_set(err, TS_E_ARG, "ts_decoder_rows_begin: NULL argument");
	if (req->color != TS_COLOR_RGB && req->color != TS_COLOR_GRAY)
		return ts_error_set(err, TS_E_ARG, "unknown decode color %d", (int)req->color);
	ts_decoder_rows_end(d);
	switch (ts_decoder_sniff(buf, len)) {
	case TS_FORMAT_JPEG:
		if (!d->jpeg && (rc = ts_decoder_jpeg_create(&d->jpeg, err)) < 0)
			return rc;
		rc = ts_decoder_jpeg_rows_begin(d->jpeg, buf, len, req, info, err);
		if (rc == 0)
			d->rows = TS_FORMAT_JPEG;
		return rc;
	case TS_FORMAT_PNG:
		if (!d->png && (rc = ts_decoder_png_create(&d->png, err)) < 0)
			return rc;
		rc = ts_decoder_png_rows_begin(d->png, buf, len, req, info, err);
		if (rc == 0)
			d->rows = TS_FORMAT_PNG;
		return rc;
	default:
		return unknown_format(buf, len, err);
	}
}

int ts_decoder_rows_read(struct ts_decoder *d, void *dst, size_t stride, int n,
			 struct ts_error *err)
{
	if (!d || n < 0)
		return ts_error_set(err, TS_E_ARG, "ts_decoder_rows_read: bad argument");
	if (d->rows == TS_FORMAT_JPEG)
		return ts_decoder_jpeg_rows_read(d->jpeg, dst, stride, n, err);
	if (d->rows == TS_FORMAT_PNG)
		return ts_decoder_png_rows_read(d->png, dst, stride, n, err);
	return ts_error_set(err, TS_E_STATE, "no row-wise decode in progress");
}

int ts_decoder_info(struct ts_decoder *d, const uint8_t *buf, size_t len,
		    struct ts_decode_info *info, struct ts_error *err)
{
	int rc;

	if (!d || !info || (!buf && len))
		return ts_error_set(err, TS_E_ARG, "ts_decoder_info: NULL argument");
	/* The JPEG state is one decompress object: a row-wise decode
	 * cannot go on under it. */
	ts_decoder_rows_end(d);
	switch (ts_decoder_sniff(buf, len)) {
	case TS_FORMAT_JPEG:
		if (!d->jpeg && (rc = ts_decoder_jpeg_create(&d->jpeg, err)) < 0)
			return rc;
		return ts_decoder_jpeg_info(d->jpeg, buf, len, info, err);
	case TS_FORMAT_PNG:
		if (!d->png && (rc = ts_decoder_png_create(&d->png, err)) < 0)
			return rc;
		return ts_decoder_png_info(d->png, buf, len, info, err);
	default:
		return unknown_format(buf, len, err);
	}
}

/* ceil(a * n / 8) and floor(a * n / 8) for non-negative a. */
static int scale_up(long long a, int n)
{
	return (int)((a * n + 7) / 8);
}

static int scale_down(long long a, int n)
{
	return (int)(a * n / 8);
}

int ts_decoder_geometry(const struct ts_decode_info *info,
			const struct ts_decode_req *req,
			struct ts_decode_geom *geom, struct ts_error *err)
{
	int rx, ry, rw, rh, n = 8;

	if (!info || !req || !geom)
		return ts_error_set(err, TS_E_ARG, "ts_decoder_geometry: NULL argument");
	if (req->depth != 0 && req->depth != 8 && req->depth != 16)
		return ts_error_set(err, TS_E_ARG, "decode depth must be 8 or 16, not %d",
				    req->depth);
	if (req->color != TS_COLOR_RGB && req->color != TS_COLOR_GRAY)
		return ts_error_set(err, TS_E_ARG, "unknown decode color %d", (int)req->color);
	if (req->target_w < 0 || req->target_h < 0)
		return ts_error_set(err, TS_E_ARG, "negative decode target size %dx%d",
				    req->target_w, req->target_h);
	if (req->roi_w <= 0 || req->roi_h <= 0) {
		rx = ry = 0;
		rw = info->width;
		rh = info->height;
	} else {
		rx = req->roi_x;
		ry = req->roi_y;
		rw = req->roi_w;
		rh = req->roi_h;
		if (rx < 0 || ry < 0 || (long long)rx + rw > info->width ||
		    (long long)ry + rh > info->height)
			return ts_error_set(err, TS_E_ARG,
					    "region %dx%d+%d+%d is outside the %dx%d image",
					    rw, rh, rx, ry, info->width, info->height);
	}

	/* The largest DCT reduction that keeps the region at least as big as
	 * the target in both directions, so the resize after it still
	 * downsamples (and antialiases) rather than upsamples. Only 1/8, 2/8
	 * and 4/8: libjpeg-turbo has SIMD code for those, while its 3/8 and
	 * 5/8..7/8 IDCTs are plain C and measured slower than 4/8 and 8/8
	 * (5/8..7/8 by 1.5-2x than a full-scale decode). */
	if (req->scale_num != 0 && req->scale_num != 1 && req->scale_num != 2 &&
	    req->scale_num != 4 && req->scale_num != 8)
		return ts_error_set(err, TS_E_ARG, "decode scale must be 1, 2, 4 or 8 eighths, "
				    "not %d", req->scale_num);
	if (info->format == TS_FORMAT_JPEG && req->scale_num)
		n = req->scale_num;
	else if (info->format == TS_FORMAT_JPEG && (req->target_w > 0 || req->target_h > 0)) {
		static const int scales[] = { 1, 2, 4 };
		for (size_t i = 0; i < TS_ARRAY_LEN(scales); i++) {
			int s = scales[i];
			if ((long long)rw * s >= (long long)req->target_w * 8 &&
			    (long long)rh * s >= (long long)req->target_h * 8) {
				n = s;
				break;
			}
		}
	}

	int x0 = scale_down(rx, n), y0 = scale_down(ry, n);
	int x1 = scale_up((long long)rx + rw, n), y1 = scale_up((long long)ry + rh, n);
	int sw = scale_up(info->width, n), sh = scale_up(info->height, n);
	if (x1 > sw)
		x1 = sw;
	if (y1 > sh)
		y1 = sh;

	geom->scale_num = n;
	geom->scale_denom = 8;
	geom->out_w = x1 - x0;
	geom->out_h = y1 - y0;
	geom->src_x = rx * (n / 8.0) - x0;
	geom->src_y = ry * (n / 8.0) - y0;
	geom->src_w = rw * (n / 8.0);
	geom->src_h = rh * (n / 8.0);
	return 0;
}

int ts_decoder_decode(struct ts_decoder *d, const uint8_t *buf, size_t len,
		      const struct ts_decode_req *req, struct ts_image *out,
		      struct ts_decode_geom *geom, struct ts_error *err)
{
	int rc;

	if (!d || !req || !out || (!buf && len))
		return ts_error_set(err, TS_E_ARG, "ts_decoder_decode: NULL argument");
	ts_decoder_rows_end(d);
	switch (ts_decoder_sniff(buf, len)) {
	case TS_FORMAT_JPEG:
		if (!d->jpeg && (rc = ts_decoder_jpeg_create(&d->jpeg, err)) < 0)
			return rc;
		return ts_decoder_jpeg_decode(d->jpeg, buf, len, req, out, geom, err);
	case TS_FORMAT_PNG:
		if (!d->png && (rc = ts_decoder_png_create(&d->png, err)) < 0)
			return rc;
		return ts_decoder_png_decode(d->png, buf, len, req, out, geom, err);
	default:
		return unknown_format(buf, len, err);
	}
}

/* 16-bit to 8-bit with rounding: round(x / 257), libpng's png_set_scale_16
 * formula, so PNG rows scaled by libpng and rows scaled here agree. */
static inline unsigned to8(unsigned x)
{
	return (x * 255u + 32895u) >> 16;
}

/* PIL's convert("L"): ITU-R 601 luma in 16-bit fixed point, rounded. The
 * sum fits in 32 bits even for 16-bit samples. */
static inline unsigned luma(unsigned r, unsigned g, unsigned b)
{
	return (r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16;
}

void ts_decoder_convert_row(const void *src, int src_c, int src_depth,
			    void *dst, int dst_c, int dst_depth, int n)
{
	if (src_c == dst_c && src_depth == dst_depth) {
		memcpy(dst, src, (size_t)n * (size_t)src_c * (src_depth == 16 ? 2 : 1));
		return;
	}
	if (src_depth == 8) {
		const uint8_t *s = src;
		if (dst_depth == 8) {
			uint8_t *o = dst;
			if (src_c == 1) /* 1 -> 3 */
				for (int i = 0; i < n; i++, o += 3)
					o[0] = o[1] = o[2] = s[i];
			else            /* 3 -> 1 */
				for (int i = 0; i < n; i++, s += 3)
					o[i] = (uint8_t)luma(s[0], s[1], s[2]);
			return;
		}
		uint16_t *o = dst;
		if (src_c == dst_c)
			for (int i = 0; i < n * src_c; i++)
				o[i] = (uint16_t)(s[i] * 257u);
		else if (src_c == 1)
			for (int i = 0; i < n; i++, o += 3)
				o[0] = o[1] = o[2] = (uint16_t)(s[i] * 257u);
		else
			for (int i = 0; i < n; i++, s += 3)
				o[i] = (uint16_t)(luma(s[0], s[1], s[2]) * 257u);
		return;
	}
	const uint16_t *s = src;
	if (dst_depth == 16) {
		uint16_t *o = dst;
		if (src_c == 1)
			for (int i = 0; i < n; i++, o += 3)
				o[0] = o[1] = o[2] = s[i];
		else
			for (int i = 0; i < n; i++, s += 3)
				o[i] = (uint16_t)luma(s[0], s[1], s[2]);
		return;
	}
	uint8_t *o = dst;
	if (src_c == dst_c)
		for (int i = 0; i < n * src_c; i++)
			o[i] = (uint8_t)to8(s[i]);
	else if (src_c == 1)
		for (int i = 0; i < n; i++, o += 3)
			o[0] = o[1] = o[2] = (uint8_t)to8(s[i]);
	else
		for (int i = 0; i < n; i++, s += 3)
			o[i] = (uint8_t)to8(luma(s[0], s[1], s[2]));
}

/* Refuse decompression bombs before allocating anything image-sized
 * (libjpeg buffers every coefficient of a progressive file). */
int ts_decoder_check_size(const struct ts_decode_info *info, struct ts_error *err)
{
	if (info->width > TS_DECODE_MAX_DIM || info->height > TS_DECODE_MAX_DIM ||
	    (long long)info->width * info->height > TS_DECODE_MAX_PIXELS)
		return ts_error_set(err, TS_E_DECODE,
				    "image too large: %dx%d (limit %d pixels a side, %lld pixels)",
				    info->width, info->height, TS_DECODE_MAX_DIM,
				    (long long)TS_DECODE_MAX_PIXELS);
	return 0;
}

int ts_decoder_grow(void *pp, size_t *cap, size_t need)
{
	uint8_t **p = pp;
	if (need <= *cap)
		return 0;
	uint8_t *n = realloc(*p, need);
	if (!n)
		return -1;
	*p = n;
	*cap = need;
	return 0;
}
