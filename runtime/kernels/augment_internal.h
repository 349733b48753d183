/*
 * augment_internal.h - what augment.c and augment_resize.c share: one
 * uint16 or float32 element of a row as float, and back (uint16 clamped
 * and rounded half up, as the float resampler and the colour blends
 * store it). Internal to those two files.
 */
#ifndef TS_AUGMENT_INTERNAL_H
#define TS_AUGMENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

static inline float ts_aug_load_f(const uint8_t *row, enum ts_dtype t, size_t i)
{
	if (t == TS_DTYPE_U16)
		return ((const uint16_t *)(const void *)row)[i];
	return ((const float *)(const void *)row)[i];
}

static inline void ts_aug_store_f(uint8_t *row, enum ts_dtype t, size_t i, float v)
{
	if (t == TS_DTYPE_U16) {
		v = v < 0.0f ? 0.0f : v > 65535.0f ? 65535.0f : v;
		((uint16_t *)(void *)row)[i] = (uint16_t)(v + 0.5f);
	} else {
		((float *)(void *)row)[i] = v;
	}
}

#endif
