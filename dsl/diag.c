/* diag.c - located messages about a source text and their rendering. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

TS_EXPORT void ts_diags_init(struct ts_diags *d, const char *file, const char *src,
		   size_t src_len)
{
	memset(d, 0, sizeof(*d));
	d->file = file;
	d->src = src;
	d->src_len = src ? src_len : 0;
}

TS_EXPORT void ts_diags_fini(struct ts_diags *d)
{
	if (!d)
		return;
	free(d->items);
	d->items = NULL;
	d->n = d->cap = d->n_errors = 0;
}

TS_EXPORT int ts_diags_add(struct ts_diags *d, enum ts_severity sev, struct ts_loc loc,
		 const char *hint, const char *fmt, ...)
{
	struct ts_diag *it;
	va_list ap;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct ts_diag *items = realloc(d->items, cap * sizeof(*items));

		if (!items)
			return TS_E_NOMEM;
		d->items = items;
		d->cap = cap;
	}
	it = &d->items[d->n++];
	it->sev = sev;
	it->loc = loc;
	va_start(ap, fmt);
	vsnprintf(it->msg, sizeof(it->msg), fmt, ap);
	va_end(ap);
	snprintf(it->hint, sizeof(it->hint), "%s", hint ? hint : "");
	if (sev == TS_SEV_ERROR)
		d->n_errors++;
	return 0;
}

static const char *sev_name(enum ts_severity sev)
{
	switch (sev) {
	case TS_SEV_ERROR: return "error";
	case TS_SEV_WARNING: return "warning";
	case TS_SEV_NOTE: return "note";
	}
	return "error";
}

/* Find 1-based line `line` in the source; *len excludes the newline (and a
 * '\r' before it). Returns NULL past the end. */
static const char *find_line(const struct ts_diags *d, int line, size_t *len)
{
	const char *p = d->src, *end = d->src + d->src_len;

	if (!p || line < 1)
		return NULL;
	for (int l = 1; l < line; l++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			return NULL;
		p = nl + 1;
	}
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	*len = (size_t)((nl ? nl : end) - p);
	if (*len > 0 && p[*len - 1] == '\r')
		(*len)--;
	return p;
}

/* One diagnostic: header, then (when it has a line in the source) the line
 * in a gutter and the caret line, then the hint. Control characters in the
 * shown line become '?' so the caret stays aligned and the text printable;
 * tabs are kept and copied into the caret line, so a terminal lines both up. */
static void render_one(FILE *f, const struct ts_diags *d,
		       const struct ts_diag *it)
{
	const char *file = d->file ? d->file : "<input>";
	const struct ts_loc *l = &it->loc;
	const char *line;
	size_t len = 0;
	int width;
	char num[16];

	if (l->first_line < 1) {
		fprintf(f, "%s: %s: %s\n", file, sev_name(it->sev), it->msg);
		goto hint;
	}
	fprintf(f, "%s:%d:%d: %s: %s\n", file, l->first_line,
		l->first_column, sev_name(it->sev), it->msg);
	line = find_line(d, l->first_line, &len);
	if (!line)
		goto hint;
	snprintf(num, sizeof(num), "%d", l->first_line);
	width = strlen(num) > 5 ? (int)strlen(num) : 5;
	fprintf(f, "%*s | ", width, num);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		fputc(c == '\t' || (c >= 0x20 && c != 0x7f) ? c : '?', f);
	}
	fprintf(f, "\n%*s | ", width, "");

	int first = l->first_column < 1 ? 1 : l->first_column;
	int last = l->last_line > l->first_line ? (int)len : l->last_column;
	if (last < first)
		last = first;
	/* Columns count characters: skip UTF-8 continuation bytes. */
	int col = 1;
	for (size_t i = 0; i < len && col < first; i++) {
		if (((unsigned char)line[i] & 0xc0) == 0x80)
			continue;
		fputc(line[i] == '\t' ? '\t' : ' ', f);
		col++;
	}
	for (; col < first; col++)
		fputc(' ', f);
	fputc('^', f);
	for (int c = first + 1; c <= last; c++)
		fputc('~', f);
	fputc('\n', f);
hint:
	if (it->hint[0])
		fprintf(f, "hint: %s\n", it->hint);
}

TS_EXPORT char *ts_diags_render(const struct ts_diags *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		render_one(f, d, &d->items[i]);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

#define SUGGEST_MAX 64

/* Optimal string alignment distance (Levenshtein plus adjacent swaps, so
 * "filp" is one edit from "flip"). Returns SIZE_MAX for words too long to
 * be typos worth suggesting for. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t rows[3][SUGGEST_MAX + 1];
	size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = prev[j - 1] + cost;

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
		size_t *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

TS_EXPORT const char *ts_diag_suggest(const char *word, const char *const *candidates,
			    size_t n)
{
	size_t len = word ? strlen(word) : 0;
	size_t limit = len / 3 > 1 ? len / 3 : 1;
	size_t best_d = (size_t)-1;
	const char *best = NULL;

	if (!len)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t dist;

		if (!candidates[i])
			continue;
		dist = distance(word, candidates[i]);
		if (dist <= limit && dist < best_d) {
			best_d = dist;
			best = candidates[i];
		}
	}
	return best;
}
