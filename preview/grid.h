/*
 * grid.h - samples back to viewable pixels, for `tsrun preview`
 * (preview.h): how a plan's output values map to 8-bit levels (its
 * normalize undone), and the conversion of one sample, in any dtype and
 * layout, to an 8-bit RGB struct ts_image.
 *
 * Pure functions; thread safe on distinct outputs. Nothing here prints.
 */
#ifndef TS_GRID_H
#define TS_GRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "image.h"
#include "plan.h"

enum ts_grid_map {
	TS_GRID_DIRECT,     /* uint8 levels as they are */
	TS_GRID_U16,        /* (x + 128) / 257, as to(uint8) rounds */
	TS_GRID_UNIT,       /* float in [0, 1]: round(x * 255) */
	TS_GRID_UNNORM,     /* normalized float: round((x * std + mean) * 255) */
};

struct ts_grid_values {
	enum ts_grid_map map;
	int n;              /* UNNORM: channels of mean and std */
	float mean[4], std[4];
	bool per_sample;    /* a policy's branches (random_apply, random_choice)
			       leave the values differently: each sample's
			       own are those of the branch it drew */
};

/* A sample whose policies' draws are replayed: the seed, epoch and index
 * its ops' streams are keyed by (ts_rng_init, as the engine's workers
 * draw them: the sample's key, ts_engine_key; a view's seed is
 * ts_plan_view_seed's). */
struct ts_grid_sample {
	uint64_t seed, epoch, index;
};

/* The mapping for samples of plan (what its ops, fused and output parts
 * included, leave in the last one's dtype): the last normalize's mean
 * and std when the samples are still float after it. A normalize inside
 * random_apply or random_choice counts for sample s where s drew the
 * branch holding it. s NULL, or a policy after a tile (a tile's streams
 * are not the sample's): a policy's outcomes count where they all agree,
 * and per_sample is set where they do not. */
void ts_grid_values_of(const struct ts_plan *plan, const struct ts_grid_sample *s,
		       struct ts_grid_values *v);

/* One sentence for a caption: "float32 samples shown un-normalized:
 * (x * std + mean) * 255 with mean [...] and std [...]". */
void ts_grid_values_describe(const struct ts_grid_values *v, enum ts_dtype dtype,
			     char *buf, size_t n);

/* Convert one sample (height x width x channels of dtype, in layout) to
 * 8-bit RGB in out (reserved here). Returns 0, TS_E_NOMEM or TS_E_ARG. */
int ts_grid_to_rgb(const void *data, int height, int width, int channels,
		   enum ts_dtype dtype, enum ts_layout layout,
		   const struct ts_grid_values *v, struct ts_image *out);

#endif
