/*
 * source_synthetic.c - the synthetic() source: its shape checks and the generated
 * pixels (no files).
 */
#include "source_internal.h"

#include <stdint.h>

#include "rng.h"
#include "util.h"

int ts_source_synthetic_check(const struct ts_source *src, struct ts_error *err)
{
	if (src->count <= 0)
		return ts_error_set(err, TS_E_SOURCE,
				    "synthetic source: count must be positive (got %lld)",
				    (long long)src->count);
	if (src->height <= 0 || src->width <= 0 || src->height > 65535 ||
	    src->width > 65535 || src->channels < 1 || src->channels > 4 ||
	    (src->depth != 8 && src->depth != 16))
		return ts_error_set(err, TS_E_ARG,
				    "synthetic source: bad shape %dx%dx%d at %d bits",
				    src->height, src->width, src->channels, src->depth);
	return 0;
}


/*
 * A per-image gradient plus a hashed texture: cheap enough that overhead
 * benchmarks measure the pipeline rather than the generator, varied enough
 * that a wrong index or a swapped channel shows up in a digest.
 */
int ts_source_synthetic(const struct ts_source *src, uint64_t id,
			struct ts_image *out, int32_t *label)
{
	int rc = ts_source_synthetic_check(src, NULL);
	if (rc)
		return TS_E_ARG;
	enum ts_dtype dt = src->depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8;
	rc = ts_image_reserve(out, src->width, src->height, src->channels, dt);
	if (rc)
		return rc;
	uint64_t h = ts_rng_mix64(id + 0x9e3779b97f4a7c15ULL);
	unsigned ax = (unsigned)(h & 7) + 1, ay = (unsigned)((h >> 3) & 7) + 1;
	unsigned ac = (unsigned)((h >> 6) & 63) + 17, base = (unsigned)(h >> 16);
	int c = src->channels;
	for (int y = 0; y < src->height; y++) {
		uint8_t *row = out->data + (size_t)y * out->stride;
		for (int x = 0; x < src->width; x++) {
			unsigned noise = (unsigned)((x * 31 + y * 17) ^ (int)(h >> 40)) & 15;
			for (int k = 0; k < c; k++) {
				unsigned v = base + (unsigned)x * ax + (unsigned)y * ay +
					     (unsigned)k * ac + noise;
				size_t at = (size_t)x * (size_t)c + (size_t)k;
				if (dt == TS_DTYPE_U16)
					((uint16_t *)row)[at] = (uint16_t)(v * 257u);
				else
					row[at] = (uint8_t)v;
			}
		}
	}
	if (label)
		*label = src->classes > 0 ? (int32_t)(id % (uint64_t)src->classes) : 0;
	return 0;
}

/* Nothing to list: count items of labels cycling over classes. */
static int synthetic_open(const struct ts_source *src, const char *root,
			  struct ts_index *ix, struct ts_item_vec *items,
			  struct ts_error *err)
{
	int rc = ts_source_synthetic_check(src, err);
	if (rc)
		return rc;
	ix->n_total = (size_t)src->count;
	ix->n_classes = src->classes > 0 ? (size_t)src->classes : 1;
	return 0;
}

/* Item i: no file; its id (the generator's input) in offset. */
static void synthetic_item(const struct ts_index *ix, size_t i, struct ts_item *out)
{
	uint64_t id = (uint64_t)i;
	out->path = NULL;
	out->label = (int32_t)(id % ix->n_classes);
	out->offset = id;
	out->size = 0;
	out->is_range = false;
}

const struct ts_source_type ts_source_type_synthetic = {
	.kind = TS_SRC_SYNTHETIC, .open = synthetic_open, .item = synthetic_item,
};
