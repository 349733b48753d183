/* image.c - growable pixel buffers reused across samples. */
#include "image.h"

#include <string.h>

#include <errno.h>
#include <stdlib.h>

int ts_image_reserve(struct ts_image *img, int width, int height,
		     int channels, enum ts_dtype dtype)
{
	if (width <= 0 || height <= 0 || channels <= 0 || channels > 4)
		return -EINVAL;
	size_t stride = (size_t)width * (size_t)channels * ts_dtype_size(dtype);
	size_t need = stride * (size_t)height;
	if (need > img->capacity) {
		/* Grow by half again so a stream of slowly growing images
		 * reallocates O(log n) times. */
		size_t cap = need + need / 2;
		uint8_t *p = realloc(img->data, cap);
		if (!p)
			return TS_E_NOMEM;
		img->data = p;
		img->capacity = cap;
	}
	img->width = width;
	img->height = height;
	img->channels = channels;
	img->dtype = dtype;
	img->stride = stride;
	return 0;
}

void ts_image_free(struct ts_image *img)
{
	if (!img)
		return;
	free(img->data);
	img->data = NULL;
	img->capacity = 0;
	img->width = img->height = img->channels = 0;
	img->stride = 0;
}

void ts_image_swap(struct ts_image *a, struct ts_image *b)
{
	struct ts_image t = *a;
	*a = *b;
	*b = t;
}

struct ts_image ts_image_view(const struct ts_image *img, int x, int y, int w,
			      int h)
{
	struct ts_image v = *img;
	v.data = img->data + (size_t)y * img->stride +
		 (size_t)x * (size_t)img->channels * ts_dtype_size(img->dtype);
	v.width = w;
	v.height = h;
	return v;
}

void ts_image_compact(struct ts_image *img)
{
	const size_t row = (size_t)img->width * (size_t)img->channels * ts_dtype_size(img->dtype);
	if (img->stride == row)
		return;
	/* Row y moves down to y * row <= y * stride: in order, memmove. */
	for (int y = 1; y < img->height; y++)
		memmove(img->data + (size_t)y * row, img->data + (size_t)y * img->stride, row);
	img->stride = row;
}

size_t ts_image_bytes(const struct ts_image *img)
{
	return img->stride * (size_t)img->height;
}
