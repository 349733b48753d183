/*
 * cloudmask.c - a plugin operator for on-board pipelines: clouds are the
 * brightest thing a camera pointed at the Earth sees, and a tile that is
 * mostly cloud is not worth downlinking or classifying.
 *
 *   plugin("cloudmask.so", threshold = 0.8, max_fraction = 0.5, mode = drop)
 *
 * A pixel is cloud when the mean of its channels exceeds threshold (a
 * fraction of full scale, 0..1). mode = drop (the default) drops a sample
 * in which more than max_fraction of the pixels are cloud; mode = mask
 * keeps every sample but zeroes its cloud pixels, so a classifier sees
 * ground only. Unknown parameters or values out of range are an error
 * (the sample fails), not silently ignored.
 *
 * Build: cc -shared -fPIC -I src -o cloudmask.so examples/plugins/cloudmask.c
 */
#include <stdlib.h>
#include <string.h>

#include "tsrun_plugin.h"

int tsrun_plugin_abi(void)
{
	return TSRUN_PLUGIN_ABI;
}

/* A number in lo..hi from text; -1 when it is not one. */
static int number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

int tsrun_plugin_process(const struct tsrun_plugin_image *in,
			 struct tsrun_plugin_image *out,
			 const struct tsrun_plugin_param *params, int n_params)
{
	double threshold = 0.8, max_fraction = 0.5;
	int mask = 0;

	for (int i = 0; i < n_params; i++) {
		const char *k = params[i].name, *v = params[i].value;
		if (strcmp(k, "threshold") == 0) {
			if (number(v, 0, 1, &threshold))
				return -2;
		} else if (strcmp(k, "max_fraction") == 0) {
			if (number(v, 0, 1, &max_fraction))
				return -2;
		} else if (strcmp(k, "mode") == 0) {
			if (strcmp(v, "mask") == 0)
				mask = 1;
			else if (strcmp(v, "drop") != 0)
				return -2;
		} else {
			return -1; /* unknown parameter */
		}
	}

	const int C = in->channels;
	const double full = in->depth == 16 ? 65535.0 : 255.0;
	const double limit = threshold * full * C; /* compare channel sums */
	uint64_t cloud = 0;
	for (int32_t y = 0; y < in->height; y++) {
		const uint8_t *row8 = (const uint8_t *)in->data + (uint64_t)y * in->stride;
		uint8_t *orow8 = (uint8_t *)out->data + (uint64_t)y * out->stride;
		for (int32_t x = 0; x < in->width; x++) {
			double sum = 0;
			for (int c = 0; c < C; c++)
				sum += in->depth == 16
					? ((const uint16_t *)(const void *)row8)[x * C + c]
					: row8[x * C + c];
			if (sum <= limit)
				continue;
			cloud++;
			if (mask) {
				size_t px = (size_t)C * (in->depth == 16 ? 2 : 1);
				memset(orow8 + (size_t)x * px, 0, px);
			}
		}
	}
	if (mask)
		return TSRUN_PLUGIN_KEEP;
	uint64_t total = (uint64_t)in->width * (uint64_t)in->height;
	return (double)cloud > max_fraction * (double)total ? TSRUN_PLUGIN_DROP
							    : TSRUN_PLUGIN_KEEP;
}
