/* decode_png.c - PNG through libpng, from memory: every color type and
 * bit depth, interlaced or not, cropped to the region of interest. */
#include "decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "util.h"

struct png_reader {
	const uint8_t *buf;
	size_t len, pos;
};

struct ts_decoder_png {
	/* libpng's read struct cannot be rewound for a new file, so one is
	 * made per image; the row and image buffers are what is reused. */
	uint8_t *row;        /* one decoded row */
	size_t row_cap;
	uint8_t *img;        /* whole image, interlaced files only */
	size_t img_cap;
	png_bytep *rows;     /* row pointers into img */
	size_t rows_cap;     /* bytes */
	char msg[200];
	/* Row-wise decoding in progress (ts_decoder_png_rows_*): the read
	 * struct lives across calls, so does what it reads from. */
	png_structp rpng;
	png_infop rpi;
	struct png_reader rrd;
	int r_src_c, r_src_depth, r_dst_c, r_depth, r_width, r_left;
};


/* libpng reads through this instead of a FILE. Asking past the end is a
 * truncated file, reported as such rather than as a zlib error. */
static void read_mem(png_structp png, png_bytep data, size_t n)
{
	struct png_reader *r = png_get_io_ptr(png);

	if (r->len - r->pos < n)
		png_error(png, "premature end of PNG data (file truncated)");
	memcpy(data, r->buf + r->pos, n);
	r->pos += n;
}

/* libpng's default error handler prints to stderr: keep the message and
 * unwind to the setjmp in ts_decoder_png_decode/info instead. */
static void on_error(png_structp png, png_const_charp msg)
{
	struct ts_decoder_png *p = png_get_error_ptr(png);

	snprintf(p->msg, sizeof(p->msg), "%s", msg);
	png_longjmp(png, 1);
}

/* Warnings (bad ancillary chunks, sRGB profile quirks) are not errors and
 * library code never prints. */
static void on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

int ts_decoder_png_create(struct ts_decoder_png **out, struct ts_error *err)
{
	struct ts_decoder_png *p = calloc(1, sizeof(*p));
	if (!p)
		return ts_error_set(err, TS_E_NOMEM, "out of memory creating a PNG decoder");
	*out = p;
	return 0;
}

void ts_decoder_png_destroy(struct ts_decoder_png *p)
{
	if (!p)
		return;
	free(p->row);
	free(p->img);
	free(p->rows);
	ts_decoder_png_rows_end(p);
	free(p);
}

static void fill_info(png_structp png, png_infop pi, struct ts_decode_info *info)
{
	int ct = png_get_color_type(png, pi);

	info->format = TS_FORMAT_PNG;
	info->width = (int)png_get_image_width(png, pi);
	info->height = (int)png_get_image_height(png, pi);
	info->depth = png_get_bit_depth(png, pi);
	switch (ct) {
	case PNG_COLOR_TYPE_GRAY: info->channels = 1; break;
	case PNG_COLOR_TYPE_GRAY_ALPHA: info->channels = 2; break;
	case PNG_COLOR_TYPE_RGB: info->channels = 3; break;
	case PNG_COLOR_TYPE_RGB_ALPHA: info->channels = 4; break;
	default: /* palette */
		info->channels = png_get_valid(png, pi, PNG_INFO_tRNS) ? 4 : 3;
		break;
	}
	info->progressive = png_get_interlace_type(png, pi) != PNG_INTERLACE_NONE;
}

/* Set up a read struct over buf; NULL when out of memory. */
static png_structp open_png(struct ts_decoder_png *p, struct png_reader *rd,
			    png_infop *pi)
{
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, p,
						 on_error, on_warning);
	if (!png)
		return NULL;
	*pi = png_create_info_struct(png);
	if (!*pi) {
		png_destroy_read_struct(&png, NULL, NULL);
		return NULL;
	}
	png_set_read_fn(png, rd, read_mem);
	/* Our own limits are checked after the header; lift libpng's
	 * 1,000,000-pixel side limit so our message is the one seen. */
	png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
	return png;
}

int ts_decoder_png_info(struct ts_decoder_png *p, const uint8_t *buf,
			size_t len, struct ts_decode_info *info,
			struct ts_error *err)
{
	struct png_reader rd = { buf, len, 0 };
	struct ts_decode_info tmp;
	png_infop pi = NULL;
	png_structp png = open_png(p, &rd, &pi);
	int rc = 0;

	if (!png)
		return ts_error_set(err, TS_E_NOMEM, "out of memory reading a PNG header");
	if (setjmp(png_jmpbuf(png))) {
		rc = ts_error_set(err, TS_E_DECODE, "invalid PNG data: %s", p->msg);
		goto out;
	}
	png_read_info(png, pi);
	fill_info(png, pi, &tmp);
	*info = tmp;
out:
	png_destroy_read_struct(&png, &pi, NULL);
	return rc;
}

/* libpng expands palettes and low bit depths, drops alpha and scales 16
 * bits to 8 (round(x / 257)) when 8 are asked for, or swaps 16-bit
 * samples to host order. Called under the caller's setjmp. */
static void set_transforms(png_structp png, png_infop pi,
			   const struct ts_decode_info *info, int depth)
{
	int ct = png_get_color_type(png, pi);
	if (ct == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (ct == PNG_COLOR_TYPE_GRAY && info->depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	if (ct & PNG_COLOR_MASK_ALPHA || png_get_valid(png, pi, PNG_INFO_tRNS))
		png_set_strip_alpha(png);
	if (info->depth == 16) {
		if (depth == 8)
			png_set_scale_16(png);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		else
			png_set_swap(png);
#endif
	}
}

/*
 * libpng expands palettes and low bit depths, drops alpha and scales 16
 * bits to 8 (round(x / 257)) when 8 are asked for; what is left is gray or
 * RGB at 8 or 16 bits, which ts_decoder_convert_row turns into the
 * requested color and depth while cropping the columns. Rows below the
 * region are not decoded; interlaced files need every pass, so they are
 * decoded whole into a reused buffer first.
 */
int ts_decoder_png_decode(struct ts_decoder_png *p, const uint8_t *buf,
			  size_t len, const struct ts_decode_req *req,
			  struct ts_image *out, struct ts_decode_geom *geom,
			  struct ts_error *err)
{
	struct png_reader rd = { buf, len, 0 };
	struct ts_decode_info info;
	struct ts_decode_geom g;
	png_infop pi = NULL;
	png_structp png = open_png(p, &rd, &pi);
	int rc = 0;

	if (!png)
		return ts_error_set(err, TS_E_NOMEM, "out of memory reading a PNG");
	if (setjmp(png_jmpbuf(png))) {
		rc = ts_error_set(err, TS_E_DECODE, "invalid PNG data: %s", p->msg);
		goto out;
	}
	png_read_info(png, pi);
	fill_info(png, pi, &info);
	if ((rc = ts_decoder_check_size(&info, err)) < 0)
		goto out;
	if ((rc = ts_decoder_geometry(&info, req, &g, err)) < 0)
		goto out;

	int depth = req->depth == 16 ? 16 : 8;
	int dst_c = req->color == TS_COLOR_GRAY ? 1 : 3;
	set_transforms(png, pi, &info, depth);
	int passes = png_set_interlace_handling(png);
	png_read_update_info(png, pi);

	int src_c = png_get_channels(png, pi);
	int src_depth = png_get_bit_depth(png, pi);
	size_t rowbytes = png_get_rowbytes(png, pi);
	size_t bpp = (size_t)src_c * (size_t)(src_depth / 8);
	if ((src_c != 1 && src_c != 3) || (src_depth != 8 && src_depth != 16)) {
		rc = ts_error_set(err, TS_E_DECODE,
				  "unsupported PNG layout (%d channels of %d bits after expansion)",
				  src_c, src_depth);
		goto out;
	}
	if (ts_image_reserve(out, g.out_w, g.out_h, dst_c,
			     depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8) < 0 ||
	    ts_decoder_grow(&p->row, &p->row_cap, rowbytes) < 0) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory decoding a %dx%d PNG",
				  info.width, info.height);
		goto out;
	}

	int x0 = req->roi_w > 0 && req->roi_h > 0 ? req->roi_x : 0;
	int y0 = req->roi_w > 0 && req->roi_h > 0 ? req->roi_y : 0;
	if (passes > 1) {
		size_t h = (size_t)info.height;
		if (ts_decoder_grow(&p->img, &p->img_cap, rowbytes * h) < 0 ||
		    ts_decoder_grow(&p->rows, &p->rows_cap, h * sizeof(png_bytep)) < 0) {
			rc = ts_error_set(err, TS_E_NOMEM,
					  "out of memory decoding a %dx%d interlaced PNG",
					  info.width, info.height);
			goto out;
		}
		for (size_t y = 0; y < h; y++)
			p->rows[y] = p->img + y * rowbytes;
		png_read_image(png, p->rows);
		for (int y = 0; y < g.out_h; y++)
			ts_decoder_convert_row(p->rows[y0 + y] + (size_t)x0 * bpp, src_c, src_depth,
					       out->data + (size_t)y * out->stride, dst_c,
					       depth, g.out_w);
	} else {
		for (int y = 0; y < y0 + g.out_h; y++) {
			png_read_row(png, p->row, NULL);
			if (y >= y0)
				ts_decoder_convert_row(p->row + (size_t)x0 * bpp, src_c,
						       src_depth,
						       out->data + (size_t)(y - y0) * out->stride,
						       dst_c, depth, g.out_w);
		}
	}
	if (geom)
		*geom = g;
out:
	png_destroy_read_struct(&png, &pi, NULL);
	return rc;
}

/*
 * Row-wise decoding (decode.h, ts_decoder_rows_begin): the same
 * transforms and conversion as ts_decoder_png_decode, so row y is the
 * bytes of row y of a whole decode, but only one row is ever held.
 * Interlaced files are refused: their first pass already needs every row.
 */
int ts_decoder_png_rows_begin(struct ts_decoder_png *p, const uint8_t *buf,
			      size_t len, const struct ts_decode_req *req,
			      struct ts_decode_info *info, struct ts_error *err)
{
	ts_decoder_png_rows_end(p);
	p->rrd = (struct png_reader){ buf, len, 0 };
	png_structp png = open_png(p, &p->rrd, &p->rpi);
	if (!png)
		return ts_error_set(err, TS_E_NOMEM, "out of memory reading a PNG");
	p->rpng = png;
	struct ts_decode_info tmp;
	int rc = 0;
	if (setjmp(png_jmpbuf(png))) {
		rc = ts_error_set(err, TS_E_DECODE, "invalid PNG data: %s", p->msg);
		goto fail;
	}
	png_read_info(png, p->rpi);
	fill_info(png, p->rpi, &tmp);
	if ((rc = ts_decoder_check_size(&tmp, err)) < 0)
		goto fail;
	if (tmp.progressive) {
		rc = ts_error_set(err, TS_E_ARG,
				  "an interlaced PNG cannot be decoded row by row");
		goto fail;
	}
	if (req->depth != 0 && req->depth != 8 && req->depth != 16) {
		rc = ts_error_set(err, TS_E_ARG, "decode depth must be 8 or 16, not %d",
				  req->depth);
		goto fail;
	}
	p->r_depth = req->depth == 16 ? 16 : 8;
	p->r_dst_c = req->color == TS_COLOR_GRAY ? 1 : 3;
	set_transforms(png, p->rpi, &tmp, p->r_depth);
	png_read_update_info(png, p->rpi);
	p->r_src_c = png_get_channels(png, p->rpi);
	p->r_src_depth = png_get_bit_depth(png, p->rpi);
	if ((p->r_src_c != 1 && p->r_src_c != 3) ||
	    (p->r_src_depth != 8 && p->r_src_depth != 16)) {
		rc = ts_error_set(err, TS_E_DECODE,
				  "unsupported PNG layout (%d channels of %d bits after expansion)",
				  p->r_src_c, p->r_src_depth);
		goto fail;
	}
	if (ts_decoder_grow(&p->row, &p->row_cap, png_get_rowbytes(png, p->rpi)) < 0) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory decoding a %dx%d PNG",
				  tmp.width, tmp.height);
		goto fail;
	}
	p->r_width = tmp.width;
	p->r_left = tmp.height;
	*info = tmp;
	return 0;
fail:
	ts_decoder_png_rows_end(p);
	return rc;
}

int ts_decoder_png_rows_read(struct ts_decoder_png *p, void *dst, size_t stride,
			     int n, struct ts_error *err)
{
	if (!p->rpng)
		return ts_error_set(err, TS_E_STATE, "no row-wise PNG decode in progress");
	if (n > p->r_left)
		return ts_error_set(err, TS_E_ARG, "%d rows asked of a PNG with %d left",
				    n, p->r_left);
	/* volatile: modified between setjmp and a longjmp back to it */
	volatile int y = 0;
	if (setjmp(png_jmpbuf(p->rpng))) {
		p->r_left = 0;
		return ts_error_set(err, TS_E_DECODE, "invalid PNG data: %s", p->msg);
	}
	for (; y < n; y++) {
		png_read_row(p->rpng, p->row, NULL);
		if (dst)
			ts_decoder_convert_row(p->row, p->r_src_c, p->r_src_depth,
					       (uint8_t *)dst + (size_t)y * stride,
					       p->r_dst_c, p->r_depth, p->r_width);
	}
	p->r_left -= n;
	return 0;
}

void ts_decoder_png_rows_end(struct ts_decoder_png *p)
{
	if (p && p->rpng)
		png_destroy_read_struct(&p->rpng, &p->rpi, NULL);
	if (p) {
		p->rpng = NULL;
		p->rpi = NULL;
	}
}
