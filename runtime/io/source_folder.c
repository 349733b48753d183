/*
 * source_folder.c - the folder() source: an ImageFolder tree (one sub-folder per class,
 * or files at the top with label 0) walked once, sorted, extensions matched.
 */
#include "source_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define MAX_DEPTH 40

static const char *default_exts[] = {".jpg", ".jpeg", ".png"};

/* "'.jpg .jpeg .png'" for messages. */
static void ext_list(const struct ts_source *src, char *buf, size_t size)
{
	size_t n = src->n_exts ? src->n_exts : TS_ARRAY_LEN(default_exts);
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && k < size; i++) {
		const char *e = src->n_exts ? src->exts[i] : default_exts[i];
		int w = snprintf(buf + k, size - k, "%s%s", i ? " " : "", e);
		if (w < 0)
			break;
		k += (size_t)w;
	}
}

static bool ext_match(const struct ts_source *src, const char *name)
{
	size_t n = src->n_exts ? src->n_exts : TS_ARRAY_LEN(default_exts);
	size_t ln = strlen(name);
	for (size_t i = 0; i < n; i++) {
		const char *e = src->n_exts ? src->exts[i] : default_exts[i];
		size_t le = strlen(e);
		if (ln >= le && strcasecmp(name + ln - le, e) == 0)
			return true;
	}
	return false;
}

struct fent {
	char *full;     /* dir + '/' + name, malloc'd */
	size_t dirlen;
};

struct fent_vec {
	struct fent *v;
	size_t n, cap;
};

static int fent_push(struct fent_vec *fv, char *full, size_t dirlen)
{
	if (fv->n == fv->cap) {
		size_t cap = fv->cap ? fv->cap * 2 : 64;
		struct fent *p = realloc(fv->v, cap * sizeof(*p));
		if (!p)
			return TS_E_NOMEM;
		fv->v = p;
		fv->cap = cap;
	}
	fv->v[fv->n].full = full;
	fv->v[fv->n].dirlen = dirlen;
	fv->n++;
	return 0;
}

/*
 * torchvision sorts os.walk's (root, files) tuples by root and each
 * directory's files by name; comparing (directory string, name) pairs
 * reproduces that order exactly, nested directories included.
 */
static int fent_cmp(const void *pa, const void *pb)
{
	const struct fent *a = pa, *b = pb;
	size_t m = a->dirlen < b->dirlen ? a->dirlen : b->dirlen;
	int c = memcmp(a->full, b->full, m);
	if (c)
		return c;
	if (a->dirlen != b->dirlen)
		return a->dirlen < b->dirlen ? -1 : 1;
	return strcmp(a->full + a->dirlen + 1, b->full + b->dirlen + 1);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is entry `name` of directory fd a directory / regular file (following
 * symbolic links, as torchvision's os.walk(followlinks=True) does)? */
static int entry_type(int dfd, const struct dirent *de)
{
	if (de->d_type == DT_DIR)
		return DT_DIR;
	if (de->d_type == DT_REG)
		return DT_REG;
	if (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, 0) != 0)
			return DT_UNKNOWN;
		if (S_ISDIR(st.st_mode))
			return DT_DIR;
		if (S_ISREG(st.st_mode))
			return DT_REG;
	}
	return DT_UNKNOWN;
}

/* The folders one class's walk has listed, by (device, inode): each is
 * listed once, however many symbolic links lead to it, so links cannot
 * multiply the paths (21 folders of two links each made 2^20 paths to
 * one image). An open-addressing set; 0 is never an inode here. */
struct seen_dirs {
	struct { dev_t dev; ino_t ino; } *v;
	size_t n, cap;
};

/* Add (dev, ino); 1 if it was there already, 0 if added, TS_E_NOMEM. */
static int seen_add(struct seen_dirs *s, dev_t dev, ino_t ino)
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct seen_dirs t = {.v = calloc(cap, sizeof(*s->v)), .cap = cap};
		if (!t.v)
			return TS_E_NOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i].ino)
				seen_add(&t, s->v[i].dev, s->v[i].ino);
		free(s->v);
		*s = t;
	}
	size_t mask = s->cap - 1;
	for (size_t i = (size_t)((uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev) & mask;;
	     i = (i + 1) & mask) {
		if (!s->v[i].ino) {
			s->v[i].dev = dev;
			s->v[i].ino = ino ? ino : (ino_t)-1;
			s->n++;
			return 0;
		}
		if (s->v[i].dev == dev && s->v[i].ino == (ino ? ino : (ino_t)-1))
			return 1;
	}
}

static int walk_dir(const struct ts_source *src, const char *dir, int depth,
		    struct seen_dirs *seen, struct fent_vec *out, struct ts_error *err)
{
	if (depth > MAX_DEPTH)
		return ts_error_set(err, TS_E_SOURCE,
				    "folder '%s' nests deeper than %d levels (a symbolic link loop?)",
				    dir, MAX_DEPTH);
	DIR *d = opendir(dir);
	if (!d)
		return ts_error_set(err, -errno, "cannot list folder '%s': %s",
				    dir, strerror(errno));
	struct stat dst;
	if (fstat(dirfd(d), &dst) == 0) {
		int k = seen_add(seen, dst.st_dev, dst.st_ino);
		if (k != 0) {
			closedir(d);
			return k < 0 ? ts_error_set(err, TS_E_NOMEM, "out of memory listing '%s'",
						    dir) : 0;  /* listed already */
		}
	}
	int rc = 0;
	size_t dl = strlen(dir);
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int t = entry_type(dirfd(d), de);
		if (t != DT_DIR && !(t == DT_REG && ext_match(src, de->d_name)))
			continue;
		size_t ln = strlen(de->d_name);
		char *full = malloc(dl + ln + 2);
		if (!full) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory listing '%s'", dir);
			goto out;
		}
		memcpy(full, dir, dl);
		full[dl] = '/';
		memcpy(full + dl + 1, de->d_name, ln + 1);
		if (t == DT_DIR) {
			rc = walk_dir(src, full, depth + 1, seen, out, err);
			free(full);
		} else {
			rc = fent_push(out, full, dl);
			if (rc) {
				free(full);
				ts_error_set(err, rc, "out of memory listing '%s'", dir);
			}
		}
		if (rc)
			goto out;
		errno = 0;
	}
	if (errno)
		rc = ts_error_set(err, -errno, "cannot list folder '%s': %s", dir,
				  strerror(errno));
out:
	closedir(d);
	return rc;
}

static int folder_open(const struct ts_source *src, const char *root,
		       struct ts_index *ix, struct ts_item_vec *items,
		       struct ts_error *err)
{
	char exts[128];
	ext_list(src, exts, sizeof(exts));
	struct stat st;
	if (stat(root, &st) != 0)
		return ts_error_set(err, TS_E_SOURCE, "folder '%s': %s; check the path in the "
				    "pipeline (a relative path starts at the pipeline file's "
				    "folder), or make a data set with 'tsrun make-dataset'",
				    root, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ts_error_set(err, TS_E_SOURCE, "folder '%s' is not a directory", root);

	int rc = 0;
	char **classes = NULL;
	size_t nc = 0, capc = 0;
	struct fent_vec fv = {0};
	DIR *d = opendir(root);
	if (!d)
		return ts_error_set(err, TS_E_SOURCE, "cannot list folder '%s': %s",
				    root, strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (entry_type(dirfd(d), de) != DT_DIR)
			continue;
		if (nc == capc) {
			size_t cap = capc ? capc * 2 : 16;
			char **p = realloc(classes, cap * sizeof(*p));
			if (!p) {
				rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
				goto out;
			}
			classes = p;
			capc = cap;
		}
		classes[nc] = ts_strdup(de->d_name);
		if (!classes[nc]) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			goto out;
		}
		nc++;
	}
	closedir(d);
	d = NULL;
	if (nc == 0) {
		rc = ts_error_set(err, TS_E_SOURCE,
				  "folder '%s' has no class sub-folders (expected %s/<class>/<image>)",
				  root, root);
		goto out;
	}
	qsort(classes, nc, sizeof(*classes), str_cmp);

	for (size_t c = 0; c < nc; c++) {
		char *cdir = ts_source_join_path(root, classes[c]);
		if (!cdir) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			goto out;
		}
		fv.n = 0;
		struct seen_dirs seen = {0};
		rc = walk_dir(src, cdir, 0, &seen, &fv, err);
		free(seen.v);
		if (rc == 0 && fv.n == 0)
			rc = ts_error_set(err, TS_E_SOURCE,
					  "folder '%s' has no images with extensions %s",
					  cdir, exts);
		free(cdir);
		if (rc)
			goto out;
		if (fv.n > INT32_MAX || c > INT32_MAX) {
			rc = ts_error_set(err, TS_E_SOURCE, "folder '%s' is too large", root);
			goto out;
		}
		qsort(fv.v, fv.n, sizeof(*fv.v), fent_cmp);
		for (size_t i = 0; i < fv.n; i++) {
			struct ts_item it = {0};
			it.path = ts_source_arena_dup(ix->arena, fv.v[i].full, strlen(fv.v[i].full));
			it.label = (int32_t)c;
			free(fv.v[i].full);
			fv.v[i].full = NULL;
			if (!it.path || ts_source_vec_push(items, &it)) {
				for (size_t j = i + 1; j < fv.n; j++)
					free(fv.v[j].full);
				fv.n = 0;
				rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
				goto out;
			}
		}
		fv.n = 0;
	}
	ix->classes = classes;
	ix->n_classes = nc;
	classes = NULL;
out:
	if (d)
		closedir(d);
	for (size_t i = 0; i < fv.n; i++)
		free(fv.v[i].full);
	free(fv.v);
	if (classes) {
		for (size_t i = 0; i < nc; i++)
			free(classes[i]);
		free(classes);
	}
	return rc;
}

const struct ts_source_type ts_source_type_folder = {
	.kind = TS_SRC_FOLDER, .open = folder_open,
};
