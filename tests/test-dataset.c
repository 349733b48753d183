/*
 * test-dataset.c - the built-in data set (src/dataset.c) and its CLI,
 * `tsrun make-dataset`. Needs mate-backgrounds' photos; exits 77 (skip)
 * when they are not installed.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "dataset.h"


/* The emulator a cross build runs its programs under (TS_EXE_WRAPPER, set
 * by tests/meson.build from the cross file), or "" natively. */
static const char *exe_wrapper(void)
{
	const char *w = getenv("TS_EXE_WRAPPER");
	return w ? w : "";
}

static char tmp_root[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(tmp_root, sizeof(tmp_root), "%s/ts-dataset-XXXXXX", t && *t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmp_root));
}

static void teardown(void)
{
	rm_rf(tmp_root);
}

static char *sub(const char *name)
{
	static char buf[4][512];
	static int next;
	char *b = buf[next++ % 4];
	snprintf(b, 512, "%s/%s", tmp_root, name);
	return b;
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc(n > 0 ? (size_t)n : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Walk DIR/<split>/<class>/<file>: call fn on each image file; return the
 * number of class folders. */
struct walk {
	int classes, files;
	char paths[4096][520];   /* relative paths, in readdir order */
};

static int cmp_path(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void walk_split(const char *root, const char *split, struct walk *w)
{
	char sdir[600], cdir[1024];
	memset(w, 0, sizeof(*w));
	snprintf(sdir, sizeof(sdir), "%s/%s", root, split);
	DIR *d = opendir(sdir);
	ck_assert_msg(d != NULL, "%s: %s", sdir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		w->classes++;
		snprintf(cdir, sizeof(cdir), "%s/%s", sdir, e->d_name);
		DIR *c = opendir(cdir);
		ck_assert_ptr_nonnull(c);
		struct dirent *f;
		while ((f = readdir(c))) {
			if (f->d_name[0] == '.')
				continue;
			ck_assert_int_lt(w->files, 4096);
			snprintf(w->paths[w->files++], 520, "%s/%s", e->d_name, f->d_name);
		}
		closedir(c);
	}
	closedir(d);
	qsort(w->paths, (size_t)w->files, sizeof(w->paths[0]), cmp_path);
}

static struct walk walk_a, walk_b;

static int make(const char *dir, int images, int classes, uint64_t seed, bool png,
		int threads, struct ts_dataset_result *res, struct ts_error *err)
{
	struct ts_dataset_opts o;
	ts_dataset_defaults(&o);
	o.dir = dir;
	o.images = images;
	o.classes = classes;
	o.seed = seed;
	o.png = png;
	o.threads = threads;
	return ts_dataset_make(&o, res, err);
}

static void check_dims(const char *path, int w, int h)
{
	int s = w < h ? w : h, l = w < h ? h : w;
	ck_assert_msg(s >= TS_DATASET_MIN_SIDE && s <= TS_DATASET_MAX_SIDE,
		      "%s: shorter side %d", path, s);
	ck_assert_msg(l >= s && l * 3 <= s * 4 + 3, "%s: %dx%d out of 3/4..4/3", path, w, h);
}

/* Fully decode a JPEG with TurboJPEG and check its size. */
static void check_jpeg(const char *path)
{
	size_t len;
	unsigned char *buf = read_file(path, &len);
	tjhandle tj = tjInitDecompress();
	int w, h, sub, cs;
	ck_assert_int_eq(tjDecompressHeader3(tj, buf, len, &w, &h, &sub, &cs), 0);
	ck_assert_int_eq(sub, TJSAMP_420);
	check_dims(path, w, h);
	unsigned char *px = malloc((size_t)w * h * 3);
	ck_assert_msg(tjDecompress2(tj, buf, len, px, w, 0, h, TJPF_RGB, 0) == 0,
		      "%s: %s", path, tjGetErrorStr2(tj));
	/* A photo crop, not a flat fill: the pixels must vary. */
	int lo = 255, hi = 0;
	for (size_t i = 0; i < (size_t)w * h * 3; i += 97) {
		lo = px[i] < lo ? px[i] : lo;
		hi = px[i] > hi ? px[i] : hi;
	}
	ck_assert_int_gt(hi - lo, 8);
	free(px);
	tjDestroy(tj);
	free(buf);
}

static void check_png(const char *path)
{
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	ck_assert_msg(png_image_begin_read_from_file(&img, path), "%s: %s", path, img.message);
	img.format = PNG_FORMAT_RGB;
	check_dims(path, (int)img.width, (int)img.height);
	void *px = malloc(PNG_IMAGE_SIZE(img));
	ck_assert_msg(png_image_finish_read(&img, NULL, px, 0, NULL), "%s: %s", path,
		      img.message);
	free(px);
}

/* ---- make: structure and decodability ---- */

START_TEST(test_make_jpeg)
{
	struct ts_dataset_result res;
	struct ts_error err = {0};
	char path[2048];
	ck_assert_msg(make(sub("a"), 40, 10, 7, false, 0, &res, &err) == 0, "%s", err.msg);
	ck_assert(!res.reused);
	ck_assert_int_eq(res.images, 40);
	ck_assert_int_eq(res.classes, 10);
	ck_assert_uint_gt(res.bytes, 40 * 10000);
	ck_assert(res.mean_width > 300 && res.mean_width < 600);
	ck_assert(res.mean_height > 300 && res.mean_height < 600);
	walk_split(sub("a"), "train", &walk_a);
	ck_assert_int_eq(walk_a.classes, 10);
	ck_assert_int_eq(walk_a.files, 40);
	for (int i = 0; i < walk_a.files; i++) {
		ck_assert_msg(strstr(walk_a.paths[i], ".jpg") &&
			      !strstr(walk_a.paths[i], ".tmp"), "%s", walk_a.paths[i]);
		snprintf(path, sizeof(path), "%s/train/%s", sub("a"), walk_a.paths[i]);
		check_jpeg(path);
	}
	/* No val tree unless asked for; the marker says complete. */
	snprintf(path, sizeof(path), "%s/val", sub("a"));
	ck_assert_int_ne(access(path, F_OK), 0);
	size_t len;
	snprintf(path, sizeof(path), "%s/" TS_DATASET_MARKER, sub("a"));
	char *m = read_file(path, &len);
	ck_assert_ptr_nonnull(memmem(m, len, "state complete", 14));
	free(m);
}
END_TEST

START_TEST(test_make_png_val)
{
	struct ts_dataset_opts o;
	struct ts_dataset_result res;
	struct ts_error err = {0};
	char path[2048];
	ts_dataset_defaults(&o);
	o.dir = sub("p");
	o.images = 9;
	o.val_images = 3;
	o.classes = 3;
	o.png = true;
	ck_assert_msg(ts_dataset_make(&o, &res, &err) == 0, "%s", err.msg);
	static const char *const splits[] = {"train", "val"};
	static const int counts[] = {9, 3};
	for (int s = 0; s < 2; s++) {
		walk_split(sub("p"), splits[s], &walk_a);
		ck_assert_int_eq(walk_a.classes, 3);
		ck_assert_int_eq(walk_a.files, counts[s]);
		for (int i = 0; i < walk_a.files; i++) {
			ck_assert_ptr_nonnull(strstr(walk_a.paths[i], ".png"));
			snprintf(path, sizeof(path), "%s/%s/%s", sub("p"), splits[s],
				 walk_a.paths[i]);
			check_png(path);
		}
	}
}
END_TEST

/* ---- determinism ---- */

static bool same_trees(const char *a, const char *b)
{
	char pa[2048], pb[2048];
	walk_split(a, "train", &walk_a);
	walk_split(b, "train", &walk_b);
	if (walk_a.files != walk_b.files)
		return false;
	for (int i = 0; i < walk_a.files; i++) {
		if (strcmp(walk_a.paths[i], walk_b.paths[i]))
			return false;
		size_t la, lb;
		snprintf(pa, sizeof(pa), "%s/train/%s", a, walk_a.paths[i]);
		snprintf(pb, sizeof(pb), "%s/train/%s", b, walk_b.paths[i]);
		void *da = read_file(pa, &la), *db = read_file(pb, &lb);
		bool eq = la == lb && !memcmp(da, db, la);
		free(da);
		free(db);
		if (!eq)
			return false;
	}
	return true;
}

/* Same options on 1 and 3 threads give the same bytes; another seed
 * gives other bytes. */
START_TEST(test_same_seed_same_bytes)
{
	struct ts_error err = {0};
	ck_assert_msg(make(sub("s1"), 40, 10, 5, false, 1, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(make(sub("s2"), 40, 10, 5, false, 3, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(make(sub("s3"), 40, 10, 6, false, 2, NULL, &err) == 0, "%s", err.msg);
	ck_assert(same_trees(sub("s1"), sub("s2")));
	ck_assert(!same_trees(sub("s1"), sub("s3")));
}
END_TEST

/* ---- an existing folder: reuse, remake, refuse ---- */

START_TEST(test_reuse_and_remake)
{
	struct ts_dataset_result res;
	struct ts_error err = {0};
	ck_assert_msg(make(sub("r"), 20, 4, 1, false, 0, &res, &err) == 0, "%s", err.msg);
	ck_assert(!res.reused);
	ck_assert_int_eq(make(sub("r"), 20, 4, 1, false, 0, &res, &err), 0);
	ck_assert(res.reused);
	ck_assert_uint_eq(res.bytes, 0);
	/* Other options: the old set is replaced, not mixed in. */
	ck_assert_msg(make(sub("r"), 12, 3, 1, false, 0, &res, &err) == 0, "%s", err.msg);
	ck_assert(!res.reused);
	walk_split(sub("r"), "train", &walk_a);
	ck_assert_int_eq(walk_a.classes, 3);
	ck_assert_int_eq(walk_a.files, 12);
}
END_TEST

START_TEST(test_refuse_foreign_dir)
{
	struct ts_error err = {0};
	char path[2048];
	mkdir(sub("f"), 0755);
	snprintf(path, sizeof(path), "%s/thesis.tex", sub("f"));
	FILE *f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	fputs("precious\n", f);
	fclose(f);
	ck_assert_int_eq(make(sub("f"), 20, 4, 1, false, 0, NULL, &err), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a tsrun data set"));
	ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

/* ---- errors: bad options, missing photos ---- */

struct bad_case {
	int images, classes, val;
	int want;
	const char *msg;
};

static const struct bad_case bad_cases[] = {
	{5, 10, 0, TS_E_ARG, "images must be"},
	{20, 0, 0, TS_E_ARG, "classes must be"},
	{20, 4, -1, TS_E_ARG, "val images"},
	{2000, 1000, 0, TS_E_SOURCE, "classes need 1000"},
};

START_TEST(test_bad_options)
{
	const struct bad_case *c = &bad_cases[_i];
	struct ts_dataset_opts o;
	struct ts_error err = {0};
	ts_dataset_defaults(&o);
	o.dir = sub("bad");
	o.images = c->images;
	o.classes = c->classes;
	o.val_images = c->val;
	ck_assert_int_eq(ts_dataset_make(&o, NULL, &err), c->want);
	ck_assert_int_eq(err.code, c->want);
	ck_assert_msg(strstr(err.msg, c->msg), "got '%s'", err.msg);
}
END_TEST

START_TEST(test_no_photos)
{
	struct ts_dataset_opts o;
	struct ts_error err = {0};
	char buf[512];
	mkdir(sub("empty"), 0755);
	ts_dataset_defaults(&o);
	o.dir = sub("np");
	o.photos = sub("empty");
	ck_assert_int_eq(ts_dataset_make(&o, NULL, &err), TS_E_SOURCE);
	ck_assert_msg(strstr(err.msg, "apt-get install mate-backgrounds"), "got '%s'", err.msg);
	/* TSRUN_PHOTOS is honoured by the search. */
	setenv("TSRUN_PHOTOS", sub("empty"), 1);
	ck_assert_int_eq(ts_dataset_find_photos(1, buf, sizeof(buf), &err), TS_E_SOURCE);
	ck_assert_ptr_nonnull(strstr(err.msg, "TSRUN_PHOTOS"));
	unsetenv("TSRUN_PHOTOS");
	ck_assert_int_eq(ts_dataset_find_photos(1, buf, sizeof(buf), &err), 0);
	ck_assert_int_eq(access(o.dir, F_OK), -1);   /* nothing was made */
}
END_TEST

/* ---- the CLI ---- */

static int run_cli(const char *args, char *out, size_t size)
{
	const char *tsrun = getenv("TSRUN");
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "%s '%s' make-dataset %s 2>&1", exe_wrapper(), tsrun, args);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, size - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_cli)
{
	char out[4096], args[1024];
	if (!getenv("TSRUN"))
		return;
	snprintf(args, sizeof(args), "'%s' --images 12 --classes 3 --seed 9", sub("c"));
	ck_assert_int_eq(run_cli(args, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "data set made") && strstr(out, "12 train"), "%s", out);
	ck_assert_int_eq(run_cli(args, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "data set already present"), "%s", out);
	snprintf(args, sizeof(args), "'%s' --images lots", sub("c"));
	ck_assert_int_eq(run_cli(args, out, sizeof(out)), 2);
	ck_assert_msg(strstr(out, "--images needs a number"), "%s", out);
	ck_assert_int_eq(run_cli("", out, sizeof(out)), 2);
}
END_TEST

static Suite *dataset_suite(void)
{
	Suite *s = suite_create("dataset");
	TCase *tc = tcase_create("make");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_make_jpeg);
	tcase_add_test(tc, test_make_png_val);
	suite_add_tcase(s, tc);

	tc = tcase_create("determinism");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_same_seed_same_bytes);
	suite_add_tcase(s, tc);

	tc = tcase_create("existing");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reuse_and_remake);
	tcase_add_test(tc, test_refuse_foreign_dir);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_bad_options, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, test_no_photos);
	suite_add_tcase(s, tc);

	tc = tcase_create("cli");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_cli);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	char buf[512];
	if (ts_dataset_find_photos(10, buf, sizeof(buf), NULL) < 0) {
		fprintf(stderr, "no photos (apt-get install mate-backgrounds): skipping\n");
		return 77;
	}
	SRunner *sr = srunner_create(dataset_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
