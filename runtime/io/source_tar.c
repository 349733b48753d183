/*
 * source_tar.c - the tar() source: WebDataset shards (ustar, with GNU long
 * names and pax path records), members grouped into samples by key, labels
 * from .cls members.
 */
#include "source_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

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
		int rc = ts_source_pread_full(sb->fd, sb->buf, (size_t)n, off);
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
					    shard, name, ts_error_name(rc));
		memcpy(buf, bytes, (size_t)size);
		buf[size] = '\0';
		if (!ts_source_parse_label(ts_source_trim(buf), &m.label))
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
			ts_error_set(err, rc, "tar shard '%s': %s", shard, ts_error_name(rc));
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
				ts_error_set(err, rc, "tar shard '%s': %s", shard, ts_error_name(rc));
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
		     struct ts_item_vec *items, int32_t *max_label,
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
		if (ts_source_vec_push(items, &it)) {
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

/* The shards are src->path's expansion (root unused: each shard is
 * joined to the pipeline's folder on its own). */
static int tar_open(const struct ts_source *src, const char *root,
		    struct ts_index *ix, struct ts_item_vec *items,
		    struct ts_error *err)
{
	char **shards = NULL;
	size_t n = 0;
	int32_t max_label = -1;
	struct member_vec mv = {0};
	int rc = ts_source_expand(src->path, &shards, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *path = ts_source_join_path(src->base_dir, shards[i]);
		const char *spath = path ? ts_source_arena_dup(ix->arena, path, strlen(path)) : NULL;
		free(path);
		if (!spath) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
			break;
		}
		/* O_NONBLOCK: a FIFO shard must not block the listing */
		int fd = open(spath, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0) {
			rc = ts_error_set(err, TS_E_SOURCE, "tar shard '%s': %s", spath,
					  strerror(errno));
			break;
		}
		struct stat st;
		if (fstat(fd, &st) != 0) {
			rc = ts_error_set(err, -errno, "tar shard '%s': %s", spath,
					  strerror(errno));
		} else if (!S_ISREG(st.st_mode)) {
			rc = ts_error_set(err, TS_E_SOURCE, "tar shard '%s': %s", spath,
					  TS_SOURCE_NOT_REGULAR);
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

const struct ts_source_type ts_source_type_tar = {
	.kind = TS_SRC_TAR, .open = tar_open,
};
