/*
 * decode.h - JPEG and PNG decoding from memory into a struct ts_image,
 * fused with a crop (region of interest) and, for JPEG, DCT-domain
 * scaling when a resize follows.
 *
 * A struct ts_decoder holds the per-thread reusable state (the libjpeg
 * decompress object, libpng row pointers, scratch rows), so a worker
 * creates one decoder for its whole life and allocates nothing per
 * sample once warmed up. A decoder is NOT thread-safe: use one per thread.
 * Different decoders may be used concurrently.
 *
 * Output: interleaved HWC pixels, uint8 (TS_DTYPE_U8) or uint16
 * (TS_DTYPE_U16, when req->depth == 16), 3 channels for TS_COLOR_RGB or
 * 1 for TS_COLOR_GRAY.
 *   - JPEG is decoded by libjpeg-turbo with JDCT_ISLOW and fancy
 *     upsampling: at scale 1 the pixels are identical to PIL's
 *     Image.open(f).convert("RGB") (and to `djpeg -ppm`).
 *   - Gray sources are replicated into R, G and B for TS_COLOR_RGB.
 *   - RGB sources become gray for TS_COLOR_GRAY with PIL's convert("L")
 *     formula: L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16 (the
 *     ITU-R 601 weights 0.299/0.587/0.114 in 16-bit fixed point), applied
 *     at the output depth.
 *   - 8-bit sources written as uint16 are expanded x * 257; 16-bit PNG
 *     written as uint8 is reduced to round(x / 257) (libpng's exact
 *     16-to-8 scaling); 1/2/4-bit gray is expanded to full scale
 *     (1 bit: 0 -> 0, 1 -> 255).
 *   - Alpha (gray+alpha, RGBA, palette tRNS) is dropped: the color
 *     channels are returned as stored, with no compositing on a
 *     background (what PIL's convert("RGB") does as well).
 *   - CMYK and YCCK JPEGs (Adobe, inverted as Photoshop writes them) are
 *     converted to RGB with R = C*K/255 etc. (PIL's CMYK->RGB formula on
 *     its inverted CMYK).
 *
 * Errors: every function returns 0 or a negative code and fills err.
 * Corrupt, truncated or unsupported data gives TS_E_DECODE with a message
 * that says what is wrong ("truncated JPEG data", "not a JPEG or PNG file
 * (starts with 47 49 46 38)"); images above TS_DECODE_MAX_PIXELS pixels
 * or TS_DECODE_MAX_DIM on a side are refused with TS_E_DECODE (guard
 * against decompression bombs). Allocation failure gives TS_E_NOMEM.
 * Nothing here prints or exits; libjpeg/libpng warnings are not printed,
 * and libjpeg's "premature end of data" warning is treated as an error.
 */
#ifndef TS_DECODE_H
#define TS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "image.h"
#include "plan.h"

#define TS_DECODE_MAX_DIM 65535
#define TS_DECODE_MAX_PIXELS (1LL << 28)

enum ts_format { TS_FORMAT_UNKNOWN, TS_FORMAT_JPEG, TS_FORMAT_PNG };

/* What the header says (ts_decoder_info). */
struct ts_decode_info {
	enum ts_format format;
	int width, height;   /* full-resolution pixels */
	int channels;        /* as stored: JPEG 1 (gray), 3 (YCbCr/RGB) or 4
				(CMYK/YCCK); PNG 1 gray, 2 gray+alpha, 3 RGB or
				palette without tRNS, 4 RGBA or palette+tRNS */
	int depth;           /* bits per sample as stored: JPEG 8; PNG 1, 2, 4,
				8 or 16 (palette: the index depth, 1..8) */
	bool progressive;    /* JPEG progressive, or PNG Adam7 interlaced */
};

/* What to decode. Zero-initialise and set what you need: {0} with
 * depth 0 means RGB, 8 bits, whole image, full scale. */
struct ts_decode_req {
	enum ts_color color;  /* TS_COLOR_RGB (3 channels) or TS_COLOR_GRAY (1) */
	int depth;            /* 8 or 16; 0 means 8 */
	/* Region in full-resolution pixels; roi_w == 0 (or roi_h == 0)
	 * means the whole image. It must lie inside the image. */
	int roi_x, roi_y, roi_w, roi_h;
	/* Size the region is resized to by the next stage; 0 means no
	 * resize follows: decode at full scale. Used only to pick the JPEG
	 * DCT scale, never to resize. */
	int target_w, target_h;
	/* 0: the JPEG DCT scale is picked from the target (see struct
	 * ts_decode_geom); 1, 2, 4 or 8: decode at scale_num / 8 whatever
	 * the target (a region of the image the whole of which is resized,
	 * at the scale the whole image's decode would use). */
	int scale_num;
	/* The caller reads the image through its stride (a resample does):
	 * the JPEG decoder may then leave it with a stride wider than
	 * width * channels, its rows written in place by libjpeg instead of
	 * copied out of a scratch row. */
	bool strided;
};

/*
 * Where the request ended up (filled by ts_decoder_geometry and
 * ts_decoder_decode).
 *
 * JPEG scale s = scale_num / 8 is the smallest n in {1, 2, 4, 8} with
 * roi_w * n >= target_w * 8 and roi_h * n >= target_h * 8, so the scaled
 * region is never smaller than the target (the resize after still
 * downsamples); n = 8 when there is no target. (3/8 and 5/8..7/8 are not
 * used: libjpeg-turbo decodes them slower than 4/8 or even 8/8.) PNG:
 * always 8/8.
 *
 * Rounding: libjpeg's scaled image is ceil(W * s) x ceil(H * s); scaled
 * pixel i covers full-resolution [i / s, (i + 1) / s). The output holds
 * scaled columns floor(roi_x * s) .. ceil((roi_x + roi_w) * s) - 1
 * (clamped to the scaled width), rows likewise. So at scale 1 the output
 * is exactly the ROI; at s < 1 it may hold up to one partial pixel more
 * on each side, and src_* tell the resampler where the requested region
 * lies in it, in output pixel units (pixel i spans [i, i + 1)).
 *
 * Exactness (tests/test-decode.c): at scale 1 a region is pixel-identical
 * to a full decode then crop (4:2:0, 4:2:2, 4:4:4, progressive, gray); at
 * s < 1 it is identical to `djpeg -scale n/8` of the whole file cropped at
 * (floor(roi_x * s), floor(roi_y * s)), and within mean 1 / max 6 levels
 * of a full decode box-averaged by 8/n on photo-like images.
 */
struct ts_decode_geom {
	int scale_num, scale_denom;   /* scale_denom is always 8 */
	int out_w, out_h;             /* output image size */
	double src_x, src_y;          /* requested ROI origin in the output */
	double src_w, src_h;          /* requested ROI size in the output */
};

struct ts_decoder;

/* Make a decoder. *out is written only on success; free it with
 * ts_decoder_destroy. Returns 0 or TS_E_NOMEM. */
int ts_decoder_create(struct ts_decoder **out, struct ts_error *err);

/* Free a decoder and its buffers. NULL is a no-op. */
void ts_decoder_destroy(struct ts_decoder *d);

/* The format from the first bytes (JPEG: FF D8 FF; PNG: the 8-byte
 * signature); TS_FORMAT_UNKNOWN otherwise. Pure; thread-safe. */
enum ts_format ts_decoder_sniff(const uint8_t *buf, size_t len);

/* Read only the header of buf[0..len) into *info (written only on
 * success). Cheap: no pixel data is decoded. Returns 0 or TS_E_DECODE. */
int ts_decoder_info(struct ts_decoder *d, const uint8_t *buf, size_t len,
		    struct ts_decode_info *info, struct ts_error *err);

/* Compute, without decoding, the scale and output size a request gives
 * for an image with header *info. *geom written only on success. Returns
 * 0, or TS_E_ARG when the request is invalid (ROI outside the image,
 * depth not 8/16, negative target). Pure; thread-safe. */
int ts_decoder_geometry(const struct ts_decode_info *info,
			const struct ts_decode_req *req,
			struct ts_decode_geom *geom, struct ts_error *err);

/*
 * Decode buf[0..len) as *req asks into out, which is reshaped with
 * ts_image_reserve (its buffer is reused and grown when needed; the caller
 * keeps ownership and frees it with ts_image_free). geom, when non-NULL,
 * receives the geometry (see struct ts_decode_geom) on success.
 *
 * Returns 0; TS_E_DECODE for corrupt, truncated, unsupported or oversized
 * data; TS_E_ARG for an invalid request; TS_E_NOMEM. On failure out stays
 * a valid image whose pixels and shape are unspecified.
 */
int ts_decoder_decode(struct ts_decoder *d, const uint8_t *buf, size_t len,
		      const struct ts_decode_req *req, struct ts_image *out,
		      struct ts_decode_geom *geom, struct ts_error *err);

/*
 * Row-wise decoding of a whole image at full scale, for a caller that
 * never needs all of it at once (the engine's banded tiling, which holds
 * one band of tile-height rows). Row y is byte for byte row y of
 * ts_decoder_decode's whole-image output for the same color and depth
 * (req's region and target are ignored).
 *
 * ts_decoder_rows_begin reads the header into *info and prepares the
 * decode; interlaced PNGs and progressive JPEGs are refused with
 * TS_E_ARG (every row of them is needed before the first: decode them
 * whole), too large or corrupt headers with TS_E_DECODE as above.
 * ts_decoder_rows_read then decodes the next n rows into dst (row k at
 * dst + k * stride, info->width pixels of the requested channels and
 * depth), or skips them when dst is NULL; asking for more rows than are
 * left is TS_E_ARG; corrupt or truncated data TS_E_DECODE, after which
 * only ts_decoder_rows_end may be called. ts_decoder_rows_end (always
 * after a successful begin; a no-op otherwise) frees the per-image state.
 * buf must stay valid until then. One row-wise decode per decoder at a
 * time; ts_decoder_decode and ts_decoder_info end it.
 */
int ts_decoder_rows_begin(struct ts_decoder *d, const uint8_t *buf, size_t len,
			  const struct ts_decode_req *req, struct ts_decode_info *info,
			  struct ts_error *err);
int ts_decoder_rows_read(struct ts_decoder *d, void *dst, size_t stride, int n,
			 struct ts_error *err);
void ts_decoder_rows_end(struct ts_decoder *d);

/* Internal: the format back ends (runtime/decode_jpeg.c, decode_png.c),
 * called by decode.c with the per-format state they own. */
struct ts_decoder_jpeg;
struct ts_decoder_png;
/* For the decoders: TS_E_DECODE for an image over TS_DECODE_MAX_DIM a side
 * or TS_DECODE_MAX_PIXELS, before anything image-sized is allocated; and
 * grow the malloc'd buffer *(uint8_t **)pp of *cap bytes to at least need
 * bytes (-1 when out of memory, the buffer kept). */
int ts_decoder_check_size(const struct ts_decode_info *info, struct ts_error *err);
int ts_decoder_grow(void *pp, size_t *cap, size_t need);

int ts_decoder_jpeg_create(struct ts_decoder_jpeg **out, struct ts_error *err);
void ts_decoder_jpeg_destroy(struct ts_decoder_jpeg *j);
int ts_decoder_jpeg_info(struct ts_decoder_jpeg *j, const uint8_t *buf,
			 size_t len, struct ts_decode_info *info,
			 struct ts_error *err);
int ts_decoder_jpeg_decode(struct ts_decoder_jpeg *j, const uint8_t *buf,
			   size_t len, const struct ts_decode_req *req,
			   struct ts_image *out, struct ts_decode_geom *geom,
			   struct ts_error *err);
/* Convert n pixels from src (src_c = 1 or 3 channels of src_depth = 8 or
 * 16 bits, uint16 in host order) to dst (dst_c channels, dst_depth bits)
 * with the rules above (replicate gray, PIL luma, x * 257, round(x / 257)).
 * src and dst must not overlap. */
void ts_decoder_convert_row(const void *src, int src_c, int src_depth,
			    void *dst, int dst_c, int dst_depth, int n);
int ts_decoder_jpeg_rows_begin(struct ts_decoder_jpeg *j, const uint8_t *buf,
			       size_t len, const struct ts_decode_req *req,
			       struct ts_decode_info *info, struct ts_error *err);
int ts_decoder_jpeg_rows_read(struct ts_decoder_jpeg *j, void *dst, size_t stride,
			      int n, struct ts_error *err);
void ts_decoder_jpeg_rows_end(struct ts_decoder_jpeg *j);
int ts_decoder_png_rows_begin(struct ts_decoder_png *p, const uint8_t *buf,
			      size_t len, const struct ts_decode_req *req,
			      struct ts_decode_info *info, struct ts_error *err);
int ts_decoder_png_rows_read(struct ts_decoder_png *p, void *dst, size_t stride,
			     int n, struct ts_error *err);
void ts_decoder_png_rows_end(struct ts_decoder_png *p);
int ts_decoder_png_create(struct ts_decoder_png **out, struct ts_error *err);
void ts_decoder_png_destroy(struct ts_decoder_png *p);
int ts_decoder_png_info(struct ts_decoder_png *p, const uint8_t *buf,
			size_t len, struct ts_decode_info *info,
			struct ts_error *err);
int ts_decoder_png_decode(struct ts_decoder_png *p, const uint8_t *buf,
			  size_t len, const struct ts_decode_req *req,
			  struct ts_image *out, struct ts_decode_geom *geom,
			  struct ts_error *err);

#endif
