/*
 * test-source.c - data set listing: folder, list, tar, synthetic, shard,
 * brace expansion, the synchronous read, and the per-epoch shuffle.
 * Test data is made at run time in a temp dir.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"
#include "shuffle.h"
#include "util.h"

static char tmp[256];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/ts-source-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* Write `content` to tmp/rel, creating parent directories. */
static void put(const char *rel, const char *content)
{
	char path[512], cmd[600];
	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
	*slash = '/';
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static void mkdir_rel(const char *rel)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", tmp, rel);
	ck_assert_int_eq(system(cmd), 0);
}

static struct ts_source src_of(enum ts_source_kind kind, const char *path)
{
	struct ts_source s;
	memset(&s, 0, sizeof(s));
	s.kind = kind;
	s.path = (char *)path;
	s.base_dir = tmp;
	return s;
}

/* The item path relative to tmp. */
static const char *rel(const char *p)
{
	size_t n = strlen(tmp);
	ck_assert_int_eq(strncmp(p, tmp, n), 0);
	return p + n + 1;
}

/* ------------------------------------------------------------------ folder */

START_TEST(folder_labels_and_order)
{
	/* Created in an unsorted order; order and labels as torchvision's
	 * ImageFolder gives them (checked against torchvision 0.x). */
	put("R/zebra/2.JPG", "z2");
	put("R/zebra/1.jpg", "z1");
	put("R/zebra/notes.txt", "no");
	put("R/apple/x.PNG", "ax");
	put("R/apple/a.jpg", "aa");
	put("R/apple/B.jpg", "aB");
	put("R/apple/sub/y.jpeg", "ay");
	put("R/apple/sub-2/z.png", "az");
	put("R/apple/sub/deeper/w.jpg", "aw");
	put("R/Mango/m.jpg", "mm");
	put("R/stray.jpg", "not in a class");

	static const struct { const char *path; int label; } want[] = {
		{"R/Mango/m.jpg", 0},
		{"R/apple/B.jpg", 1},
		{"R/apple/a.jpg", 1},
		{"R/apple/x.PNG", 1},
		{"R/apple/sub/y.jpeg", 1},
		{"R/apple/sub-2/z.png", 1},
		{"R/apple/sub/deeper/w.jpg", 1},
		{"R/zebra/1.jpg", 2},
		{"R/zebra/2.JPG", 2},
	};
	struct ts_source s = src_of(TS_SRC_FOLDER, "R");
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), 0);
	ck_assert_uint_eq(ix->n, TS_ARRAY_LEN(want));
	ck_assert_uint_eq(ix->n_total, TS_ARRAY_LEN(want));
	ck_assert_uint_eq(ix->n_classes, 3);
	ck_assert_str_eq(ix->classes[0], "Mango");
	ck_assert_str_eq(ix->classes[1], "apple");
	ck_assert_str_eq(ix->classes[2], "zebra");
	for (size_t i = 0; i < ix->n; i++) {
		struct ts_item it;
		ts_source_item(ix, i, &it);
		ck_assert_str_eq(rel(it.path), want[i].path);
		ck_assert_int_eq(it.label, want[i].label);
		ck_assert(!it.is_range);
		ck_assert_uint_eq(it.offset, 0);
	}
	/* The synchronous read returns the file's bytes. */
	uint8_t *data;
	size_t len;
	ck_assert_int_eq(ts_source_read(&ix->items[8], UINT64_MAX, &data, &len, &err), 0);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(memcmp(data, "z2", 2), 0);
	free(data);
	ts_source_index_destroy(ix);
}
END_TEST

START_TEST(folder_custom_exts)
{
	put("R/a/1.png", "1");
	put("R/a/2.jpg", "2");
	put("R/b/3.PnG", "3");
	char *exts[] = {".png"};
	struct ts_source s = src_of(TS_SRC_FOLDER, "R");
	s.exts = exts;
	s.n_exts = 1;
	struct ts_index *ix = NULL;
	ck_assert_int_eq(ts_source_open(&s, &ix, NULL), 0);
	ck_assert_uint_eq(ix->n, 2);
	ck_assert_str_eq(rel(ix->items[0].path), "R/a/1.png");
	ck_assert_str_eq(rel(ix->items[1].path), "R/b/3.PnG");
	ck_assert_int_eq(ix->items[1].label, 1);
	ts_source_index_destroy(ix);
}
END_TEST

static const struct {
	const char *setup;  /* files to make, ';'-separated; "dir/" = empty dir */
	const char *path;
	const char *msg;    /* substring of the error */
} folder_errors[] = {
	{"", "missing", "folder '"},
	{"R/x.jpg", "R", "has no class sub-folders"},
	{"R/a/1.jpg;R/b/", "R", "has no images with extensions .jpg .jpeg .png"},
	{"R/a/1.txt", "R", "R/a' has no images"},
	{"R", "R", "is not a directory"},
};

START_TEST(folder_errors_table)
{
	char spec[256];
	snprintf(spec, sizeof(spec), "%s", folder_errors[_i].setup);
	for (char *tok = strtok(spec, ";"); tok; tok = strtok(NULL, ";")) {
		size_t n = strlen(tok);
		if (tok[n - 1] == '/')
			mkdir_rel(tok);
		else
			put(tok, "x");
	}
	struct ts_source s = src_of(TS_SRC_FOLDER, folder_errors[_i].path);
	struct ts_index *ix = (struct ts_index *)0x1;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), TS_E_SOURCE);
	ck_assert_int_eq(err.code, TS_E_SOURCE);
	ck_assert_ptr_eq(ix, (struct ts_index *)0x1); /* untouched on failure */
	ck_assert_msg(strstr(err.msg, folder_errors[_i].msg), "'%s' lacks '%s'",
		      err.msg, folder_errors[_i].msg);
	ck_assert_msg(strstr(err.msg, tmp), "'%s' does not name the path", err.msg);
}
END_TEST

/* -------------------------------------------------------------------- list */

START_TEST(list_parse)
{
	put("L/list.csv",
	    "path,label\n"
	    "# a comment\n"
	    "\n"
	    "img/a.jpg,3\r\n"
	    "  img/b c.png , 0  \n"
	    "   # indented comment\n"
	    "/abs/x,with,comma.jpg,7\n");
	struct ts_source s = src_of(TS_SRC_LIST, "L/list.csv");
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), 0);
	ck_assert_uint_eq(ix->n, 3);
	ck_assert_str_eq(rel(ix->items[0].path), "L/img/a.jpg");
	ck_assert_int_eq(ix->items[0].label, 3);
	ck_assert_str_eq(rel(ix->items[1].path), "L/img/b c.png");
	ck_assert_int_eq(ix->items[1].label, 0);
	ck_assert_str_eq(ix->items[2].path, "/abs/x,with,comma.jpg");
	ck_assert_int_eq(ix->items[2].label, 7);
	ck_assert_uint_eq(ix->n_classes, 8);
	ts_source_index_destroy(ix);
}
END_TEST

static const struct {
	const char *text;
	const char *msg;
} list_errors[] = {
	{"a.jpg,1\nb.jpg\n", "list.txt:2: expected 'path,label'"},
	{"a.jpg,x\n", "list.txt:1: label 'x'"},
	{"# c\na.jpg,-1\n", "list.txt:2: label '-1'"},
	{"a.jpg,1\n,3\n", "list.txt:2: empty path"},
	{"a.jpg,99999999999\n", "list.txt:1: label"},
	{"a.jpg,1.5\n", "list.txt:1: label '1.5'"},
	{"# only comments\n\n", "has no entries"},
	{"", "has no entries"},
};

START_TEST(list_errors_table)
{
	put("list.txt", list_errors[_i].text);
	struct ts_source s = src_of(TS_SRC_LIST, "list.txt");
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), TS_E_SOURCE);
	ck_assert_ptr_null(ix);
	ck_assert_msg(strstr(err.msg, list_errors[_i].msg), "'%s' lacks '%s'",
		      err.msg, list_errors[_i].msg);
}
END_TEST

START_TEST(list_missing)
{
	struct ts_source s = src_of(TS_SRC_LIST, "nope.txt");
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), TS_E_SOURCE);
	ck_assert_ptr_nonnull(strstr(err.msg, "nope.txt"));
	ck_assert_ptr_nonnull(strstr(err.msg, "No such file"));
}
END_TEST

/* --------------------------------------------------------------------- tar */

/* Run a Python snippet (under /usr/bin/python3) in tmp. */
static void py(const char *code)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/make.py", tmp);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "import os, tarfile, io\nos.chdir(%s%s%s)\n", "'", tmp, "'");
	fputs("def add(t, name, data):\n"
	      "    ti = tarfile.TarInfo(name); ti.size = len(data)\n"
	      "    t.addfile(ti, io.BytesIO(data))\n", f);
	fputs(code, f);
	fclose(f);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(tar_shards)
{
	/* Three shards; keys in member order, one with a long pax name and
	 * one GNU long name; a .json member that is ignored; an image
	 * extension in upper case. Member data = "<shard>:<key>". */
	py("long = 'd/' + 'k' * 120\n"
	   "for s in range(3):\n"
	   "    fmt = tarfile.GNU_FORMAT if s == 1 else tarfile.PAX_FORMAT\n"
	   "    with tarfile.open('shard-%03d.tar' % s, 'w', format=fmt) as t:\n"
	   "        for k in range(4):\n"
	   "            key = 'x%d_%d' % (s, k) if k != 3 else long + str(s)\n"
	   "            ext = 'JPG' if k == 1 else 'png' if k == 2 else 'jpg'\n"
	   "            add(t, key + '.cls', b' %d\\n' % (s * 10 + k))\n"
	   "            add(t, key + '.json', b'{}')\n"
	   "            add(t, key + '.' + ext, ('%d:%s' % (s, key)).encode() * (k + 1))\n");
	struct ts_source s = src_of(TS_SRC_TAR, "shard-{000..002}.tar");
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_msg(ts_source_open(&s, &ix, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(ix->n, 12);
	ck_assert_uint_eq(ix->n_classes, 24);
	for (size_t i = 0; i < ix->n; i++) {
		int sh = (int)i / 4, k = (int)i % 4;
		struct ts_item it;
		ts_source_item(ix, i, &it);
		char want_path[64];
		snprintf(want_path, sizeof(want_path), "shard-%03d.tar", sh);
		ck_assert_str_eq(rel(it.path), want_path);
		ck_assert(it.is_range);
		ck_assert_int_eq(it.label, sh * 10 + k);
		char key[200], one[220], want[900] = "";
		if (k == 3)
			snprintf(key, sizeof(key), "d/%0120d%d", 0, sh);
		else
			snprintf(key, sizeof(key), "x%d_%d", sh, k);
		if (k == 3)
			memset(key + 2, 'k', 120);
		snprintf(one, sizeof(one), "%d:%s", sh, key);
		for (int r = 0; r <= k; r++)
			strcat(want, one);
		ck_assert_uint_eq(it.size, strlen(want));
		uint8_t *data;
		size_t len;
		ck_assert_int_eq(ts_source_read(&it, UINT64_MAX, &data, &len, &err), 0);
		ck_assert_uint_eq(len, strlen(want));
		ck_assert_int_eq(memcmp(data, want, len), 0);
		free(data);
	}
	/* Items of one shard share one path string. */
	ck_assert_ptr_eq(ix->items[0].path, ix->items[3].path);
	ts_source_index_destroy(ix);
}
END_TEST

/* A shard of several MiB: headers, pax names longer than a tar block and
 * labels fall across the header walk's 1 MiB read chunks, and one member
 * is bigger than a chunk (skipped unread). Every sample keeps its size,
 * bytes and label. */
START_TEST(tar_across_scan_chunks)
{
	py("with tarfile.open('big.tar', 'w', format=tarfile.PAX_FORMAT) as t:\n"
	   "    for k in range(1500):\n"
	   "        key = 'p' * 900 + '%05d' % k\n"
	   "        n = 3 * 1024 * 1024 if k == 700 else 700 + k % 900\n"
	   "        add(t, key + '.jpg', bytes([k % 251]) * n)\n"
	   "        add(t, key + '.cls', b'%d' % (k % 1000))\n");
	struct ts_source s = src_of(TS_SRC_TAR, "big.tar");
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_msg(ts_source_open(&s, &ix, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(ix->n, 1500);
	for (size_t k = 0; k < ix->n; k++) {
		struct ts_item it;
		ts_source_item(ix, k, &it);
		ck_assert_int_eq(it.label, (int)(k % 1000));
		ck_assert_uint_eq(it.size, k == 700 ? 3u << 20 : 700 + k % 900);
		uint8_t *data;
		size_t len;
		ck_assert_int_eq(ts_source_read(&it, UINT64_MAX, &data, &len, &err), 0);
		ck_assert_uint_eq(data[0], k % 251);
		ck_assert_uint_eq(data[len - 1], k % 251);
		free(data);
	}
	ts_source_index_destroy(ix);
}
END_TEST

static const struct {
	const char *make;   /* python building t.tar (or others) */
	const char *pattern;
	const char *msg;
} tar_errors[] = {
	{"with tarfile.open('t.tar', 'w') as t:\n"
	 "    add(t, 'a.jpg', b'x'); add(t, 'a.cls', b'1'); add(t, 'b.jpg', b'y')\n",
	 "t.tar", "key 'b' has an image but no .cls label"},
	{"with tarfile.open('t.tar', 'w') as t:\n"
	 "    add(t, 'a.cls', b'1')\n",
	 "t.tar", "key 'a' has a .cls label but no .jpg/.jpeg/.png image"},
	{"with tarfile.open('t.tar', 'w') as t:\n"
	 "    add(t, 'a.jpg', b'x'); add(t, 'a.cls', b'cat')\n",
	 "t.tar", "'a.cls' does not hold a non-negative integer"},
	{"with tarfile.open('t.tar', 'w') as t:\n"
	 "    add(t, 'a.jpg', b'x' * 5000); add(t, 'a.cls', b'1')\n"
	 "os.truncate('t.tar', 2048)\n",
	 "t.tar", "is truncated"},
	{"open('t.tar', 'wb').write(b'hello' * 200)\n", "t.tar", "not a tar file"},
	{"with tarfile.open('t.tar', 'w') as t:\n"
	 "    add(t, 'a.json', b'{}')\n",
	 "t.tar", "hold no samples"},
	{"with tarfile.open('t0.tar', 'w') as t:\n"
	 "    add(t, 'a.jpg', b'x'); add(t, 'a.cls', b'1')\n",
	 "t{0..1}.tar", "t1.tar': No such file"},
	{"", "t{0..1.tar", "unbalanced"},
};

START_TEST(tar_errors_table)
{
	py(tar_errors[_i].make);
	struct ts_source s = src_of(TS_SRC_TAR, tar_errors[_i].pattern);
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), TS_E_SOURCE);
	ck_assert_ptr_null(ix);
	ck_assert_msg(strstr(err.msg, tar_errors[_i].msg), "'%s' lacks '%s'",
		      err.msg, tar_errors[_i].msg);
}
END_TEST

/* ------------------------------------------------------------------ braces */

static const struct {
	const char *pattern;
	const char *want; /* space-separated, or NULL for an error */
} brace_cases[] = {
	{"plain.tar", "plain.tar"},
	{"a{1..3}", "a1 a2 a3"},
	{"s{08..11}.tar", "s08 s09 s10 s11"},
	{"x{000..002}", "x000 x001 x002"},
	{"{9..11}", "9 10 11"},
	{"{3..1}", "3 2 1"},
	{"{a,b}{1..2}", "a1 a2 b1 b2"},
	{"p/{x,,y}.t", "p/x.t p/.t p/y.t"},
	{"d{1..2}/f{0,1}", "d1/f0 d1/f1 d2/f0 d2/f1"},
	{"a{1..3", NULL},
	{"a{}", NULL},
	{"a{x}", NULL},
	{"a{{1,2}}", NULL},
	{"{0..9999999}", NULL},
};

START_TEST(brace_table)
{
	char **v = NULL;
	size_t n = 0;
	struct ts_error err = {0};
	int rc = ts_source_expand(brace_cases[_i].pattern, &v, &n, &err);
	if (!brace_cases[_i].want) {
		ck_assert_int_eq(rc, TS_E_SOURCE);
		ck_assert_ptr_nonnull(strstr(err.msg, brace_cases[_i].pattern));
		return;
	}
	ck_assert_int_eq(rc, 0);
	char joined[512] = "";
	for (size_t i = 0; i < n; i++) {
		/* compare with ".tar" stripped for brevity in the table */
		char *dot = strstr(v[i], ".tar");
		if (dot && strcmp(brace_cases[_i].pattern, "plain.tar") != 0)
			*dot = '\0';
		if (i)
			strcat(joined, " ");
		strcat(joined, v[i]);
	}
	ck_assert_str_eq(joined, brace_cases[_i].want);
	ts_source_strings_free(v, n);
}
END_TEST

/* ------------------------------------------------------------------- shard */

/* shard() is taken per epoch by the engine (share.h): the index lists the
 * whole data set whatever the shard and the node variables say. */
START_TEST(shard_lists_everything)
{
	put("list.txt", "a,0\nb,1\nc,2\nd,3\ne,4\n");
	struct ts_source s = src_of(TS_SRC_LIST, "list.txt");
	s.shard_index = 1;
	s.shard_count = 2;
	setenv("GROUP_RANK", "1", 1);
	setenv("GROUP_WORLD_SIZE", "3", 1);
	struct ts_index *ix = NULL;
	ck_assert_int_eq(ts_source_open(&s, &ix, NULL), 0);
	ck_assert_uint_eq(ix->n, 5);
	ck_assert_uint_eq(ix->n_total, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(ix->items[i].label, i);
	ts_source_index_destroy(ix);
	unsetenv("GROUP_RANK");
	unsetenv("GROUP_WORLD_SIZE");
}
END_TEST

/* --------------------------------------------------------------- synthetic */

START_TEST(synthetic_source)
{
	struct ts_source s = src_of(TS_SRC_SYNTHETIC, NULL);
	s.count = 10;
	s.height = 5;
	s.width = 7;
	s.channels = 3;
	s.depth = 8;
	s.classes = 4;
	struct ts_index *ix = NULL;
	ck_assert_int_eq(ts_source_open(&s, &ix, NULL), 0);
	ck_assert_uint_eq(ix->n, 10);
	ck_assert_uint_eq(ix->n_total, 10);
	ck_assert_ptr_null(ix->items);
	static const uint64_t ids[] = {0, 1, 2};
	for (size_t i = 0; i < 3; i++) {
		struct ts_item it;
		ts_source_item(ix, i, &it);
		ck_assert_ptr_null(it.path);
		ck_assert_uint_eq(it.offset, ids[i]);
		ck_assert_int_eq(it.label, (int)(ids[i] % 4));
	}
	ts_source_index_destroy(ix);

	struct ts_image a = {0}, b = {0};
	int32_t la = -1, lb = -1;
	ck_assert_int_eq(ts_source_synthetic(&s, 7, &a, &la), 0);
	ck_assert_int_eq(la, 3);
	ck_assert_int_eq(a.width, 7);
	ck_assert_int_eq(a.height, 5);
	ck_assert_int_eq(a.channels, 3);
	ck_assert_int_eq(a.dtype, TS_DTYPE_U8);
	ck_assert_int_eq(ts_source_synthetic(&s, 7, &b, &lb), 0);
	ck_assert_int_eq(memcmp(a.data, b.data, ts_image_bytes(&a)), 0);
	ck_assert_int_eq(ts_source_synthetic(&s, 8, &b, &lb), 0);
	ck_assert_int_ne(memcmp(a.data, b.data, ts_image_bytes(&a)), 0);
	/* Pixels vary within an image. */
	ck_assert_int_ne(a.data[0], a.data[ts_image_bytes(&a) - 1]);

	s.depth = 16;
	ck_assert_int_eq(ts_source_synthetic(&s, 7, &b, NULL), 0);
	ck_assert_int_eq(b.dtype, TS_DTYPE_U16);
	ck_assert_uint_eq(b.stride, 7 * 3 * 2);
	s.depth = 12;
	ck_assert_int_eq(ts_source_synthetic(&s, 7, &b, NULL), TS_E_ARG);
	ts_image_free(&a);
	ts_image_free(&b);

	s.count = 0;
	s.depth = 8;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_source_open(&s, &ix, &err), TS_E_SOURCE);
	ck_assert_ptr_nonnull(strstr(err.msg, "count"));
}
END_TEST

/* ----------------------------------------------------------------- shuffle */

static bool is_perm(const uint32_t *p, size_t n)
{
	uint8_t *seen = calloc(n ? n : 1, 1);
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		ok = p[i] < n && !seen[p[i]];
		if (ok)
			seen[p[i]] = 1;
	}
	free(seen);
	return ok;
}

START_TEST(shuffle_properties)
{
	enum { N = 1000 };
	static uint32_t a[N], b[N], c[N], d[N];
	ts_shuffle_perm(42, 0, true, a, N);
	ts_shuffle_perm(42, 0, true, b, N);
	ts_shuffle_perm(42, 1, true, c, N);
	ts_shuffle_perm(43, 0, true, d, N);
	ck_assert(is_perm(a, N));
	ck_assert(is_perm(c, N));
	ck_assert(is_perm(d, N));
	ck_assert_int_eq(memcmp(a, b, sizeof(a)), 0);   /* deterministic */
	ck_assert_int_ne(memcmp(a, c, sizeof(a)), 0);   /* per epoch */
	ck_assert_int_ne(memcmp(a, d, sizeof(a)), 0);   /* per seed */
	size_t fixed = 0;
	for (size_t i = 0; i < N; i++)
		fixed += a[i] == i;
	ck_assert_uint_lt(fixed, 10); /* a shuffle, not near the identity */

	ts_shuffle_perm(42, 3, false, b, N);
	for (size_t i = 0; i < N; i++)
		ck_assert_uint_eq(b[i], i);

	uint32_t one = 99;
	ts_shuffle_perm(1, 1, true, &one, 1);
	ck_assert_uint_eq(one, 0);
	ts_shuffle_perm(1, 1, true, NULL, 0);
}
END_TEST

START_TEST(shuffle_uniform)
{
	/* Every element of 4 lands in every position about equally often
	 * over 4000 epochs (1000 expected; a biased shuffle strays far). */
	unsigned count[4][4] = {{0}};
	uint32_t p[4];
	for (uint64_t e = 0; e < 4000; e++) {
		ts_shuffle_perm(7, e, true, p, 4);
		for (int i = 0; i < 4; i++)
			count[p[i]][i]++;
	}
	for (int v = 0; v < 4; v++)
		for (int i = 0; i < 4; i++)
			ck_assert_msg(count[v][i] > 850 && count[v][i] < 1150,
				      "element %d at %d: %u times", v, i, count[v][i]);
}
END_TEST

static Suite *source_suite(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("folder");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, folder_labels_and_order);
	tcase_add_test(tc, folder_custom_exts);
	tcase_add_loop_test(tc, folder_errors_table, 0, TS_ARRAY_LEN(folder_errors));
	suite_add_tcase(s, tc);

	tc = tcase_create("list");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, list_parse);
	tcase_add_loop_test(tc, list_errors_table, 0, TS_ARRAY_LEN(list_errors));
	tcase_add_test(tc, list_missing);
	suite_add_tcase(s, tc);

	tc = tcase_create("tar");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tar_shards);
	tcase_add_test(tc, tar_across_scan_chunks);
	tcase_add_loop_test(tc, tar_errors_table, 0, TS_ARRAY_LEN(tar_errors));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("braces");
	tcase_add_loop_test(tc, brace_table, 0, TS_ARRAY_LEN(brace_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("shard");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, shard_lists_everything);
	suite_add_tcase(s, tc);

	tc = tcase_create("synthetic");
	tcase_add_test(tc, synthetic_source);
	suite_add_tcase(s, tc);

	tc = tcase_create("shuffle");
	tcase_add_test(tc, shuffle_properties);
	tcase_add_test(tc, shuffle_uniform);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(source_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
