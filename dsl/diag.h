/*
 * diag.h - diagnostics: a list of located messages about one source text,
 * and the renderer that turns them into
 *
 *   file:line:col: error: message
 *     7 |     | flipp(horizontal)
 *       |       ^~~~~
 *   hint: did you mean 'flip'?
 *
 * The library only builds the text; the CLI decides where it goes.
 */
#ifndef TS_DIAG_H
#define TS_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include "error.h"

/* The UTF-8 byte-order mark some editors put at the start of a file: the
 * parser skips it, and the renderer does not show it. */
#define TS_DIAG_BOM "\xef\xbb\xbf"

enum ts_severity { TS_SEV_ERROR, TS_SEV_WARNING, TS_SEV_NOTE };

struct ts_diag {
	enum ts_severity sev;
	struct ts_loc loc;
	char msg[256];
	char hint[192]; /* "" when none */
};

struct ts_diags {
	const char *file; /* name shown in messages; not owned */
	const char *src;  /* the source text; not owned */
	size_t src_len;
	struct ts_diag *items;
	size_t n, cap;
	size_t n_errors;
};

/* Start an empty list about src (neither string is copied). */
void ts_diags_init(struct ts_diags *d, const char *file, const char *src,
		   size_t src_len);
void ts_diags_fini(struct ts_diags *d);

/* Add a diagnostic; hint may be NULL. Returns 0 or TS_E_NOMEM. */
int ts_diags_add(struct ts_diags *d, enum ts_severity sev, struct ts_loc loc,
		 const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Render every diagnostic, in order, as text (see the file comment).
 * Returns a malloc'd string the caller frees, or NULL when out of memory. */
char *ts_diags_render(const struct ts_diags *d);

/* One character of UTF-8 text at s, n >= 1 bytes long: returns its length
 * in bytes and sets *cp to its code point, or returns 1 with *cp = -1 for
 * a byte that starts no valid sequence (overlong, surrogate, cut short or
 * a stray continuation byte). Locations count one column per character so
 * counted; the renderer also uses it to line the caret up. */
size_t ts_diag_utf8_next(const char *s, size_t n, long *cp);

/* Closest candidate to word by edit distance, or NULL when none is close
 * enough to suggest. For "did you mean" hints. Failing that, the one
 * candidate that holds the word or that the word holds, 4 characters or
 * more ("cubic": "bicubic"), the closest in length; a tie is none. */
const char *ts_diag_suggest(const char *word, const char *const *candidates,
			    size_t n);

/* The same over candidates offered one at a time, for lists with no
 * array of their own (the registry, a file's statements): begin, offer
 * each, end. word and the offered strings must outlive the end call. */
struct ts_diag_suggester {
	const char *word;
	size_t len, limit, best_d, sub_d;
	const char *best, *sub;
	bool sub_tie;
};
void ts_diag_suggest_begin(struct ts_diag_suggester *s, const char *word);
void ts_diag_suggest_offer(struct ts_diag_suggester *s, const char *candidate);
const char *ts_diag_suggest_end(const struct ts_diag_suggester *s);

#endif
