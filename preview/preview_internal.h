/*
 * preview_internal.h - what the parts of `tsrun preview` (preview.h)
 * share, and nothing else:
 *   preview.c        running the plan to collect the samples shown (discard
 *                    mode with a sink, or a ring of its own; stage by
 *                    stage; views split into shots), the API
 *   preview_sheet.c  the picture made of them: layout, cells and the text
 *                    under them, stage names, the caption
 */
#ifndef TS_PREVIEW_INTERNAL_H
#define TS_PREVIEW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "plan.h"
#include "preview.h"

/* One sample as the engine made it (a copy). */
struct shot {
	bool have;
	uint64_t epoch, index;
	uint64_t key;           /* what its draws are keyed by (engine.h) */
	int32_t label;
	char *path;             /* NULL: synthetic or unknown */
	char *class_name;
	void *data;
	size_t bytes;
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	int view;               /* views(...): which; -1 for a whole sample */
};

struct ts_preview {
	struct ts_image canvas;
	struct ts_preview_cell *cells;
	size_t n_cells;
	char *caption;
	char **stage_names;
	size_t n_stages;
	/* what cells point into */
	struct shot *shots;
	size_t n_shots;
};

/* preview_sheet.c: append fmt to the malloc'd string *s (0 or
 * TS_E_NOMEM); a stage's name as `tsrun graph` calls its ops (NULL: out
 * of memory). */
__attribute__((format(printf, 2, 3)))
int ts_preview_append(char **s, const char *fmt, ...);
char *ts_preview_stage_name(const struct ts_op *op);

/* preview_sheet.c: refuse, before running, a fixed-size grid that cannot
 * fit in max_bytes; write p->caption for the got samples collected
 * (files_known: their files are; stages_note: a line more, or NULL);
 * compose p->canvas and p->cells from p->shots as a grid, or as stages
 * (shots[k * n + i] is sample i after stage k, shown by plans[k]). */
int ts_preview_precheck(const struct ts_plan *plan, const struct ts_preview_opts *o,
			uint64_t max_bytes, struct ts_error *err);
int ts_preview_make_caption(struct ts_preview *p, const struct ts_plan *plan,
			    const struct ts_preview_opts *o, size_t got, bool files_known,
			    const char *stages_note);
int ts_preview_compose_grid(struct ts_preview *p, const struct ts_plan *plan,
			    const struct ts_preview_opts *o, uint64_t max_bytes,
			    struct ts_error *err);
int ts_preview_compose_stages(struct ts_preview *p, const struct ts_plan *plan,
			      const struct ts_plan *const *plans, size_t n,
			      const struct ts_preview_opts *o, uint64_t max_bytes,
			      struct ts_error *err);

#endif
