/* decode_jpeg.c - JPEG through libjpeg-turbo's libjpeg API: region of
 * interest with jpeg_crop_scanline/jpeg_skip_scanlines, DCT scaling, and
 * the same decode settings as PIL (JDCT_ISLOW, fancy upsampling). */
#include "decode.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>
#include "util.h"

struct ts_decoder_jpeg {
	/* One decompress object for the decoder's life: jpeg_abort_decompress
	 * returns it to the start state without freeing its permanent
	 * memory, so each image costs only libjpeg's per-image pool. */
	struct jpeg_decompress_struct cinfo;
	struct jpeg_error_mgr jerr;
	jmp_buf jmp;
	char msg[JMSG_LENGTH_MAX + 64];
	uint8_t *row;      /* scratch row: cropped or converted output */
	size_t row_cap;
	uint8_t *rgb;      /* scratch row: CMYK converted to RGB */
	size_t rgb_cap;
	/* Row-wise decoding in progress (ts_decoder_jpeg_rows_*). */
	bool r_active, r_cmyk, r_inverted;
	int r_src_c, r_dst_c, r_depth, r_width, r_left;
};

static struct ts_decoder_jpeg *from_common(j_common_ptr c)
{
	return (struct ts_decoder_jpeg *)((char *)c->err -
					   offsetof(struct ts_decoder_jpeg, jerr));
}

/* libjpeg's default error_exit prints and calls exit(): keep the message
 * and unwind to the setjmp in the calling function instead. */
static void on_error_exit(j_common_ptr c)
{
	struct ts_decoder_jpeg *j = from_common(c);
	char buf[JMSG_LENGTH_MAX];

	c->err->format_message(c, buf);
	if (c->err->msg_code == JERR_INPUT_EMPTY || c->err->msg_code == JERR_INPUT_EOF)
		snprintf(j->msg, sizeof(j->msg), "truncated JPEG data (%s)", buf);
	else
		snprintf(j->msg, sizeof(j->msg), "corrupt or unsupported JPEG data: %s", buf);
	longjmp(j->jmp, 1);
}

/* Warnings are never printed. Running out of data is only a warning to
 * libjpeg (it pads with gray and goes on), and so is entropy data that
 * does not decode (a marker in the middle of a scan, "premature end of
 * data segment", a bad Huffman code, a restart marker out of place: it
 * fills the rest with zeros): here each is an error, so that on_error
 * fails or skips and counts the file rather than serving a gray or
 * smeared image without a word. Warnings about the file around the
 * image data (stray bytes between segments, a JFIF version, an odd
 * ICC profile) leave the pixels whole and are ignored, as PIL and djpeg
 * do. */
static void on_emit_message(j_common_ptr c, int level)
{
	struct ts_decoder_jpeg *j = from_common(c);
	char buf[JMSG_LENGTH_MAX];

	if (level >= 0)
		return; /* trace messages */
	switch (c->err->msg_code) {
	case JWRN_JPEG_EOF:
		snprintf(j->msg, sizeof(j->msg), "truncated JPEG data (premature end of file)");
		longjmp(j->jmp, 1);
	case JWRN_HIT_MARKER:
	case JWRN_HUFF_BAD_CODE:
	case JWRN_MUST_RESYNC:
	case JWRN_NOT_SEQUENTIAL:
	case JWRN_BOGUS_PROGRESSION:
	case JWRN_ARITH_BAD_CODE:
		/* "Corrupt JPEG data: premature end of data segment" */
		c->err->format_message(c, buf);
		if (buf[0] == 'C')
			buf[0] = 'c';
		snprintf(j->msg, sizeof(j->msg), "%s", buf);
		longjmp(j->jmp, 1);
	default:
		c->err->num_warnings++;
	}
}

int ts_decoder_jpeg_create(struct ts_decoder_jpeg **out, struct ts_error *err)
{
	struct ts_decoder_jpeg *j = calloc(1, sizeof(*j));
	if (!j)
		return ts_error_set(err, TS_E_NOMEM, "out of memory creating a JPEG decoder");
	j->cinfo.err = jpeg_std_error(&j->jerr);
	j->jerr.error_exit = on_error_exit;
	j->jerr.emit_message = on_emit_message;
	if (setjmp(j->jmp)) {
		/* jpeg_create_decompress fails only when out of memory. */
		free(j);
		return ts_error_set(err, TS_E_NOMEM, "out of memory creating a JPEG decoder");
	}
	jpeg_create_decompress(&j->cinfo);
	*out = j;
	return 0;
}

void ts_decoder_jpeg_destroy(struct ts_decoder_jpeg *j)
{
	if (!j)
		return;
	ts_decoder_jpeg_rows_end(j);
	jpeg_destroy_decompress(&j->cinfo);
	free(j->row);
	free(j->rgb);
	free(j);
}

static void fill_info(const struct jpeg_decompress_struct *ci, struct ts_decode_info *info)
{
	info->format = TS_FORMAT_JPEG;
	info->width = (int)ci->image_width;
	info->height = (int)ci->image_height;
	info->channels = ci->num_components;
	info->depth = ci->data_precision;
	info->progressive = ci->progressive_mode;
}

int ts_decoder_jpeg_info(struct ts_decoder_jpeg *j, const uint8_t *buf,
			 size_t len, struct ts_decode_info *info,
			 struct ts_error *err)
{
	struct jpeg_decompress_struct *ci = &j->cinfo;
	struct ts_decode_info tmp;

	if (setjmp(j->jmp)) {
		jpeg_abort_decompress(ci);
		return ts_error_set(err, TS_E_DECODE, "%s", j->msg);
	}
	jpeg_mem_src(ci, buf, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	fill_info(ci, &tmp);
	jpeg_abort_decompress(ci);
	*info = tmp;
	return 0;
}

/* CMYK to RGB as PIL does it: Adobe files store inverted CMYK (PIL's
 * "CMYK;I"), then R = (255 - K) - C * (255 - K) / 255 with PIL's
 * rounded division by 255. */
static void cmyk_to_rgb(const uint8_t *s, uint8_t *o, int n, bool inverted)
{
	for (int i = 0; i < n; i++, s += 4, o += 3) {
		unsigned k = inverted ? s[3] : 255u - s[3]; /* 255 - K */
		for (int c = 0; c < 3; c++) {
			unsigned v = inverted ? 255u - s[c] : s[c];
			unsigned t = v * k + 128u;
			o[c] = (uint8_t)(k - (((t >> 8) + t) >> 8));
		}
	}
}

/* The output color space libjpeg is asked for: gray, RGB, or CMYK that
 * cmyk_to_rgb turns into RGB. Returns the channels of a converted row
 * (1 or 3) or an error. */
static int set_color(struct jpeg_decompress_struct *ci, struct ts_error *err)
{
	switch (ci->jpeg_color_space) {
	case JCS_GRAYSCALE:
		ci->out_color_space = JCS_GRAYSCALE;
		return 1;
	case JCS_YCbCr:
	case JCS_RGB:
		ci->out_color_space = JCS_RGB;
		return 3;
	case JCS_CMYK:
	case JCS_YCCK:
		ci->out_color_space = JCS_CMYK;
		return 3;
	default:
		return ts_error_set(err, TS_E_DECODE,
				    "unsupported JPEG color space (%d components, unknown transform)",
				    ci->num_components);
	}
}

/*
 * Decode the request's region. The region is first mapped to the DCT-
 * scaled image (ts_decoder_geometry); libjpeg then decodes only the iMCU
 * columns that cover it (jpeg_crop_scanline, which snaps the left edge down
 * to an iMCU boundary) and skips the rows above it (jpeg_skip_scanlines).
 * The crop asked of libjpeg is two pixels wider on each side than the
 * region: libjpeg treats the crop edges as image edges when upsampling
 * chroma, so the margin keeps the region's own pixels identical to a full
 * decode. Rows below the region are never decoded.
 */
int ts_decoder_jpeg_decode(struct ts_decoder_jpeg *j, const uint8_t *buf,
			   size_t len, const struct ts_decode_req *req,
			   struct ts_image *out, struct ts_decode_geom *geom,
			   struct ts_error *err)
{
	struct jpeg_decompress_struct *ci = &j->cinfo;
	struct ts_decode_info info;
	struct ts_decode_geom g;
	int rc = 0;

	if (setjmp(j->jmp)) {
		rc = ts_error_set(err, TS_E_DECODE, "%s", j->msg);
		goto out;
	}
	jpeg_mem_src(ci, buf, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	fill_info(ci, &info);
	if ((rc = ts_decoder_check_size(&info, err)) < 0)
		goto out;
	if ((rc = ts_decoder_geometry(&info, req, &g, err)) < 0)
		goto out;

	int src_c = set_color(ci, err);
	if (src_c < 0) {
		rc = src_c;
		goto out;
	}
	bool cmyk = ci->out_color_space == JCS_CMYK;
	ci->dct_method = JDCT_ISLOW;
	ci->do_fancy_upsampling = TRUE;
	ci->scale_num = (unsigned)g.scale_num;
	ci->scale_denom = (unsigned)g.scale_denom;
	jpeg_start_decompress(ci);

	int depth = req->depth == 16 ? 16 : 8;
	int dst_c = req->color == TS_COLOR_GRAY ? 1 : 3;
	int n = g.scale_num;
	int rx = req->roi_w > 0 && req->roi_h > 0 ? req->roi_x : 0;
	int ry = req->roi_w > 0 && req->roi_h > 0 ? req->roi_y : 0;
	int x0 = (int)((long long)rx * n / 8), y0 = (int)((long long)ry * n / 8);
	int comps = ci->output_components;
	int left = 0;

	if (x0 > 0 || x0 + g.out_w < (int)ci->output_width) {
		JDIMENSION cx = (JDIMENSION)(x0 >= 2 ? x0 - 2 : 0);
		JDIMENSION cend = (JDIMENSION)(x0 + g.out_w + 2);
		if (cend > ci->output_width)
			cend = ci->output_width;
		JDIMENSION cw = cend - cx;
		jpeg_crop_scanline(ci, &cx, &cw);
		left = x0 - (int)cx;
	}
	if (y0 > 0 && jpeg_skip_scanlines(ci, (JDIMENSION)y0) != (JDIMENSION)y0) {
		rc = ts_error_set(err, TS_E_DECODE, "truncated JPEG data (rows missing)");
		goto out;
	}

	/* Straight into the output rows when nothing is to be converted or
	 * cut off: the common case of an RGB JPEG decoded whole. When only
	 * cut off (a crop's margins, iMCU-snapped) and the caller reads
	 * through the stride, rows of the output are as wide as libjpeg's
	 * (ci->output_width) and libjpeg writes row y from `left` pixels
	 * before its first: into row y - 1's tail past its width, which no
	 * one reads. Row 0 has nothing before it and goes through the
	 * scratch row. */
	const bool plain = !cmyk && comps == dst_c && depth == 8;
	const bool direct = plain && left == 0 && (int)ci->output_width == g.out_w;
	const bool shifted = plain && !direct && req->strided;
	if (ts_image_reserve(out, shifted ? (int)ci->output_width : g.out_w, g.out_h, dst_c,
			     depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8) < 0 ||
	    ts_decoder_grow(&j->row, &j->row_cap, (size_t)ci->output_width * (size_t)comps) < 0 ||
	    (cmyk && ts_decoder_grow(&j->rgb, &j->rgb_cap, (size_t)g.out_w * 3) < 0)) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory decoding a %dx%d JPEG",
				  info.width, info.height);
		goto out;
	}
	if (shifted)
		out->width = g.out_w; /* the stride stays output_width's */
	bool inverted = ci->saw_Adobe_marker;
	for (int y = 0; y < g.out_h;) {
		uint8_t *dst = out->data + (size_t)y * out->stride;
		if (direct || (shifted && y > 0)) {
			/* Several rows a call: libjpeg upsamples and converts a
			 * row group (2 rows of 4:2:0) at once when it has room
			 * for it, and each call has its own overhead. */
			enum { ROWS = 4 };
			JSAMPROW rows[ROWS];
			const int nr = g.out_h - y < ROWS ? g.out_h - y : ROWS;
			for (int k = 0; k < nr; k++)
				rows[k] = dst + (size_t)k * out->stride -
					  (direct ? 0 : (size_t)left * (size_t)comps);
			JDIMENSION got = jpeg_read_scanlines(ci, rows, (JDIMENSION)nr);
			if (got == 0) {
				rc = ts_error_set(err, TS_E_DECODE, "truncated JPEG data (rows missing)");
				goto out;
			}
			y += (int)got;
			continue;
		}
		JSAMPROW r = j->row;
		if (jpeg_read_scanlines(ci, &r, 1) != 1) {
			rc = ts_error_set(err, TS_E_DECODE, "truncated JPEG data (rows missing)");
			goto out;
		}
		const uint8_t *s = j->row + (size_t)left * (size_t)comps;
		if (cmyk) {
			cmyk_to_rgb(s, j->rgb, g.out_w, inverted);
			s = j->rgb;
		}
		ts_decoder_convert_row(s, src_c, 8, dst, dst_c, depth, g.out_w);
		y++;
	}
	if (geom)
		*geom = g;
out:
	/* Back to the start state; also skips the rows below the region. */
	jpeg_abort_decompress(ci);
	return rc;
}

/*
 * Row-wise decoding (decode.h, ts_decoder_rows_begin): full scale, the
 * same settings and conversion as ts_decoder_jpeg_decode, one scanline
 * held at a time. Progressive files are refused: libjpeg buffers every
 * coefficient of the image for them anyway.
 */
int ts_decoder_jpeg_rows_begin(struct ts_decoder_jpeg *j, const uint8_t *buf,
			       size_t len, const struct ts_decode_req *req,
			       struct ts_decode_info *info, struct ts_error *err)
{
	struct jpeg_decompress_struct *ci = &j->cinfo;
	struct ts_decode_info tmp;
	int rc = 0;

	ts_decoder_jpeg_rows_end(j);
	if (setjmp(j->jmp)) {
		rc = ts_error_set(err, TS_E_DECODE, "%s", j->msg);
		goto fail;
	}
	jpeg_mem_src(ci, buf, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	fill_info(ci, &tmp);
	if ((rc = ts_decoder_check_size(&tmp, err)) < 0)
		goto fail;
	if (tmp.progressive) {
		rc = ts_error_set(err, TS_E_ARG,
				  "a progressive JPEG cannot be decoded row by row");
		goto fail;
	}
	if (req->depth != 0 && req->depth != 8 && req->depth != 16) {
		rc = ts_error_set(err, TS_E_ARG, "decode depth must be 8 or 16, not %d",
				  req->depth);
		goto fail;
	}
	if ((rc = set_color(ci, err)) < 0)
		goto fail;
	j->r_src_c = rc;
	j->r_cmyk = ci->out_color_space == JCS_CMYK;
	rc = 0;
	ci->dct_method = JDCT_ISLOW;
	ci->do_fancy_upsampling = TRUE;
	ci->scale_num = 8;
	ci->scale_denom = 8;
	jpeg_start_decompress(ci);
	if (ts_decoder_grow(&j->row, &j->row_cap,
		 (size_t)ci->output_width * (size_t)ci->output_components) < 0 ||
	    (j->r_cmyk && ts_decoder_grow(&j->rgb, &j->rgb_cap, (size_t)ci->output_width * 3) < 0)) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory decoding a %dx%d JPEG",
				  tmp.width, tmp.height);
		goto fail;
	}
	j->r_depth = req->depth == 16 ? 16 : 8;
	j->r_dst_c = req->color == TS_COLOR_GRAY ? 1 : 3;
	j->r_inverted = ci->saw_Adobe_marker;
	j->r_width = (int)ci->output_width;
	j->r_left = (int)ci->output_height;
	j->r_active = true;
	*info = tmp;
	return 0;
fail:
	jpeg_abort_decompress(ci);
	return rc;
}

int ts_decoder_jpeg_rows_read(struct ts_decoder_jpeg *j, void *dst, size_t stride,
			      int n, struct ts_error *err)
{
	struct jpeg_decompress_struct *ci = &j->cinfo;

	if (!j->r_active)
		return ts_error_set(err, TS_E_STATE, "no row-wise JPEG decode in progress");
	if (n > j->r_left)
		return ts_error_set(err, TS_E_ARG, "%d rows asked of a JPEG with %d left",
				    n, j->r_left);
	volatile int y = 0; /* modified between setjmp and a longjmp to it */
	if (setjmp(j->jmp)) {
		j->r_left = 0;
		return ts_error_set(err, TS_E_DECODE, "%s", j->msg);
	}
	for (; y < n; y++) {
		JSAMPROW r = j->row;
		if (jpeg_read_scanlines(ci, &r, 1) != 1) {
			j->r_left = 0;
			return ts_error_set(err, TS_E_DECODE, "truncated JPEG data (rows missing)");
		}
		if (!dst)
			continue;
		const uint8_t *s = j->row;
		if (j->r_cmyk) {
			cmyk_to_rgb(s, j->rgb, j->r_width, j->r_inverted);
			s = j->rgb;
		}
		ts_decoder_convert_row(s, j->r_src_c, 8, (uint8_t *)dst + (size_t)y * stride,
				       j->r_dst_c, j->r_depth, j->r_width);
	}
	j->r_left -= n;
	return 0;
}

void ts_decoder_jpeg_rows_end(struct ts_decoder_jpeg *j)
{
	if (j && j->r_active) {
		jpeg_abort_decompress(&j->cinfo);
		j->r_active = false;
	}
}
