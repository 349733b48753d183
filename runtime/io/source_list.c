/*
 * source_list.c - the list() source: a file of "path,label" lines, paths relative
 * to the list's folder.
 */
#include "source_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* file: the list file (the source's root). */
static int list_open(const struct ts_source *src, const char *file,
		     struct ts_index *ix, struct ts_item_vec *items,
		     struct ts_error *err)
{
	int rc = 0;
	char *line = NULL, *dir = NULL;
	size_t cap = 0;
	int32_t max_label = -1;
	/* O_NONBLOCK: a FIFO in place of the list must not block us */
	int lfd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat lst;
	if (lfd < 0)
		return ts_error_set(err, TS_E_SOURCE, "list '%s': %s", file,
				    strerror(errno));
	if (fstat(lfd, &lst) != 0 || !S_ISREG(lst.st_mode)) {
		close(lfd);
		return ts_error_set(err, TS_E_SOURCE, "list '%s': %s", file,
				    TS_SOURCE_NOT_REGULAR);
	}
	FILE *f = fdopen(lfd, "r");
	if (!f) {
		close(lfd);
		return ts_error_set(err, TS_E_SOURCE, "list '%s': %s", file,
				    strerror(errno));
	}
	dir = ts_source_dir_of(file);
	if (!dir) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto out;
	}
	unsigned long lineno = 0;
	ssize_t got;
	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (memchr(line, '\0', (size_t)got)) {
			rc = ts_error_set(err, TS_E_SOURCE, "%s:%lu: NUL byte in line",
					  file, lineno);
			goto out;
		}
		char *s = ts_source_trim(line);
		if (!*s || *s == '#')
			continue;
		/* An optional CSV header. */
		if (lineno == 1 && strcasecmp(s, "path,label") == 0)
			continue;
		char *comma = strrchr(s, ',');
		if (!comma) {
			rc = ts_error_set(err, TS_E_SOURCE,
					  "%s:%lu: expected 'path,label', got '%.80s'",
					  file, lineno, s);
			goto out;
		}
		*comma = '\0';
		char *path = ts_source_trim(s), *lab = ts_source_trim(comma + 1);
		int32_t label;
		if (!*path) {
			rc = ts_error_set(err, TS_E_SOURCE, "%s:%lu: empty path", file, lineno);
			goto out;
		}
		if (!ts_source_parse_label(lab, &label)) {
			rc = ts_error_set(err, TS_E_SOURCE,
					  "%s:%lu: label '%.40s' is not a non-negative integer",
					  file, lineno, lab);
			goto out;
		}
		char *full = ts_source_join_path(dir, path);
		struct ts_item it = {0};
		it.path = full ? ts_source_arena_dup(ix->arena, full, strlen(full)) : NULL;
		free(full);
		it.label = label;
		if (!it.path || ts_source_vec_push(items, &it)) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			goto out;
		}
		if (label > max_label)
			max_label = label;
	}
	if (ferror(f)) {
		rc = ts_error_set(err, -EIO, "list '%s': read error", file);
		goto out;
	}
	if (items->n == 0) {
		rc = ts_error_set(err, TS_E_SOURCE, "list '%s' has no entries", file);
		goto out;
	}
	ix->n_classes = (size_t)max_label + 1;
out:
	free(line);
	free(dir);
	fclose(f);
	return rc;
}

const struct ts_source_type ts_source_type_list = {
	.kind = TS_SRC_LIST, .open = list_open,
};
