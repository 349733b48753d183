/*
 * preview_sheet.c - the picture `tsrun preview` makes of the samples
 * preview.c collected (preview.h): each shot's values converted to 8-bit
 * RGB (grid.h), scaled down to its cell when larger, laid out as a grid
 * or as a row of stages per sample, the text under each cell and the
 * stage names above the columns (font.h), and the caption that says what
 * is shown and how.
 */
#include "preview_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "font.h"
#include "grid.h"
#include "util.h"

/* How a shot's values are shown: by the plan's stages, or for a view by
 * its group's (a plan of the group's ops alone: after the decode's
 * uint8 or uint16 pixels, they alone set its dtype and normalize). draw:
 * by the branches its policies drew (random_choice([normalize(...),
 * ...])), under the seed its ops' streams have (a view's own); else as
 * for any sample (per_sample set where that depends on the draws). */
static void shot_values(const struct ts_plan *plan, const struct shot *s, bool draw,
			struct ts_grid_values *v)
{
	const struct ts_op *vo = NULL;
	struct ts_grid_sample gs = {.seed = plan->source.seed, .epoch = s->epoch,
				    .index = s->key};
	for (size_t i = 0; s->view >= 0 && i < plan->n_ops; i++)
		if (plan->ops[i].flags & TS_OPF_VIEWS)
			vo = &plan->ops[i];
	if (!vo) {
		ts_grid_values_of(plan, draw ? &gs : NULL, v);
		return;
	}
	const struct ts_op_branch *g = &vo->views.branches[plan->views[s->view].group];
	struct ts_plan group = {.ops = g->ops, .n_ops = g->n_ops};
	gs.seed = ts_plan_view_seed(plan->source.seed, s->view);
	ts_grid_values_of(&group, draw ? &gs : NULL, v);
}

/* ---- text -------------------------------------------------------------- */

static const uint8_t BG[3] = {24, 24, 24};
static const uint8_t INK[3] = {235, 235, 235};
static const uint8_t DIM[3] = {160, 170, 185};

/* Append fmt to the malloc'd string *s. */
__attribute__((format(printf, 2, 3)))
int ts_preview_append(char **s, const char *fmt, ...)
{
	va_list ap;
	char *add = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&add, fmt, ap);
	va_end(ap);
	if (n < 0)
		return TS_E_NOMEM;
	size_t old = *s ? strlen(*s) : 0;
	char *r = realloc(*s, old + (size_t)n + 1);
	if (!r) {
		free(add);
		return TS_E_NOMEM;
	}
	memcpy(r + old, add, (size_t)n + 1);
	free(add);
	*s = r;
	return 0;
}

/* Split text (lines separated by '\n') into lines of at most cols
 * characters, at spaces where it can. Calls fn for each piece; returns
 * the number of lines. */
static int wrap(const char *text, size_t cols,
		void (*fn)(void *arg, int line, const char *s, size_t n), void *arg)
{
	int lines = 0;
	if (cols == 0)
		return 0;
	while (*text) {
		size_t len = strcspn(text, "\n");
		const char *p = text;
		while (len > cols) {
			/* break at a space, or after a '+' of a stage name */
			size_t cut = cols;
			while (cut > cols / 2 && p[cut] != ' ' && p[cut - 1] != '+')
				cut--;
			if (p[cut] != ' ' && p[cut - 1] != '+')
				cut = cols;
			if (fn)
				fn(arg, lines, p, cut);
			lines++;
			p += cut;
			len -= cut;
			while (len && *p == ' ') {
				p++;
				len--;
			}
		}
		if (fn)
			fn(arg, lines, p, len);
		lines++;
		text = p + len;
		if (*text == '\n')
			text++;
	}
	return lines;
}

struct draw_at {
	struct ts_image *canvas;
	int x, y;
	const uint8_t *rgb;
};

static void draw_line(void *arg, int line, const char *s, size_t n)
{
	struct draw_at *d = arg;
	ts_font_draw(d->canvas, d->x, d->y + line * TS_FONT_LINE, s, n, d->rgb, 1);
}

/* Draw s clipped to px pixels; a cut-off start shows as '~' (a file
 * name's tail is the part that tells files apart). */
static void draw_fit(struct ts_image *canvas, int x, int y, int px, const char *s,
		     const uint8_t rgb[3], bool keep_tail)
{
	size_t fit = ts_font_fit(px, 1), n = strlen(s);
	if (n <= fit) {
		ts_font_draw(canvas, x, y, s, n, rgb, 1);
		return;
	}
	if (fit < 2) {
		ts_font_draw(canvas, x, y, s, fit, rgb, 1);
		return;
	}
	if (keep_tail) {
		ts_font_draw(canvas, x, y, "~", 1, rgb, 1);
		ts_font_draw(canvas, x + TS_FONT_ADVANCE, y, s + n - (fit - 1), fit - 1, rgb, 1);
	} else {
		ts_font_draw(canvas, x, y, s, fit - 1, rgb, 1);
		ts_font_draw(canvas, x + (int)(fit - 1) * TS_FONT_ADVANCE, y, "~", 1, rgb, 1);
	}
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* ---- stages ------------------------------------------------------------ */

/* A stage's name as `tsrun graph` calls its ops: "decode+random_resized_crop",
 * "color_jitter", "output: flip+normalize+to". */
char *ts_preview_stage_name(const struct ts_op *op)
{
	char *s = NULL;
	int rc;
	if (ts_op_is_output(op)) {
		rc = ts_preview_append(&s, "output:");
		for (size_t i = 0; rc == 0 && i < op->output.n_parts; i++)
			rc = ts_preview_append(&s, "%s%s", i ? "+" : " ",
					       ts_op_kind_name(op->output.parts[i].kind));
	} else {
		rc = ts_preview_append(&s, "%s", ts_op_kind_name(op->kind));
		if (rc == 0 && ts_op_fused(op))
			rc = ts_preview_append(&s, "+%s", ts_op_kind_name(ts_op_fused(op)->kind));
	}
	if (rc) {
		free(s);
		return NULL;
	}
	return s;
}

/* ---- composition ------------------------------------------------------- */

static void fill(struct ts_image *img, const uint8_t rgb[3])
{
	for (int y = 0; y < img->height; y++) {
		uint8_t *row = img->data + (size_t)y * img->stride;
		for (int x = 0; x < img->width; x++)
			memcpy(row + (size_t)x * 3, rgb, 3);
	}
}

static void blit(struct ts_image *dst, const struct ts_image *src, int x, int y)
{
	for (int r = 0; r < src->height; r++)
		memcpy(dst->data + (size_t)(y + r) * dst->stride + (size_t)x * 3,
		       src->data + (size_t)r * src->stride, (size_t)src->width * 3);
}

/* The picture's geometry. */
struct layout {
	int cols, rows;
	int box_w, box_h;       /* the room for one sample's pixels */
	int cell_w;             /* box_w, or wider for the text under it */
	int band;               /* text under each cell */
	int header;             /* stages: the stage names above the columns */
	int caption_lines;
	int top;                /* y of the first row of cells */
	bool varied;            /* the grid's samples differ in size */
	int width, height;
};

static void layout_finish(struct layout *L, bool labels)
{
	L->cell_w = L->box_w;
	if (labels && L->cell_w < TS_PREVIEW_MIN_CELL)
		L->cell_w = TS_PREVIEW_MIN_CELL;
	L->band = labels ? TS_PREVIEW_BAND_LINES * TS_FONT_LINE + 2 : 0;
	L->width = 2 * TS_PREVIEW_MARGIN + L->cols * L->cell_w + (L->cols - 1) * TS_PREVIEW_GAP;
}

static void layout_height(struct layout *L)
{
	int cap = L->caption_lines ? L->caption_lines * TS_FONT_LINE + TS_PREVIEW_GAP : 0;
	L->top = TS_PREVIEW_MARGIN + cap + L->header;
	L->height = L->top + L->rows * (L->box_h + L->band) + (L->rows - 1) * TS_PREVIEW_GAP +
		    TS_PREVIEW_MARGIN;
}

static int check_size(const struct layout *L, uint64_t max_bytes, struct ts_error *err)
{
	uint64_t bytes = (uint64_t)L->width * (uint64_t)L->height * 3u;
	if (bytes > max_bytes)
		return ts_error_set(err, TS_E_ARG,
				    "the picture would be %dx%d pixels (%" PRIu64 " MiB), over the "
				    "limit of %" PRIu64 " MiB; ask for fewer --samples",
				    L->width, L->height, (bytes + (1u << 20) - 1) >> 20,
				    max_bytes >> 20);
	return 0;
}

static int grid_cols(int n)
{
	int c = 1;
	while (c * c < n)
		c++;
	return c;
}

/* The text under one cell: position and label; class folder (or, with
 * stages, the size the stage made); file. */
static void draw_band(struct ts_preview *p, const struct layout *L,
		      const struct ts_preview_cell *c, int x, int y, bool stages)
{
	char line[96];
	int at = snprintf(line, sizeof(line), "%" PRIu64 ":%" PRIu64 " label %" PRId32,
			  c->epoch, c->index, c->label);
	if (c->view >= 0 && !stages && at > 0 && (size_t)at < sizeof(line))
		at += snprintf(line + at, sizeof(line) - (size_t)at, " view %d", c->view);
	if (L->varied && !stages && at > 0 && (size_t)at < sizeof(line))
		snprintf(line + at, sizeof(line) - (size_t)at, " %dx%d", c->src_width,
			 c->src_height);
	draw_fit(&p->canvas, x, y, L->cell_w, line, INK, false);
	y += TS_FONT_LINE;
	if (stages) {
		if (c->src_width != c->width)
			snprintf(line, sizeof(line), "%dx%d %s %d%%", c->src_width,
				 c->src_height, ts_dtype_name(c->dtype),
				 (int)((int64_t)c->width * 100 / c->src_width));
		else
			snprintf(line, sizeof(line), "%dx%d %s", c->src_width, c->src_height,
				 ts_dtype_name(c->dtype));
		draw_fit(&p->canvas, x, y, L->cell_w, line, DIM, false);
	} else if (c->class_name) {
		draw_fit(&p->canvas, x, y, L->cell_w, c->class_name, DIM, false);
	}
	y += TS_FONT_LINE;
	if (c->path)
		draw_fit(&p->canvas, x, y, L->cell_w, base_name(c->path), DIM, true);
}

/* Draw shot s into the cell at (col, row): converted, scaled down to the
 * box when larger, centred. */
static int place(struct ts_preview *p, const struct layout *L, const struct shot *s,
		 const struct ts_grid_values *v, int col, int row, int stage, bool labels,
		 struct ts_image *rgb, struct ts_image *tmp)
{
	int rc = ts_grid_to_rgb(s->data, s->height, s->width, s->channels, s->dtype,
				s->layout, v, rgb);
	if (rc)
		return rc;
	struct ts_image *show = rgb;
	if (rgb->width > L->box_w || rgb->height > L->box_h) {
		/* keep the aspect: the side that overflows most fits */
		int tw = L->box_w, th = L->box_h;
		if ((int64_t)rgb->width * L->box_h > (int64_t)rgb->height * L->box_w)
			th = (int)((int64_t)rgb->height * L->box_w / rgb->width);
		else
			tw = (int)((int64_t)rgb->width * L->box_h / rgb->height);
		if (tw < 1)
			tw = 1;
		if (th < 1)
			th = 1;
		rc = ts_aug_resize(rgb, tmp, tw, th, TS_INTERP_AREA, true);
		if (rc)
			return rc;
		show = tmp;
	}
	int x0 = TS_PREVIEW_MARGIN + col * (L->cell_w + TS_PREVIEW_GAP);
	int y0 = L->top + row * (L->box_h + L->band + TS_PREVIEW_GAP);
	int x = x0 + (L->cell_w - show->width) / 2;
	int y = y0 + (L->box_h - show->height) / 2;
	blit(&p->canvas, show, x, y);
	struct ts_preview_cell *c = &p->cells[p->n_cells++];
	*c = (struct ts_preview_cell){
		.x = x, .y = y, .width = show->width, .height = show->height,
		.src_width = s->width, .src_height = s->height, .dtype = s->dtype,
		.stage = stage, .view = s->view,
		.epoch = s->epoch, .index = s->index, .label = s->label,
		.class_name = s->class_name, .path = s->path,
	};
	if (labels)
		draw_band(p, L, c, x0, y0 + L->box_h + 2, stage >= 0);
	return 0;
}

static int make_canvas(struct ts_preview *p, const struct layout *L, bool labels)
{
	if (ts_image_reserve(&p->canvas, L->width, L->height, 3, TS_DTYPE_U8))
		return TS_E_NOMEM;
	fill(&p->canvas, BG);
	if (labels && p->caption) {
		struct draw_at d = {&p->canvas, TS_PREVIEW_MARGIN, TS_PREVIEW_MARGIN, INK};
		wrap(p->caption, ts_font_fit(L->width - 2 * TS_PREVIEW_MARGIN, 1), draw_line, &d);
	}
	return 0;
}

/* The caption: what, from where, how the values are shown, what is left
 * out. */
int ts_preview_make_caption(struct ts_preview *p, const struct ts_plan *plan,
			    const struct ts_preview_opts *o, size_t got, bool files_known,
			    const char *stages_note)
{
	struct ts_grid_values v, drawn;
	char how[256];
	/* The draws replayed are the first sample's, at the start position
	 * the first line names. Under the checker's rules they cannot change
	 * this text: before a tile, filter or plugin every alternative leaves
	 * uint8 or uint16 pixels of one type, and a policy after one is not
	 * replayed. */
	struct shot v0 = {.view = plan->n_views ? 0 : -1, .epoch = o->start_epoch,
			  .index = o->start_index, .key = o->start_index};
	if (got > 0 && p->shots && p->shots[0].have && p->shots[0].epoch == o->start_epoch &&
	    p->shots[0].index == o->start_index)
		v0.key = p->shots[0].key; /* under shard(), not the index */
	shot_values(plan, &v0, false, &v);
	shot_values(plan, &v0, true, &drawn);
	if (drawn.per_sample) {
		/* not replayed (after a tile): every cell by the first branch */
		v = drawn;
		v.per_sample = false;
	}
	ts_grid_values_describe(&v, plan->dtype, how, sizeof(how));
	int rc = ts_preview_append(&p->caption, "tsrun preview: pipeline %s (%s), %zu sample%s "
				   "from epoch %" PRIu64 " index %" PRIu64 ", seed %" PRIu64
				   "%s\n", plan->name, plan->file, got, got == 1 ? "" : "s",
				   o->start_epoch, o->start_index, plan->source.seed,
				   o->stages ? ", after each stage" : "");
	if (rc == 0)
		rc = ts_preview_append(&p->caption, "%s%s\n", how,
				       o->stages ? " (the last stage; earlier ones by the same "
						   "rules for their own dtype)" : "");
	if (rc == 0 && plan->device.cuda)
		rc = ts_preview_append(&p->caption, "device(cuda) not shown: these are the uint8 "
				       "samples the CPU stages write before it\n");
	if (rc == 0 && plan->n_views)
		rc = ts_preview_append(&p->caption, "views: each sample's %d views %s, each shown "
				       "by its group's values (view 0's above)\n", plan->n_views,
				       o->stages ? "in the last columns" : "in a row");
	if (rc == 0 && drawn.per_sample)
		rc = ts_preview_append(&p->caption, "a random_apply or random_choice after a tile, "
				       "filter or plugin draws for each output, which is not "
				       "replayed here: every sample is shown as its first branch "
				       "leaves it\n");
	if (rc == 0 && !files_known)
		rc = ts_preview_append(&p->caption, "file names are not known for tile, filter "
				       "and plugin pipelines\n");
	if (rc == 0 && got < (size_t)o->samples)
		rc = ts_preview_append(&p->caption, "only %zu of %d samples came out of %d source "
				       "items\n", got, o->samples, 64 * o->samples);
	if (rc == 0 && stages_note)
		rc = ts_preview_append(&p->caption, "%s\n", stages_note);
	if (rc == 0)
		rc = ts_preview_append(&p->caption, "under each: epoch:index label, %s, file\n",
				       o->stages ? "size and dtype made (and % shown)"
						 : "class folder");
	return rc;
}

/* The end of drawing a sheet: the cells' scratch images and the resize
 * scratch freed, and a drawing error said. */
static int drawn(int rc, struct ts_image *rgb, struct ts_image *tmp, struct ts_error *err)
{
	ts_image_free(rgb);
	ts_image_free(tmp);
	ts_aug_scratch_free();
	if (rc)
		return ts_error_set(err, rc, "cannot draw the samples: %s", ts_error_name(rc));
	return 0;
}

int ts_preview_compose_grid(struct ts_preview *p, const struct ts_plan *plan,
			    const struct ts_preview_opts *o, uint64_t max_bytes,
			    struct ts_error *err)
{
	struct layout L = {0};
	size_t n = p->n_shots;
	struct ts_grid_values v;
	for (size_t i = 0; i < n; i++) {
		if (p->shots[i].width > L.box_w)
			L.box_w = p->shots[i].width;
		if (p->shots[i].height > L.box_h)
			L.box_h = p->shots[i].height;
	}
	for (size_t i = 0; i < n; i++)
		L.varied = L.varied || p->shots[i].width != L.box_w ||
			   p->shots[i].height != L.box_h;
	/* views(...): a sample's views in a row */
	L.cols = plan->n_views ? plan->n_views : grid_cols((int)n);
	L.rows = ((int)n + L.cols - 1) / L.cols;
	layout_finish(&L, o->labels);
	if (o->labels)
		L.caption_lines = wrap(p->caption, ts_font_fit(L.width - 2 * TS_PREVIEW_MARGIN, 1),
				       NULL, NULL);
	layout_height(&L);
	int rc = check_size(&L, max_bytes, err);
	if (rc)
		return rc;
	p->cells = calloc(n, sizeof(*p->cells));
	if (!p->cells || make_canvas(p, &L, o->labels))
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	struct ts_image rgb = {0}, tmp = {0};
	for (size_t i = 0; i < n && rc == 0; i++) {
		shot_values(plan, &p->shots[i], true, &v);
		rc = place(p, &L, &p->shots[i], &v, (int)i % L.cols, (int)i / L.cols, -1,
			   o->labels, &rgb, &tmp);
	}
	return drawn(rc, &rgb, &tmp, err);
}

/* Stages: shots[k * n + i] is sample i after stage k. */
int ts_preview_compose_stages(struct ts_preview *p, const struct ts_plan *plan,
			      const struct ts_plan *const *plans, size_t n,
			      const struct ts_preview_opts *o, uint64_t max_bytes,
			      struct ts_error *err)
{
	struct layout L = {0};
	size_t k_n = p->n_stages;
	const struct shot *last = &p->shots[(k_n - 1) * n];
	/* The box is the final sample's size (at least 64 px): earlier,
	 * larger stages (the decoded file) are shown scaled down to it. */
	for (size_t i = 0; i < n; i++) {
		if (last[i].width > L.box_w)
			L.box_w = last[i].width;
		if (last[i].height > L.box_h)
			L.box_h = last[i].height;
	}
	if (L.box_w < 64)
		L.box_w = 64;
	if (L.box_h < 64)
		L.box_h = 64;
	L.cols = (int)k_n;
	L.rows = (int)n;
	layout_finish(&L, o->labels);
	if (o->labels) {
		int h = 0;
		for (size_t k = 0; k < k_n; k++) {
			int l = wrap(p->stage_names[k], ts_font_fit(L.cell_w, 1), NULL, NULL);
			if (l > h)
				h = l;
		}
		L.header = h * TS_FONT_LINE + 2;
		L.caption_lines = wrap(p->caption, ts_font_fit(L.width - 2 * TS_PREVIEW_MARGIN, 1),
				       NULL, NULL);
	}
	layout_height(&L);
	int rc = check_size(&L, max_bytes, err);
	if (rc)
		return rc;
	(void)plan;
	p->cells = calloc(k_n * n, sizeof(*p->cells));
	if (!p->cells || make_canvas(p, &L, o->labels))
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	if (o->labels)
		for (size_t k = 0; k < k_n; k++) {
			struct draw_at d = {&p->canvas,
					    TS_PREVIEW_MARGIN + (int)k * (L.cell_w + TS_PREVIEW_GAP),
					    L.top - L.header, INK};
			wrap(p->stage_names[k], ts_font_fit(L.cell_w, 1), draw_line, &d);
		}
	struct ts_image rgb = {0}, tmp = {0};
	for (size_t i = 0; i < n && rc == 0; i++)
		for (size_t k = 0; k < k_n && rc == 0; k++) {
			struct ts_grid_values v;
			shot_values(plans[k], &p->shots[k * n + i], true, &v);
			rc = place(p, &L, &p->shots[k * n + i], &v, (int)k, (int)i, (int)k,
				   o->labels, &rgb, &tmp);
		}
	return drawn(rc, &rgb, &tmp, err);
}

/* Before running: refuse a fixed-size grid that cannot fit anyway. */
int ts_preview_precheck(const struct ts_plan *plan, const struct ts_preview_opts *o,
			uint64_t max_bytes, struct ts_error *err)
{
	if (plan->sample_bytes == 0 || o->stages)
		return 0;
	struct layout L = {.box_w = plan->width, .box_h = plan->height};
	L.cols = plan->n_views ? plan->n_views : grid_cols(o->samples);
	L.rows = plan->n_views ? o->samples : (o->samples + L.cols - 1) / L.cols;
	layout_finish(&L, o->labels);
	layout_height(&L);
	return check_size(&L, max_bytes, err);
}
