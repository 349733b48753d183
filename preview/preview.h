/*
 * preview.h - a picture of what a plan makes (`tsrun preview`): a few
 * samples from a stream position, run in this process through the same
 * engine and output stage a served ring gets, converted back to viewable
 * 8-bit RGB (the plan's normalize undone), laid out as a grid with each
 * sample's position, label, class folder and file name, and written as
 * one PNG.
 *
 * Two pictures:
 *   grid    N samples from (start_epoch, start_index), in stream order,
 *           left to right, top to bottom; each cell holds the sample at
 *           its own size, pixel for pixel.
 *   stages  one row per sample, one column per stage of the plan as it
 *           runs (fused stages are one column: "decode+random_resized_crop",
 *           "output: flip+normalize+to"), each stage's image scaled down
 *           to fit the final sample's size when it is larger.
 *
 * How samples are made: a one-to-one plan runs in discard mode with a sink
 * (engine.h), which gives each sample's file; stage k runs the plan cut
 * after op k (ts_plan_prefix_init). A tile, filter or plugin plan runs
 * into a ring of its own, read as an in-process trainer reads it; its
 * samples' files are not known (the ring carries label and position
 * only). Either way the bytes are the trainer's: the same for any thread
 * count.
 *
 * Un-normalize: float samples after normalize(mean, std) are shown as
 * round((x * std[c] + mean[c]) * 255) (float32 arithmetic, clamped to
 * 0..255), other float samples as round(x * 255); uint16 as
 * (x + 128) / 257; 1-channel samples as gray, 2 channels as the first
 * one, 4 as the first three. The caption says which.
 *
 * Functions return 0 or a negative code (-errno or TS_E_*) and fill err;
 * nothing here prints. A struct ts_preview is used by one thread.
 */
#ifndef TS_PREVIEW_H
#define TS_PREVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "image.h"
#include "plan.h"

/* The picture's pixel bytes (width x height x 3) above which it is
 * refused: 64 MiB. */
#define TS_PREVIEW_MAX_BYTES (64u * 1024u * 1024u)
/* Most samples (grid cells, or rows of stages) one picture shows. */
#define TS_PREVIEW_MAX_SAMPLES 1024

/* Layout, in pixels (documented in tsrun(1)). */
#define TS_PREVIEW_MARGIN 6     /* around everything */
#define TS_PREVIEW_GAP 6        /* between cells */
#define TS_PREVIEW_BAND_LINES 3 /* text lines under each cell */
#define TS_PREVIEW_MIN_CELL 96  /* cell width with labels: 16 characters */

struct ts_preview_opts {
	uint64_t start_epoch;   /* the first sample's position */
	uint64_t start_index;
	int samples;            /* 1..TS_PREVIEW_MAX_SAMPLES */
	int threads;            /* 0: the plan's setting */
	bool stages;            /* the stages picture instead of the grid */
	bool labels;            /* caption and per-cell text; false: pixels
				   only (cells and gaps) */
	uint64_t max_bytes;     /* 0: TS_PREVIEW_MAX_BYTES */
};

/* One sample (or, with stages, one stage of one sample) in the picture. */
struct ts_preview_cell {
	int x, y;               /* top-left of its pixels in the picture */
	int width, height;      /* as shown */
	int src_width, src_height; /* as the stage made it */
	enum ts_dtype dtype;    /* as the stage made it */
	int stage;              /* column of stages; -1 in the grid */
	int view;               /* views(...): the sample's view shown; -1:
				   a pipeline without views */
	uint64_t epoch, index;
	int32_t label;
	const char *class_name; /* the folder source's class; NULL: none */
	const char *path;       /* the file; NULL: synthetic or unknown */
};

struct ts_preview;

/* Run plan (borrowed; not modified) and compose its picture. Fails with
 * TS_E_ARG for bad options or a picture over max_bytes (err gives its
 * size and says what to ask for instead), the engine's errors otherwise
 * (TS_E_SOURCE, TS_E_DECODE ...). *out is the caller's, to free with
 * ts_preview_destroy. */
int ts_preview_make(const struct ts_plan *plan, const struct ts_preview_opts *o,
		    struct ts_preview **out, struct ts_error *err);

/* The picture: 8-bit RGB. */
const struct ts_image *ts_preview_image(const struct ts_preview *p);

/* The cells, in stream order (with stages: row by row). */
size_t ts_preview_cells(const struct ts_preview *p,
			const struct ts_preview_cell **cells);

/* The caption's text, lines separated by '\n' (drawn at the top when
 * labels are on, and written into the PNG's Description either way). */
const char *ts_preview_caption(const struct ts_preview *p);

/* The stages' names (stages pictures; 0 otherwise), e.g.
 * "decode+random_resized_crop". */
size_t ts_preview_stages(const struct ts_preview *p, const char *const **names);

/* Write the picture to path as PNG (pngwrite.h). */
int ts_preview_write_png(const struct ts_preview *p, const char *path,
			 struct ts_error *err);

/* NULL is a no-op. */
void ts_preview_destroy(struct ts_preview *p);

#endif
