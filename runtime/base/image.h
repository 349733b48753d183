/*
 * image.h - a decoded image in memory: interleaved HWC pixels of one
 * dtype (uint8, uint16 or float32), rows `stride` bytes apart. Decoders
 * write into one, augment kernels read one and write another, and the
 * output stage reads the last one into a ring slot.
 *
 * Buffers are reused: ts_image_reserve grows data only when needed, so a
 * worker keeps a few images for its whole life and allocates nothing per
 * sample once warmed up.
 */
#ifndef TS_IMAGE_H
#define TS_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include "plan.h"

struct ts_image {
	int width, height, channels;
	enum ts_dtype dtype;   /* TS_DTYPE_U8, TS_DTYPE_U16 or TS_DTYPE_F32 */
	size_t stride;         /* bytes per row */
	uint8_t *data;         /* owned */
	size_t capacity;       /* bytes allocated at data */
};

/* Set the shape (stride = width * channels * elem size) and make sure data
 * holds it, growing when needed. Returns 0 or TS_E_NOMEM. */
int ts_image_reserve(struct ts_image *img, int width, int height,
		     int channels, enum ts_dtype dtype);
/* Free the buffer; the struct may be reused after. */
void ts_image_free(struct ts_image *img);
/* Exchange two images (buffers included): ping-pong between stages. */
void ts_image_swap(struct ts_image *a, struct ts_image *b);
/* The w x h window at (x, y) of img, inside it, sharing its pixels (rows
 * img->stride apart): read it, never reserve into or free it. */
struct ts_image ts_image_view(const struct ts_image *img, int x, int y, int w,
			      int h);
/* Close up rows whose stride is wider than width * channels * elem size
 * (a decoder's, ts_decode_req.strided), in place. */
void ts_image_compact(struct ts_image *img);
/* Bytes of pixel data: height * stride. */
size_t ts_image_bytes(const struct ts_image *img);

#endif
