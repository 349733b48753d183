/*
 * engine_skip.c - the skip list of on_error = skip: each skipped sample
 * counted, each path listed once with the first reason met (an open-
 * addressing table over the listed paths, under the engine's mutex).
 */
#include "engine_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barrier.h"

/* FNV-1a over the first n bytes of s. */
static uint64_t skip_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

/* Whether the path path[0..plen) is already listed; if not, the table
 * slot to take. Under e->mu. */
static bool skip_seen(const struct ts_engine *e, const char *path, size_t plen,
		      size_t *slot)
{
	size_t mask = e->skip_tab_cap - 1;
	for (size_t i = (size_t)skip_hash(path, plen) & mask;; i = (i + 1) & mask) {
		size_t k = e->skip_tab[i];
		if (k == SIZE_MAX) {
			*slot = i;
			return false;
		}
		if (e->skipped_plen[k] == plen && memcmp(e->skipped[k], path, plen) == 0)
			return true;
	}
}

/* Keep the table at most half full. Under e->mu. False when out of memory. */
static bool skip_tab_room(struct ts_engine *e)
{
	if (e->skip_tab_cap && (e->n_skipped + 1) * 2 <= e->skip_tab_cap)
		return true;
	size_t cap = e->skip_tab_cap ? e->skip_tab_cap * 2 : 64;
	size_t *t = malloc(cap * sizeof(*t));
	if (!t)
		return false;
	for (size_t i = 0; i < cap; i++)
		t[i] = SIZE_MAX;
	for (size_t k = 0; k < e->n_skipped; k++) {
		size_t i = (size_t)skip_hash(e->skipped[k], e->skipped_plen[k]) & (cap - 1);
		while (t[i] != SIZE_MAX)
			i = (i + 1) & (cap - 1);
		t[i] = k;
	}
	free(e->skip_tab);
	e->skip_tab = t;
	e->skip_tab_cap = cap;
	return true;
}

/* List a failed item's path once, with the first reason met: an endless
 * stream (epochs = 0) that meets the same bad file every epoch keeps one
 * line for it, so the list is bounded by the data set, and a file that
 * fails differently later (another crop of a corrupt image, say) is not
 * listed twice. count: this failure skips a sample (its position's own
 * item, or a plugin's), counted once; a stand-in that fails too is
 * listed, not counted again (two bad files in a row were three skips). */
void ts_engine_note_skip(struct ts_engine *e, const char *path, const char *why,
			 bool count)
{
	char *line = NULL;
	size_t slot = 0;
	if (!path)
		path = "(synthetic)";
	size_t plen = strlen(path);
	if (asprintf(&line, "%s: %s", path, why) < 0)
		line = NULL;
	pthread_mutex_lock(&e->mu);
	if (line && skip_tab_room(e) && !skip_seen(e, path, plen, &slot)) {
		if (e->n_skipped == e->cap_skipped) {
			size_t cap = e->cap_skipped ? e->cap_skipped * 2 : 16;
			char **v = realloc(e->skipped, cap * sizeof(*v));
			if (v)
				e->skipped = v;
			size_t *pl = v ? realloc(e->skipped_plen, cap * sizeof(*pl)) : NULL;
			if (pl) {
				e->skipped_plen = pl;
				e->cap_skipped = cap;
			}
		}
		if (e->n_skipped < e->cap_skipped) {
			e->skip_tab[slot] = e->n_skipped;
			e->skipped_plen[e->n_skipped] = plen;
			e->skipped[e->n_skipped++] = line;
			line = NULL;
		}
	}
	free(line);
	pthread_mutex_unlock(&e->mu);
	if (count)
		ATOMIC_ADD(&e->skipped_n, 1); /* a count for stats */
}
