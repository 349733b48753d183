/*
 * finish.c - the host side of the finishing stage: parameters from a
 * plan, sizes, and the CPU reference the GPU tests compare against. Built
 * with and without CUDA.
 */
#include "tscuda.h"

#include <math.h>
#include <string.h>

#include "util.h"

int ts_finish_params_from_plan(const struct ts_plan *plan,
			       struct ts_finish_params *p, struct ts_error *err)
{
	struct ts_finish_params q = {0};

	if (!plan || !p || !plan->device.cuda)
		return ts_error_set(err, TS_E_ARG, "the pipeline has no device(cuda) stage");
	if (plan->dtype != TS_DTYPE_U8 || plan->layout != TS_LAYOUT_NHWC ||
	    plan->channels < 1 || plan->channels > 4 || !plan->height || !plan->width)
		return ts_error_set(err, TS_E_ARG,
				    "device(cuda) needs fixed-size uint8 nhwc samples with 1 to 4 channels");
	q.height = plan->height;
	q.width = plan->width;
	q.channels = plan->channels;
	q.dtype = plan->device.dtype;
	q.normalize = plan->device.normalize;
	memcpy(q.mean, plan->device.mean, sizeof(q.mean));
	memcpy(q.std, plan->device.std, sizeof(q.std));
	*p = q;
	return 0;
}

size_t ts_finish_sample_bytes(const struct ts_finish_params *p)
{
	return (size_t)p->height * (size_t)p->width * (size_t)p->channels *
	       ts_dtype_size(p->dtype);
}

size_t ts_finish_sample_stride(const struct ts_finish_params *p)
{
	size_t b = ts_finish_sample_bytes(p);
	return (b + TS_FINISH_ALIGN - 1) / TS_FINISH_ALIGN * TS_FINISH_ALIGN;
}

/* IEEE 754 binary16 from a float, round to nearest even (as CUDA's
 * __float2half_rn). */
static uint16_t to_half(float f)
{
	uint32_t x;
	uint16_t sign;
	int32_t exp;
	uint32_t mant;

	memcpy(&x, &f, sizeof(x));
	sign = (uint16_t)((x >> 16) & 0x8000u);
	exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	mant = x & 0x7fffffu;
	if (((x >> 23) & 0xff) == 0xff) /* inf, nan */
		return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		/* subnormal half (or zero) */
		uint32_t m, shift, h, rem, halfway;
		if (exp < -10)
			return sign;
		m = mant | 0x800000u;
		shift = (uint32_t)(14 - exp);
		h = m >> shift;
		rem = m & ((1u << shift) - 1);
		halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	{
		uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
		uint32_t rem = mant & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
			h++; /* may carry into the exponent: still right */
		return (uint16_t)(sign | h);
	}
}

void ts_finish_reference(const uint8_t *src, void *dst, size_t n,
			 const struct ts_finish_params *p)
{
	size_t hw = (size_t)p->height * (size_t)p->width;
	int C = p->channels;
	float scale[4], bias[4];

	for (int c = 0; c < 4; c++) {
		float m = p->normalize ? p->mean[c] : 0.0f;
		float s = p->normalize ? p->std[c] : 1.0f;
		scale[c] = 1.0f / (255.0f * s);
		bias[c] = -m / s;
	}
	for (size_t s = 0; s < n; s++)
		for (int c = 0; c < C; c++)
			for (size_t i = 0; i < hw; i++) {
				float v = fmaf((float)src[(s * hw + i) * (size_t)C + (size_t)c],
					       scale[c], bias[c]);
				size_t o = (s * (size_t)C + (size_t)c) * hw + i;
				if (p->dtype == TS_DTYPE_F16)
					((uint16_t *)dst)[o] = to_half(v);
				else
					((float *)dst)[o] = v;
			}
}
