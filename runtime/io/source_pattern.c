/*
 * source_pattern.c - brace expansion of shard patterns ("shard-{000..099}.tar",
 * "{a,b}"), bounded in count and depth.
 */
#include "source_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_EXPANSIONS 1000000u

struct str_vec {
	char **v;
	size_t n, cap;
};

static int sv_push_take(struct str_vec *sv, char *s)
{
	if (!s)
		return TS_E_NOMEM;
	if (sv->n == sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 16;
		char **p = realloc(sv->v, cap * sizeof(*p));
		if (!p) {
			free(s);
			return TS_E_NOMEM;
		}
		sv->v = p;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	return 0;
}

static char *concat3(const char *a, size_t la, const char *b, size_t lb,
		     const char *c)
{
	size_t lc = strlen(c);
	char *s = malloc(la + lb + lc + 1);
	if (!s)
		return NULL;
	memcpy(s, a, la);
	memcpy(s + la, b, lb);
	memcpy(s + la + lb, c, lc + 1);
	return s;
}

/* "{lo..hi}" body → true with the bounds and the zero-padded width. */
static bool parse_range(const char *body, size_t len, long long *lo,
			long long *hi, int *width)
{
	const char *dots = NULL;
	for (size_t i = 0; i + 1 < len; i++)
		if (body[i] == '.' && body[i + 1] == '.') {
			dots = body + i;
			break;
		}
	if (!dots || dots == body || dots + 2 == body + len)
		return false;
	size_t l1 = (size_t)(dots - body), l2 = len - l1 - 2;
	const char *b2 = dots + 2;
	if (l1 > 18 || l2 > 18)
		return false;
	for (size_t i = 0; i < l1; i++)
		if (!isdigit((unsigned char)body[i]))
			return false;
	for (size_t i = 0; i < l2; i++)
		if (!isdigit((unsigned char)b2[i]))
			return false;
	char t1[20], t2[20];
	memcpy(t1, body, l1);
	t1[l1] = '\0';
	memcpy(t2, b2, l2);
	t2[l2] = '\0';
	*lo = strtoll(t1, NULL, 10);
	*hi = strtoll(t2, NULL, 10);
	bool pad = (l1 > 1 && body[0] == '0') || (l2 > 1 && b2[0] == '0');
	*width = pad ? (int)(l1 > l2 ? l1 : l2) : 0;
	return true;
}

/* Expand the first brace of s (already prefixed by nothing) into out,
 * recursing on the rest so later braces multiply. */
static int expand_rec(const char *s, struct str_vec *out, struct ts_error *err,
		      const char *pattern)
{
	const char *open = strchr(s, '{');
	if (!open) {
		if (out->n >= MAX_EXPANSIONS)
			return ts_error_set(err, TS_E_SOURCE,
					    "pattern '%s' expands to more than %u names",
					    pattern, MAX_EXPANSIONS);
		return sv_push_take(out, ts_strdup(s)) ? ts_error_set(err, TS_E_NOMEM, "out of memory") : 0;
	}
	const char *close = strchr(open, '}');
	const char *inner = strchr(open + 1, '{');
	if (!close || (inner && inner < close))
		return ts_error_set(err, TS_E_SOURCE,
				    "pattern '%s': unbalanced or nested '{'", pattern);
	const char *body = open + 1;
	size_t blen = (size_t)(close - body);
	size_t plen = (size_t)(open - s);
	if (blen == 0)
		return ts_error_set(err, TS_E_SOURCE, "pattern '%s': empty '{}'", pattern);

	/* Alternatives: build each "prefix + alt + rest" and recurse. */
	struct str_vec alts = {0};
	int rc = 0;
	long long lo, hi;
	int width;
	if (parse_range(body, blen, &lo, &hi, &width)) {
		long long step = lo <= hi ? 1 : -1;
		if ((unsigned long long)(step > 0 ? hi - lo : lo - hi) >= MAX_EXPANSIONS)
			return ts_error_set(err, TS_E_SOURCE,
					    "pattern '%s' expands to more than %u names",
					    pattern, MAX_EXPANSIONS);
		for (long long v = lo;; v += step) {
			char num[32];
			int k = snprintf(num, sizeof(num), "%0*lld", width, v);
			rc = sv_push_take(&alts, concat3(s, plen, num, (size_t)k, close + 1));
			if (rc || v == hi)
				break;
		}
	} else if (memchr(body, ',', blen)) {
		const char *p = body;
		while (rc == 0) {
			const char *c = memchr(p, ',', (size_t)(close - p));
			const char *e = c ? c : close;
			rc = sv_push_take(&alts, concat3(s, plen, p, (size_t)(e - p), close + 1));
			if (!c)
				break;
			p = c + 1;
		}
	} else {
		return ts_error_set(err, TS_E_SOURCE,
				    "pattern '%s': '{%.*s}' is neither a range {a..b} nor a list {a,b}",
				    pattern, (int)blen, body);
	}
	if (rc) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
	} else {
		/* The prefix holds no brace, so recursing on each alternative
		 * expands only the braces after this one. */
		for (size_t i = 0; i < alts.n && rc == 0; i++)
			rc = expand_rec(alts.v[i], out, err, pattern);
	}
	ts_source_strings_free(alts.v, alts.n);
	return rc;
}

int ts_source_expand(const char *pattern, char ***out, size_t *n,
		     struct ts_error *err)
{
	struct str_vec sv = {0};
	int rc = expand_rec(pattern, &sv, err, pattern);
	if (rc) {
		ts_source_strings_free(sv.v, sv.n);
		return rc;
	}
	*out = sv.v;
	*n = sv.n;
	return 0;
}

void ts_source_strings_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
