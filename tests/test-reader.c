/*
 * test-reader.c - the asynchronous reader, with io_uring and with the
 * TSRUN_NO_URING=1 fallback: files of awkward sizes, missing files, tar
 * member ranges, back-pressure, release from another thread.
 * Every read-path test runs twice: loop index 0 = io_uring, 1 = fallback.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader.h"
#include "source.h"
#include "util.h"

#define BUF 65536u

static char tmp[256];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/ts-reader-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* Byte j of test file i: distinct per file and position. */
static uint8_t pat(unsigned i, size_t j)
{
	return (uint8_t)((j * 131u + i * 7u + (j >> 8)) ^ (j >> 16));
}

static char *make_file(unsigned i, size_t size)
{
	char *path = malloc(300);
	snprintf(path, 300, "%s/f%05u.bin", tmp, i);
	uint8_t *d = malloc(size ? size : 1);
	for (size_t j = 0; j < size; j++)
		d[j] = pat(i, j);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, d, size), (ssize_t)size);
	close(fd);
	free(d);
	return path;
}

/* Loop index 0: io_uring (when the kernel has it); 1: the fallback. */
static struct ts_reader *make_reader(int mode, unsigned qd, size_t buf)
{
	if (mode)
		setenv("TSRUN_NO_URING", "1", 1);
	else
		unsetenv("TSRUN_NO_URING");
	struct ts_reader *r = NULL;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_reader_create(qd, buf, &r, &err), 0);
	if (mode) {
		ck_assert(!ts_reader_uses_uring(r));
		ck_assert_ptr_nonnull(strstr(ts_reader_fallback_reason(r), "TSRUN_NO_URING"));
	} else if (!ts_reader_uses_uring(r)) {
		/* main ran the io_uring half only where a probe had it */
		ck_abort_msg("io_uring half, but io_uring is not in use: %s",
			     ts_reader_fallback_reason(r));
	} else if (ts_reader_fallback_reason(r)) {
		fprintf(stderr, "note: %s\n", ts_reader_fallback_reason(r));
	}
	return r;
}

struct expect {
	const struct ts_item *item;
	int status;       /* expected status */
	const uint8_t *want; /* NULL: pattern of file `file` */
	unsigned file;
	size_t len;
	bool seen;
};

/*
 * Submit every item (tag = its position), reaping when the reader is busy,
 * and check each completion against the expectations. Buffers are released
 * as they are checked.
 */
static void run_all(struct ts_reader *r, struct expect *ex, size_t n)
{
	struct ts_read_done done[8];
	size_t next = 0, got = 0;
	while (got < n) {
		while (next < n) {
			int rc = ts_reader_submit(r, ex[next].item, next);
			if (rc == -EBUSY)
				break;
			ck_assert_int_eq(rc, 0);
			next++;
		}
		int k = ts_reader_reap(r, done, TS_ARRAY_LEN(done), 5000);
		ck_assert_int_gt(k, 0);
		for (int i = 0; i < k; i++) {
			ck_assert_uint_lt(done[i].tag, n);
			struct expect *e = &ex[done[i].tag];
			ck_assert(!e->seen);
			e->seen = true;
			ck_assert_msg(done[i].status == e->status, "item %llu: status %d, want %d",
				      (unsigned long long)done[i].tag, done[i].status, e->status);
			if (e->status == 0) {
				ck_assert_ptr_nonnull(done[i].data);
				ck_assert_msg(done[i].len == e->len, "item %llu: %zu bytes, want %zu",
					      (unsigned long long)done[i].tag, done[i].len, e->len);
				for (size_t j = 0; j < e->len; j++) {
					uint8_t w = e->want ? e->want[j] : pat(e->file, j);
					if (done[i].data[j] != w)
						ck_abort_msg("item %llu byte %zu: %u, want %u",
							     (unsigned long long)done[i].tag, j,
							     done[i].data[j], w);
				}
			} else {
				ck_assert_ptr_null(done[i].data);
			}
			ts_reader_release(r, done[i].data);
			got++;
		}
	}
	ck_assert_uint_eq(ts_reader_in_flight(r), 0);
	ck_assert_int_eq(ts_reader_reap(r, done, 8, 0), 0);
}

START_TEST(awkward_sizes)
{
	static const size_t sizes[] = {
		0, 1, 2, 4095, 4096, BUF - 1, BUF, BUF + 1, 2 * BUF, 2 * BUF + 1,
		5 * BUF + 77, 100, 0, BUF, 3,
	};
	enum { N = TS_ARRAY_LEN(sizes) };
	struct ts_item items[N];
	struct expect ex[N];
	char *paths[N];
	for (unsigned i = 0; i < N; i++) {
		paths[i] = make_file(i, sizes[i]);
		items[i] = (struct ts_item){.path = paths[i]};
		ex[i] = (struct expect){.item = &items[i], .file = i, .len = sizes[i]};
	}
	struct ts_reader *r = make_reader(_i, 4, BUF);
	run_all(r, ex, N);
	ts_reader_destroy(r);
	for (unsigned i = 0; i < N; i++)
		free(paths[i]);
}
END_TEST

START_TEST(many_files)
{
	enum { N = 300 };
	static struct ts_item items[N];
	static struct expect ex[N];
	static char *paths[N];
	unsigned seed = 12345;
	for (unsigned i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t size = (seed >> 8) % (3 * 16384);
		paths[i] = make_file(i, size);
		items[i] = (struct ts_item){.path = paths[i]};
		ex[i] = (struct expect){.item = &items[i], .file = i, .len = size};
	}
	struct ts_reader *r = make_reader(_i, 16, 16384);
	run_all(r, ex, N);
	ts_reader_destroy(r);
	for (unsigned i = 0; i < N; i++)
		free(paths[i]);
}
END_TEST

START_TEST(missing_file)
{
	/* Files listed, then one deleted and one never made: -ENOENT in
	 * the completion, neighbours unaffected. */
	char *a = make_file(0, 1000), *b = make_file(1, 5000), *c = make_file(2, 70000);
	ck_assert_int_eq(unlink(b), 0);
	char nodir[300];
	snprintf(nodir, sizeof(nodir), "%s/no/such/dir.jpg", tmp);
	struct ts_item items[] = {{.path = a}, {.path = b}, {.path = c}, {.path = nodir},
				  {.path = tmp}};
	struct expect ex[] = {
		{.item = &items[0], .file = 0, .len = 1000},
		{.item = &items[1], .status = -ENOENT},
		{.item = &items[2], .file = 2, .len = 70000},
		{.item = &items[3], .status = -ENOENT},
		{.item = &items[4], .status = -EISDIR},
	};
	struct ts_reader *r = make_reader(_i, 2, BUF);
	run_all(r, ex, TS_ARRAY_LEN(ex));
	ts_reader_destroy(r);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(tar_ranges)
{
	/* A shard made by Python's tarfile, listed by ts_source_open, each
	 * member read through the reader and compared with the bytes the
	 * maker wrote (also as a side file key.bin). */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && /usr/bin/python3 -c \"\n"
		 "import tarfile, io\n"
		 "for s in range(2):\n"
		 "  with tarfile.open('s%%d.tar' %% s, 'w') as t:\n"
		 "    for k in range(40):\n"
		 "      n = [0, 1, 511, 512, 513, 70000, 200000][k %% 7] + s\n"
		 "      d = bytes(((j * 31 + k * 7 + s) %% 251) for j in range(n))\n"
		 "      open('%%d_%%d.bin' %% (s, k), 'wb').write(d)\n"
		 "      for name, data in (('%%02d.cls' %% k, str(k).encode()), ('%%02d.jpg' %% k, d)):\n"
		 "        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))\n"
		 "\"", tmp);
	ck_assert_int_eq(system(cmd), 0);
	struct ts_source src = {.kind = TS_SRC_TAR, .path = "s{0,1}.tar", .base_dir = tmp};
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_msg(ts_source_open(&src, &ix, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(ix->n, 80);
	struct expect ex[80];
	uint8_t *want[80];
	for (size_t i = 0; i < 80; i++) {
		char p[300];
		snprintf(p, sizeof(p), "%s/%zu_%zu.bin", tmp, i / 40, i % 40);
		struct ts_item side = {.path = p};
		size_t len;
		ck_assert_int_eq(ts_source_read(&side, UINT64_MAX, &want[i], &len, NULL), 0);
		ck_assert_int_eq(ix->items[i].label, (int)(i % 40));
		ck_assert_uint_eq(ix->items[i].size, len);
		ex[i] = (struct expect){.item = &ix->items[i], .want = want[i], .len = len};
	}
	struct ts_reader *r = make_reader(_i, 8, BUF);
	run_all(r, ex, 80);
	ts_reader_destroy(r);

	/* A range past the end of the shard (truncated after listing). */
	struct ts_item bad = ix->items[5];
	bad.offset = 1u << 30;
	struct expect ebad = {.item = &bad, .status = -EIO};
	r = make_reader(_i, 8, BUF);
	run_all(r, &ebad, 1);
	ts_reader_destroy(r);

	for (size_t i = 0; i < 80; i++)
		free(want[i]);
	ts_source_index_destroy(ix);
}
END_TEST

START_TEST(many_shards)
{
	/* 24 shards (more than the reader keeps open) read interleaved, so
	 * cached shards are evicted and reopened while others are in use. */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && /usr/bin/python3 -c \"\n"
		 "import tarfile, io\n"
		 "for s in range(24):\n"
		 "  with tarfile.open('m%%02d.tar' %% s, 'w') as t:\n"
		 "    for k in range(3):\n"
		 "      d = bytes([s, k]) * (1000 + 300 * k)\n"
		 "      for name, data in (('%%d.cls' %% k, str(s).encode()), ('%%d.png' %% k, d)):\n"
		 "        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))\n"
		 "\"", tmp);
	ck_assert_int_eq(system(cmd), 0);
	struct ts_source src = {.kind = TS_SRC_TAR, .path = "m{00..23}.tar", .base_dir = tmp};
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	ck_assert_msg(ts_source_open(&src, &ix, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(ix->n, 72);
	static struct expect ex[72];
	static uint8_t want[72][2 * 1600];
	for (size_t j = 0; j < 72; j++) {
		size_t s = j % 24, k = j / 24; /* round-robin over shards */
		const struct ts_item *it = &ix->items[s * 3 + k];
		ck_assert_int_eq(it->label, (int)s);
		size_t len = 2 * (1000 + 300 * k);
		for (size_t b = 0; b < len; b += 2) {
			want[j][b] = (uint8_t)s;
			want[j][b + 1] = (uint8_t)k;
		}
		ex[j] = (struct expect){.item = it, .want = want[j], .len = len};
	}
	struct ts_reader *r = make_reader(_i, 32, 4096);
	run_all(r, ex, 72);
	/* Again, now that every slot holds some shard. */
	for (size_t j = 0; j < 72; j++)
		ex[j].seen = false;
	run_all(r, ex, 72);
	ts_reader_destroy(r);
	ts_source_index_destroy(ix);
}
END_TEST

START_TEST(backpressure)
{
	/* queue_depth 2: a third submit is -EBUSY; buffers held by the
	 * caller count too (2 x depth of them). */
	char *p = make_file(0, 10);
	struct ts_item it = {.path = p};
	struct ts_reader *r = make_reader(_i, 2, 4096);
	ck_assert_int_eq(ts_reader_submit(r, &it, 1), 0);
	ck_assert_int_eq(ts_reader_submit(r, &it, 2), 0);
	ck_assert_int_eq(ts_reader_submit(r, &it, 3), -EBUSY);
	ck_assert_uint_eq(ts_reader_in_flight(r), 2);
	struct ts_read_done d[4];
	uint8_t *held[4];
	int n = 0;
	while (n < 2) {
		int k = ts_reader_reap(r, d + n, 4 - (unsigned)n, 1000);
		ck_assert_int_gt(k, 0);
		n += k;
	}
	held[0] = d[0].data;
	held[1] = d[1].data;
	ck_assert_int_eq(ts_reader_submit(r, &it, 4), 0);
	ck_assert_int_eq(ts_reader_submit(r, &it, 5), 0);
	n = 0;
	while (n < 2) {
		int k = ts_reader_reap(r, d + n, 4 - (unsigned)n, 1000);
		ck_assert_int_gt(k, 0);
		n += k;
	}
	held[2] = d[0].data;
	held[3] = d[1].data;
	/* Four buffers held: no buffer left although no read is in flight. */
	ck_assert_uint_eq(ts_reader_in_flight(r), 0);
	ck_assert_int_eq(ts_reader_submit(r, &it, 6), -EBUSY);
	ts_reader_release(r, held[0]);
	ck_assert_int_eq(ts_reader_submit(r, &it, 6), 0);
	n = ts_reader_reap(r, d, 4, 1000);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(d[0].tag, 6);
	ck_assert_uint_eq(d[0].len, 10);
	ck_assert_int_eq(memcmp(d[0].data, held[1], 10), 0);
	ts_reader_release(r, d[0].data);
	for (int i = 1; i < 4; i++)
		ts_reader_release(r, held[i]);
	/* Nothing in flight: reap returns 0 at once, even with a timeout. */
	ck_assert_int_eq(ts_reader_reap(r, d, 4, -1), 0);
	struct ts_item none = {0};
	ck_assert_int_eq(ts_reader_submit(r, &none, 0), TS_E_ARG);
	ts_reader_destroy(r);
	free(p);
}
END_TEST

struct rel_arg {
	struct ts_reader *r;
	uint8_t *data[64];
	int n;
};

static void *release_thread(void *p)
{
	struct rel_arg *a = p;
	for (int i = 0; i < a->n; i++)
		ts_reader_release(a->r, a->data[i]);
	return NULL;
}

START_TEST(release_other_thread)
{
	char *small = make_file(0, 100), *big = make_file(1, 3 * 4096 + 5);
	struct ts_item its[2] = {{.path = small}, {.path = big}};
	struct ts_reader *r = make_reader(_i, 4, 4096);
	for (int round = 0; round < 20; round++) {
		struct rel_arg a = {.r = r};
		for (int k = 0; k < 8; k++) {
			ck_assert_int_eq(ts_reader_submit(r, &its[k % 2], (uint64_t)k), 0);
			struct ts_read_done d;
			int got;
			while ((got = ts_reader_reap(r, &d, 1, 1000)) == 0)
				;
			ck_assert_int_eq(got, 1);
			ck_assert_int_eq(d.status, 0);
			ck_assert_uint_eq(d.len, k % 2 ? 3 * 4096 + 5 : 100);
			a.data[a.n++] = d.data;
		}
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, release_thread, &a), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
	}
	ts_reader_destroy(r);
	free(small);
	free(big);
}
END_TEST

START_TEST(destroy_in_flight)
{
	/* Destroying with reads queued or in flight waits for them and
	 * leaks nothing (ASan build). */
	char *p = make_file(0, 300000);
	struct ts_item it = {.path = p};
	struct ts_reader *r = make_reader(_i, 8, 4096);
	for (int k = 0; k < 8; k++)
		ck_assert_int_eq(ts_reader_submit(r, &it, (uint64_t)k), 0);
	struct ts_read_done d;
	int n = ts_reader_reap(r, &d, 1, -1);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(d.len, 300000);
	ts_reader_release(r, d.data);
	ts_reader_destroy(r);
	ts_reader_destroy(NULL);
	free(p);
}
END_TEST

START_TEST(bad_args)
{
	struct ts_reader *r = (struct ts_reader *)0x1;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_reader_create(0, 0, &r, &err), TS_E_ARG);
	ck_assert_int_eq(ts_reader_create(5000, 0, &r, &err), TS_E_ARG);
	ck_assert_ptr_eq(r, (struct ts_reader *)0x1);
	ck_assert_ptr_nonnull(strstr(err.msg, "5000"));
}
END_TEST

/* The first loop index to run: 0 (io_uring, then the fallback), or 1
 * where this kernel or sandbox has no io_uring (main's probe). */
static int first_mode;

static Suite *reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, awkward_sizes, first_mode, 2);
	tcase_add_loop_test(tc, many_files, first_mode, 2);
	tcase_add_loop_test(tc, missing_file, first_mode, 2);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("tar");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, tar_ranges, first_mode, 2);
	tcase_add_loop_test(tc, many_shards, first_mode, 2);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("buffers");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, backpressure, first_mode, 2);
	tcase_add_loop_test(tc, release_other_thread, first_mode, 2);
	tcase_add_loop_test(tc, destroy_in_flight, first_mode, 2);
	tcase_add_test(tc, bad_args);
	suite_add_tcase(s, tc);
	return s;
}

/* Without io_uring the fallback half runs and must pass, and the test then
 * exits 77 (skip) with the reason: the io_uring half did not run, which a
 * pass would hide. */
int main(void)
{
	struct ts_reader *probe = NULL;
	struct ts_error err = {0};
	char why[256] = "";
	unsetenv("TSRUN_NO_URING");
	if (ts_reader_create(8, 4096, &probe, &err) != 0) {
		fprintf(stderr, "test-reader: cannot create a reader: %s\n", err.msg);
		return EXIT_FAILURE;
	}
	if (!ts_reader_uses_uring(probe)) {
		snprintf(why, sizeof(why), "%s", ts_reader_fallback_reason(probe));
		first_mode = 1;
	}
	ts_reader_destroy(probe);
	SRunner *sr = srunner_create(reader_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return EXIT_FAILURE;
	if (first_mode) {
		printf("test-reader: skipped the io_uring half (the fallback half passed): %s\n", why);
		return 77;
	}
	return EXIT_SUCCESS;
}
