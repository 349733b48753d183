/* test-embed.c - the embedding API (tsrun.h, libtsrun): compile from text,
 * shape, batches that never span epochs, positions and labels, end of
 * stream, diagnostics, memory budget, missing sources, determinism across
 * thread counts, resume, concurrent opens of one pipeline, and
 * examples/embed run as a program. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tsrun.h"
#include "tsrun_producer.h"

/* A data set made once by `tsrun make-dataset` (main), for folder tests. */

/* The emulator a cross build runs its programs under (TS_EXE_WRAPPER, set
 * by tests/meson.build from the cross file), or "" natively. */
static const char *exe_wrapper(void)
{
	const char *w = getenv("TS_EXE_WRAPPER");
	return w ? w : "";
}

static char ds_dir[64];
#define DS_IMAGES 40
#define DS_CLASSES 4

/* 100 generated images, shuffled, randomly cropped and flipped: every
 * sample depends on the (seed, epoch, index) RNG. */
static const char synth_text[] =
	"pipeline s =\n"
	"    synthetic(20, count = 100, classes = 10)\n"
	"    | shuffle(seed = 5)\n"
	"    | random_crop(16, padding = 2)\n"
	"    | flip(horizontal)\n"
	"    | to(float32, nchw)\n"
	"    | batch(16)\n"
	"serve s { epochs = 2 }\n";

struct rec {
	uint64_t epoch, index, hash;
	int32_t label;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static struct ts_pipeline *compile_ok(const char *text, const char *base)
{
	struct ts_pipeline *p = NULL;
	struct ts_error err = {0};
	char *diags = NULL;
	int rc = ts_pipeline_compile(text, strlen(text), "t.ts", NULL, base, &p,
				     &diags, &err);
	ck_assert_msg(rc == 0, "compile: %d %s\n%s", rc, err.msg, diags ? diags : "");
	ck_assert_ptr_nonnull(p);
	free(diags);
	return p;
}

/*
 * Read the whole stream into out[] (at most cap samples) and check each
 * batch on the way: 1..batch samples, never past the end of its epoch,
 * positions consecutive across batches and epochs (from start_epoch /
 * start_index), the shape that ts_pipeline_shape reported. Returns the
 * sample count; *nbatches gets the batch count.
 */
static size_t collect(const struct ts_pipeline *p, const struct ts_stream_opts *o,
		      uint64_t epoch_size, struct rec *out, size_t cap,
		      size_t *nbatches)
{
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	int rc = ts_pipeline_open(p, o, &s, &err);
	ck_assert_msg(rc == 0, "open: %d %s", rc, err.msg);
	int h, w, c, batch;
	enum ts_dtype dt;
	enum ts_layout lay;
	ts_pipeline_shape(p, &h, &w, &c, &dt, &lay, &batch);
	size_t want = o && o->batch ? o->batch : (size_t)batch;
	uint64_t e = o ? o->start_epoch : 0, i = o ? o->start_index : 0;
	size_t n = 0, nb = 0;
	struct ts_stream_batch b;
	while ((rc = ts_stream_next(s, &b, &err)) == 0) {
		ck_assert_uint_ge(b.n, 1);
		ck_assert_uint_le(b.n, want);
		ck_assert_int_eq(b.height, h);
		ck_assert_int_eq(b.width, w);
		ck_assert_int_eq(b.channels, c);
		ck_assert_int_eq(b.dtype, dt);
		ck_assert_int_eq(b.layout, lay);
		/* drop_last skips an epoch's short tail. */
		if (i == epoch_size || (o && o->drop_last && i + want > epoch_size)) {
			e++;
			i = 0;
		}
		ck_assert_uint_eq(b.epoch, e);
		ck_assert_uint_eq(b.index, i);
		/* Never spans two epochs; short only at an epoch's end. */
		ck_assert_uint_le(b.index + b.n, epoch_size);
		if (b.n < want) {
			ck_assert(!(o && o->drop_last));
			ck_assert_uint_eq(b.index + b.n, epoch_size);
		}
		for (size_t k = 0; k < b.n; k++) {
			ck_assert_uint_lt(n, cap);
			out[n].epoch = b.epoch;
			out[n].index = b.index + k;
			out[n].label = b.labels[k];
			out[n].hash = fnv1a(0xcbf29ce484222325ULL,
					    (const char *)b.data + k * b.sample_stride,
					    b.sample_bytes);
			n++;
		}
		i += b.n;
		nb++;
	}
	ck_assert_msg(rc == TS_E_EOS, "next: %d %s", rc, err.msg);
	/* The end is sticky. */
	ck_assert_int_eq(ts_stream_next(s, &b, NULL), TS_E_EOS);
	ts_stream_close(s);
	if (nbatches)
		*nbatches = nb;
	return n;
}

static uint64_t digest(const struct rec *r, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t k = 0; k < n; k++) {
		h = fnv1a(h, &r[k].hash, sizeof(r[k].hash));
		h = fnv1a(h, &r[k].label, sizeof(r[k].label));
	}
	return h;
}

/* ---- compile and shape ---- */

START_TEST(synthetic_shape)
{
	struct ts_pipeline *p = compile_ok(synth_text, NULL);
	int h = 0, w = 0, c = 0, batch = 0;
	enum ts_dtype dt = TS_DTYPE_U8;
	enum ts_layout lay = TS_LAYOUT_NHWC;
	ts_pipeline_shape(p, &h, &w, &c, &dt, &lay, &batch);
	ck_assert_int_eq(h, 16);
	ck_assert_int_eq(w, 16);
	ck_assert_int_eq(c, 3);
	ck_assert_int_eq(dt, TS_DTYPE_F32);
	ck_assert_int_eq(lay, TS_LAYOUT_NCHW);
	ck_assert_int_eq(batch, 16);
	ts_pipeline_shape(p, NULL, NULL, NULL, NULL, NULL, NULL);
	/* The ring alone holds at least 8 batches of 3x16x16 floats. */
	ck_assert_uint_ge(ts_pipeline_memory(p, 1), 8u * 16 * 3 * 16 * 16 * 4);
	ck_assert_uint_gt(ts_pipeline_memory(p, 4), ts_pipeline_memory(p, 1));
	ts_pipeline_destroy(p);
	ts_pipeline_destroy(NULL);
	ts_stream_close(NULL);
}
END_TEST

/* views(...): the view table (ts_pipeline_views), and batches whose
 * samples hold the views one after another, the two random crops of a
 * sample different. */
START_TEST(views_table)
{
	struct ts_pipeline *p = compile_ok(
		"pipeline v = synthetic(32, count = 20)\n"
		"    | views(2 = random_resized_crop(16) | to(float32, nchw),\n"
		"            1 = center_crop(8) | to(uint8))\n"
		"    | batch(4)\n", NULL);
	struct ts_stream_view v[3];
	ck_assert_int_eq(ts_pipeline_views(p, -1, NULL), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ts_pipeline_views(p, i, &v[i]), 3);
	ck_assert_int_eq(v[0].height, 16);
	ck_assert_int_eq(v[0].layout, TS_LAYOUT_NCHW);
	ck_assert_int_eq(v[0].dtype, TS_DTYPE_F32);
	ck_assert_uint_eq(v[1].offset, 16 * 16 * 3 * 4);
	ck_assert_int_eq(v[2].group, 1);
	ck_assert_int_eq(v[2].width, 8);
	ck_assert_int_eq(v[2].dtype, TS_DTYPE_U8);
	ck_assert_uint_eq(v[2].offset, 2 * 16 * 16 * 3 * 4);
	ck_assert_uint_eq(v[2].bytes, 8 * 8 * 3);
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = 1, .threads = 2};
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	struct ts_stream_batch b;
	size_t n = 0;
	while (ts_stream_next(s, &b, &err) == 0) {
		ck_assert_uint_eq(b.sample_bytes, v[2].offset + v[2].bytes);
		for (size_t i = 0; i < b.n; i++) {
			const unsigned char *sm = (const unsigned char *)b.data + i * b.sample_stride;
			ck_assert_msg(memcmp(sm, sm + v[1].offset, v[1].bytes) != 0,
				      "views 0 and 1 of sample %zu are equal", n + i);
		}
		n += b.n;
	}
	ck_assert_uint_eq(n, 20);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
	/* A pipeline without views has none. */
	p = compile_ok(synth_text, NULL);
	ck_assert_int_eq(ts_pipeline_views(p, 0, &v[0]), 0);
	ts_pipeline_destroy(p);
}
END_TEST

/* With several pipelines, the name argument picks one. */
START_TEST(pick_pipeline)
{
	static const char two[] =
		"pipeline a = synthetic(8, count = 10) | to(uint8) | batch(2)\n"
		"pipeline b = synthetic(12, count = 10, channels = 1) | to(uint8) | batch(5)\n";
	struct ts_pipeline *p = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_pipeline_compile(two, strlen(two), "two.ts", "b", NULL, &p,
					     NULL, &err), 0);
	int h, c, batch;
	ts_pipeline_shape(p, &h, NULL, &c, NULL, NULL, &batch);
	ck_assert_int_eq(h, 12);
	ck_assert_int_eq(c, 1);
	ck_assert_int_eq(batch, 5);
	ts_pipeline_destroy(p);
	p = NULL;
	int rc = ts_pipeline_compile(two, strlen(two), "two.ts", "nope", NULL, &p, NULL, &err);
	ck_assert_int_lt(rc, 0);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(err.msg, "nope"));
}
END_TEST

START_TEST(bad_arguments)
{
	struct ts_pipeline *p = NULL;
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_pipeline_compile(NULL, 0, "x", NULL, NULL, &p, NULL, &err),
			 TS_E_ARG);
	ck_assert_int_eq(err.code, TS_E_ARG);
	ck_assert_int_eq(ts_pipeline_open(NULL, NULL, &s, &err), TS_E_ARG);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(ts_stream_next(NULL, NULL, NULL), TS_E_ARG);
}
END_TEST

/* ---- diagnostics ---- */

/* [text, code, line, column, a fragment of the rendered diagnostics] */
static const struct {
	const char *text;
	int code, line, col;
	const char *frag;
} bad_cases[] = {
	{"pipeline x = synthetic(8) | | batch(2)\n", TS_E_SYNTAX, 1, 29, "bad.ts:1:29"},
	{"let a = 1\n\npipeline x =\n    synthetic(8) ) batch(2)\n", TS_E_SYNTAX, 4, 18,
	 "bad.ts:4:18"},
	{"pipeline x = synthetic(8) | flop | to(uint8) | batch(2)\n", TS_E_CHECK, 1, 29,
	 "did you mean 'flip'"},
	{"pipeline x =\n  synthetic(8, cuont = 3) | to(uint8) | batch(2)\n", TS_E_CHECK, 2, 16,
	 "bad.ts:2:16"},
};

START_TEST(diagnostics)
{
	const char *text = bad_cases[_i].text;
	struct ts_pipeline *p = NULL;
	struct ts_error err = {0};
	char *diags = NULL;
	int rc = ts_pipeline_compile(text, strlen(text), "bad.ts", NULL, NULL, &p, &diags, &err);
	ck_assert_int_eq(rc, bad_cases[_i].code);
	ck_assert_int_eq(err.code, bad_cases[_i].code);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(err.loc.first_line, bad_cases[_i].line);
	ck_assert_int_eq(err.loc.first_column, bad_cases[_i].col);
	ck_assert_ptr_nonnull(diags);
	char where[32];
	snprintf(where, sizeof(where), "bad.ts:%d:%d", bad_cases[_i].line, bad_cases[_i].col);
	ck_assert_msg(strstr(diags, where), "no '%s' in:\n%s", where, diags);
	ck_assert_msg(strstr(err.msg, where), "no '%s' in err.msg '%s'", where, err.msg);
	ck_assert_msg(strstr(diags, bad_cases[_i].frag), "no '%s' in:\n%s",
		      bad_cases[_i].frag, diags);
	ck_assert_ptr_nonnull(strchr(diags, '^')); /* the caret line */
	free(diags);
	/* diagnostics may be NULL: err alone still says where. */
	memset(&err, 0, sizeof(err));
	rc = ts_pipeline_compile(text, strlen(text), "bad.ts", NULL, NULL, &p, NULL, &err);
	ck_assert_int_eq(rc, bad_cases[_i].code);
	ck_assert_int_eq(err.loc.first_line, bad_cases[_i].line);
}
END_TEST

/* ---- batches, positions, end of stream ---- */

START_TEST(epochs_and_batches)
{
	struct ts_pipeline *p = compile_ok(synth_text, NULL);
	static struct rec r[400];
	size_t nb = 0;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2};
	/* 100 per epoch in batches of 16: 6 full and one of 4, twice. */
	ck_assert_uint_eq(collect(p, &o, 100, r, 400, &nb), 200);
	ck_assert_uint_eq(nb, 14);
	ck_assert_uint_eq(r[99].epoch, 0);
	ck_assert_uint_eq(r[100].epoch, 1);
	ck_assert_uint_eq(r[199].index, 99);
	/* Each epoch is a permutation: every label 0..9 ten times. */
	for (int e = 0; e < 2; e++) {
		int count[10] = {0};
		for (int k = 0; k < 100; k++) {
			ck_assert_int_ge(r[e * 100 + k].label, 0);
			ck_assert_int_lt(r[e * 100 + k].label, 10);
			count[r[e * 100 + k].label]++;
		}
		for (int l = 0; l < 10; l++)
			ck_assert_int_eq(count[l], 10);
	}
	/* shuffle draws a fresh order per epoch. */
	int same = 0;
	for (int k = 0; k < 100; k++)
		same += r[k].hash == r[100 + k].hash;
	ck_assert_int_lt(same, 100);

	/* Options: 3 epochs, batch 32, drop_last: 3 batches of 32 a epoch. */
	o = (struct ts_stream_opts){.size = sizeof(struct ts_stream_opts), .epochs = 3, .batch = 32, .drop_last = 1, .threads = 1};
	ck_assert_uint_eq(collect(p, &o, 100, r, 400, &nb), 3 * 96);
	ck_assert_uint_eq(nb, 9);
	ts_pipeline_destroy(p);
}
END_TEST

/* Without shuffle, synthetic labels are index % classes, in order. */
START_TEST(labels_in_order)
{
	struct ts_pipeline *p = compile_ok(
		"pipeline s = synthetic(8, count = 25, classes = 7) | to(uint8, nhwc) | batch(10)\n",
		NULL);
	static struct rec r[64];
	size_t nb;
	ck_assert_uint_eq(collect(p, NULL, 25, r, 64, &nb), 25);
	ck_assert_uint_eq(nb, 3);
	for (int k = 0; k < 25; k++)
		ck_assert_int_eq(r[k].label, k % 7);
	ts_pipeline_destroy(p);
}
END_TEST

/* A stream closed early, with workers blocked on a full ring, closes. */
START_TEST(close_early)
{
	struct ts_pipeline *p = compile_ok(synth_text, NULL);
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = 0, .threads = 2}; /* forever */
	struct ts_stream *s = NULL;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, NULL), 0);
	struct ts_stream_batch b;
	for (int k = 0; k < 20; k++) {
		ck_assert_int_eq(ts_stream_next(s, &b, NULL), 0);
		ck_assert_uint_eq(b.epoch, (uint64_t)(k / 7));
	}
	struct ts_stream_stats st;
	ts_stream_stats(s, &st);
	ck_assert_uint_eq(st.epoch_size, 100);
	ck_assert_int_eq(st.threads, 2);
	ck_assert_uint_ge(st.samples, 20 * 16 - 3 * 12);
	ck_assert_uint_eq(ts_stream_skipped(s), 0);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* ---- budget and sources ---- */

START_TEST(memory_budget)
{
	struct ts_pipeline *p = compile_ok(synth_text, NULL);
	uint64_t need = ts_pipeline_memory(p, 2);
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2, .memory_budget = need - 1};
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), TS_E_BUDGET);
	ck_assert_int_eq(err.code, TS_E_BUDGET);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(err.msg, "budget"));
	/* Exactly the need is enough. */
	o.memory_budget = need;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* A pipeline whose samples vary in size (random_rotation with expand) cannot
 * be streamed: the error says why and what to add (it was the ring's
 * "invalid sample shape"; found by the recipe audit). */
START_TEST(variable_size_refused)
{
	static const char text[] =
		"pipeline v = synthetic([60, 80], count = 4) | random_rotation(30, expand = true)\n";
	struct ts_pipeline *p = compile_ok(text, NULL);
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_pipeline_open(p, NULL, &s, &err), TS_E_ARG);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, "pipeline 'v': its samples have no fixed size"),
		      "message: %s", err.msg);
	ck_assert_msg(strstr(err.msg, "center_crop"), "no remedy: %s", err.msg);
	ts_pipeline_destroy(p);
}
END_TEST

START_TEST(missing_folder)
{
	static const char text[] =
		"pipeline f = folder(\"no-such-dir/train\") | decode(rgb) | center_crop(32)"
		" | to(uint8) | batch(4)\n";
	struct ts_pipeline *p = compile_ok(text, "/tmp");
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_pipeline_open(p, NULL, &s, &err), TS_E_SOURCE);
	ck_assert_int_eq(err.code, TS_E_SOURCE);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, "no-such-dir/train"), "path not named: %s", err.msg);
	ts_pipeline_destroy(p);
}
END_TEST

START_TEST(empty_folder)
{
	char dir[] = "/tmp/ts-embed-empty.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char text[256];
	snprintf(text, sizeof(text),
		 "pipeline f = folder(\"%s\") | decode(rgb) | center_crop(32) | to(uint8) | batch(4)\n",
		 dir);
	struct ts_pipeline *p = compile_ok(text, NULL);
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	int rc = ts_pipeline_open(p, NULL, &s, &err);
	rmdir(dir);
	ck_assert_int_eq(rc, TS_E_SOURCE);
	ck_assert_msg(strstr(err.msg, dir), "path not named: %s", err.msg);
	ts_pipeline_destroy(p);
}
END_TEST

/* ---- folder source ---- */

static const char *folder_text(char *buf, size_t len)
{
	snprintf(buf, len,
		 "pipeline f =\n"
		 "    folder(\"%s/train\")\n"
		 "    | shuffle(seed = 9)\n"
		 "    | decode(rgb)\n"
		 "    | random_resized_crop(24)\n"
		 "    | flip(horizontal)\n"
		 "    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])\n"
		 "    | to(float32, nchw)\n"
		 "    | batch(6)\n"
		 "serve f { epochs = 2 }\n",
		 ds_dir);
	return buf;
}

START_TEST(folder_stream)
{
	char text[1024];
	struct ts_pipeline *p = compile_ok(folder_text(text, sizeof(text)), NULL);
	static struct rec r[2 * DS_IMAGES];
	size_t nb;
	/* 40 a epoch in batches of 6: 6 full and one of 4, twice. */
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2};
	ck_assert_uint_eq(collect(p, &o, DS_IMAGES, r, 2 * DS_IMAGES, &nb), 2 * DS_IMAGES);
	ck_assert_uint_eq(nb, 14);
	/* Labels are the sorted class folders' indices, as many of each as
	 * that folder holds. */
	for (int e = 0; e < 2; e++) {
		int count[DS_CLASSES] = {0};
		for (int k = 0; k < DS_IMAGES; k++) {
			int32_t l = r[e * DS_IMAGES + k].label;
			ck_assert_int_ge(l, 0);
			ck_assert_int_lt(l, DS_CLASSES);
			count[l]++;
		}
		for (int l = 0; l < DS_CLASSES; l++)
			ck_assert_int_eq(count[l], DS_IMAGES / DS_CLASSES);
	}
	ts_pipeline_destroy(p);
}
END_TEST

/* ---- determinism and resume ---- */

START_TEST(threads_same_digest)
{
	char text[1024];
	const char *texts[] = {synth_text, folder_text(text, sizeof(text))};
	uint64_t sizes[] = {100, DS_IMAGES};
	struct ts_pipeline *p = compile_ok(texts[_i], NULL);
	static struct rec a[400], b[400];
	struct ts_stream_opts o1 = {.size = sizeof(struct ts_stream_opts), .epochs = 2, .threads = 1};
	struct ts_stream_opts o2 = {.size = sizeof(struct ts_stream_opts), .epochs = 2, .threads = 2, .batch = 7};
	size_t na = collect(p, &o1, sizes[_i], a, 400, NULL);
	size_t nb = collect(p, &o2, sizes[_i], b, 400, NULL);
	ck_assert_uint_eq(na, 2 * sizes[_i]);
	ck_assert_uint_eq(nb, na);
	/* Same samples in the same order, whatever the threads or batch. */
	ck_assert_uint_eq(digest(a, na), digest(b, nb));
	/* And a second run again. */
	size_t nc = collect(p, &o2, sizes[_i], b, 400, NULL);
	ck_assert_uint_eq(digest(a, na), digest(b, nc));
	ts_pipeline_destroy(p);
}
END_TEST

START_TEST(resume_reproduces_tail)
{
	char text[1024];
	const char *texts[] = {synth_text, folder_text(text, sizeof(text))};
	uint64_t n = _i == 0 ? 100 : DS_IMAGES;
	struct ts_pipeline *p = compile_ok(texts[_i], NULL);
	static struct rec full[400], tail[400];
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = 3, .threads = 2};
	ck_assert_uint_eq(collect(p, &o, n, full, 400, NULL), 3 * n);
	/* Resume mid-epoch 1, and at the start of epoch 2. */
	const uint64_t starts[][2] = {{1, 13}, {0, n - 1}, {2, 0}};
	for (size_t k = 0; k < 3; k++) {
		struct ts_stream_opts r = {.size = sizeof(struct ts_stream_opts), .epochs = 3, .threads = 1,
					   .start_epoch = starts[k][0],
					   .start_index = starts[k][1]};
		uint64_t from = starts[k][0] * n + starts[k][1];
		size_t got = collect(p, &r, n, tail, 400, NULL);
		ck_assert_uint_eq(got, 3 * n - from);
		for (size_t j = 0; j < got; j++) {
			ck_assert_uint_eq(tail[j].epoch, full[from + j].epoch);
			ck_assert_uint_eq(tail[j].index, full[from + j].index);
			ck_assert_int_eq(tail[j].label, full[from + j].label);
			ck_assert_msg(tail[j].hash == full[from + j].hash,
				      "sample %" PRIu64 ":%" PRIu64 " differs after resume",
				      tail[j].epoch, tail[j].index);
		}
	}
	ts_pipeline_destroy(p);
}
END_TEST

/* ---- the decoded cache ---- */

/* Pipelines over the data set whose cached streams must be the uncached
 * ones (the uncached path is the one test-augment, pipeline-torch.py and
 * the conformance suite compare with torchvision): the train recipe (a
 * frame at full scale), a small crop (frames at reduced DCT scales), the
 * val recipe (the windowed resize's output), gray 16-bit with draw-free
 * ops after the decode (admitted past them), views, and a crop that pads
 * (its op after a full decode). */
static const char *const cache_ops[] = {
	"decode(rgb) | random_resized_crop(32) | flip(horizontal) | "
	"normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | to(float32, nchw)",
	"decode(rgb) | random_resized_crop(12, scale = 0.5..1.0) | to(uint8, nhwc)",
	"decode(rgb) | resize(40) | center_crop(32) | to(float32, nchw)",
	"decode(gray, depth = 16) | resize(48) | adjust_gamma(1.3) | to(uint8) | invert() | "
	"random_crop(24) | to(float32, nchw)",
	"decode(rgb) | views(2 = random_resized_crop(16) | flip(horizontal) | to(uint8, nhwc), "
	"1 = center_crop(20) | to(uint8, nhwc))",
	"decode(rgb) | random_crop(600, padding = 4) | resize([20, 20]) | to(uint8, nhwc)",
};

static const char *cache_text(char *buf, size_t len, size_t k, const char *cache)
{
	snprintf(buf, len,
		 "pipeline c = folder(\"%s/train\") | shuffle(seed = 5) | %s | batch(6)\n"
		 "serve c { epochs = 2 cache = %s }\n", ds_dir, cache_ops[k], cache);
	return buf;
}

/* Every pipeline's stream with the cache holding the whole set, a part of
 * it, or nothing is the same, for any thread count, and a resumed cached
 * stream is the uncached one's tail; the cache holds what it says. */
START_TEST(cache_same_stream)
{
	char text[2048];
	static struct rec off[3 * DS_IMAGES], on[3 * DS_IMAGES];
	struct ts_pipeline *p = compile_ok(cache_text(text, sizeof(text), (size_t)_i, "0"), NULL);
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2};
	size_t n = collect(p, &o, DS_IMAGES, off, 3 * DS_IMAGES, NULL);
	ck_assert_uint_eq(n, 2 * DS_IMAGES);
	ts_pipeline_destroy(p);
	/* 64 MiB holds the 40 photos (about 500 KiB each at full scale);
	 * 2 MiB (1 MiB of table slack) only some of them. */
	const char *sizes[] = {"64 MiB", "2 MiB"};
	for (int s = 0; s < 2; s++) {
		p = compile_ok(cache_text(text, sizeof(text), (size_t)_i, sizes[s]), NULL);
		for (int threads = 2 - (s == 0); threads <= 2; threads++) {
			struct ts_stream_opts oc = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = threads, .batch = 4};
			ck_assert_uint_eq(collect(p, &oc, DS_IMAGES, on, 3 * DS_IMAGES, NULL), n);
			for (size_t j = 0; j < n; j++)
				ck_assert_msg(on[j].hash == off[j].hash && on[j].label == off[j].label,
					      "pipeline %d, cache %s, %d threads: sample %" PRIu64
					      ":%" PRIu64 " differs from the uncached one", _i, sizes[s],
					      threads, on[j].epoch, on[j].index);
		}
		/* Resumed mid-epoch with the cache: the uncached tail. */
		if (s == 1) {
			ts_pipeline_destroy(p);
			continue;
		}
		struct ts_stream_opts r = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2, .start_epoch = 1,
					   .start_index = 7};
		size_t got = collect(p, &r, DS_IMAGES, on, 3 * DS_IMAGES, NULL);
		ck_assert_uint_eq(got, n - DS_IMAGES - 7);
		for (size_t j = 0; j < got; j++)
			ck_assert_msg(on[j].hash == off[DS_IMAGES + 7 + j].hash,
				      "pipeline %d: resumed sample %zu differs", _i, j);
		ts_pipeline_destroy(p);
	}
	/* ts_stream_opts.cache overrides the serve block both ways. */
	p = compile_ok(cache_text(text, sizeof(text), (size_t)_i, "0"), NULL);
	struct ts_stream_opts oc = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2, .cache = 64ull << 20};
	ck_assert_uint_eq(collect(p, &oc, DS_IMAGES, on, 3 * DS_IMAGES, NULL), n);
	for (size_t j = 0; j < n; j++)
		ck_assert(on[j].hash == off[j].hash);
	ts_pipeline_destroy(p);
}
END_TEST

/* The cache's options: auto needs a budget and takes what it leaves; a
 * cache the budget cannot hold is refused with the breakdown. (Its
 * figures: tests/cache.sh, through tsrun bench.) */
START_TEST(cache_options)
{
	char text[2048];
	struct ts_pipeline *p = compile_ok(cache_text(text, sizeof(text), 1, "64 MiB"), NULL);
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = 1, .threads = 2, .cache = TS_STREAM_CACHE_AUTO};
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), TS_E_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "memory budget"));
	/* the plan's figure counts the serve block's 64 MiB */
	uint64_t need = ts_pipeline_memory(p, 2);
	ck_assert_uint_ge(need, 64ull << 20);
	o.memory_budget = need - (64ull << 20) + (8u << 20);
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	ts_stream_close(s);
	o.cache = 0; /* the serve block's 64 MiB: over that budget */
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), TS_E_BUDGET);
	ck_assert_ptr_nonnull(strstr(err.msg, "cache 67108864"));
	o.cache = TS_STREAM_CACHE_OFF;
	ck_assert_int_eq(ts_pipeline_open(p, &o, &s, &err), 0);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* A reload takes over with a cache of its own (empty: the new plan's
 * decode may differ): the reloaded stream is the uncached one. */
START_TEST(cache_reload)
{
	char a[2048], b[2048];
	static struct rec r[2][3 * DS_IMAGES];
	const char *sizes[] = {"0", "64 MiB"};
	for (int s = 0; s < 2; s++) {
		/* the ring (16 float32 samples: whole pages) ends with the
		 * first epoch still running when the reload is asked */
		snprintf(a, sizeof(a),
			 "pipeline c = folder(\"%s/train\") | shuffle(seed = 5) | %s | batch(6)\n"
			 "serve c { epochs = 3 ring = 16 samples cache = %s }\n", ds_dir,
			 cache_ops[0], sizes[s]);
		cache_text(b, sizeof(b), 2, sizes[s]);
		struct ts_pipeline *p = compile_ok(a, NULL);
		struct ts_stream *st = NULL;
		struct ts_error err = {0};
		struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 2};
		ck_assert_int_eq(ts_pipeline_open(p, &o, &st, &err), 0);
		struct ts_stream_batch bt;
		size_t n = 0;
		int rc;
		while ((rc = ts_stream_next(st, &bt, &err)) == 0) {
			if (n == 0)
				ck_assert_int_eq(ts_stream_reload(st, b, strlen(b), "b.ts", NULL, NULL,
								  NULL, &err), 0);
			for (size_t k = 0; k < bt.n && n < 3 * DS_IMAGES; k++, n++) {
				r[s][n].hash = fnv1a(0xcbf29ce484222325ULL,
						     (const char *)bt.data + k * bt.sample_stride,
						     bt.sample_bytes);
				r[s][n].epoch = bt.epoch;
			}
		}
		ck_assert_int_eq(rc, TS_E_EOS);
		ck_assert_uint_eq(n, 3 * DS_IMAGES);
		ts_stream_close(st);
		ts_pipeline_destroy(p);
	}
	for (size_t j = 0; j < 3 * DS_IMAGES; j++)
		ck_assert_msg(r[0][j].hash == r[1][j].hash, "sample %zu (epoch %" PRIu64
			      ") differs with the cache across a reload", j, r[1][j].epoch);
}
END_TEST

/* One compiled pipeline opened from two threads at once. */
struct opener {
	const struct ts_pipeline *p;
	struct rec r[200];
	size_t n;
};

static void *open_and_read(void *arg)
{
	struct opener *op = arg;
	struct ts_stream_opts o = {.size = sizeof(struct ts_stream_opts), .epochs = -1, .threads = 1};
	op->n = collect(op->p, &o, 100, op->r, 200, NULL);
	return NULL;
}

/* Sized structs (libtsrun(3)): ts_stream_opts carries its size. A caller
 * of an older, shorter layout still opens, with the defaults for what it lacks; an unset
 * size, or a newer layout that sets a field this library does not know,
 * is refused by name; a newer layout whose extra fields are zero opens. */
START_TEST(sized_stream_opts)
{
	struct ts_pipeline *p = compile_ok(synth_text, NULL);
	struct ts_error err = {0};
	struct ts_stream *s = NULL;
	struct ts_stream_batch b;
	/* older: up to memory_budget; its batch of 3 lies past its size and
	 * must not be read (the pipeline's 16 then) */
	struct ts_stream_opts old = {.size = offsetof(struct ts_stream_opts, batch),
				     .epochs = 1, .threads = 1, .batch = 3};
	ck_assert_int_eq(ts_pipeline_open(p, &old, &s, &err), 0);
	ck_assert_int_eq(ts_stream_next(s, &b, &err), 0);
	ck_assert_uint_eq(b.n, 16);
	ts_stream_close(s);
	s = NULL;
	/* unset */
	struct ts_stream_opts zero = {.epochs = 1};
	ck_assert_int_eq(ts_pipeline_open(p, &zero, &s, &err), TS_E_ARG);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, "struct ts_stream_opts: its size field is 0") &&
		      strstr(err.msg, "sizeof"), "%s", err.msg);
	/* newer: 8 bytes more, set */
	struct { struct ts_stream_opts o; uint64_t newer; } big = {
		.o = {.size = sizeof(big), .epochs = 1, .threads = 1}, .newer = 7};
	ck_assert_int_eq(ts_pipeline_open(p, &big.o, &s, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "from a newer header") &&
		      strstr(err.msg, "does not know"), "%s", err.msg);
	/* one width for epoch: 64 bits in the API, 32 in the ring, so a
	 * resume past UINT32_MAX is refused rather than wrapped */
	struct ts_stream_opts far = {.size = sizeof(far), .epochs = 0, .threads = 1,
				     .start_epoch = (uint64_t)UINT32_MAX + 1};
	ck_assert_int_eq(ts_pipeline_open(p, &far, &s, &err), TS_E_ARG);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, "start_epoch 4294967296") &&
		      strstr(err.msg, "32 bits"), "%s", err.msg);
	/* newer, its extra field zero */
	big.newer = 0;
	ck_assert_int_eq(ts_pipeline_open(p, &big.o, &s, &err), 0);
	ck_assert_int_eq(ts_stream_next(s, &b, &err), 0);
	for (size_t i = 0; i < sizeof(b.reserved) / sizeof(b.reserved[0]); i++)
		ck_assert_uint_eq(b.reserved[i], 0);
	ts_stream_close(s);
	ts_pipeline_destroy(p);
}
END_TEST

/* ts_producer_opts_init writes no byte past the size its caller passes
 * (a program built against a shorter header), and ts_producer_create
 * refuses an unset size before it touches anything. */
START_TEST(sized_producer_opts)
{
	union { struct ts_producer_opts o; unsigned char b[sizeof(struct ts_producer_opts) + 16]; } u;
	size_t old = offsetof(struct ts_producer_opts, consumers);
	memset(&u, 0xaa, sizeof(u));
	ts_producer_opts_init_size(&u.o, old);
	ck_assert_uint_eq(u.o.size, old);
	ck_assert_int_eq(u.o.status_fd, -1);
	for (size_t i = old; i < sizeof(u.b); i++)
		ck_assert_msg(u.b[i] == 0xaa, "byte %zu past the caller's size written", i);
	ts_producer_opts_init(&u.o);
	ck_assert_uint_eq(u.o.size, sizeof(u.o));
	ck_assert_uint_eq(u.o.consumers, 64);
	struct ts_producer_opts zero = {.socket_path = "/nonexistent/x.sock"};
	struct ts_producer *pr = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_producer_create(&zero, &pr, &err), TS_E_ARG);
	ck_assert_ptr_null(pr);
	ck_assert_msg(strstr(err.msg, "struct ts_producer_opts: its size field is 0") &&
		      strstr(err.msg, "ts_producer_opts_init"), "%s", err.msg);
}
END_TEST

START_TEST(concurrent_opens)
{
	struct ts_pipeline *p = compile_ok(synth_text, NULL);
	static struct opener a, b;
	a.p = b.p = p;
	pthread_t ta, tb;
	ck_assert_int_eq(pthread_create(&ta, NULL, open_and_read, &a), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, open_and_read, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ck_assert_uint_eq(a.n, 200);
	ck_assert_uint_eq(b.n, 200);
	ck_assert_uint_eq(digest(a.r, a.n), digest(b.r, b.n));
	ts_pipeline_destroy(p);
}
END_TEST

/* ---- examples/embed ---- */

/* Run a command; its stdout (up to len bytes) into out. Returns the exit
 * status or -1. */
static int run_cmd(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	size_t n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *embed_path(char *buf, size_t len)
{
	const char *b = getenv("TS_BUILDDIR");
	snprintf(buf, len, "%s/examples/embed", b ? b : "..");
	return buf;
}

START_TEST(example_embed)
{
	char exe[512], cmd[1024], o1[4096], o2[4096];
	embed_path(exe, sizeof(exe));
	ck_assert_msg(access(exe, X_OK) == 0, "%s is not built", exe);
	/* The built-in pipeline: 100 images, batch 16. */
	snprintf(cmd, sizeof(cmd), "%s %s --threads 1", exe_wrapper(), exe);
	ck_assert_int_eq(run_cmd(cmd, o1, sizeof(o1)), 0);
	snprintf(cmd, sizeof(cmd), "%s %s --threads 2", exe_wrapper(), exe);
	ck_assert_int_eq(run_cmd(cmd, o2, sizeof(o2)), 0);
	ck_assert_ptr_nonnull(strstr(o1, "shape: 32x32x3 uint8 nhwc, batch 16"));
	ck_assert_ptr_nonnull(strstr(o1, "batch 0: epoch 0 index 0 n 16 labels 0 1 2 3"));
	ck_assert_ptr_nonnull(strstr(o1, "batch 1: epoch 0 index 16 n 16 labels 6 7 8 9"));
	ck_assert_ptr_nonnull(strstr(o1, "batches: 7\nsamples: 100\n"));
	const char *d1 = strstr(o1, "digest: "), *d2 = strstr(o2, "digest: ");
	ck_assert_ptr_nonnull(d1);
	ck_assert_ptr_nonnull(d2);
	/* 16 hex digits and the line's end; the peak RSS line follows */
	ck_assert_int_eq(strcspn(d1, "\n"), strlen("digest: ") + 16);
	ck_assert_int_eq(strncmp(d1, d2, strlen("digest: ") + 17), 0);
	ck_assert_ptr_nonnull(strstr(o1, "\npeak rss: "));

	/* A pipeline file with a relative data path and its own epochs. */
	char ts[] = "/tmp/ts-embed-file.XXXXXX";
	int fd = mkstemp(ts);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	char text[1024];
	fputs(folder_text(text, sizeof(text)), f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s %s %s --threads 2 --epochs 1", exe_wrapper(), exe, ts);
	int rc = run_cmd(cmd, o1, sizeof(o1));
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(o1, "shape: 3x24x24 float32 nchw, batch 6"));
	ck_assert_ptr_nonnull(strstr(o1, "batches: 7\nsamples: 40\n"));

	/* A syntax error: exit 1 and the diagnostic on stderr. */
	f = fopen(ts, "w");
	fputs("pipeline x = synthetic(8) | | batch(2)\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s %s %s 2>&1", exe_wrapper(), exe, ts);
	rc = run_cmd(cmd, o1, sizeof(o1));
	unlink(ts);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(o1, ":1:29: error"), "got: %s", o1);
}
END_TEST

static Suite *embed_suite(void)
{
	Suite *s = suite_create("embed");
	TCase *tc = tcase_create("compile");
	tcase_add_test(tc, synthetic_shape);
	tcase_add_test(tc, pick_pipeline);
	tcase_add_test(tc, views_table);
	tcase_add_test(tc, bad_arguments);
	tcase_add_loop_test(tc, diagnostics, 0, sizeof(bad_cases) / sizeof(bad_cases[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_add_test(tc, epochs_and_batches);
	tcase_add_test(tc, labels_in_order);
	tcase_add_test(tc, close_early);
	tcase_add_test(tc, folder_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_test(tc, memory_budget);
	tcase_add_test(tc, missing_folder);
	tcase_add_test(tc, variable_size_refused);
	tcase_add_test(tc, empty_folder);
	suite_add_tcase(s, tc);

	tc = tcase_create("sized");
	tcase_add_test(tc, sized_stream_opts);
	tcase_add_test(tc, sized_producer_opts);
	suite_add_tcase(s, tc);

	tc = tcase_create("determinism");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, threads_same_digest, 0, 2);
	tcase_add_loop_test(tc, resume_reproduces_tail, 0, 2);
	tcase_add_test(tc, concurrent_opens);
	suite_add_tcase(s, tc);

	tc = tcase_create("cache");
	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, cache_same_stream, 0,
			    (int)(sizeof(cache_ops) / sizeof(cache_ops[0])));
	tcase_add_test(tc, cache_options);
	tcase_add_test(tc, cache_reload);
	suite_add_tcase(s, tc);

	tc = tcase_create("example");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, example_embed);
	suite_add_tcase(s, tc);
	return s;
}

/* The folder tests read a small data set that `tsrun make-dataset` makes. */
static int make_dataset(void)
{
	const char *tsrun = getenv("TSRUN");
	if (!tsrun) {
		fprintf(stderr, "test-embed: TSRUN is not set\n");
		return -1;
	}
	snprintf(ds_dir, sizeof(ds_dir), "/tmp/ts-embed-ds.XXXXXX");
	if (!mkdtemp(ds_dir))
		return -1;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s '%s' make-dataset '%s' --images %d --classes %d --quiet >/dev/null",
		 exe_wrapper(), tsrun, ds_dir, DS_IMAGES, DS_CLASSES);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	int ok = make_dataset() == 0;
	int failed = 1;
	if (ok) {
		SRunner *sr = srunner_create(embed_suite());
		srunner_run_all(sr, CK_NORMAL);
		failed = srunner_ntests_failed(sr);
		srunner_free(sr);
	} else {
		fprintf(stderr, "test-embed: cannot make the data set in %s\n", ds_dir);
	}
	if (ds_dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ds_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "test-embed: cannot remove %s\n", ds_dir);
	}
	return failed ? 1 : 0;
}
