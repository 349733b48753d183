/* diag.c - located messages about a source text and their rendering. */
#include "diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
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

/* Where the last line found starts, so that rendering diagnostics in
 * order walks the source once (from the start for each one was quadratic
 * in a file with many errors). */
struct line_cursor {
	int line;      /* 0: none yet */
	const char *p;
};

/* Find 1-based line `line` in the source; *len excludes the newline (and a
 * '\r' before it). Returns NULL past the end. Starts from the cursor when
 * the line is not before it, and moves the cursor there. */
static const char *find_line(const struct ts_diags *d, struct line_cursor *cur,
			     int line, size_t *len)
{
	const char *p = d->src, *end = d->src + d->src_len;
	int l = 1;

	if (!p || line < 1)
		return NULL;
	/* A byte-order mark is not part of the first line (the parser skips
	 * it too, so columns start after it). */
	if (d->src_len >= 3 && memcmp(p, TS_DIAG_BOM, 3) == 0)
		p += 3;
	if (cur->line > 0 && cur->line <= line) {
		l = cur->line;
		p = cur->p;
	}
	for (; l < line; l++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			return NULL;
		p = nl + 1;
	}
	cur->line = line;
	cur->p = p;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	*len = (size_t)((nl ? nl : end) - p);
	if (*len > 0 && p[*len - 1] == '\r')
		(*len)--;
	return p;
}

TS_EXPORT size_t ts_diag_utf8_next(const char *s, size_t n, long *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;
	long c, min;

	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		len = 2, c = u[0] & 0x1f, min = 0x80;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		len = 3, c = u[0] & 0x0f, min = 0x800;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		len = 4, c = u[0] & 0x07, min = 0x10000;
	} else {
		goto bad;
	}
	if (n < len)
		goto bad;
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			goto bad;
		c = (c << 6) | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		goto bad;
	*cp = c;
	return len;
bad:
	*cp = -1;
	return 1;
}

/* Terminal columns of code point c in the caret line: 2 for East Asian
 * wide and fullwidth characters (Unicode's W and F classes, the common
 * blocks), 0 for combining marks and zero-width characters, 1 for the
 * rest. A fixed table rather than wcwidth(3), so the output does not
 * depend on the locale. */
static int char_width(long c)
{
	static const struct { long lo, hi; } zero[] = {
		{0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd},
		{0x0610, 0x061a}, {0x064b, 0x065f}, {0x1ab0, 0x1aff},
		{0x1dc0, 0x1dff}, {0x200b, 0x200f}, {0x2060, 0x2064},
		{0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f},
		{0xfeff, 0xfeff}, {0xe0100, 0xe01ef},
	}, wide[] = {
		{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a},
		{0x23e9, 0x23ec}, {0x23f0, 0x23f0}, {0x23f3, 0x23f3},
		{0x25fd, 0x25fe}, {0x2614, 0x2615}, {0x2648, 0x2653},
		{0x267f, 0x267f}, {0x2693, 0x2693}, {0x26a1, 0x26a1},
		{0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5},
		{0x26ce, 0x26ce}, {0x26d4, 0x26d4}, {0x26ea, 0x26ea},
		{0x26f2, 0x26f3}, {0x26f5, 0x26f5}, {0x26fa, 0x26fa},
		{0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b},
		{0x2728, 0x2728}, {0x274c, 0x274c}, {0x274e, 0x274e},
		{0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
		{0x27b0, 0x27b0}, {0x27bf, 0x27bf}, {0x2b1b, 0x2b1c},
		{0x2b50, 0x2b50}, {0x2b55, 0x2b55}, {0x2e80, 0x303e},
		{0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff},
		{0xa000, 0xa4cf}, {0xa960, 0xa97f}, {0xac00, 0xd7a3},
		{0xf900, 0xfaff}, {0xfe10, 0xfe19}, {0xfe30, 0xfe6f},
		{0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x16fe4},
		{0x17000, 0x18cff}, {0x1b000, 0x1b2ff}, {0x1f004, 0x1f004},
		{0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a},
		{0x1f200, 0x1f251}, {0x1f300, 0x1f64f}, {0x1f680, 0x1f6ff},
		{0x1f7e0, 0x1f7eb}, {0x1f90c, 0x1f9ff}, {0x1fa70, 0x1faff},
		{0x20000, 0x2fffd}, {0x30000, 0x3fffd},
	};

	for (size_t i = 0; i < TS_ARRAY_LEN(zero); i++)
		if (c >= zero[i].lo && c <= zero[i].hi)
			return 0;
	for (size_t i = 0; i < TS_ARRAY_LEN(wide); i++)
		if (c >= wide[i].lo && c <= wide[i].hi)
			return 2;
	return 1;
}

/* Whether the character at s (code point cp, -1 for a byte that is not
 * UTF-8) is shown as itself; control characters and bytes that are not
 * UTF-8 are shown as '?', one column wide, so the text stays printable.
 * Tabs are kept. */
static bool shown_as_is(const char *s, long cp)
{
	return (*s == '\t' || cp >= 0x20) && cp != 0x7f;
}

/* One diagnostic: header, then (when it has a line in the source) the line
 * in a gutter and the caret line, then the hint. Control characters and
 * bytes that are not UTF-8 become '?' in the shown line so the caret stays
 * aligned and the text printable; tabs are kept and copied into the caret
 * line, and a wide character (CJK) gets two columns of it, so a terminal
 * lines both up. Columns of locations count characters. */
static void render_one(FILE *f, const struct ts_diags *d,
		       struct line_cursor *cur, const struct ts_diag *it)
{
	const char *file = d->file ? d->file : "<input>";
	const struct ts_loc *l = &it->loc;
	const char *line;
	size_t len = 0, i, k;
	int width;
	char num[16];
	long cp;

	if (l->first_line < 1) {
		fprintf(f, "%s: %s: %s\n", file, sev_name(it->sev), it->msg);
		goto hint;
	}
	fprintf(f, "%s:%d:%d: %s: %s\n", file, l->first_line,
		l->first_column, sev_name(it->sev), it->msg);
	line = find_line(d, cur, l->first_line, &len);
	if (!line)
		goto hint;
	snprintf(num, sizeof(num), "%d", l->first_line);
	width = strlen(num) > 5 ? (int)strlen(num) : 5;
	fprintf(f, "%*s | ", width, num);
	for (i = 0; i < len; i += k) {
		k = ts_diag_utf8_next(line + i, len - i, &cp);
		if (shown_as_is(line + i, cp))
			fwrite(line + i, 1, k, f);
		else
			fputc('?', f);
	}
	fprintf(f, "\n%*s | ", width, "");

	int first = l->first_column < 1 ? 1 : l->first_column;
	int last = l->last_line > l->first_line ? INT32_MAX : l->last_column;
	int col = 1, span = 0;

	if (last < first)
		last = first;
	/* Up to the caret: a tab for a tab, blanks as wide as each character. */
	for (i = 0; i < len && col < first; i += k, col++) {
		k = ts_diag_utf8_next(line + i, len - i, &cp);
		if (line[i] == '\t')
			fputc('\t', f);
		else
			fprintf(f, "%*s", shown_as_is(line + i, cp) ? char_width(cp) : 1, "");
	}
	for (; col < first; col++)
		fputc(' ', f);
	/* The span, as wide as its characters (past the line's end: one
	 * column each, as at the end of file). */
	for (; col <= last && (i < len || last != INT32_MAX); i += k, col++) {
		if (i >= len) {
			k = 0;
			span++;
			continue;
		}
		k = ts_diag_utf8_next(line + i, len - i, &cp);
		span += line[i] == '\t' || !shown_as_is(line + i, cp) ? 1 : char_width(cp);
	}
	fputc('^', f);
	for (int c = 1; c < span; c++)
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

	struct line_cursor cur = { 0, NULL };

	if (!f)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		render_one(f, d, &cur, &d->items[i]);
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

void ts_diag_suggest_begin(struct ts_diag_suggester *s, const char *word)
{
	*s = (struct ts_diag_suggester){ .word = word, .len = word ? strlen(word) : 0 };
	s->limit = s->len / 3 > 1 ? s->len / 3 : 1;
	s->best_d = s->sub_d = (size_t)-1;
}

/* Whether the shorter of a and b (4 characters or more) lies inside the
 * longer: "cubic" in "bicubic", "interp" in "interpolation". */
static bool contains(const char *a, size_t la, const char *b, size_t lb)
{
	if (la < lb) {
		const char *t = a;
		size_t lt = la;
		a = b, la = lb, b = t, lb = lt;
	}
	return lb >= 4 && lb < la && strstr(a, b) != NULL;
}

void ts_diag_suggest_offer(struct ts_diag_suggester *s, const char *cand)
{
	size_t dist, lc;

	if (!s->len || !cand)
		return;
	dist = distance(s->word, cand);
	if (dist <= s->limit && dist < s->best_d) {
		s->best_d = dist;
		s->best = cand;
	}
	lc = strlen(cand);
	if (contains(s->word, s->len, cand, lc)) {
		/* the closest in length; two as close are no suggestion */
		size_t d = lc > s->len ? lc - s->len : s->len - lc;
		if (d < s->sub_d) {
			s->sub_d = d;
			s->sub = cand;
			s->sub_tie = false;
		} else if (d == s->sub_d) {
			s->sub_tie = true;
		}
	}
}

const char *ts_diag_suggest_end(const struct ts_diag_suggester *s)
{
	if (s->best)
		return s->best;
	return s->sub && !s->sub_tie ? s->sub : NULL;
}

TS_EXPORT const char *ts_diag_suggest(const char *word, const char *const *candidates,
			    size_t n)
{
	struct ts_diag_suggester s;

	ts_diag_suggest_begin(&s, word);
	for (size_t i = 0; i < n; i++)
		ts_diag_suggest_offer(&s, candidates[i]);
	return ts_diag_suggest_end(&s);
}
