/*
 * source.c - listing a data set once at open time: folder (ImageFolder),
 * list (path,label), tar (WebDataset shards) and synthetic; brace
 * expansion; the synchronous read used by the fallback path.
 */
#include "source.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define MAX_EXPANSIONS 1000000u
#define MAX_DEPTH 40

/* ---------------------------------------------------------------------
 * String arena: every path of an index lives in a few large chunks, so a
 * million-file data set costs a handful of allocations and one free walk.
 */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
};

struct ts_source_arena {
	struct arena_chunk *head;
};

static char *arena_dup(struct ts_source_arena *a, const char *s, size_t len)
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

static void arena_free(struct ts_source_arena *a)
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

/* A growable item array. */
struct item_vec {
	struct ts_item *v;
	size_t n, cap;
};

static int vec_push(struct item_vec *iv, const struct ts_item *it)
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
static char *join_path(const char *dir, const char *path)
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
static char *dir_of(const char *path)
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

/* ---------------------------------------------------------------------
 * folder
 */
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

static int walk_dir(const struct ts_source *src, const char *dir, int depth,
		    struct fent_vec *out, struct ts_error *err)
{
	if (depth > MAX_DEPTH)
		return ts_error_set(err, TS_E_SOURCE,
				    "folder '%s' nests deeper than %d levels (a symbolic link loop?)",
				    dir, MAX_DEPTH);
	DIR *d = opendir(dir);
	if (!d)
		return ts_error_set(err, -errno, "cannot list folder '%s': %s",
				    dir, strerror(errno));
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
			rc = walk_dir(src, full, depth + 1, out, err);
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
		       struct ts_index *ix, struct item_vec *items,
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
		char *cdir = join_path(root, classes[c]);
		if (!cdir) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			goto out;
		}
		fv.n = 0;
		rc = walk_dir(src, cdir, 0, &fv, err);
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
			it.path = arena_dup(ix->arena, fv.v[i].full, strlen(fv.v[i].full));
			it.label = (int32_t)c;
			free(fv.v[i].full);
			fv.v[i].full = NULL;
			if (!it.path || vec_push(items, &it)) {
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

/* ---------------------------------------------------------------------
 * list
 */
static char *trim(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* A decimal integer in 0..INT32_MAX filling all of s. */
static bool parse_label(const char *s, int32_t *out)
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

static int list_open(const char *file, struct ts_index *ix,
		     struct item_vec *items, struct ts_error *err)
{
	int rc = 0;
	char *line = NULL, *dir = NULL;
	size_t cap = 0;
	int32_t max_label = -1;
	FILE *f = fopen(file, "re");
	if (!f)
		return ts_error_set(err, TS_E_SOURCE, "list '%s': %s", file,
				    strerror(errno));
	dir = dir_of(file);
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
		char *s = trim(line);
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
		char *path = trim(s), *lab = trim(comma + 1);
		int32_t label;
		if (!*path) {
			rc = ts_error_set(err, TS_E_SOURCE, "%s:%lu: empty path", file, lineno);
			goto out;
		}
		if (!parse_label(lab, &label)) {
			rc = ts_error_set(err, TS_E_SOURCE,
					  "%s:%lu: label '%.40s' is not a non-negative integer",
					  file, lineno, lab);
			goto out;
		}
		char *full = join_path(dir, path);
		struct ts_item it = {0};
		it.path = full ? arena_dup(ix->arena, full, strlen(full)) : NULL;
		free(full);
		it.label = label;
		if (!it.path || vec_push(items, &it)) {
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

/* ---------------------------------------------------------------------
 * tar (ustar, with GNU long names and pax path records)
 */
enum member_kind { MEM_OTHER, MEM_IMAGE, MEM_CLS };

struct member {
	char *key;          /* malloc'd */
	size_t idx;         /* order in the shard */
	enum member_kind kind;
	uint64_t offset, size;
	int32_t label;
};

struct member_vec {
	struct member *v;
	size_t n, cap;
};

static int member_cmp(const void *pa, const void *pb)
{
	const struct member *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);
	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Octal (NUL/space padded) or GNU base-256 numeric header field. */
static bool tar_number(const unsigned char *f, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return false; /* negative */
		for (size_t i = 1; i < len; i++) {
			if (v >> 56)
				return false;
			v = (v << 8) | f[i];
		}
		*out = v;
		return true;
	}
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	bool any = false;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return false;
		v = v * 8 + (uint64_t)(f[i] - '0');
		any = true;
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = any ? v : 0;
	return true;
}

static bool tar_checksum_ok(const unsigned char *h)
{
	uint64_t want;
	if (!tar_number(h + 148, 8, &want))
		return false;
	uint64_t sum = 0;
	for (int i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return sum == want;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
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

/*
 * The header walk reads a shard front to back in large sequential chunks
 * (TAR_SCAN_CHUNK) and takes headers, extended headers and .cls labels
 * out of the chunk in memory: one read per chunk rather than one per
 * 512-byte header. Only a member larger than a chunk is skipped over
 * unread (its data is the reader's business at run time).
 */
#define TAR_SCAN_CHUNK (1u << 20)

struct scanbuf {
	int fd;
	uint64_t fsize;
	uint8_t *buf;             /* TAR_SCAN_CHUNK bytes */
	uint64_t base;            /* file offset of buf[0] */
	size_t len;               /* valid bytes */
	uint64_t reads;           /* chunk reads, for tests */
};

/* Bytes [off, off + len) of the shard (len <= TAR_SCAN_CHUNK, inside the
 * file), refilling the chunk from off when they are not in it. */
static int scan_get(struct scanbuf *sb, uint64_t off, size_t len, const uint8_t **out)
{
	if (off < sb->base || off + len > sb->base + sb->len) {
		uint64_t n = sb->fsize - off < TAR_SCAN_CHUNK ? sb->fsize - off : TAR_SCAN_CHUNK;
		if (n < len)
			return -EIO;
		int rc = pread_full(sb->fd, sb->buf, (size_t)n, off);
		if (rc)
			return rc;
		sb->base = off;
		sb->len = (size_t)n;
		sb->reads++;
	}
	*out = sb->buf + (off - sb->base);
	return 0;
}

/* The value of the "path" record of a pax extended header, or NULL. */
static char *pax_path(const char *data, size_t len)
{
	size_t i = 0;
	while (i < len) {
		char *end;
		unsigned long rl = strtoul(data + i, &end, 10);
		if (end == data + i || *end != ' ' || rl == 0 || i + rl > len)
			return NULL;
		const char *kv = end + 1;
		const char *rec_end = data + i + rl - 1; /* the '\n' */
		if (kv + 5 <= rec_end && memcmp(kv, "path=", 5) == 0) {
			size_t n = (size_t)(rec_end - kv - 5);
			char *p = malloc(n + 1);
			if (p) {
				memcpy(p, kv + 5, n);
				p[n] = '\0';
			}
			return p;
		}
		i += rl;
	}
	return NULL;
}

static int tar_add_member(const char *shard, struct scanbuf *sb, const char *name,
			  size_t idx, uint64_t off, uint64_t size,
			  struct member_vec *mv, struct ts_error *err)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	const char *dot = strchr(base, '.');
	if (!dot)
		return 0;
	const char *ext = dot + 1;
	struct member m = {0};
	if (strcasecmp(ext, "jpg") == 0 || strcasecmp(ext, "jpeg") == 0 ||
	    strcasecmp(ext, "png") == 0) {
		m.kind = MEM_IMAGE;
	} else if (strcasecmp(ext, "cls") == 0) {
		m.kind = MEM_CLS;
	} else {
		return 0;
	}
	if (m.kind == MEM_CLS) {
		char buf[32];
		const uint8_t *bytes;
		if (size >= sizeof(buf))
			return ts_error_set(err, TS_E_SOURCE,
					    "tar shard '%s': member '%s' is too long for a class label",
					    shard, name);
		int rc = scan_get(sb, off, (size_t)size, &bytes);
		if (rc)
			return ts_error_set(err, rc, "tar shard '%s': reading '%s': %s",
					    shard, name, strerror(-rc));
		memcpy(buf, bytes, (size_t)size);
		buf[size] = '\0';
		if (!parse_label(trim(buf), &m.label))
			return ts_error_set(err, TS_E_SOURCE,
					    "tar shard '%s': member '%s' does not hold a non-negative integer label",
					    shard, name);
	}
	size_t kl = (size_t)(dot - name);
	m.key = malloc(kl + 1);
	if (!m.key)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	memcpy(m.key, name, kl);
	m.key[kl] = '\0';
	m.idx = idx;
	m.offset = off;
	m.size = size;
	if (mv->n == mv->cap) {
		size_t cap = mv->cap ? mv->cap * 2 : 256;
		struct member *p = realloc(mv->v, cap * sizeof(*p));
		if (!p) {
			free(m.key);
			return ts_error_set(err, TS_E_NOMEM, "out of memory");
		}
		mv->v = p;
		mv->cap = cap;
	}
	mv->v[mv->n++] = m;
	return 0;
}

/* Walk the headers of one shard, collecting image and label members, in
 * large sequential chunks (struct scanbuf). What is used here: the
 * 512-byte headers, extended headers and the tiny .cls members; image
 * data larger than a chunk is skipped unread. */
static int tar_scan(const char *shard, int fd, uint64_t fsize,
		    struct member_vec *mv, struct ts_error *err)
{
	const unsigned char *h;
	uint64_t off = 0;
	size_t idx = 0;
	char *longname = NULL;
	int rc = 0;
	struct scanbuf sb = { .fd = fd, .fsize = fsize, .buf = malloc(TAR_SCAN_CHUNK) };
	if (!sb.buf)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	while (off + 512 <= fsize) {
		rc = scan_get(&sb, off, 512, &h);
		if (rc) {
			ts_error_set(err, rc, "tar shard '%s': %s", shard, strerror(-rc));
			goto out;
		}
		bool zero = true;
		for (int i = 0; i < 512 && zero; i++)
			zero = h[i] == 0;
		if (zero)
			break;
		uint64_t size;
		if (!tar_checksum_ok(h) || !tar_number(h + 124, 12, &size)) {
			rc = ts_error_set(err, TS_E_SOURCE,
					  "tar shard '%s': bad header at byte %llu (not a tar file?)",
					  shard, (unsigned long long)off);
			goto out;
		}
		uint64_t data = off + 512;
		if (size > fsize || data > fsize - size) {
			rc = ts_error_set(err, TS_E_SOURCE,
					  "tar shard '%s' is truncated (member at byte %llu)",
					  shard, (unsigned long long)off);
			goto out;
		}
		char type = (char)h[156];
		if (type == 'L' || type == 'x') {
			if (size > 65536) {
				rc = ts_error_set(err, TS_E_SOURCE,
						  "tar shard '%s': oversized extended header at byte %llu",
						  shard, (unsigned long long)off);
				goto out;
			}
			char *buf = malloc((size_t)size + 1);
			const uint8_t *bytes;
			if (!buf) {
				rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
				goto out;
			}
			rc = scan_get(&sb, data, (size_t)size, &bytes);
			if (rc) {
				free(buf);
				ts_error_set(err, rc, "tar shard '%s': %s", shard, strerror(-rc));
				goto out;
			}
			memcpy(buf, bytes, (size_t)size);
			buf[size] = '\0';
			char *name = type == 'L' ? ts_strdup(buf) : pax_path(buf, (size_t)size);
			free(buf);
			if (name) {
				free(longname);
				longname = name;
			}
		} else if (type == '0' || type == '\0' || type == '7') {
			char name[257];
			const char *use = longname;
			if (!use) {
				size_t k = 0;
				if (memcmp(h + 257, "ustar", 5) == 0 && h[345]) {
					k = strnlen((const char *)h + 345, 155);
					memcpy(name, h + 345, k);
					name[k++] = '/';
				}
				size_t nl = strnlen((const char *)h, 100);
				memcpy(name + k, h, nl);
				name[k + nl] = '\0';
				use = name;
			}
			rc = tar_add_member(shard, &sb, use, idx++, data, size, mv, err);
			free(longname);
			longname = NULL;
			if (rc)
				goto out;
		} else {
			free(longname);
			longname = NULL;
		}
		off = data + ((size + 511) & ~UINT64_C(511));
	}
out:
	free(longname);
	free(sb.buf);
	return rc;
}

struct sample {
	size_t first;
	uint64_t offset, size;
	int32_t label;
};

static int sample_cmp(const void *pa, const void *pb)
{
	const struct sample *a = pa, *b = pb;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* Group a shard's members by key, in the order each key first appears. */
static int tar_group(const char *shard, const char *spath, struct member_vec *mv,
		     struct item_vec *items, int32_t *max_label,
		     struct ts_error *err)
{
	int rc = 0;
	struct sample *s = NULL;
	size_t ns = 0;
	if (mv->n == 0)
		return 0;
	qsort(mv->v, mv->n, sizeof(*mv->v), member_cmp);
	s = malloc(mv->n * sizeof(*s));
	if (!s)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	for (size_t i = 0; i < mv->n;) {
		size_t j = i;
		const struct member *img = NULL, *cls = NULL;
		while (j < mv->n && strcmp(mv->v[j].key, mv->v[i].key) == 0) {
			if (mv->v[j].kind == MEM_IMAGE && !img)
				img = &mv->v[j];
			if (mv->v[j].kind == MEM_CLS && !cls)
				cls = &mv->v[j];
			j++;
		}
		if (!img || !cls) {
			rc = ts_error_set(err, TS_E_SOURCE,
					  "tar shard '%s': key '%s' has %s but no %s member",
					  shard, mv->v[i].key,
					  img ? "an image" : "a .cls label",
					  img ? ".cls label" : ".jpg/.jpeg/.png image");
			goto out;
		}
		s[ns].first = mv->v[i].idx;
		s[ns].offset = img->offset;
		s[ns].size = img->size;
		s[ns].label = cls->label;
		ns++;
		i = j;
	}
	qsort(s, ns, sizeof(*s), sample_cmp);
	for (size_t i = 0; i < ns; i++) {
		struct ts_item it = {spath, s[i].label, s[i].offset, s[i].size, true};
		if (vec_push(items, &it)) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			goto out;
		}
		if (s[i].label > *max_label)
			*max_label = s[i].label;
	}
out:
	free(s);
	return rc;
}

static int tar_open(const struct ts_source *src, struct ts_index *ix,
		    struct item_vec *items, struct ts_error *err)
{
	char **shards = NULL;
	size_t n = 0;
	int32_t max_label = -1;
	struct member_vec mv = {0};
	int rc = ts_source_expand(src->path, &shards, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *path = join_path(src->base_dir, shards[i]);
		const char *spath = path ? arena_dup(ix->arena, path, strlen(path)) : NULL;
		free(path);
		if (!spath) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			break;
		}
		int fd = open(spath, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = ts_error_set(err, TS_E_SOURCE, "tar shard '%s': %s", spath,
					  strerror(errno));
			break;
		}
		struct stat st;
		if (fstat(fd, &st) != 0) {
			rc = ts_error_set(err, -errno, "tar shard '%s': %s", spath,
					  strerror(errno));
		} else {
			rc = tar_scan(spath, fd, (uint64_t)st.st_size, &mv, err);
			if (rc == 0)
				rc = tar_group(spath, spath, &mv, items, &max_label, err);
		}
		close(fd);
		for (size_t k = 0; k < mv.n; k++)
			free(mv.v[k].key);
		mv.n = 0;
	}
	if (rc == 0 && items->n == 0)
		rc = ts_error_set(err, TS_E_SOURCE,
				  "tar shards '%s' hold no samples (image + .cls members)",
				  src->path);
	if (rc == 0)
		ix->n_classes = (size_t)max_label + 1;
	free(mv.v);
	ts_source_strings_free(shards, n);
	return rc;
}

/* ---------------------------------------------------------------------
 * brace expansion
 */
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

/* ---------------------------------------------------------------------
 * open / destroy / item access
 */
static int synthetic_check(const struct ts_source *src, struct ts_error *err)
{
	if (src->count <= 0)
		return ts_error_set(err, TS_E_SOURCE,
				    "synthetic source: count must be positive (got %lld)",
				    (long long)src->count);
	if (src->height <= 0 || src->width <= 0 || src->height > 65535 ||
	    src->width > 65535 || src->channels < 1 || src->channels > 4 ||
	    (src->depth != 8 && src->depth != 16))
		return ts_error_set(err, TS_E_ARG,
				    "synthetic source: bad shape %dx%dx%d at %d bits",
				    src->height, src->width, src->channels, src->depth);
	return 0;
}

int ts_source_open(const struct ts_source *src, struct ts_index **out,
		   struct ts_error *err)
{
	int rc = 0;
	struct item_vec items = {0};
	struct ts_index *ix = calloc(1, sizeof(*ix));
	if (!ix || !(ix->arena = calloc(1, sizeof(*ix->arena)))) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto fail;
	}
	ix->kind = src->kind;

	if (src->kind != TS_SRC_SYNTHETIC) {
		if (!src->path || !src->path[0]) {
			rc = ts_error_set(err, TS_E_SOURCE, "source has no path");
			goto fail;
		}
		ix->root = join_path(src->base_dir, src->path);
		if (!ix->root) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			goto fail;
		}
	} else {
		ix->root = ts_strdup("synthetic");
	}

	switch (src->kind) {
	case TS_SRC_FOLDER:
		rc = folder_open(src, ix->root, ix, &items, err);
		break;
	case TS_SRC_LIST:
		rc = list_open(ix->root, ix, &items, err);
		break;
	case TS_SRC_TAR:
		rc = tar_open(src, ix, &items, err);
		break;
	case TS_SRC_SYNTHETIC:
		rc = synthetic_check(src, err);
		break;
	default:
		rc = ts_error_set(err, TS_E_ARG, "unknown source kind %d", (int)src->kind);
		break;
	}
	if (rc)
		goto fail;

	/* Every node lists the whole data set: its share is taken per epoch,
	 * after the epoch's order (runtime/share.h). */
	if (src->kind == TS_SRC_SYNTHETIC) {
		ix->n_total = (size_t)src->count;
		ix->n = ix->n_total;
		ix->n_classes = src->classes > 0 ? (size_t)src->classes : 1;
	} else {
		ix->n_total = items.n;
		ix->n = items.n;
		ix->items = items.v;
		items.v = NULL;
	}
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
	arena_free(ix->arena);
	free(ix);
}

void ts_source_item(const struct ts_index *ix, size_t i, struct ts_item *out)
{
	if (ix->kind != TS_SRC_SYNTHETIC) {
		*out = ix->items[i];
		return;
	}
	uint64_t id = (uint64_t)i;
	out->path = NULL;
	out->label = (int32_t)(id % ix->n_classes);
	out->offset = id;
	out->size = 0;
	out->is_range = false;
}

/* ---------------------------------------------------------------------
 * synthetic pixels
 */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * A per-image gradient plus a hashed texture: cheap enough that overhead
 * benchmarks measure the pipeline rather than the generator, varied enough
 * that a wrong index or a swapped channel shows up in a digest.
 */
int ts_source_synthetic(const struct ts_source *src, uint64_t id,
			struct ts_image *out, int32_t *label)
{
	int rc = synthetic_check(src, NULL);
	if (rc)
		return TS_E_ARG;
	enum ts_dtype dt = src->depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8;
	rc = ts_image_reserve(out, src->width, src->height, src->channels, dt);
	if (rc)
		return rc;
	uint64_t h = mix64(id + 0x9e3779b97f4a7c15ULL);
	unsigned ax = (unsigned)(h & 7) + 1, ay = (unsigned)((h >> 3) & 7) + 1;
	unsigned ac = (unsigned)((h >> 6) & 63) + 17, base = (unsigned)(h >> 16);
	int c = src->channels;
	for (int y = 0; y < src->height; y++) {
		uint8_t *row = out->data + (size_t)y * out->stride;
		for (int x = 0; x < src->width; x++) {
			unsigned noise = (unsigned)((x * 31 + y * 17) ^ (int)(h >> 40)) & 15;
			for (int k = 0; k < c; k++) {
				unsigned v = base + (unsigned)x * ax + (unsigned)y * ay +
					     (unsigned)k * ac + noise;
				size_t at = (size_t)x * (size_t)c + (size_t)k;
				if (dt == TS_DTYPE_U16)
					((uint16_t *)row)[at] = (uint16_t)(v * 257u);
				else
					row[at] = (uint8_t)v;
			}
		}
	}
	if (label)
		*label = src->classes > 0 ? (int32_t)(id % (uint64_t)src->classes) : 0;
	return 0;
}

/* ---------------------------------------------------------------------
 * synchronous read
 */
int ts_source_read(const struct ts_item *item, uint8_t **data, size_t *len,
		   struct ts_error *err)
{
	if (!item->path)
		return ts_error_set(err, TS_E_ARG, "item has no file to read");
	int rc = 0;
	uint8_t *buf = NULL;
	size_t got = 0;
	int fd = open(item->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ts_error_set(err, -errno, "cannot open '%s': %s", item->path,
				    strerror(errno));
	if (item->is_range) {
		if (item->size > SIZE_MAX - 1) {
			rc = ts_error_set(err, -EFBIG, "'%s': member too large", item->path);
			goto out;
		}
		buf = malloc(item->size ? (size_t)item->size : 1);
		if (!buf) {
			rc = ts_error_set(err, -ENOMEM, "out of memory reading '%s'", item->path);
			goto out;
		}
		rc = pread_full(fd, buf, (size_t)item->size, item->offset);
		if (rc) {
			ts_error_set(err, rc, "reading '%s' at %llu: %s", item->path,
				     (unsigned long long)item->offset,
				     rc == -EIO ? "short read (file truncated?)" : strerror(-rc));
			goto out;
		}
		got = (size_t)item->size;
	} else {
		/* Size from fstat, but read until EOF: a file that grew or a
		 * file system that reports 0 still reads completely. */
		struct stat st;
		size_t cap = 4096;
		if (fstat(fd, &st) == 0 && st.st_size > 0)
			cap = (size_t)st.st_size + 1;
		buf = malloc(cap);
		if (!buf) {
			rc = ts_error_set(err, -ENOMEM, "out of memory reading '%s'", item->path);
			goto out;
		}
		for (;;) {
			if (got == cap) {
				uint8_t *p = realloc(buf, cap * 2);
				if (!p) {
					rc = ts_error_set(err, -ENOMEM, "out of memory reading '%s'",
							  item->path);
					goto out;
				}
				buf = p;
				cap *= 2;
			}
			ssize_t r = read(fd, buf + got, cap - got);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				rc = ts_error_set(err, -errno, "reading '%s': %s", item->path,
						  strerror(errno));
				goto out;
			}
			if (r == 0)
				break;
			got += (size_t)r;
		}
	}
	*data = buf;
	*len = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
