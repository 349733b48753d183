/*
 * test-engine.c - the engine's behaviour, driven through its own API with
 * a ring and an in-process consumer (ts_ring_local), as src/tsrun.c wires
 * them: thread-count and run-to-run determinism, resume, per-epoch
 * shuffle, labels, on_error fail and skip, io_uring against plain reads, a
 * file deleted after listing, tile + filter pipelines, missing sources.
 *
 * The photo data set (ts_dataset_make, 40 JPEGs of 4 classes) is made once
 * in main(); tests that damage files work on their own copy. 16-bit PNG
 * frames for the tile tests are written here with libpng.
 */
#include <check.h>
#include <pthread.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_internal.h"
#include "dataset.h"
#include "digest.h"
#include "dsl.h"
#include "engine.h"
#include "ring.h"

#define N_IMAGES 40
#define N_CLASSES 4

static char root[256];   /* made in main(): root/ds/train/<class>/<n>.jpg */
static char tmp[300];    /* per test: a fresh directory under root */
static unsigned tmp_seq;

/* ---- helpers ------------------------------------------------------------ */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "%s/t%u-%d", root, tmp_seq++, (int)getpid());
	ck_assert_int_eq(mkdir(tmp, 0755), 0);
}

static void teardown(void)
{
	sh("rm -rf '%s'", tmp);
}

/* A private copy of the photo set at tmp/ds; returns its train folder. */
static const char *copy_ds(void)
{
	static char train[400];
	sh("cp -r '%s/ds' '%s/ds'", root, tmp);
	snprintf(train, sizeof(train), "%s/ds/train", tmp);
	return train;
}

static struct ts_plan *compile(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct ts_plan *compile(const char *fmt, ...)
{
	static char src[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(src, sizeof(src), fmt, ap);
	va_end(ap);
	ck_assert_int_lt(n, (int)sizeof(src));
	struct ts_diags d;
	ts_diags_init(&d, "engine.ts", src, (size_t)n);
	struct ts_plan *plan = NULL;
	int rc = ts_dsl_compile(src, (size_t)n, "engine.ts", NULL, &d, &plan);
	ck_assert_msg(rc == 0, "pipeline does not compile (%d, %s):\n%s", rc,
		      d.n ? d.items[0].msg : "", src);
	ts_diags_fini(&d);
	return plan;
}

struct ropts {
	int threads;
	int epochs;              /* the end epoch (exclusive), as the engine's */
	uint64_t start_epoch, start_index;
	uint32_t batch;          /* 0: the plan's */
	bool no_uring;
	const char *unlink_after_create;
};

/* What a consumer saw, sample by sample, and how the run ended. */
struct run {
	int rc;                  /* 0, or the error that stopped the stream */
	struct ts_error err;
	size_t n, sb;
	uint8_t *data;
	int32_t *label;
	uint32_t *epoch;
	uint64_t *index;
	uint64_t skipped, samples, decodes;
	size_t n_paths;
	char **paths;
	bool uring;
	int threads;
};

static void run_free(struct run *r)
{
	free(r->data);
	free(r->label);
	free(r->epoch);
	free(r->index);
	for (size_t i = 0; i < r->n_paths; i++)
		free(r->paths[i]);
	free(r->paths);
	memset(r, 0, sizeof(*r));
}

static void run_append(struct run *r, const struct ts_ring_batch *b)
{
	size_t n = r->n + b->n;
	r->data = realloc(r->data, n * r->sb);
	r->label = realloc(r->label, n * sizeof(*r->label));
	r->epoch = realloc(r->epoch, n * sizeof(*r->epoch));
	r->index = realloc(r->index, n * sizeof(*r->index));
	ck_assert(r->data && r->label && r->epoch && r->index);
	for (size_t i = 0; i < b->n; i++)
		memcpy(r->data + (r->n + i) * r->sb,
		       (const uint8_t *)b->data + i * b->sample_stride, r->sb);
	for (size_t i = 0; i < b->n; i++) {
		r->label[r->n + i] = b->labels[i];
		r->epoch[r->n + i] = b->epoch;
		r->index[r->n + i] = b->index + i;
	}
	r->n = n;
}

/* Run plan to its end through a ring and a local consumer. */
static void run_plan(const struct ts_plan *pl, const struct ropts *o, struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->sb = pl->sample_bytes;
	if (o->no_uring)
		setenv("TSRUN_NO_URING", "1", 1);
	else
		unsetenv("TSRUN_NO_URING");
	uint32_t batch = o->batch ? o->batch : (uint32_t)pl->batch;
	uint64_t cap = (uint64_t)pl->ring_samples;
	if (cap < 2u * batch)
		cap = 2u * batch;
	struct ts_ring_params rp = {
		.height = pl->height, .width = pl->width, .channels = pl->channels,
		.dtype = pl->dtype, .layout = pl->layout,
		.sample_bytes = pl->sample_bytes, .capacity = cap,
		.epochs = (uint32_t)o->epochs,
		.n_views = pl->n_views, .views = pl->views,
	};
	struct ts_ring *ring = NULL;
	struct ts_ring_local *local = NULL;
	struct ts_engine *e = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_ring_create(&rp, &ring, &err), 0);
	ck_assert_int_eq(ts_ring_local_create(ring, batch, TS_JOIN_NOW, false, &local, &err), 0);
	struct ts_engine_opts eo = {
		.threads = o->threads, .epochs = o->epochs,
		.start_epoch = o->start_epoch, .start_index = o->start_index,
	};
	r->rc = ts_engine_create(pl, &eo, ring, &e, &r->err);
	if (r->rc) {
		ts_ring_local_destroy(local);
		ts_ring_destroy(ring);
		return;
	}
	if (o->unlink_after_create)
		ck_assert_int_eq(unlink(o->unlink_after_create), 0);
	ck_assert_int_eq(ts_engine_start(e, &err), 0);
	int rc;
	struct ts_ring_batch b;
	while ((rc = ts_ring_local_next(local, &b, 20000, &err)) == 0) {
		run_append(r, &b);
		ts_ring_local_release(local, &b);
	}
	if (rc != TS_E_EOS) {
		r->rc = rc;
		r->err = err;
		ts_engine_stop(e);
		ts_ring_local_destroy(local);
		local = NULL;
	}
	struct ts_error jerr = {0};
	int jrc = ts_engine_join(e, &jerr);
	if (jrc) {
		r->rc = jrc;
		r->err = jerr;
	}
	struct ts_engine_stats st;
	ts_engine_stats(e, &st);
	r->skipped = st.skipped;
	r->samples = st.samples;
	r->decodes = st.decodes;
	r->uring = st.uring;
	r->threads = st.threads;
	const char *const *list = NULL;
	r->n_paths = ts_engine_skipped(e, &list);
	r->paths = calloc(r->n_paths + 1, sizeof(char *));
	for (size_t i = 0; i < r->n_paths; i++)
		r->paths[i] = strdup(list[i]);
	ts_engine_destroy(e);
	ts_ring_local_destroy(local);
	ts_ring_destroy(ring);
}

static const uint8_t *sample(const struct run *r, size_t i)
{
	return r->data + i * r->sb;
}

static uint64_t sample_hash(const struct run *r, size_t i)
{
	struct ts_digest d;
	ts_digest_init(&d);
	ts_digest_sample(&d, sample(r, i), r->sb, r->label[i]);
	return d.h;
}

/* Same samples (bytes, labels, positions) in the same order. */
static void assert_same(const struct run *a, const struct run *b, const char *what)
{
	ck_assert_msg(a->n == b->n, "%s: %zu samples vs %zu", what, a->n, b->n);
	ck_assert_uint_eq(a->sb, b->sb);
	for (size_t i = 0; i < a->n; i++) {
		ck_assert_msg(memcmp(sample(a, i), sample(b, i), a->sb) == 0,
			      "%s: sample %zu differs", what, i);
		ck_assert_msg(a->label[i] == b->label[i], "%s: label %zu: %d vs %d",
			      what, i, a->label[i], b->label[i]);
		ck_assert_uint_eq(a->epoch[i], b->epoch[i]);
		ck_assert_uint_eq(a->index[i], b->index[i]);
	}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Sorted hashes of samples [from, from + n). */
static uint64_t *sorted_hashes(const struct run *r, size_t from, size_t n)
{
	uint64_t *h = malloc(n * sizeof(*h));
	for (size_t i = 0; i < n; i++)
		h[i] = sample_hash(r, from + i);
	qsort(h, n, sizeof(*h), cmp_u64);
	return h;
}

static void assert_ok(const struct run *r)
{
	ck_assert_msg(r->rc == 0, "run failed: %d: %s", r->rc, r->err.msg);
}

/* A deterministic pipeline (no random stage): every file maps to one
 * sample, so samples identify files. */
static struct ts_plan *plain_plan(const char *train, bool shuffle, const char *on_error)
{
	return compile("pipeline p =\n"
		       "    folder(\"%s\")\n"
		       "%s"
		       "    | decode(rgb)\n"
		       "    | resize([24, 32])\n"
		       "    | to(uint8)\n"
		       "    | batch(8)\n"
		       "serve p { ring = 4 batches  on_error = %s }\n",
		       train, shuffle ? "    | shuffle(seed = 5)\n" : "", on_error);
}

/* The training recipe, small: every random stage in play. */
static struct ts_plan *train_plan(const char *train)
{
	return compile("pipeline p =\n"
		       "    folder(\"%s\")\n"
		       "    | shuffle(seed = 42)\n"
		       "    | decode(rgb)\n"
		       "    | random_resized_crop(40, scale = 0.08..1.0)\n"
		       "    | flip(horizontal, p = 0.5)\n"
		       "    | color_jitter(brightness = 0.4, contrast = 0.4, saturation = 0.4)\n"
		       "    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])\n"
		       "    | to(float32, nchw)\n"
		       "    | batch(8)\n"
		       "serve p { ring = 3 batches }\n",
		       train);
}

static char *ds_train(void)
{
	static char p[300];
	snprintf(p, sizeof(p), "%s/ds/train", root);
	return p;
}

/* The n-th file (sorted classes, sorted names) of a folder tree. */
static int list_tree(const char *dir, char paths[][400], int32_t *labels, int max)
{
	struct dirent **cls = NULL;
	int nc = scandir(dir, &cls, NULL, alphasort);
	ck_assert_int_ge(nc, 0);
	int n = 0;
	int32_t label = 0;
	for (int c = 0; c < nc; c++) {
		char cdir[400];
		ck_assert_int_lt(snprintf(cdir, sizeof(cdir), "%s/%s", dir, cls[c]->d_name), 400);
		struct stat st;
		if (cls[c]->d_name[0] == '.' || stat(cdir, &st) || !S_ISDIR(st.st_mode)) {
			free(cls[c]);
			continue;
		}
		struct dirent **f = NULL;
		int nf = scandir(cdir, &f, NULL, alphasort);
		ck_assert_int_ge(nf, 0);
		for (int i = 0; i < nf; i++) {
			if (f[i]->d_name[0] != '.' && n < max) {
				ck_assert_int_lt(snprintf(paths[n], 400, "%s/%s", cdir, f[i]->d_name), 400);
				labels[n++] = label;
			}
			free(f[i]);
		}
		free(f);
		free(cls[c]);
		label++;
	}
	free(cls);
	return n;
}

/* Write a PNG: 8-bit RGB (rgb8 != NULL) or 16-bit gray (gray16). */
static void write_png(const char *path, int w, int h, const uint8_t *rgb8,
		      const uint16_t *gray16)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	ck_assert(png && info);
	ck_assert_int_eq(setjmp(png_jmpbuf(png)), 0);
	png_init_io(png, f);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, rgb8 ? 8 : 16,
		     rgb8 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	uint8_t *row = malloc((size_t)w * 6);
	for (int y = 0; y < h; y++) {
		if (rgb8) {
			memcpy(row, rgb8 + (size_t)y * w * 3, (size_t)w * 3);
		} else {
			for (int x = 0; x < w; x++) { /* PNG is big-endian */
				uint16_t v = gray16[(size_t)y * w + x];
				row[2 * x] = (uint8_t)(v >> 8);
				row[2 * x + 1] = (uint8_t)v;
			}
		}
		png_write_row(png, row);
	}
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	free(row);
	ck_assert_int_eq(fclose(f), 0);
}

static off_t file_size(const char *path)
{
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_size;
}

/* Garble a JPEG after its SOI marker: the header no longer parses. */
static void corrupt_jpeg(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	uint8_t junk[64];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(0x5a ^ (i * 37));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 2), (ssize_t)sizeof(junk));
	close(fd);
}

/* Replace a data set file by a PNG truncated to half its size. */
static void truncated_png(const char *path)
{
	enum { W = 64, H = 48 };
	uint8_t *px = malloc(W * H * 3);
	for (int i = 0; i < W * H * 3; i++)
		px[i] = (uint8_t)(i * 7);
	write_png(path, W, H, px, NULL);
	free(px);
	ck_assert_int_eq(truncate(path, file_size(path) / 2), 0);
}

/* ---- determinism -------------------------------------------------------- */

START_TEST(threads_same_bytes)
{
	struct ts_plan *pl = train_plan(ds_train());
	struct run r[3];
	for (int t = 0; t < 3; t++) {
		run_plan(pl, &(struct ropts){.threads = t + 1, .epochs = 2}, &r[t]);
		assert_ok(&r[t]);
		ck_assert_int_eq(r[t].threads, t + 1);
	}
	ck_assert_uint_eq(r[0].n, 2 * N_IMAGES);
	ck_assert_uint_eq(r[0].samples, 2 * N_IMAGES);
	assert_same(&r[0], &r[1], "1 vs 2 threads");
	assert_same(&r[0], &r[2], "1 vs 3 threads");
	/* The stream really is float32 normalized data, not zeros. */
	const float *f = (const float *)sample(&r[0], 0);
	double sum = 0;
	for (size_t i = 0; i < r[0].sb / sizeof(float); i++)
		sum += f[i] * f[i];
	ck_assert(sum > 1.0);
	for (int t = 0; t < 3; t++)
		run_free(&r[t]);
	ts_plan_destroy(pl);
}
END_TEST

START_TEST(two_runs_equal)
{
	struct ts_plan *pl = train_plan(ds_train());
	struct run a, b;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &a);
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &b);
	assert_ok(&a);
	assert_same(&a, &b, "run 1 vs run 2");
	ck_assert_uint_eq(a.n, N_IMAGES);
	for (size_t i = 0; i < a.n; i++)
		ck_assert_uint_eq(a.index[i], i);
	run_free(&a);
	run_free(&b);
	ts_plan_destroy(pl);
}
END_TEST

/* Resume at (epoch, index): the tail of the full stream, exactly. */
static const struct { uint64_t epoch, index; uint32_t batch; } resumes[] = {
	{0, 0, 0}, {0, 13, 0}, {0, 39, 0}, {1, 0, 0}, {1, 7, 3}, {2, 21, 5},
};

START_TEST(resume_reproduces_tail)
{
	struct ts_plan *pl = train_plan(ds_train());
	struct run full, part;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 3}, &full);
	assert_ok(&full);
	ck_assert_uint_eq(full.n, 3 * N_IMAGES);
	uint64_t from = resumes[_i].epoch * N_IMAGES + resumes[_i].index;
	run_plan(pl, &(struct ropts){.threads = 3, .epochs = 3, .batch = resumes[_i].batch,
				     .start_epoch = resumes[_i].epoch,
				     .start_index = resumes[_i].index}, &part);
	assert_ok(&part);
	ck_assert_uint_eq(part.n, full.n - from);
	ck_assert_uint_eq(part.epoch[0], resumes[_i].epoch);
	ck_assert_uint_eq(part.index[0], resumes[_i].index);
	for (size_t i = 0; i < part.n; i++) {
		ck_assert_msg(memcmp(sample(&part, i), sample(&full, from + i), full.sb) == 0,
			      "resumed sample %zu differs from stream sample %llu", i,
			      (unsigned long long)(from + i));
		ck_assert_int_eq(part.label[i], full.label[from + i]);
		ck_assert_uint_eq(part.epoch[i], full.epoch[from + i]);
		ck_assert_uint_eq(part.index[i], full.index[from + i]);
	}
	run_free(&full);
	run_free(&part);
	ts_plan_destroy(pl);
}
END_TEST

START_TEST(resume_past_epoch_end)
{
	struct ts_plan *pl = train_plan(ds_train());
	struct run r;
	run_plan(pl, &(struct ropts){.threads = 1, .epochs = 2, .start_index = N_IMAGES}, &r);
	ck_assert_int_eq(r.rc, TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(r.err.msg, "start index"));
	run_free(&r);
	/* Starting at the end epoch: an empty stream that ends cleanly. */
	run_plan(pl, &(struct ropts){.threads = 1, .epochs = 2, .start_epoch = 2}, &r);
	assert_ok(&r);
	ck_assert_uint_eq(r.n, 0);
	run_free(&r);
	ts_plan_destroy(pl);
}
END_TEST

/* ---- epochs, shuffle and labels ----------------------------------------- */

START_TEST(epochs_shuffle_order)
{
	struct ts_plan *plain = plain_plan(ds_train(), false, "fail");
	struct ts_plan *shuf = plain_plan(ds_train(), true, "fail");
	struct run a, b;
	run_plan(plain, &(struct ropts){.threads = 2, .epochs = 2}, &a);
	run_plan(shuf, &(struct ropts){.threads = 2, .epochs = 3}, &b);
	assert_ok(&a);
	assert_ok(&b);
	ck_assert_uint_eq(a.n, 2 * N_IMAGES);
	ck_assert_uint_eq(b.n, 3 * N_IMAGES);
	/* Without shuffle every epoch is the same stream. */
	for (size_t i = 0; i < N_IMAGES; i++) {
		ck_assert(memcmp(sample(&a, i), sample(&a, N_IMAGES + i), a.sb) == 0);
		ck_assert_int_eq(a.label[i], a.label[N_IMAGES + i]);
		ck_assert_uint_eq(a.epoch[i], 0);
		ck_assert_uint_eq(a.epoch[N_IMAGES + i], 1);
	}
	/* Every file has its own sample here, so hashes identify files. */
	uint64_t *ref = sorted_hashes(&a, 0, N_IMAGES);
	for (size_t i = 1; i < N_IMAGES; i++)
		ck_assert_msg(ref[i] != ref[i - 1], "two files give the same sample");
	/* With shuffle each epoch is a permutation of the same set, and the
	 * order differs between epochs and from the unshuffled one. */
	for (int ep = 0; ep < 3; ep++) {
		uint64_t *h = sorted_hashes(&b, (size_t)ep * N_IMAGES, N_IMAGES);
		ck_assert_msg(memcmp(h, ref, N_IMAGES * sizeof(*h)) == 0,
			      "epoch %d is not a permutation of the data set", ep);
		free(h);
	}
	int same01 = 0, same12 = 0, same_plain = 0;
	for (size_t i = 0; i < N_IMAGES; i++) {
		same01 += sample_hash(&b, i) == sample_hash(&b, N_IMAGES + i);
		same12 += sample_hash(&b, N_IMAGES + i) == sample_hash(&b, 2 * N_IMAGES + i);
		same_plain += sample_hash(&b, i) == sample_hash(&a, i);
	}
	ck_assert_msg(same01 < N_IMAGES / 2, "epochs 0 and 1 agree at %d of %d", same01, N_IMAGES);
	ck_assert_msg(same12 < N_IMAGES / 2, "epochs 1 and 2 agree at %d of %d", same12, N_IMAGES);
	ck_assert_msg(same_plain < N_IMAGES / 2, "shuffle kept %d of %d in place", same_plain, N_IMAGES);
	free(ref);
	run_free(&a);
	run_free(&b);
	ts_plan_destroy(plain);
	ts_plan_destroy(shuf);
}
END_TEST

/* Labels are the sorted class folder indices (byte order, as Python's
 * sorted()), and follow their image through the shuffle; the folder
 * stream equals a list() of the same files in the same order. */
START_TEST(labels_match_folders)
{
	const char *train = copy_ds();
	/* Class names that sort differently by byte and by case-folding. */
	sh("mkdir '%s/Zeta' '%s/alpha' && cp \"$(ls -d '%s'/000-*)\"/000000.jpg '%s/Zeta/a.jpg'"
	   " && cp \"$(ls -d '%s'/001-*)\"/000001.jpg '%s/alpha/b.JPG'",
	   train, train, train, train, train, train);
	static char paths[64][400];
	int32_t labels[64];
	int n = list_tree(train, paths, labels, 64);
	ck_assert_int_eq(n, N_IMAGES + 2);
	ck_assert_int_eq(labels[n - 1], N_CLASSES + 1); /* alpha: last */
	ck_assert_int_eq(labels[n - 2], N_CLASSES);     /* Zeta */
	char csv[400];
	snprintf(csv, sizeof(csv), "%s/list.csv", tmp);
	FILE *f = fopen(csv, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s,%d\n", paths[i] + strlen(tmp) + 1, labels[i]);
	ck_assert_int_eq(fclose(f), 0);

	struct ts_plan *pf = plain_plan(train, false, "fail");
	struct ts_plan *ps = plain_plan(train, true, "fail");
	struct ts_plan *pli = compile("pipeline p = list(\"%s\") | decode(rgb) | resize([24, 32])"
				      " | to(uint8) | batch(8)\n", csv);
	struct run a, b, c;
	run_plan(pf, &(struct ropts){.threads = 2, .epochs = 1}, &a);
	run_plan(ps, &(struct ropts){.threads = 2, .epochs = 1}, &b);
	run_plan(pli, &(struct ropts){.threads = 2, .epochs = 1}, &c);
	assert_ok(&a);
	assert_ok(&b);
	assert_ok(&c);
	ck_assert_uint_eq(a.n, (size_t)n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(a.label[i] == labels[i], "sample %d (%s): label %d, want %d",
			      i, paths[i], a.label[i], labels[i]);
	assert_same(&a, &c, "folder vs list");
	/* Shuffled: each (image, label) pair is one of the unshuffled ones. */
	ck_assert_uint_eq(b.n, (size_t)n);
	uint64_t *ha = sorted_hashes(&a, 0, a.n), *hb = sorted_hashes(&b, 0, b.n);
	ck_assert(memcmp(ha, hb, a.n * sizeof(*ha)) == 0);
	free(ha);
	free(hb);
	run_free(&a);
	run_free(&b);
	run_free(&c);
	ts_plan_destroy(pf);
	ts_plan_destroy(ps);
	ts_plan_destroy(pli);
}
END_TEST

/* ---- on_error ------------------------------------------------------------ */

/* Damage file k of the sorted tree; returns its path. */
static const char *damage(const char *train, int k, bool png)
{
	static char paths[64][400];
	static char out[2][400];
	int32_t labels[64];
	ck_assert_int_ge(list_tree(train, paths, labels, 64), k + 1);
	char *dst = out[png];
	if (png) {
		/* Same name with .png: the folder keeps its sorted place. */
		snprintf(dst, 400, "%.*s.png", (int)(strlen(paths[k]) - 4), paths[k]);
		ck_assert_int_eq(unlink(paths[k]), 0);
		truncated_png(dst);
	} else {
		snprintf(dst, 400, "%s", paths[k]);
		corrupt_jpeg(dst);
	}
	return dst;
}

static const struct { bool png; bool no_uring; } fail_cases[] = {
	{false, false}, {true, false}, {false, true}, {true, true},
};

START_TEST(on_error_fail_names_path)
{
	const char *train = copy_ds();
	const char *bad = damage(train, 17, fail_cases[_i].png);
	struct ts_plan *pl = plain_plan(train, false, "fail");
	struct run r;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1,
				     .no_uring = fail_cases[_i].no_uring}, &r);
	ck_assert_msg(r.rc == TS_E_DECODE, "rc %d (%s)", r.rc, r.err.msg);
	ck_assert_int_eq(r.err.code, TS_E_DECODE);
	ck_assert_msg(strstr(r.err.msg, bad), "message '%s' does not name %s", r.err.msg, bad);
	/* "path: reason", with a reason. */
	const char *why = strstr(r.err.msg, bad) + strlen(bad);
	ck_assert_msg(strncmp(why, ": ", 2) == 0 && strlen(why) > 4,
		      "no reason in '%s'", r.err.msg);
	ck_assert_uint_le(r.n, 17); /* nothing from or past the bad file */
	ck_assert_uint_eq(r.skipped, 0);
	run_free(&r);
	ts_plan_destroy(pl);
}
END_TEST

/* Skip: the bad sample is replaced by the next index of the permutation
 * (here the identity), counted every time, and listed once with its
 * reason. */
START_TEST(on_error_skip_replaces)
{
	const char *train = copy_ds();
	char jpg[400], png[400];
	snprintf(jpg, sizeof(jpg), "%s", damage(train, 5, false));
	snprintf(png, sizeof(png), "%s", damage(train, 22, true));
	struct ts_plan *pl = plain_plan(train, false, "skip");
	struct ts_plan *ref_pl = plain_plan(ds_train(), false, "fail");
	struct run r[2], ref;
	run_plan(ref_pl, &(struct ropts){.threads = 1, .epochs = 1}, &ref);
	assert_ok(&ref);
	for (int t = 0; t < 2; t++) {
		run_plan(pl, &(struct ropts){.threads = t + 1, .epochs = 2, .no_uring = t == 1}, &r[t]);
		assert_ok(&r[t]);
		ck_assert_uint_eq(r[t].n, 2 * N_IMAGES);
		/* counted every epoch, listed once each */
		ck_assert_uint_eq(r[t].skipped, 4);
		ck_assert_uint_eq(r[t].n_paths, 2);
		int seen_jpg = 0, seen_png = 0;
		for (size_t i = 0; i < r[t].n_paths; i++) {
			const char *p = r[t].paths[i];
			seen_jpg += strncmp(p, jpg, strlen(jpg)) == 0 && p[strlen(jpg)] == ':';
			seen_png += strncmp(p, png, strlen(png)) == 0 && p[strlen(png)] == ':';
			ck_assert_msg(strlen(strrchr(p, ':')) > 3, "no reason in '%s'", p);
		}
		ck_assert_int_eq(seen_jpg, 1);
		ck_assert_int_eq(seen_png, 1);
		for (size_t i = 0; i < 2 * N_IMAGES; i++) {
			size_t k = i % N_IMAGES;
			size_t want = k == 5 || k == 22 ? k + 1 : k;
			ck_assert_msg(memcmp(sample(&r[t], i), sample(&ref, want), ref.sb) == 0,
				      "sample %zu is not file %zu", i, want);
			ck_assert_int_eq(r[t].label[i], ref.label[want]);
			ck_assert_uint_eq(r[t].index[i], k);
		}
	}
	assert_same(&r[0], &r[1], "skip: 1 thread io_uring vs 2 threads plain reads");
	run_free(&r[0]);
	run_free(&r[1]);
	run_free(&ref);
	ts_plan_destroy(pl);
	ts_plan_destroy(ref_pl);
}
END_TEST

/* The last file of the epoch is bad: its replacement wraps around to
 * index 0; with shuffle the stream stays thread-count deterministic. */
START_TEST(on_error_skip_wraps_and_shuffles)
{
	const char *train = copy_ds();
	const char *bad = damage(train, N_IMAGES - 1, false);
	struct ts_plan *pl = plain_plan(train, false, "skip");
	struct run r, s1, s3;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &r);
	assert_ok(&r);
	ck_assert_uint_eq(r.n, N_IMAGES);
	ck_assert(memcmp(sample(&r, N_IMAGES - 1), sample(&r, 0), r.sb) == 0);
	ck_assert_uint_eq(r.n_paths, 1);
	ck_assert_ptr_nonnull(strstr(r.paths[0], bad));
	ts_plan_destroy(pl);
	pl = plain_plan(train, true, "skip");
	run_plan(pl, &(struct ropts){.threads = 1, .epochs = 2}, &s1);
	run_plan(pl, &(struct ropts){.threads = 3, .epochs = 2}, &s3);
	assert_ok(&s1);
	assert_same(&s1, &s3, "shuffled skip, 1 vs 3 threads");
	ck_assert_uint_eq(s1.skipped, 2);
	run_free(&r);
	run_free(&s1);
	run_free(&s3);
	ts_plan_destroy(pl);
}
END_TEST

/* ---- reader ----------------------------------------------------------- */

START_TEST(uring_vs_plain_reads)
{
	struct ts_plan *pl = train_plan(ds_train());
	struct run a, b;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 2}, &a);
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 2, .no_uring = true}, &b);
	assert_ok(&a);
	assert_ok(&b);
	ck_assert(!b.uring);
	if (!a.uring)
		fprintf(stderr, "note: io_uring is not available here; compared plain reads twice\n");
	assert_same(&a, &b, "io_uring vs plain reads");
	run_free(&a);
	run_free(&b);
	ts_plan_destroy(pl);
}
END_TEST

/* A file deleted between listing (create) and reading: fail names it with
 * ENOENT's reason; skip replaces it. _i: bit 0 skip, bit 1 plain reads. */
START_TEST(deleted_after_listing)
{
	bool skip = _i & 1, no_uring = _i & 2;
	const char *train = copy_ds();
	static char paths[64][400];
	int32_t labels[64];
	ck_assert_int_eq(list_tree(train, paths, labels, 64), N_IMAGES);
	const char *gone = paths[9];
	struct ts_plan *pl = plain_plan(train, false, skip ? "skip" : "fail");
	struct run r;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1, .no_uring = no_uring,
				     .unlink_after_create = gone}, &r);
	if (skip) {
		assert_ok(&r);
		ck_assert_uint_eq(r.n, N_IMAGES);
		ck_assert_uint_eq(r.skipped, 1);
		ck_assert_uint_eq(r.n_paths, 1);
		ck_assert_ptr_nonnull(strstr(r.paths[0], gone));
		ck_assert_msg(strstr(r.paths[0], "No such file"), "reason: '%s'", r.paths[0]);
		ck_assert(memcmp(sample(&r, 9), sample(&r, 10), r.sb) == 0);
	} else {
		ck_assert_msg(r.rc != 0 && r.rc != TS_E_EOS, "rc %d", r.rc);
		ck_assert_msg(strstr(r.err.msg, gone), "message '%s' does not name %s", r.err.msg, gone);
		ck_assert_msg(strstr(r.err.msg, "No such file"), "reason: '%s'", r.err.msg);
		ck_assert_uint_le(r.n, 9);
	}
	run_free(&r);
	ts_plan_destroy(pl);
}
END_TEST

/* ---- tile and filter ---------------------------------------------------- */

enum { FW = 256, FH = 192, TS = 64, NX = FW / TS, NY = FH / TS, NFRAMES = 4 };

/* Frame f, tile t (row-major): cloudy when (f + t) % 5 == 0: 75 % of its
 * pixels at 60000 (above 0.8 of full scale); the others hold the tile's
 * id, so the uint8 output (round(x / 257)) tells which tile it is. A tile
 * 40 % bright stays. */
static bool cloudy(int f, int t)
{
	return (f + t) % 5 == 0;
}

static uint8_t tile_id(int f, int t)
{
	return (uint8_t)(10 + f * NX * NY + t);
}

static void make_frames(const char *dir)
{
	sh("mkdir -p '%s/cam0'", dir);
	uint16_t *px = malloc(sizeof(uint16_t) * FW * FH);
	for (int f = 0; f < NFRAMES; f++) {
		for (int y = 0; y < FH; y++) {
			for (int x = 0; x < FW; x++) {
				int t = (y / TS) * NX + x / TS;
				int ly = y % TS;
				uint16_t v = (uint16_t)(tile_id(f, t) * 257);
				if (cloudy(f, t) && ly < TS * 3 / 4)
					v = 60000;
				else if (!cloudy(f, t) && t == 1 && ly < TS * 2 / 5)
					v = 60000;
				px[(size_t)y * FW + x] = v;
			}
		}
		char path[400];
		snprintf(path, sizeof(path), "%s/cam0/frame%02d.png", dir, f);
		write_png(path, FW, FH, NULL, px);
	}
	free(px);
}

static void check_tiles(const struct run *r)
{
	size_t want = 0;
	for (int f = 0; f < NFRAMES; f++)
		for (int t = 0; t < NX * NY; t++)
			want += !cloudy(f, t);
	ck_assert_uint_eq(r->n, want);
	ck_assert_uint_eq(r->sb, TS * TS);
	size_t k = 0;
	for (int f = 0; f < NFRAMES; f++) {
		for (int t = 0; t < NX * NY; t++) {
			if (cloudy(f, t))
				continue;
			const uint8_t *s = sample(r, k);
			/* The bottom-right pixel is the id in every kept tile. */
			ck_assert_msg(s[TS * TS - 1] == tile_id(f, t),
				      "sample %zu: tile id %u, want frame %d tile %d (%u)",
				      k, s[TS * TS - 1], f, t, tile_id(f, t));
			ck_assert_int_eq(r->label[k], 0);
			k++;
		}
	}
}

/* The cubesat recipe with frames of a fixed size (center_crop to it). */
START_TEST(tile_filter_fixed_size)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/frames", tmp);
	make_frames(dir);
	struct ts_plan *pl = compile("pipeline frames =\n"
				     "    folder(\"%s\", ext = [\".png\"])\n"
				     "    | decode(gray, depth = 16)\n"
				     "    | center_crop([%d, %d])\n"
				     "    | tile(%d)\n"
				     "    | filter(threshold = 0.8, max_fraction = 0.5)\n"
				     "    | to(uint8)\n"
				     "    | batch(8)\n"
				     "serve frames { ring = 64 samples  on_error = skip }\n",
				     dir, FH, FW, TS);
	ck_assert(pl->expands);
	struct run r1, r3;
	run_plan(pl, &(struct ropts){.threads = 1, .epochs = 1}, &r1);
	run_plan(pl, &(struct ropts){.threads = 3, .epochs = 1, .batch = 5}, &r3);
	assert_ok(&r1);
	assert_ok(&r3);
	check_tiles(&r1);
	ck_assert_uint_eq(r1.n, r3.n);
	ck_assert(memcmp(r1.data, r3.data, r1.n * r1.sb) == 0);
	run_free(&r1);
	run_free(&r3);
	ts_plan_destroy(pl);
}
END_TEST

/* examples/cubesat.ts as written: tile straight after the decode, so
 * the number of tiles per frame is only known at run time. */
START_TEST(tile_filter_variable_size)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/frames", tmp);
	make_frames(dir);
	struct ts_plan *pl = compile("pipeline frames =\n"
				     "    folder(\"%s\", ext = [\".png\"])\n"
				     "    | decode(gray, depth = 16)\n"
				     "    | tile(%d, stride = %d)\n"
				     "    | filter(threshold = 0.8, max_fraction = 0.5)\n"
				     "    | to(uint8)\n"
				     "    | batch(8)\n"
				     "serve frames { ring = 64 samples  threads = 2  on_error = skip }\n",
				     dir, TS, TS);
	struct run r1, r2;
	run_plan(pl, &(struct ropts){.threads = 1, .epochs = 1}, &r1);
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &r2);
	assert_ok(&r1);
	assert_ok(&r2);
	check_tiles(&r1);
	ck_assert_uint_eq(r1.n, r2.n);
	ck_assert(memcmp(r1.data, r2.data, r1.n * r1.sb) == 0);
	run_free(&r1);
	run_free(&r2);
	ts_plan_destroy(pl);
}
END_TEST

/* Banded tiling (decode | tile cut from bands of rows, runtime/
 * engine_banded.c) gives the bytes of the whole-frame path
 * (TSRUN_TILE_WHOLE_FRAME): PNG 8- and 16-bit gray and RGB, JPEG photos,
 * strides below, equal to and above the tile, frames that are not
 * multiples of the tile, one and two workers. */
static void write_png_raw(const char *path, int w, int h, int ct, int depth,
			  unsigned seed)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	ck_assert(png && info);
	ck_assert_int_eq(setjmp(png_jmpbuf(png)), 0);
	png_init_io(png, f);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ct, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	int c = ct == PNG_COLOR_TYPE_RGB ? 3 : 1;
	size_t n = (size_t)w * (size_t)c * (size_t)(depth / 8);
	uint8_t *row = malloc(n);
	for (int y = 0; y < h; y++) {
		/* texture plus a bright block, so that the filter drops some */
		for (size_t i = 0; i < n; i++) {
			unsigned x = (unsigned)(i / (size_t)c / (size_t)(depth / 8));
			unsigned v = (x * 7u + (unsigned)y * 13u + seed * 31u + (unsigned)i) & 0xff;
			if (x < (unsigned)w / 2 && y < h / 3)
				v = 250;
			row[i] = (uint8_t)v;
		}
		png_write_row(png, row);
	}
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	free(row);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(tile_banded_equals_whole)
{
	static const struct { const char *decode, *tile, *out; int ct, depth; } cases[] = {
		{ "gray, depth = 16", "tile(32, stride = 32)", "| to(uint8)",
		  PNG_COLOR_TYPE_GRAY, 16 },
		{ "gray, depth = 16", "tile(32, stride = 20)", "", PNG_COLOR_TYPE_GRAY, 16 },
		{ "gray", "tile([24, 40], stride = [30, 17])", "", PNG_COLOR_TYPE_GRAY, 8 },
		{ "gray", "tile(32, stride = 45)", "", PNG_COLOR_TYPE_GRAY, 8 },
		{ "rgb", "tile(40, stride = 25)", "", PNG_COLOR_TYPE_RGB, 8 },
		{ "rgb, depth = 16", "tile(33, stride = 33)", "| to(uint8)", PNG_COLOR_TYPE_RGB, 16 },
		{ "gray, depth = 16", "tile(32, stride = 20)", "", PNG_COLOR_TYPE_RGB, 8 },
		{ "rgb", "tile(96, stride = 70)", "", -1, 8 },       /* JPEG photos */
		{ "gray", "tile(64, stride = 64)", "", -1, 8 },
	};
	static const int sizes[][2] = { { 203, 151 }, { 64, 200 }, { 31, 29 }, { 160, 96 } };
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char dir[400];
		if (cases[c].ct >= 0) {
			snprintf(dir, sizeof(dir), "%s/f%zu", tmp, c);
			sh("mkdir -p '%s/cam'", dir);
			for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
				char path[500];
				snprintf(path, sizeof(path), "%s/cam/%zu.png", dir, k);
				write_png_raw(path, sizes[k][0], sizes[k][1], cases[c].ct,
					      cases[c].depth, (unsigned)(c * 10 + k));
			}
		} else {
			/* one class of the photo set: real JPEGs of photo size */
			snprintf(dir, sizeof(dir), "%s/ds/train", root);
		}
		struct ts_plan *pl = compile("pipeline frames =\n"
					     "    folder(\"%s\", ext = [\"%s\"])\n"
					     "    | decode(%s)\n"
					     "    | %s\n"
					     "    | filter(threshold = 0.9, max_fraction = 0.3)\n"
					     "    %s\n"
					     "    | batch(4)\n"
					     "serve frames { ring = 32 samples  on_error = skip }\n",
					     dir, cases[c].ct >= 0 ? ".png" : ".jpg", cases[c].decode,
					     cases[c].tile, cases[c].out);
		struct run band1, band2, whole;
		unsetenv("TSRUN_TILE_WHOLE_FRAME");
		run_plan(pl, &(struct ropts){.threads = 1, .epochs = 1}, &band1);
		run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &band2);
		setenv("TSRUN_TILE_WHOLE_FRAME", "1", 1);
		run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &whole);
		unsetenv("TSRUN_TILE_WHOLE_FRAME");
		assert_ok(&band1);
		assert_ok(&band2);
		assert_ok(&whole);
		ck_assert_msg(whole.n > 0, "case %zu (%s | %s): no tiles at all", c,
			      cases[c].decode, cases[c].tile);
		ck_assert_uint_eq(band1.n, whole.n);
		ck_assert_uint_eq(band2.n, whole.n);
		ck_assert_msg(memcmp(band1.data, whole.data, whole.n * whole.sb) == 0 &&
			      memcmp(band2.data, whole.data, whole.n * whole.sb) == 0,
			      "case %zu (%s | %s): banded tiles differ from the whole frame's",
			      c, cases[c].decode, cases[c].tile);
		ck_assert(memcmp(band1.label, whole.label, whole.n * sizeof(int32_t)) == 0);
		ck_assert(memcmp(band1.index, whole.index, whole.n * sizeof(uint64_t)) == 0);
		run_free(&band1);
		run_free(&band2);
		run_free(&whole);
		ts_plan_destroy(pl);
	}
}
END_TEST

/* resize | center_crop with the crop inside (the val recipe): the decode
 * covers only the source pixels the crop reads and only the crop's window
 * of the resize is computed; the bytes are those of the whole decode,
 * resized and cropped (TSRUN_DECODE_WHOLE): JPEG photos at DCT scale 8/8,
 * 4/8 and 2/8 (the resize's target picks it), gray, 16-bit, area, no
 * antialias, a crop as large as the resize and PNG of odd sizes. */
START_TEST(resize_crop_window_equals_whole)
{
	static const struct { const char *decode, *ops; int png; } cases[] = {
		{ "rgb", "resize(256) | center_crop(224)", 0 },
		{ "rgb", "resize(150) | center_crop(101)", 0 },     /* 4/8 */
		{ "rgb", "resize(90) | center_crop([33, 61])", 0 }, /* 2/8 */
		{ "gray", "resize(120, 140) | center_crop(120)", 0 },
		{ "rgb", "resize(200, interp = area) | center_crop(150)", 0 },
		{ "rgb", "resize(180, antialias = false) | center_crop(97)", 0 },
		{ "rgb", "resize(230, interp = bicubic) | center_crop(200)", 0 },
		{ "rgb", "resize(150, interp = lanczos) | center_crop(99)", 0 },   /* 4/8 */
		{ "rgb, depth = 16", "resize(100) | center_crop(64)", 0 },
		{ "rgb", "resize(60, 50) | center_crop([60, 50])", 0 },
		{ "rgb", "resize(77) | center_crop(41)", 1 },
		{ "gray, depth = 16", "resize(64) | center_crop(31)", 1 },
		/* wider supports: the window reaches 2 and 3 source pixels out */
		{ "rgb", "resize(150, interp = bicubic) | center_crop(101)", 0 },
		{ "rgb", "resize(90, interp = lanczos) | center_crop([33, 61])", 0 },
		{ "rgb", "resize(77, interp = lanczos) | center_crop(41)", 1 },
		{ "rgb, depth = 16", "resize(100, interp = bicubic) | center_crop(64)", 0 },
	};
	static const int sizes[][2] = { { 203, 151 }, { 64, 200 }, { 131, 129 } };
	char pngdir[400];
	snprintf(pngdir, sizeof(pngdir), "%s/png", tmp);
	sh("mkdir -p '%s/cam'", pngdir);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		char path[500];
		snprintf(path, sizeof(path), "%s/cam/%zu.png", pngdir, k);
		write_png_raw(path, sizes[k][0], sizes[k][1], PNG_COLOR_TYPE_RGB, 8, (unsigned)k);
	}
	char jpgdir[400];
	snprintf(jpgdir, sizeof(jpgdir), "%s/ds/train", root);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct ts_plan *pl = compile("pipeline val =\n"
					     "    folder(\"%s\", ext = [\"%s\"])\n"
					     "    | decode(%s)\n"
					     "    | %s\n"
					     "    | to(float32, nchw)\n"
					     "    | batch(4)\n"
					     "serve val { ring = 16 samples }\n",
					     cases[c].png ? pngdir : jpgdir,
					     cases[c].png ? ".png" : ".jpg", cases[c].decode,
					     cases[c].ops);
		struct run win, whole;
		unsetenv("TSRUN_DECODE_WHOLE");
		run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &win);
		setenv("TSRUN_DECODE_WHOLE", "1", 1);
		run_plan(pl, &(struct ropts){.threads = 1, .epochs = 1}, &whole);
		unsetenv("TSRUN_DECODE_WHOLE");
		assert_ok(&win);
		assert_ok(&whole);
		ck_assert_msg(whole.n > 0, "case %zu: no samples", c);
		ck_assert_uint_eq(win.n, whole.n);
		ck_assert_msg(memcmp(win.data, whole.data, whole.n * whole.sb) == 0,
			      "case %zu (%s | %s): the crop's window differs from the whole resize "
			      "cropped", c, cases[c].decode, cases[c].ops);
		run_free(&win);
		run_free(&whole);
		ts_plan_destroy(pl);
	}
}
END_TEST

/* A frame that does not decode is replaced by the next, banded or not;
 * one truncated in its pixel data too (PNG and JPEG). */
START_TEST(tile_banded_corrupt_frame)
{
	char dir[400], path[500];
	snprintf(dir, sizeof(dir), "%s/frames", tmp);
	sh("mkdir -p '%s/cam'", dir);
	for (int k = 0; k < 4; k++) {
		snprintf(path, sizeof(path), "%s/cam/%d.png", dir, k);
		write_png_raw(path, 150, 120, PNG_COLOR_TYPE_GRAY, 16, (unsigned)k);
	}
	/* frame 1 loses its last third: its first rows still decode */
	snprintf(path, sizeof(path), "%s/cam/1.png", dir);
	ck_assert_int_eq(truncate(path, file_size(path) * 2 / 3), 0);
	struct ts_plan *pl = compile("pipeline frames =\n"
				     "    folder(\"%s\", ext = [\".png\"])\n"
				     "    | decode(gray, depth = 16)\n"
				     "    | tile(32, stride = 24)\n"
				     "    | to(uint8)\n"
				     "    | batch(4)\n"
				     "serve frames { ring = 32 samples  on_error = skip }\n", dir);
	struct run band, whole;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &band);
	setenv("TSRUN_TILE_WHOLE_FRAME", "1", 1);
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 1}, &whole);
	unsetenv("TSRUN_TILE_WHOLE_FRAME");
	assert_ok(&band);
	assert_ok(&whole);
	ck_assert_uint_eq(band.skipped, 1);
	ck_assert_uint_eq(whole.skipped, 1);
	ck_assert_uint_eq(band.n, whole.n);
	ck_assert(memcmp(band.data, whole.data, whole.n * whole.sb) == 0);
	ck_assert_uint_eq(band.n_paths, 1);
	ck_assert_msg(strstr(band.paths[0], "1.png"), "skipped: %s", band.paths[0]);
	run_free(&band);
	run_free(&whole);
	ts_plan_destroy(pl);
}
END_TEST

/* ---- sources ------------------------------------------------------------ */

START_TEST(missing_or_empty_source)
{
	char missing[400], empty[400], empty_cls[400];
	snprintf(missing, sizeof(missing), "%s/no-such-dir", tmp);
	snprintf(empty, sizeof(empty), "%s/empty", tmp);
	snprintf(empty_cls, sizeof(empty_cls), "%s/empty-classes", tmp);
	sh("mkdir '%s' && mkdir -p '%s/a' '%s/b' && touch '%s/a/readme.txt'",
	   empty, empty_cls, empty_cls, empty_cls);
	const char *dirs[] = {missing, empty, empty_cls};
	for (size_t i = 0; i < 3; i++) {
		struct ts_plan *pl = plain_plan(dirs[i], false, "fail");
		struct run r;
		run_plan(pl, &(struct ropts){.threads = 1, .epochs = 1}, &r);
		ck_assert_msg(r.rc == TS_E_SOURCE, "%s: rc %d (%s)", dirs[i], r.rc, r.err.msg);
		ck_assert_msg(strstr(r.err.msg, dirs[i]), "'%s' does not name %s", r.err.msg, dirs[i]);
		ck_assert_uint_eq(r.n, 0);
		run_free(&r);
		ts_plan_destroy(pl);
	}
}
END_TEST


/* ---- discard mode's sink and limit (tsrun preview) ----------------------- */

struct sunk {
	size_t n;
	int calls[32];
	uint8_t *data[32];
	size_t bytes[32];
	int32_t label[32];
	uint64_t epoch[32], index[32];
	char *path[32];
	int h[32], w[32], c[32];
	enum ts_dtype dtype[32];
};

static void sink_keep(void *arg, const struct ts_engine_sample *s)
{
	struct sunk *k = arg;
	ck_assert_uint_lt(s->pos, k->n);
	size_t p = (size_t)s->pos;
	k->calls[p]++;
	k->data[p] = malloc(s->bytes);
	ck_assert_ptr_nonnull(k->data[p]);
	memcpy(k->data[p], s->data, s->bytes);
	k->bytes[p] = s->bytes;
	k->label[p] = s->label;
	k->epoch[p] = s->epoch;
	k->index[p] = s->index;
	k->path[p] = s->path ? strdup(s->path) : NULL;
	k->h[p] = s->height;
	k->w[p] = s->width;
	k->c[p] = s->channels;
	k->dtype[p] = s->dtype;
}

static void sink_run(const struct ts_plan *pl, int threads, uint64_t e0, uint64_t i0,
		     struct sunk *k)
{
	struct ts_engine_opts eo = {
		.threads = threads, .epochs = 0, .start_epoch = e0, .start_index = i0,
		.limit = k->n, .sink = sink_keep, .sink_arg = k,
	};
	struct ts_engine *e = NULL;
	struct ts_error err = {0};
	ck_assert_msg(ts_engine_create(pl, &eo, NULL, &e, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_engine_start(e, &err), 0);
	ck_assert_msg(ts_engine_join(e, &err) == 0, "%s", err.msg);
	struct ts_engine_stats st;
	ts_engine_stats(e, &st);
	ck_assert_uint_eq(st.samples, k->n); /* the limit, not "forever" */
	ts_engine_destroy(e);
}

static void sunk_free(struct sunk *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->data[i]);
		free(k->path[i]);
	}
}

/* The sink sees each position once, with the bytes, label and position a
 * ring consumer reads there, and the file it came from; a plan cut after
 * a stage (ts_plan_prefix_init) hands out that stage's image. */
START_TEST(sink_is_the_stream)
{
	struct ts_plan *pl = train_plan(ds_train());
	struct run full;
	run_plan(pl, &(struct ropts){.threads = 2, .epochs = 3}, &full);
	assert_ok(&full);
	struct sunk k = {.n = 20};
	uint64_t from = 1 * N_IMAGES + 29;   /* 1:29, on into epoch 2 */
	sink_run(pl, 3, 1, 29, &k);
	for (size_t i = 0; i < k.n; i++) {
		ck_assert_int_eq(k.calls[i], 1);
		ck_assert_uint_eq(k.bytes[i], full.sb);
		ck_assert_msg(memcmp(k.data[i], sample(&full, from + i), full.sb) == 0,
			      "sink sample %zu differs from the ring's", i);
		ck_assert_int_eq(k.label[i], full.label[from + i]);
		ck_assert_uint_eq(k.epoch[i], full.epoch[from + i]);
		ck_assert_uint_eq(k.index[i], full.index[from + i]);
		ck_assert_int_eq(k.h[i], 40);
		ck_assert_int_eq(k.c[i], 3);
		ck_assert_int_eq(k.dtype[i], TS_DTYPE_F32);
		/* label i is the i-th class folder, sorted */
		ck_assert_ptr_nonnull(k.path[i]);
		char cls[8];
		snprintf(cls, sizeof(cls), "/%03d-", k.label[i]);
		ck_assert_msg(strstr(k.path[i], cls), "%s is not in class %d", k.path[i],
			      k.label[i]);
	}
	/* Cut after decode+random_resized_crop and after the flip: 40x40
	 * uint8 NHWC, the same for any thread count, and the flip stage is
	 * the crop stage mirrored or not. */
	ck_assert_uint_ge(pl->n_ops, 4);
	struct ts_plan_prefix pre1, pre2;
	ck_assert_int_eq(ts_plan_prefix_init(&pre1, pl, 1), 0);
	ck_assert_int_eq(ts_plan_prefix_init(&pre2, pl, 2), 0);
	struct sunk c1 = {.n = 6}, c1b = {.n = 6}, c2 = {.n = 6};
	sink_run(&pre1.plan, 1, 0, 3, &c1);
	sink_run(&pre1.plan, 3, 0, 3, &c1b);
	sink_run(&pre2.plan, 2, 0, 3, &c2);
	int flipped = 0;
	for (size_t i = 0; i < c1.n; i++) {
		ck_assert_int_eq(c1.dtype[i], TS_DTYPE_U8);
		ck_assert_int_eq(c1.w[i], 40);
		ck_assert_int_eq(c1.h[i], 40);
		ck_assert_uint_eq(c1.bytes[i], 40 * 40 * 3);
		ck_assert(memcmp(c1.data[i], c1b.data[i], c1.bytes[i]) == 0);
		ck_assert_int_eq(c1.label[i], full.label[3 + i]);
		ck_assert_str_eq(c1.path[i], c2.path[i]);
		const uint8_t *a = c1.data[i], *b = c2.data[i];
		bool same = memcmp(a, b, c1.bytes[i]) == 0, mirror = true;
		for (int y = 0; y < 40 && mirror; y++)
			for (int x = 0; x < 40 && mirror; x++)
				mirror = memcmp(a + (y * 40 + x) * 3, b + (y * 40 + 39 - x) * 3, 3) == 0;
		ck_assert_msg(same || mirror, "stage 2 of sample %zu is not stage 1 flipped or not", i);
		flipped += !same;
	}
	ck_assert_msg(flipped > 0 && flipped < 6, "%d of 6 flipped at p = 0.5", flipped);
	/* A cut at or past the output, or at nothing, is refused. */
	struct ts_plan_prefix bad;
	ck_assert_int_eq(ts_plan_prefix_init(&bad, pl, 0), TS_E_ARG);
	ck_assert_int_eq(ts_plan_prefix_init(&bad, pl, pl->n_ops), TS_E_ARG);
	ts_plan_prefix_fini(&pre1);
	ts_plan_prefix_fini(&pre2);
	sunk_free(&k);
	sunk_free(&c1);
	sunk_free(&c1b);
	sunk_free(&c2);
	run_free(&full);
	ts_plan_destroy(pl);
}
END_TEST

/* views(): the groups' chains, as written in a views() group and, for the
 * reference, in the place of views (each starts with an op that does not
 * fuse into the decode, so that both decode the whole image). */
static const char *const view_chains[] = {
	"flip(horizontal) | random_resized_crop(40, scale = 0.3..1.0)"
	" | random_apply(color_jitter(0.4, 0.4, 0.4) | grayscale(3, p = 0.5), p = 0.8)"
	" | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])"
	" | to(float32, nchw)",
	"random_apply(grayscale(3) | flip(horizontal), p = 0.5)"
	" | random_resized_crop([16, 24], scale = 0.05..0.4)"
	" | random_choice([invert, posterize(3) | flip(vertical)]) | to(uint8)",
};
static const int view_counts[] = {2, 3};

/* Each image decoded once, its 2 + 3 views in one slot (2 of 3x40x40
 * float32, then 3 of 16x24x3 uint8), the same for 1, 2 and 3 threads;
 * the views differ from one another; view v is exactly what its chain
 * alone makes in the place of views(...) under ts_plan_view_seed(seed, v)
 * (so a view swapped, shifted or drawn with another's key fails). */
START_TEST(views_one_decode_each_view_its_chain)
{
	const char *train = ds_train();
	struct ts_plan *pl = compile("pipeline p =\n"
				     "    folder(\"%s\")\n"
				     "    | decode(rgb)\n"
				     "    | views(%d = %s,\n"
				     "            %d = %s)\n"
				     "    | batch(8)\n"
				     "serve p { ring = 3 batches }\n",
				     train, view_counts[0], view_chains[0], view_counts[1],
				     view_chains[1]);
	const size_t big = 3 * 40 * 40 * 4, small = 16 * 24 * 3;
	ck_assert_int_eq(pl->n_views, 5);
	ck_assert_uint_eq(pl->sample_bytes, 2 * big + 3 * small);
	ck_assert_uint_eq(pl->views[1].offset, big);
	ck_assert_uint_eq(pl->views[2].offset, 2 * big);
	ck_assert_int_eq(pl->views[4].group, 1);
	ck_assert_int_eq(pl->views[4].height, 16);
	ck_assert_int_eq(pl->views[4].width, 24);
	ck_assert_int_eq(pl->views[4].layout, TS_LAYOUT_NHWC);
	ck_assert_int_eq(pl->views[0].layout, TS_LAYOUT_NCHW);
	struct run r[3];
	for (int t = 0; t < 3; t++) {
		run_plan(pl, &(struct ropts){.threads = t + 1, .epochs = 2}, &r[t]);
		assert_ok(&r[t]);
		ck_assert_uint_eq(r[t].n, 2 * N_IMAGES);
		/* one decode per sample, whatever the view count */
		ck_assert_uint_eq(r[t].decodes, 2 * N_IMAGES);
	}
	assert_same(&r[0], &r[1], "views, 1 vs 2 threads");
	assert_same(&r[0], &r[2], "views, 1 vs 3 threads");
	/* Views of one sample differ (each its own crop). */
	size_t same01 = 0, same23 = 0;
	for (size_t i = 0; i < r[0].n; i++) {
		const uint8_t *s = sample(&r[0], i);
		same01 += memcmp(s, s + big, big) == 0;
		same23 += memcmp(s + 2 * big, s + 2 * big + small, small) == 0;
	}
	ck_assert_msg(same01 == 0 && same23 == 0, "identical views: %zu, %zu", same01, same23);
	/* Each view against its chain alone, in epoch 0 and 1. */
	int v = 0;
	for (int g = 0; g < 2; g++) {
		struct ts_plan *ref = compile("pipeline p =\n"
					      "    folder(\"%s\")\n"
					      "    | decode(rgb)\n"
					      "    | %s\n"
					      "    | batch(8)\n"
					      "serve p { ring = 3 batches }\n",
					      train, view_chains[g]);
		for (int k = 0; k < view_counts[g]; k++, v++) {
			ref->source.seed = ts_plan_view_seed(pl->source.seed, v);
			struct run rr;
			run_plan(ref, &(struct ropts){.threads = 2, .epochs = 2}, &rr);
			assert_ok(&rr);
			ck_assert_uint_eq(rr.n, r[0].n);
			ck_assert_uint_eq(rr.sb, pl->views[v].bytes);
			for (size_t i = 0; i < rr.n; i++) {
				ck_assert_int_eq(rr.label[i], r[0].label[i]);
				ck_assert_msg(memcmp(sample(&rr, i),
						     sample(&r[0], i) + pl->views[v].offset,
						     rr.sb) == 0,
					      "view %d of sample %zu is not its chain's", v, i);
			}
			run_free(&rr);
		}
		ts_plan_destroy(ref);
	}
	for (int t = 0; t < 3; t++)
		run_free(&r[t]);
	ts_plan_destroy(pl);
}
END_TEST

/* The skip list names each path once, with the first reason met: a file
 * that fails again for another reason (another crop of a corrupt image,
 * a file replaced between epochs) is not listed twice; a path that only
 * starts like a listed one is its own entry. The count is of skipped
 * samples: a failure noted without count (a stand-in that failed too)
 * is listed but not counted. */
START_TEST(skip_list_one_line_per_path)
{
	struct ts_engine e;
	memset(&e, 0, sizeof(e));
	pthread_mutex_init(&e.mu, NULL);
	ts_engine_note_skip(&e, "d/a.jpg", "truncated JPEG", true);
	ts_engine_note_skip(&e, "d/a.jpg", "corrupt JPEG data: premature end of data segment",
			    false);
	ts_engine_note_skip(&e, "d/b.png", "not a JPEG or PNG", false);
	ts_engine_note_skip(&e, "d/a.jpg: x", "larger than max_file_size", true);
	for (int i = 0; i < 200; i++)
		ts_engine_note_skip(&e, "d/a.jpg", i % 2 ? "again" : "truncated JPEG", i % 2 == 0);
	ts_engine_note_skip(&e, NULL, "the plugin crashed", true);
	ts_engine_note_skip(&e, NULL, "the plugin timed out", true);
	const char *const *list = NULL;
	ck_assert_uint_eq(ts_engine_skipped(&e, &list), 4);
	ck_assert_str_eq(list[0], "d/a.jpg: truncated JPEG");
	ck_assert_str_eq(list[1], "d/b.png: not a JPEG or PNG");
	ck_assert_str_eq(list[2], "d/a.jpg: x: larger than max_file_size");
	ck_assert_str_eq(list[3], "(synthetic): the plugin crashed");
	ck_assert_uint_eq(e.skipped_n, 104);
	for (size_t i = 0; i < e.n_skipped; i++)
		free(e.skipped[i]);
	free(e.skipped);
	free(e.skipped_plen);
	free(e.skip_tab);
	pthread_mutex_destroy(&e.mu);
}
END_TEST

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("determinism");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, threads_same_bytes);
	tcase_add_test(tc, two_runs_equal);
	tcase_add_loop_test(tc, resume_reproduces_tail, 0, (int)(sizeof(resumes) / sizeof(resumes[0])));
	tcase_add_test(tc, resume_past_epoch_end);
	suite_add_tcase(s, tc);

	tc = tcase_create("order");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, epochs_shuffle_order);
	tcase_add_test(tc, labels_match_folders);
	suite_add_tcase(s, tc);

	tc = tcase_create("on_error");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, on_error_fail_names_path, 0,
			    (int)(sizeof(fail_cases) / sizeof(fail_cases[0])));
	tcase_add_test(tc, on_error_skip_replaces);
	tcase_add_test(tc, on_error_skip_wraps_and_shuffles);
	tcase_add_test(tc, skip_list_one_line_per_path);
	suite_add_tcase(s, tc);

	tc = tcase_create("reader");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, uring_vs_plain_reads);
	tcase_add_loop_test(tc, deleted_after_listing, 0, 4);
	suite_add_tcase(s, tc);

	tc = tcase_create("tile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tile_filter_fixed_size);
	tcase_add_test(tc, tile_filter_variable_size);
	suite_add_tcase(s, tc);

	/* 30 engine runs on a loaded machine: more than check's 4 s */
	tc = tcase_create("tile-banded");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tile_banded_equals_whole);
	tcase_add_test(tc, tile_banded_corrupt_frame);
	suite_add_tcase(s, tc);

	tc = tcase_create("resize-window");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, resize_crop_window_equals_whole);
	suite_add_tcase(s, tc);

	tc = tcase_create("source");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, missing_or_empty_source);
	suite_add_tcase(s, tc);

	tc = tcase_create("sink");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, sink_is_the_stream);
	tcase_add_test(tc, views_one_decode_each_view_its_chain);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/ts-engine-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	struct ts_dataset_opts o;
	ts_dataset_defaults(&o);
	char ds[300];
	snprintf(ds, sizeof(ds), "%s/ds", root);
	o.dir = ds;
	o.images = N_IMAGES;
	o.classes = N_CLASSES;
	o.threads = 2;
	struct ts_error err = {0};
	int rc = ts_dataset_make(&o, NULL, &err);
	int status;
	if (rc == TS_E_SOURCE) {
		fprintf(stderr, "skip: no photos for the data set: %s\n", err.msg);
		status = 77;
	} else if (rc) {
		fprintf(stderr, "cannot make the data set: %s\n", err.msg);
		status = EXIT_FAILURE;
	} else {
		SRunner *sr = srunner_create(engine_suite());
		srunner_run_all(sr, CK_NORMAL);
		status = srunner_ntests_failed(sr) ? EXIT_FAILURE : EXIT_SUCCESS;
		srunner_free(sr);
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	return status;
}
