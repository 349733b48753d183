/*
 * grid.c - output values to 8-bit display levels (grid.h).
 */
#include "grid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "augment.h"
#include "util.h"

/* Walk one op (its fused op and output parts included) in run order: the
 * dtype each writes, and the mean and std of one that normalizes (has
 * them). An integer dtype after a normalize holds clamped normalized
 * levels (to(uint8)): shown as they are, like any integer sample. */
static void scan(const struct ts_op *op, struct ts_grid_values *v,
		 enum ts_dtype *t, bool *normalized)
{
	if (op->n_mean > 0) {
		v->n = op->n_mean;
		memcpy(v->mean, op->mean, sizeof(v->mean));
		memcpy(v->std, op->std, sizeof(v->std));
		*normalized = true;
	}
	if (!ts_op_is_output(op)) {
		*t = op->out_dtype;
		if (*t == TS_DTYPE_U8 || *t == TS_DTYPE_U16)
			*normalized = false;
	}
	if (op->fused)
		scan(op->fused, v, t, normalized);
	for (size_t i = 0; i < op->n_parts; i++)
		scan(&op->parts[i], v, t, normalized);
}

void ts_grid_values_of(const struct ts_plan *plan, struct ts_grid_values *v)
{
	memset(v, 0, sizeof(*v));
	enum ts_dtype t = TS_DTYPE_U8;
	bool normalized = false;
	for (size_t i = 0; i < plan->n_ops; i++)
		scan(&plan->ops[i], v, &t, &normalized);
	if (t == TS_DTYPE_U8)
		v->map = TS_GRID_DIRECT;
	else if (t == TS_DTYPE_U16)
		v->map = TS_GRID_U16;
	else
		v->map = normalized ? TS_GRID_UNNORM : TS_GRID_UNIT;
}

static void list(const float *x, int n, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%g", i ? ", " : "", (double)x[i]);
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

void ts_grid_values_describe(const struct ts_grid_values *v, enum ts_dtype dtype,
			     char *buf, size_t n)
{
	char m[64], s[64];
	switch (v->map) {
	case TS_GRID_DIRECT:
		snprintf(buf, n, "%s samples shown as they are", ts_dtype_name(dtype));
		break;
	case TS_GRID_U16:
		snprintf(buf, n, "uint16 samples shown as 8-bit: (x + 128) / 257");
		break;
	case TS_GRID_UNIT:
		snprintf(buf, n, "%s samples shown as x * 255", ts_dtype_name(dtype));
		break;
	case TS_GRID_UNNORM:
		list(v->mean, v->n, m, sizeof(m));
		list(v->std, v->n, s, sizeof(s));
		snprintf(buf, n, "%s samples shown un-normalized: (x * std + mean) * 255, "
			 "mean %s, std %s", ts_dtype_name(dtype), m, s);
		break;
	}
}

static inline uint8_t level(float x)
{
	/* NaN (a float plugin's output, say) shows black */
	if (!(x > 0.0f))
		return 0;
	if (x >= 255.0f)
		return 255;
	return (uint8_t)rintf(x);
}

/* Element c of pixel (y, x) as a display level. */
static uint8_t value(const void *data, int h, int w, int ch, enum ts_dtype t,
		     enum ts_layout l, const struct ts_grid_values *v, int y, int x, int c)
{
	size_t i = l == TS_LAYOUT_NCHW ? ((size_t)c * (size_t)h + (size_t)y) * (size_t)w + (size_t)x
				       : ((size_t)y * (size_t)w + (size_t)x) * (size_t)ch + (size_t)c;
	float f;
	switch (t) {
	case TS_DTYPE_U8:
		return ((const uint8_t *)data)[i];
	case TS_DTYPE_U16: {
		uint16_t u = ((const uint16_t *)data)[i];
		return (uint8_t)((u + 128u) / 257u);
	}
	case TS_DTYPE_F16:
		f = ts_out_f32_from_f16(((const uint16_t *)data)[i]);
		break;
	default:
		f = ((const float *)data)[i];
		break;
	}
	if (v->map == TS_GRID_UNNORM && c < v->n) {
		/* two roundings in float32, as a trainer's x * std + mean */
		float u = f * v->std[c];
		u = u + v->mean[c];
		return level(u * 255.0f);
	}
	return level(f * 255.0f);
}

int ts_grid_to_rgb(const void *data, int height, int width, int channels,
		   enum ts_dtype dtype, enum ts_layout layout,
		   const struct ts_grid_values *v, struct ts_image *out)
{
	if (!data || height <= 0 || width <= 0 || channels < 1 || channels > 4)
		return TS_E_ARG;
	if (ts_image_reserve(out, width, height, 3, TS_DTYPE_U8))
		return TS_E_NOMEM;
	for (int y = 0; y < height; y++) {
		uint8_t *row = out->data + (size_t)y * out->stride;
		for (int x = 0; x < width; x++) {
			uint8_t px[3];
			if (channels < 3) {
				px[0] = value(data, height, width, channels, dtype, layout, v, y, x, 0);
				px[1] = px[2] = px[0];
			} else {
				for (int c = 0; c < 3; c++)
					px[c] = value(data, height, width, channels, dtype, layout,
						      v, y, x, c);
			}
			memcpy(row + (size_t)x * 3, px, 3);
		}
	}
	return 0;
}
