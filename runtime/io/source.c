/*
 * source.c - listing a data set once at open time: the kind's listing
 * (source_folder.c, source_list.c, source_tar.c, source_synthetic.c),
 * item access, the synchronous read used by the fallback path, and the
 * helpers the kinds share (source_internal.h).
 */
#include "source_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ---------------------------------------------------------------------
 * String arena: every path of an index lives in a few large chunks, so a
 * million-file data set costs a handful of allocations and one free walk.
 */
char *ts_source_arena_dup(struct ts_source_arena *a, const char *s, size_t len)
{
	struct arena_chunk *c = a->head;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = a->head;
		c->used = 0;
		c->cap = cap;
		a->head = c;
	}
	char *p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

void ts_source_arena_free(struct ts_source_arena *a)
{
	if (!a)
		return;
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *n = c->next;
		free(c);
		c = n;
	}
	free(a);
}

int ts_source_vec_push(struct ts_item_vec *iv, const struct ts_item *it)
{
	if (iv->n == iv->cap) {
		size_t cap = iv->cap ? iv->cap * 2 : 256;
		struct ts_item *p = realloc(iv->v, cap * sizeof(*p));
		if (!p)
			return TS_E_NOMEM;
		iv->v = p;
		iv->cap = cap;
	}
	iv->v[iv->n++] = *it;
	return 0;
}

/* path joined to dir unless path is absolute or dir is NULL/empty. */
char *ts_source_join_path(const char *dir, const char *path)
{
	if (path[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0)
		return ts_strdup(path);
	size_t ld = strlen(dir), lp = strlen(path);
	char *s = malloc(ld + lp + 2);
	if (!s)
		return NULL;
	memcpy(s, dir, ld);
	size_t k = ld;
	if (dir[ld - 1] != '/')
		s[k++] = '/';
	memcpy(s + k, path, lp + 1);
	return s;
}

/* The directory part of a file path ("." when it has none). */
char *ts_source_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ts_strdup(".");
	if (slash == path)
		return ts_strdup("/");
	char *d = malloc((size_t)(slash - path) + 1);
	if (!d)
		return NULL;
	memcpy(d, path, (size_t)(slash - path));
	d[slash - path] = '\0';
	return d;
}


/* ---------------------------------------------------------------------
 * path and label parsing (list and tar)
 */
char *ts_source_trim(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* A decimal integer in 0..INT32_MAX filling all of s. */
bool ts_source_parse_label(const char *s, int32_t *out)
{
	if (!*s)
		return false;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > INT32_MAX)
		return false;
	*out = (int32_t)v;
	return true;
}


/* ---------------------------------------------------------------------
 * open / destroy / item access
 */

/* The kinds (source_internal.h), each a row in its own file. */
static const struct ts_source_type *const types[] = {
	&ts_source_type_folder, &ts_source_type_list, &ts_source_type_tar,
	&ts_source_type_synthetic,
};

int ts_source_open(const struct ts_source *src, struct ts_index **out,
		   struct ts_error *err)
{
	int rc = 0;
	struct ts_item_vec items = {0};
	struct ts_index *ix = calloc(1, sizeof(*ix));
	if (!ix || !(ix->arena = calloc(1, sizeof(*ix->arena)))) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto fail;
	}
	const struct ts_source_type *type = NULL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i]->kind == src->kind)
			type = types[i];
	if (!type) {
		rc = ts_error_set(err, TS_E_ARG, "unknown source kind %d", (int)src->kind);
		goto fail;
	}
	ix->type = type;

	if (ts_source_kind_encoded(src->kind)) {
		if (!src->path || !src->path[0]) {
			rc = ts_error_set(err, TS_E_SOURCE, "source has no path");
			goto fail;
		}
		ix->root = ts_source_join_path(src->base_dir, src->path);
	} else {
		ix->root = ts_strdup(ts_source_kind_name(src->kind));
	}
	if (!ix->root) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto fail;
	}
	if ((rc = type->open(src, ix->root, ix, &items, err)))
		goto fail;

	/* Every node lists the whole data set: its share is taken per epoch,
	 * after the epoch's order (runtime/share.h). */
	if (!type->item) {
		ix->n_total = items.n;
		ix->items = items.v;
		items.v = NULL;
	}
	ix->n = ix->n_total;
	if (ix->n == 0) {
		rc = ts_error_set(err, TS_E_SOURCE, "'%s' has no items", ix->root);
		goto fail;
	}
	*out = ix;
	return 0;
fail:
	free(items.v);
	ts_source_index_destroy(ix);
	return rc;
}

void ts_source_index_destroy(struct ts_index *ix)
{
	if (!ix)
		return;
	free(ix->items);
	if (ix->classes) {
		for (size_t i = 0; i < ix->n_classes; i++)
			free(ix->classes[i]);
		free(ix->classes);
	}
	free(ix->root);
	ts_source_arena_free(ix->arena);
	free(ix);
}

void ts_source_item(const struct ts_index *ix, size_t i, struct ts_item *out)
{
	if (ix->type->item)
		ix->type->item(ix, i, out);
	else
		*out = ix->items[i];
}

/* ---------------------------------------------------------------------
 * synchronous read
 */
int ts_source_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}


uint64_t ts_source_file_size(const char *path)
{
	struct stat st;
	return path && stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int ts_source_too_big(uint64_t size, uint64_t max, struct ts_error *err)
{
	char a[32], b[32];
	ts_plan_format_size(size, a, sizeof(a));
	ts_plan_format_size(max, b, sizeof(b));
	return ts_error_set(err, -EFBIG, "%s, more than max_file_size (%s): not read; "
			    "raise max_file_size in the serve block if it is meant", a, b);
}

int ts_source_read(const struct ts_item *item, uint64_t max, uint8_t **data, size_t *len,
		   struct ts_error *err)
{
	if (!item->path)
		return ts_error_set(err, TS_E_ARG, "item has no file to read");
	int rc = 0;
	uint8_t *buf = NULL;
	size_t got = 0;
	/* O_NONBLOCK: a FIFO planted in place of an image must not block
	 * the open (regular files ignore the flag) */
	int fd = open(item->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return ts_error_set(err, -errno, "cannot open '%s': %s", item->path,
				    strerror(errno));
	struct stat fst;
	if (fstat(fd, &fst) == 0 && S_ISDIR(fst.st_mode)) {
		rc = ts_error_set(err, -EISDIR, "reading '%s': %s", item->path, strerror(EISDIR));
		goto out;
	}
	if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
		rc = ts_error_set(err, -ESPIPE, "%s", TS_SOURCE_NOT_REGULAR);
		goto out;
	}
	uint64_t size = item->is_range ? item->size : (uint64_t)fst.st_size;
	if (size > max) {
		rc = ts_source_too_big(size, max, err);
		goto out;
	}
	if (item->is_range) {
		if (item->size > SIZE_MAX - 1) {
			rc = ts_error_set(err, -EFBIG, "'%s': member too large", item->path);
			goto out;
		}
		buf = malloc(item->size ? (size_t)item->size : 1);
		if (!buf) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory reading '%s'", item->path);
			goto out;
		}
		rc = ts_source_pread_full(fd, buf, (size_t)item->size, item->offset);
		if (rc) {
			ts_error_set(err, rc, "reading '%s' at %llu: %s", item->path,
				     (unsigned long long)item->offset,
				     rc == -EIO ? "short read (file truncated?)" : ts_error_name(rc));
			goto out;
		}
		got = (size_t)item->size;
	} else {
		/* Size from fstat, but read until EOF: a file that grew or a
		 * file system that reports 0 still reads completely. */
		void *p = NULL;
		rc = ts_read_fd_all(fd, (size_t)size, max, &p, &got);
		if (rc == -EFBIG) {  /* it grew past the cap while we read */
			rc = ts_source_too_big(got, max, err);
			goto out;
		}
		if (rc == TS_E_NOMEM) {
			rc = ts_error_set(err, rc, "out of memory reading '%s'", item->path);
			goto out;
		}
		if (rc < 0) {
			rc = ts_error_set(err, rc, "reading '%s': %s", item->path,
					  ts_error_name(rc));
			goto out;
		}
		buf = p;
	}
	*data = buf;
	*len = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
