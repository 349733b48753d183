/* test-ring.c - the shared sample ring: layout, double map, batches,
 * epoch boundaries, end of stream, space accounting, joins, threads. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "memory.h"
#include "plan.h"
#include "ring.h"

static struct ts_ring *make_ring(uint64_t cap, uint64_t spe, int h)
{
	struct ts_ring_params p = { .height = h, .width = 4, .channels = 1,
				    .dtype = TS_DTYPE_U8, .capacity = cap,
				    .samples_per_epoch = spe };
	struct ts_ring *r = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &r, &err), 0);
	return r;
}

/* Write samples [from, to): byte = seq, label = seq, epoch = seq / spe. */
static void produce(struct ts_ring *r, uint64_t from, uint64_t to,
		    uint64_t spe)
{
	struct ts_ring_info in;
	ts_ring_get_info(r, &in);
	for (uint64_t s = from; s < to; s++) {
		ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
		memset(ts_ring_slot(r, s), (int)(s & 0xff), in.sample_bytes);
		ts_ring_set_meta(r, s, (int32_t)s, (uint32_t)(s / spe), s % spe);
	}
	ts_ring_publish(r, to);
}

START_TEST(test_capacity_rounding)
{
	static const struct { int h; uint64_t cap; uint64_t want; } t[] = {
		{ 1024, 3, 3 },       /* 4096-byte samples: any count */
		{ 16, 10, 64 },       /* 64-byte samples: 64 per page */
		{ 3, 10, 1024 },      /* 12-byte samples: gcd 4 -> 1024 */
		{ 1024, 1, 2 },       /* at least 2 */
	};
	long page = sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ts_ring *r = make_ring(t[i].cap, 0, t[i].h);
		struct ts_ring_info in;
		ts_ring_get_info(r, &in);
		ck_assert_uint_eq(in.capacity, t[i].want);
		ck_assert_uint_eq(in.capacity * in.sample_stride % (uint64_t)page, 0);
		ts_ring_destroy(r);
	}
}
END_TEST

/* The plan's memory figure is the ring's real size: capacity, slot
 * stride and file bytes agree for crops of 224, 227, 299 and 331, 1 to 4
 * channels, uint8 and float32, small and large rings. (A 299x299x3 uint8
 * sample is 268,203 bytes: unpadded, its ring is a multiple of 4,096
 * samples, 1 GiB.) */
START_TEST(test_plan_matches_ring)
{
	static const int sizes[] = {224, 227, 299, 331};
	static const int64_t asks[] = {8, 64, 1000};
	for (size_t si = 0; si < 4; si++)
		for (int ch = 1; ch <= 4; ch++)
			for (int f32 = 0; f32 <= 1; f32++)
				for (size_t ai = 0; ai < 3; ai++) {
		int s = sizes[si];
		struct ts_plan plan = {0};
		plan.sample_bytes = (size_t)s * (size_t)s * (size_t)ch * (f32 ? 4 : 1);
		struct ts_ring_params p = {
			.height = s, .width = s, .channels = ch,
			.dtype = f32 ? TS_DTYPE_F32 : TS_DTYPE_U8,
			.capacity = (uint64_t)asks[ai],
		};
		/* what the plan says is enough for the rings too big to
		 * make here (up to 7 GiB): the small ones check the formula */
		if (ts_plan_ring_bytes(&plan, asks[ai]) > (256u << 20))
			continue;
		struct ts_ring *r = NULL;
		struct ts_error err;
		ck_assert_int_eq(ts_ring_create(&p, &r, &err), 0);
		struct ts_ring_info in;
		ts_ring_get_info(r, &in);
		struct stat st;
		ck_assert_int_eq(fstat(ts_ring_fd(r), &st), 0);
		ck_assert_msg((int64_t)in.capacity == ts_plan_ring_capacity(&plan, asks[ai]),
			      "%dx%dx%d %s ring of %lld: capacity %llu, plan says %lld", s, s,
			      ch, f32 ? "float32" : "uint8", (long long)asks[ai],
			      (unsigned long long)in.capacity,
			      (long long)ts_plan_ring_capacity(&plan, asks[ai]));
		ck_assert_uint_eq(in.sample_stride, ts_plan_ring_stride(&plan, asks[ai]));
		ck_assert_uint_ge(in.sample_stride, in.sample_bytes);
		ck_assert_msg((uint64_t)st.st_size == ts_plan_ring_bytes(&plan, asks[ai]),
			      "%dx%dx%d %s ring of %lld: %lld bytes, plan says %llu", s, s, ch,
			      f32 ? "float32" : "uint8", (long long)asks[ai],
			      (long long)st.st_size,
			      (unsigned long long)ts_plan_ring_bytes(&plan, asks[ai]));
		ts_ring_destroy(r);
	}
	/* the case of the report, by the formula the ring was just checked
	 * against: 299x299x3 uint8 asked for 64 or 512 was 4,096 samples (1
	 * GiB); its slots are now padded to 268,224 bytes and it holds what
	 * it asks */
	struct ts_plan big = {.sample_bytes = 268203};
	ck_assert_int_eq(ts_plan_ring_capacity(&big, 64), 64);
	ck_assert_int_eq(ts_plan_ring_capacity(&big, 512), 512);
	ck_assert_uint_eq(ts_plan_ring_stride(&big, 512), 268224);
	ck_assert_uint_lt(ts_plan_ring_bytes(&big, 512), 512ull * 268224 + (1u << 20));
	/* sizes that round little stay unpadded: 224x224x3 uint8 (a unit of
	 * 4), and a 12-byte sample whose 1,024-sample unit costs 12 KiB */
	struct ts_plan u8 = {.sample_bytes = 150528}, tiny = {.sample_bytes = 12};
	ck_assert_uint_eq(ts_plan_ring_stride(&u8, 101), 150528);
	ck_assert_int_eq(ts_plan_ring_capacity(&u8, 101), 104);
	ck_assert_uint_eq(ts_plan_ring_stride(&tiny, 10), 12);
	ck_assert_int_eq(ts_plan_ring_capacity(&tiny, 10), 1024);
}
END_TEST

/* What a consumer may try on the descriptors it is given: the ring's
 * read-only memfd and its own control page. Returns a bit per attack
 * that worked (0: none). */
static int attack(int fd, bool ro)
{
	struct stat st;
	int worked = 0;
	if (fstat(fd, &st) != 0)
		return 1 << 15;
	worked |= (ftruncate(fd, 0) == 0) << 0;
	worked |= (ftruncate(fd, st.st_size * 2) == 0) << 1;
	worked |= (fallocate(fd, 0, 0, st.st_size * 2) == 0) << 2;
	worked |= (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) == 0) << 3;
	worked |= (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0) << 4;
	worked |= (pwrite(fd, "x", 1, st.st_size) == 1) << 5;
	if (ro) {
		void *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		worked |= (w != MAP_FAILED) << 6;
		void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED)
			worked |= (mprotect(m, 4096, PROT_READ | PROT_WRITE) == 0) << 7;
		worked |= (pwrite(fd, "x", 1, 0) == 1) << 8;
	}
	return worked;
}

/* Seals on every descriptor a consumer gets: no ftruncate, fallocate,
 * F_ADD_SEALS, write past the end (or at all, for the ring), writable
 * map or mprotect works, by this user or, when the test runs as root,
 * by another (nobody): the producer's mappings stay whole (a shrunk
 * control page was a SIGBUS in the producer). */
START_TEST(test_consumer_seals)
{
	struct ts_ring *r = make_ring(64, 0, 16);
	struct ts_ring_join_req req = {.batch = 4, .join = TS_JOIN_NOW, .pid = getpid()};
	struct ts_ring_consumer *c = NULL;
	struct ts_ring_join_pos pos;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_attach(r, &req, &c, &pos, &err), 0);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ts_ring_fd(r));
	int ro = open(proc, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ro, 0);
	int ctl = ts_ring_consumer_ctl_fd(c);
	struct stat ring0, ctl0;
	ck_assert_int_eq(fstat(ro, &ring0), 0);
	ck_assert_int_eq(fstat(ctl, &ctl0), 0);
	for (int other = 0; other <= 1; other++) {
		if (other && geteuid() != 0)
			break;
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			if (other && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
				      setresuid(65534, 65534, 65534) != 0))
				_exit(100);
			int a = attack(ro, true), b = attack(ctl, false);
			_exit(a ? 1 + (a & 0x3f) : b ? 64 + (b & 0x3f) : 0);
		}
		int st = 0;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "%s: an attack worked (status %d)", other ? "as nobody" : "as us",
			      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	struct stat ring1, ctl1;
	ck_assert_int_eq(fstat(ro, &ring1), 0);
	ck_assert_int_eq(fstat(ctl, &ctl1), 0);
	ck_assert_int_eq(ring1.st_size, ring0.st_size);
	ck_assert_int_eq(ctl1.st_size, ctl0.st_size);
	/* the producer still reads the control page and writes its ring */
	produce(r, 0, 8, 64);
	struct ts_ring_stat *rs = calloc(1, sizeof(*rs));
	ts_ring_stat(r, rs);
	ck_assert_uint_eq(rs->n_consumers, 1);
	free(rs);
	close(ro);
	ts_ring_detach(r, c);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_bad_params)
{
	struct ts_ring_params p = { .height = 0, .width = 4, .channels = 1,
				    .capacity = 8 };
	struct ts_ring *r = (struct ts_ring *)0x1;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &r, &err), TS_E_ARG);
	ck_assert_ptr_eq(r, (struct ts_ring *)0x1);  /* untouched */
	ts_ring_destroy(NULL);
	ts_ring_local_destroy(NULL);
}
END_TEST

START_TEST(test_wrap_contiguous)
{
	/* 64 samples of 64 bytes; a batch of 24 starting at 50 wraps. */
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_local_create(r, 24, TS_JOIN_NOW, false, &l, NULL), 0);
	uint64_t seq = 0;
	for (int round = 0; round < 8; round++) {
		produce(r, seq, seq + 24, 1000);
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
		ck_assert_uint_eq(b.seq, seq);
		ck_assert_uint_eq(b.n, 24);
		const uint8_t *d = b.data;
		for (size_t i = 0; i < 24; i++) {
			ck_assert_uint_eq(d[i * 64], (seq + i) & 0xff);
			ck_assert_uint_eq(d[i * 64 + 63], (seq + i) & 0xff);
			ck_assert_int_eq(b.labels[i], (int32_t)(seq + i));
		}
		seq += 24;
	}
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

/* Whether the page at p is mapped in this process (/proc/self/pagemap
 * bit 63, readable without privileges), or -1 when pagemap cannot be read. */
static int page_present(const void *p)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	uint64_t e = 0;
	off_t off = (off_t)((uintptr_t)p / (uintptr_t)page * sizeof(e));
	ssize_t n = pread(fd, &e, sizeof(e), off);
	close(fd);
	return n == (ssize_t)sizeof(e) ? (int)(e >> 63) : -1;
}

/* Whether madvise(MADV_POPULATE_WRITE) maps pages here: qemu-user (the
 * aarch64 suites) answers it with success and does nothing, as it does
 * any madvise, so presence cannot be asked of the ring there. */
static bool populate_maps(void)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	bool ok = madvise(p, (size_t)page, MADV_POPULATE_WRITE) == 0 &&
		  page_present(p) == 1;
	munmap(p, (size_t)page);
	return ok;
}

/* The first lap's pages are faulted in by the writers, slot by slot as
 * ts_ring_wait_writable hands them out, not all at once at create (a
 * kernel without MADV_POPULATE_WRITE maps them all at create). */
START_TEST(test_prefault_first_lap)
{
	/* 8 samples of 16 KiB: 4 pages each (of 4 KiB pages). */
	struct ts_ring *r = make_ring(8, 1000, 4096);
	long page = sysconf(_SC_PAGESIZE);
	struct ts_ring_info in;
	ts_ring_get_info(r, &in);
	const uint8_t *last = (const uint8_t *)ts_ring_slot(r, 7) + in.sample_bytes - 1;
	int early = page_present(last);
	if (early < 0 || (!early && !populate_maps())) {
		/* No pagemap, or a populate that maps nothing: the slots
		 * still read as zeros and take writes. */
		produce(r, 0, 8, 1000);
		ck_assert_uint_eq(*last, 7);
		ts_ring_destroy(r);
		return;
	}
	ck_assert_int_eq(ts_ring_wait_writable(r, 2, 1000), 0);
	for (uint64_t s = 0; s <= 2; s++)
		for (uint64_t o = 0; o < in.sample_bytes; o += (uint64_t)page)
			ck_assert_int_eq(page_present((uint8_t *)ts_ring_slot(r, s) + o), 1);
	if (!early) {
		/* Not yet handed out: not yet mapped. */
		ck_assert_int_eq(page_present(ts_ring_slot(r, 4)), 0);
		ck_assert_int_eq(page_present(last), 0);
	}
	ck_assert_int_eq(ts_ring_wait_writable(r, 7, 1000), 0);
	ck_assert_int_eq(page_present(ts_ring_slot(r, 4)), 1);
	ck_assert_int_eq(page_present(last), 1);
	/* The pages read as zeros and take writes. */
	ck_assert_uint_eq(*last, 0);
	produce(r, 0, 8, 1000);
	ck_assert_uint_eq(*last, 7);
	ts_ring_destroy(r);
}
END_TEST

/* Batches of 64 over epochs of 100: 64, 36, 64, 36 (or 64, 64 dropped). */
START_TEST(test_epoch_boundaries)
{
	static const struct {
		bool drop;
		size_t n[5];
		uint32_t e[5];
		uint64_t index[5];
	} t[] = {
		{ false, { 64, 36, 64, 36, 0 }, { 0, 0, 1, 1 }, { 0, 64, 0, 64 } },
		{ true, { 64, 64, 0 }, { 0, 1 }, { 0, 0 } },
	};
	for (size_t k = 0; k < 2; k++) {
		struct ts_ring *r = make_ring(256, 100, 16);
		struct ts_ring_local *l;
		struct ts_ring_batch b;
		ck_assert_int_eq(ts_ring_local_create(r, 64, TS_JOIN_NOW, t[k].drop,
						      &l, NULL), 0);
		produce(r, 0, 200, 100);
		ts_ring_finish(r, 0);
		for (size_t i = 0; t[k].n[i]; i++) {
			ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
			ck_assert_uint_eq(b.n, t[k].n[i]);
			ck_assert_uint_eq(b.epoch, t[k].e[i]);
			ck_assert_uint_eq(b.index, t[k].index[i]);
		}
		struct ts_error err;
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), TS_E_EOS);
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), TS_E_EOS);
		ts_ring_local_destroy(l);
		ts_ring_destroy(r);
	}
}
END_TEST

START_TEST(test_producer_error)
{
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &l, NULL), 0);
	produce(r, 0, 8, 1000);
	ts_ring_finish(r, TS_E_DECODE);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), 0);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), TS_E_PRODUCER);
	ck_assert_int_eq(ts_ring_wait_writable(r, 1000, 10), -ECANCELED);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

/* The producer's reason reaches the consumer's error; without one, the
 * code's name. */
START_TEST(test_producer_reason)
{
	for (int k = 0; k < 2; k++) {
		struct ts_ring *r = make_ring(64, 1000, 16);
		struct ts_ring_local *l;
		struct ts_ring_batch b;
		struct ts_error err;
		ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &l, NULL), 0);
		ts_ring_fail(r, TS_E_DECODE, k ? NULL : "data/a.jpg: truncated JPEG data");
		ts_ring_fail(r, TS_E_STATE, "second: ignored");
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, &err), TS_E_PRODUCER);
		ck_assert_str_eq(err.msg, k ? "the producer failed: decode error"
					    : "the producer failed: data/a.jpg: truncated JPEG data");
		ts_ring_local_destroy(l);
		ts_ring_destroy(r);
	}
}
END_TEST

START_TEST(test_timeout)
{
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &l, NULL), 0);
	produce(r, 0, 4, 1000);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 50, &err), -ETIMEDOUT);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

/* A consumer that does not release holds the producer; release, detach
 * and finish each let it go. */
START_TEST(test_space_accounting)
{
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_local_create(r, 32, TS_JOIN_NOW, false, &l, NULL), 0);
	produce(r, 0, 64, 1000);
	ck_assert_int_eq(ts_ring_wait_writable(r, 64, 30), -ETIMEDOUT);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
	ck_assert_int_eq(ts_ring_wait_writable(r, 64, 30), -ETIMEDOUT);
	ts_ring_local_release(l, &b);
	ck_assert_int_eq(ts_ring_wait_writable(r, 64 + 31, 30), 0);
	ck_assert_int_eq(ts_ring_wait_writable(r, 64 + 32, 30), -ETIMEDOUT);

	struct ts_ring_stat st;
	ts_ring_stat(r, &st);
	ck_assert_uint_eq(st.n_consumers, 1);
	ck_assert_uint_eq(st.consumers[0].release, 32);
	ck_assert_uint_eq(st.consumers[0].lag, 32);
	ck_assert_uint_eq(st.consumers[0].batch, 32);

	ts_ring_local_destroy(l);
	/* Now only the head bounds the writer: head 64 + capacity 64. */
	ck_assert_int_eq(ts_ring_wait_writable(r, 127, 30), 0);
	ck_assert_int_eq(ts_ring_wait_writable(r, 128, 30), -ETIMEDOUT);
	ts_ring_finish(r, 0);
	ck_assert_int_eq(ts_ring_wait_writable(r, 128, 30), -ECANCELED);
	ts_ring_destroy(r);
}
END_TEST

/* Who waits: a reader's time inside next() and what it was handed reach
 * the producer's snapshot through the control page; the writers' blocked
 * time is split into a free slot (a consumer holds the ring), idle (no
 * consumer though one is awaited) and the ring's own head. */
START_TEST(test_wait_figures)
{
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	struct ts_error err;
	struct ts_ring_stat st;
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &l, NULL), 0);
	ts_ring_stat(r, &st);
	ck_assert(st.consumers[0].has_acct);
	ck_assert_uint_eq(st.consumers[0].handed, 0);
	ck_assert(st.consumers[0].joined >= st.consumers[0].attached - 1e-3);
	/* 100 ms inside next() with nothing published */
	ck_assert_int_eq(ts_ring_local_next(l, &b, 100, &err), -ETIMEDOUT);
	produce(r, 0, 64, 1000);
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
	ts_ring_stat(r, &st);
	const struct ts_ring_consumer_stat *c = &st.consumers[0];
	ck_assert(c->has_acct);
	ck_assert_msg(c->waited >= 0.09 && c->waited <= c->at - c->joined + 1e-3,
		      "waited %.3f s of %.3f", c->waited, c->at - c->joined);
	ck_assert_uint_eq(c->handed, 8);
	ck_assert_uint_eq(c->batches, 1);
	/* The consumer holds the full ring: the writer waits for a free slot. */
	ck_assert_int_eq(ts_ring_wait_writable(r, 64 + 8, 150), -ETIMEDOUT);
	ts_ring_stat(r, &st);
	ck_assert_msg(st.wait_slot_s >= 0.12 && st.wait_idle_s == 0 && st.wait_self_s == 0,
		      "slot %.3f idle %.3f self %.3f", st.wait_slot_s, st.wait_idle_s,
		      st.wait_self_s);
	ck_assert(st.created > 0 && st.created <= c->at);
	ts_ring_local_destroy(l);
	/* Gone: its figures as it left, in the departed list. */
	ts_ring_stat(r, &st);
	ck_assert_uint_eq(st.n_departed, 1);
	ck_assert(st.departed[0].has_acct);
	ck_assert_uint_eq(st.departed[0].handed, 8);
	/* Nobody bounds it but the ring's own head (head 64 + 64). */
	ck_assert_int_eq(ts_ring_wait_writable(r, 128, 100), -ETIMEDOUT);
	ts_ring_stat(r, &st);
	ck_assert_msg(st.wait_self_s >= 0.08 && st.wait_idle_s == 0, "self %.3f idle %.3f",
		      st.wait_self_s, st.wait_idle_s);
	ts_ring_destroy(r);

	/* Idle: one consumer awaited, none attached. */
	struct ts_ring_params p = { .height = 4, .width = 4, .channels = 1,
				    .dtype = TS_DTYPE_U8, .capacity = 64, .min_consumers = 1 };
	ck_assert_int_eq(ts_ring_create(&p, &r, &err), 0);
	ck_assert_int_eq(ts_ring_wait_writable(r, 0, 100), -ETIMEDOUT);
	ts_ring_stat(r, &st);
	ck_assert_msg(st.wait_idle_s >= 0.08 && st.wait_slot_s == 0, "idle %.3f slot %.3f",
		      st.wait_idle_s, st.wait_slot_s);

	/* The page is the consumer's: a seqlock it leaves odd reads as no
	 * figures (and does not block the snapshot); none written, none. */
	struct ts_ring_consumer *rc;
	struct ts_ring_join_req req = { .batch = 4, .join = TS_JOIN_NOW, .pid = 7 };
	ck_assert_int_eq(ts_ring_attach(r, &req, &rc, NULL, &err), 0);
	struct ts_ring_ctl *ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
				       ts_ring_consumer_ctl_fd(rc), 0);
	ck_assert_ptr_ne(ctl, MAP_FAILED);
	ts_ring_stat(r, &st);
	ck_assert(!st.consumers[0].has_acct);
	ctl->joined_ns = 1000000000ull;
	ctl->wait_ns = 500000000ull;
	ctl->handed = 12;
	ctl->stat_seq = 2;
	ts_ring_stat(r, &st);
	ck_assert(st.consumers[0].has_acct);
	ck_assert(st.consumers[0].waited > 0.49 && st.consumers[0].waited < 0.51);
	ck_assert_uint_eq(st.consumers[0].handed, 12);
	ctl->stat_seq = 3;
	ts_ring_stat(r, &st);
	ck_assert(!st.consumers[0].has_acct);
	munmap(ctl, 4096);
	ts_ring_detach(r, rc);
	ts_ring_destroy(r);
}
END_TEST

/* A consumer that holds a full ring while another waits is timed as
 * holding (ts_ring_consumer_held), not while it reads, nor alone; once
 * marked stalled its reader returns TS_E_DETACHED naming stall_timeout,
 * and detaching it frees the ring for the others. */
START_TEST(test_stall)
{
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *a;
	struct ts_ring_batch b;
	struct ts_error err = {0};
	struct ts_ring_join_req req = { .batch = 32, .join = TS_JOIN_NOW, .pid = 1 };
	struct ts_ring_consumer *c;
	struct ts_ring_join_pos pos;
	ck_assert_int_eq(ts_ring_attach(r, &req, &c, &pos, &err), 0);
	struct ts_ring_reader_opts o = { .batch = 32, .start = pos.start };
	struct ts_ring_reader *rd;
	ck_assert_int_eq(ts_ring_reader_open(ts_ring_fd(r), ts_ring_consumer_ctl_fd(c), &o,
					     &rd, &err), 0);
	produce(r, 0, 64, 1000);
	/* The writer waits for seq 64, which c holds back. */
	ck_assert_int_eq(ts_ring_wait_writable(r, 64, 10), -ETIMEDOUT);
	/* Alone, it holds the full ring but nobody waits. */
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);
	usleep(60 * 1000);
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);
	/* Another consumer read everything and waits: the clock runs. */
	ck_assert_int_eq(ts_ring_local_create(r, 32, TS_JOIN_NEXT_EPOCH, false, &a, &err), 0);
	ck_assert_int_eq(ts_ring_local_next(a, &b, 1000, NULL), 0);
	ck_assert_int_eq(ts_ring_local_next(a, &b, 1000, NULL), 0);
	ck_assert_int_eq(ts_ring_local_next(a, &b, 20, NULL), -ETIMEDOUT);
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);  /* starts now */
	usleep(120 * 1000);
	double held = ts_ring_consumer_held(r, c);
	ck_assert_msg(held >= 0.1 && held < 5, "held %g s", held);
	/* Reading a batch restarts it. */
	ck_assert_int_eq(ts_ring_reader_next(rd, &b, 1000, NULL, NULL, &err), 0);
	ck_assert_int_eq(ts_ring_reader_detached(rd, &err), 0);
	ts_ring_reader_release(rd, &b);
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);
	produce(r, 64, 96, 1000);
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);  /* nobody wants more yet */
	ck_assert_int_eq(ts_ring_wait_writable(r, 96, 10), -ETIMEDOUT);
	/* Full again, but the other has a batch to read: nobody waits. */
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);
	usleep(60 * 1000);
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);
	ck_assert_int_eq(ts_ring_local_next(a, &b, 1000, NULL), 0);
	ck_assert_int_eq(ts_ring_local_next(a, &b, 20, NULL), -ETIMEDOUT);
	ck_assert(ts_ring_consumer_held(r, c) == 0.0);
	usleep(120 * 1000);
	ck_assert(ts_ring_consumer_held(r, c) >= 0.1);
	/* Detached: its reader says so, with the figures. */
	ts_ring_consumer_mark_stalled(r, c, 1234, 1000);
	ck_assert_int_eq(ts_ring_reader_next(rd, &b, 1000, NULL, NULL, &err), TS_E_DETACHED);
	ck_assert_ptr_nonnull(strstr(err.msg, "held the ring 1.2 s without releasing a batch "
					      "(serve setting stall_timeout = 1)"));
	ck_assert_int_eq(ts_ring_reader_next(rd, &b, 1000, NULL, NULL, &err), TS_E_DETACHED);
	ts_ring_detach(r, c);
	/* The other goes on: 96 + 32 more may be written now. */
	ck_assert_int_eq(ts_ring_wait_writable(r, 96, 100), 0);
	ts_ring_reader_destroy(rd);
	ts_ring_local_destroy(a);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_refuse_batch)
{
	struct ts_ring *r = make_ring(64, 1000, 16);
	struct ts_ring_local *l = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_local_create(r, 33, TS_JOIN_NOW, false, &l, &err),
			 TS_E_REFUSED);
	ck_assert_ptr_null(l);
	ck_assert_ptr_nonnull(strstr(err.msg, "half the ring"));
	ck_assert_int_eq(ts_ring_local_create(r, 0, TS_JOIN_NOW, false, &l, &err),
			 TS_E_REFUSED);
	ts_ring_destroy(r);
}
END_TEST

/* Joins: "now" starts at the head; "next_epoch" at the current epoch's
 * start when it is still in the ring, else skips to the next epoch. */
START_TEST(test_join_policies)
{
	static const struct {
		uint64_t produced;  /* head before the join */
		enum ts_ring_join join;
		uint64_t start;
		uint32_t first_epoch;
		uint64_t first_index;
	} t[] = {
		{ 0, TS_JOIN_NOW, 0, 0, 0 },
		{ 30, TS_JOIN_NOW, 30, 0, 30 },
		{ 30, TS_JOIN_NEXT_EPOCH, 0, 0, 0 },      /* epoch 0 whole */
		{ 130, TS_JOIN_NEXT_EPOCH, 100, 1, 0 },   /* epoch 1 whole */
		{ 220, TS_JOIN_NEXT_EPOCH, 200, 2, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ts_ring *r = make_ring(256, 100, 16);
		struct ts_ring_local *keep, *l;
		struct ts_ring_batch b;
		/* keep drains everything, so the head can run ahead */
		ck_assert_int_eq(ts_ring_local_create(r, 10, TS_JOIN_NOW, false,
						      &keep, NULL), 0);
		for (uint64_t s = 0; s < t[i].produced; s += 10) {
			produce(r, s, s + 10, 100);
			ck_assert_int_eq(ts_ring_local_next(keep, &b, 1000, NULL), 0);
			ts_ring_local_release(keep, &b);
		}
		ck_assert_int_eq(ts_ring_local_create(r, 10, t[i].join, false,
						      &l, NULL), 0);
		produce(r, t[i].produced, t[i].produced + 40, 100);
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
		ck_assert_uint_eq(b.seq, t[i].start);
		ck_assert_uint_eq(b.epoch, t[i].first_epoch);
		ck_assert_uint_eq(b.index, t[i].first_index);
		ts_ring_local_destroy(l);
		ts_ring_local_destroy(keep);
		ts_ring_destroy(r);
	}
}
END_TEST

/* A joiner whose epoch start was overwritten skips to the next epoch. */
/* A "now" joiner mid-stream starts at its next batch boundary: the first
 * sample whose index is a multiple of its batch size, or an epoch start. */
START_TEST(test_join_now_aligns)
{
	static const struct {
		uint64_t produced;  /* head before the join (epochs of 100) */
		uint32_t batch;
		uint64_t start;     /* seq of its first batch */
		uint32_t epoch;
		uint64_t index;
	} t[] = {
		{ 23, 10, 30, 0, 30 },
		{ 23, 8, 24, 0, 24 },
		{ 95, 10, 100, 1, 0 },    /* the next boundary is the epoch's */
		{ 40, 10, 40, 0, 40 },    /* already on one */
		{ 123, 50, 150, 1, 50 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ts_ring *r = make_ring(256, 100, 16);
		struct ts_ring_local *keep, *l;
		struct ts_ring_batch b;
		ck_assert_int_eq(ts_ring_local_create(r, 1, TS_JOIN_NOW, false, &keep, NULL), 0);
		produce(r, 0, t[i].produced, 100);
		for (uint64_t s = 0; s < t[i].produced; s++) {
			ck_assert_int_eq(ts_ring_local_next(keep, &b, 1000, NULL), 0);
			ts_ring_local_release(keep, &b);
		}
		ck_assert_int_eq(ts_ring_local_create(r, t[i].batch, TS_JOIN_NOW, false, &l, NULL), 0);
		produce(r, t[i].produced, t[i].produced + 100, 100);
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
		ck_assert_uint_eq(b.seq, t[i].start);
		ck_assert_uint_eq(b.epoch, t[i].epoch);
		ck_assert_uint_eq(b.index, t[i].index);
		ck_assert_uint_eq(b.n, t[i].batch);
		ts_ring_local_destroy(l);
		ts_ring_local_destroy(keep);
		ts_ring_destroy(r);
	}
}
END_TEST

START_TEST(test_join_next_epoch_skip)
{
	struct ts_ring *r = make_ring(64, 100, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	produce(r, 0, 40, 100);
	produce(r, 40, 90, 100);   /* slots of 0..25 overwritten */
	ck_assert_int_eq(ts_ring_local_create(r, 16, TS_JOIN_NEXT_EPOCH, false,
					      &l, NULL), 0);
	for (uint64_t s = 90; s < 140; s += 5) {
		/* the joiner skips as the producer goes */
		produce(r, s, s + 5, 100);
	}
	ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
	ck_assert_uint_eq(b.epoch, 1);
	ck_assert_uint_eq(b.index, 0);
	ck_assert_uint_eq(b.seq, 100);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

/* A stream that began mid-epoch (run --start 0:60): a next_epoch joiner
 * there from the start skips the partial epoch and reads whole ones. */
START_TEST(test_join_next_epoch_whole)
{
	struct ts_ring *r = make_ring(256, 100, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_local_create(r, 10, TS_JOIN_NEXT_EPOCH, false,
					      &l, NULL), 0);
	struct ts_ring_info in;
	ts_ring_get_info(r, &in);
	/* seq s is epoch (s + 60) / 100, index (s + 60) % 100 */
	for (uint64_t s = 0; s < 140; s++) {
		ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
		memset(ts_ring_slot(r, s), (int)(s & 0xff), in.sample_bytes);
		ts_ring_set_meta(r, s, (int32_t)s, (uint32_t)((s + 60) / 100), (s + 60) % 100);
	}
	ts_ring_publish(r, 140);
	ts_ring_finish(r, 0);
	size_t n = 0;
	int rc;
	while ((rc = ts_ring_local_next(l, &b, 1000, NULL)) == 0) {
		ck_assert_uint_eq(b.epoch, 1);
		ck_assert_uint_eq(b.index, n);
		ck_assert_uint_eq(b.seq, 40 + n);
		n += b.n;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_uint_eq(n, 100);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

/*
 * A resuming trainer's place (tensorsocket(7), Join policies, Resume):
 * exact at its saved (E, I) while that sample is intact or to come (from
 * the stream's origin when nothing is published), else index I of the
 * first later epoch the ring has not passed; its end the epochs it owes
 * later, at most the stream's 3. Epochs of 100, ring 64; a keeper holds
 * its last batch of 10, and the writers' limit follows it lazily (when a
 * writer reaches it), so what is intact is known: [100, 120) after 120
 * samples, [150, 180) after 180.
 */
START_TEST(test_resume_position)
{
	static const struct {
		uint64_t produced;          /* head before the hello */
		uint32_t origin_epoch;      /* run --start */
		uint64_t origin_index;
		uint32_t epoch;             /* saved position */
		uint64_t index;
		bool has_epochs;
		uint32_t epochs;            /* owed */
		uint64_t start;             /* want */
		uint32_t min_epoch, end_epoch;
	} t[] = {
		{ 0, 0, 0, 0, 40, true, 2, 0, 0, 2 },       /* nothing yet: exact */
		{ 30, 0, 0, 0, 40, true, 2, 30, 0, 2 },     /* to come: exact */
		{ 30, 0, 0, 0, 25, true, 2, 25, 0, 2 },     /* intact: exact */
		{ 120, 0, 0, 0, 40, true, 2, 120, 1, 3 },   /* lost; epoch 1's to come */
		{ 120, 0, 0, 0, 5, true, 2, 105, 1, 3 },    /* lost; epoch 1's intact */
		{ 180, 0, 0, 0, 40, true, 2, 180, 2, 4 },   /* lost in epoch 1 too: 2 */
		{ 180, 0, 0, 1, 40, true, 2, 180, 2, 4 },
		{ 180, 0, 0, 1, 60, true, 2, 160, 1, 3 },   /* intact: exact */
		{ 0, 0, 0, 1, 40, false, 0, 0, 1, 3 },      /* owed: 3 less 1 */
		{ 0, 0, 0, 0, 40, true, 9, 0, 0, 3 },       /* at most the stream's */
		{ 0, 0, 0, 1, 0, true, 0, 0, 1, 1 },        /* owes none */
		{ 0, 1, 64, 1, 32, true, 2, 0, 2, 4 },      /* --start 1:64 is past 1:32 */
		{ 0, 1, 16, 1, 32, true, 2, 0, 1, 3 },      /* --start 1:16 is before */
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ts_ring_params p = { .height = 16, .width = 4, .channels = 1,
					    .dtype = TS_DTYPE_U8, .capacity = 64,
					    .samples_per_epoch = 100, .epochs = 3 };
		struct ts_ring *r = NULL;
		ck_assert_int_eq(ts_ring_create(&p, &r, NULL), 0);
		ts_ring_set_origin(r, t[i].origin_epoch, t[i].origin_index);
		struct ts_ring_local *keep;
		struct ts_ring_batch b;
		ck_assert_int_eq(ts_ring_local_create(r, 10, TS_JOIN_NOW, false, &keep, NULL), 0);
		for (uint64_t s = 0; s < t[i].produced; s += 10) {
			produce(r, s, s + 10, 100);
			ck_assert_int_eq(ts_ring_local_next(keep, &b, 1000, NULL), 0);
		}
		struct ts_ring_join_req req = { .batch = 10, .join = TS_JOIN_NEXT_EPOCH,
						.pid = 1, .resume = true,
						.has_resume_epochs = t[i].has_epochs,
						.resume_epoch = t[i].epoch,
						.resume_index = t[i].index,
						.resume_epochs = t[i].epochs };
		struct ts_ring_consumer *c;
		struct ts_ring_join_pos pos;
		ck_assert_int_eq(ts_ring_attach(r, &req, &c, &pos, NULL), 0);
		ck_assert_msg(pos.start == t[i].start && pos.min_epoch == t[i].min_epoch &&
			      pos.min_index == t[i].index,
			      "case %zu: start %llu epoch %u index %llu", i,
			      (unsigned long long)pos.start, pos.min_epoch,
			      (unsigned long long)pos.min_index);
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		struct ts_ring_ctl *ctl = mmap(NULL, page, PROT_READ, MAP_SHARED,
					       ts_ring_consumer_ctl_fd(c), 0);
		ck_assert_ptr_ne(ctl, MAP_FAILED);
		ck_assert_msg(ctl->end_epoch == t[i].end_epoch && ctl->start == t[i].start,
			      "case %zu: end_epoch %u", i, ctl->end_epoch);
		munmap(ctl, page);
		ts_ring_detach(r, c);
		ts_ring_local_destroy(keep);
		ts_ring_destroy(r);
	}
}
END_TEST

/*
 * min_consumers counts consumers, not particular ones: the first two to
 * attach let the producer start, and a "now" joiner after that starts at
 * the head. faults.py once spawned its two survivors and then its victims
 * without waiting for the survivors' welcome; a victim attached first, a
 * survivor joined at seq 256 and the survivors' stream digests differed.
 * The ring is right to do this; the test has to order the attaches.
 */
START_TEST(test_min_consumers)
{
	struct ts_ring_params p = { .height = 16, .width = 4, .channels = 1,
				    .dtype = TS_DTYPE_U8, .capacity = 64,
				    .samples_per_epoch = 1000,
				    .min_consumers = 2 };
	struct ts_ring *r = NULL;
	struct ts_ring_local *a, *v, *late;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_create(&p, &r, NULL), 0);
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &a, NULL), 0);
	ck_assert_int_eq(ts_ring_wait_writable(r, 0, 30), -ETIMEDOUT);
	/* Any second consumer (here one about to be killed) starts it. */
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &v, NULL), 0);
	produce(r, 0, 64, 1000);
	ts_ring_local_destroy(v);
	ck_assert_int_eq(ts_ring_local_create(r, 8, TS_JOIN_NOW, false, &late,
					      NULL), 0);
	ck_assert_int_eq(ts_ring_local_next(late, &b, 30, NULL), -ETIMEDOUT);
	/* a still holds seq 0: the writer stays behind it. */
	ck_assert_int_eq(ts_ring_wait_writable(r, 64, 30), -ETIMEDOUT);
	ck_assert_int_eq(ts_ring_local_next(a, &b, 1000, NULL), 0);
	ck_assert_uint_eq(b.seq, 0);
	ts_ring_local_release(a, &b);
	produce(r, 64, 72, 1000);
	ck_assert_int_eq(ts_ring_local_next(late, &b, 1000, NULL), 0);
	ck_assert_uint_eq(b.seq, 64);
	ts_ring_local_destroy(late);
	ts_ring_local_destroy(a);
	ts_ring_destroy(r);
}
END_TEST

struct thr {
	struct ts_ring *r;
	struct ts_ring_local *l;
	uint64_t total, seen;
	int bad;
};

static void *producer_thread(void *arg)
{
	struct thr *t = arg;
	for (uint64_t s = 0; s < t->total; s++) {
		if (ts_ring_wait_writable(t->r, s, 5000) < 0) {
			t->bad++;
			break;
		}
		memset(ts_ring_slot(t->r, s), (int)(s & 0xff), 64);
		ts_ring_set_meta(t->r, s, (int32_t)s, (uint32_t)(s / 1000), s % 1000);
		ts_ring_publish(t->r, s + 1);
	}
	ts_ring_finish(t->r, 0);
	return NULL;
}

static void *consumer_thread(void *arg)
{
	struct thr *t = arg;
	struct ts_ring_batch b;
	uint64_t want = 0;
	while (ts_ring_local_next(t->l, &b, 5000, NULL) == 0) {
		const uint8_t *d = b.data;
		if (b.seq != want)
			t->bad++;
		for (size_t i = 0; i < b.n; i++)
			if (d[i * 64 + 17] != ((b.seq + i) & 0xff) ||
			    b.labels[i] != (int32_t)(b.seq + i))
				t->bad++;
		want = b.seq + b.n;
	}
	t->seen = want;
	return NULL;
}

/* A consumer reading batches of 16 in its own thread. */
struct sleeper {
	struct ts_ring_local *l;
	size_t n[16];
	size_t got;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct ts_ring_batch b;
	while (s->got < 16 && ts_ring_local_next(s->l, &b, 5000, NULL) == 0)
		s->n[s->got++] = b.n;
	return NULL;
}

/* Wait until the consumer sleeps on the futex waiting for head `want`. */
static void await_sleep(struct ts_ring *r, uint64_t want)
{
	struct ts_ring_stat st;
	for (int i = 0; i < 5000; i++) {
		ts_ring_stat(r, &st);
		if (st.consumers[0].waiting == want)
			return;
		usleep(1000);
	}
	ck_abort_msg("the consumer never slept waiting for %llu",
		     (unsigned long long)want);
}

static uint64_t wakes(struct ts_ring *r)
{
	struct ts_ring_stat st;
	ts_ring_stat(r, &st);
	return st.consumer_wakes;
}

/* A sleeping consumer is woken once per batch, not once per sample, and
 * at once when an epoch's first sample ends its short batch. */
START_TEST(test_wake_per_batch)
{
	struct ts_ring *r = make_ring(256, 40, 16);
	struct sleeper s = { 0 };
	pthread_t t;
	ck_assert_int_eq(ts_ring_local_create(r, 16, TS_JOIN_NOW, false, &s.l,
					      NULL), 0);
	pthread_create(&t, NULL, sleeper_main, &s);
	/* Epoch 0 is 40 samples: batches of 16, 16 and 8. */
	for (uint64_t seq = 0; seq < 40; seq++) {
		uint64_t want = (seq / 16 + 1) * 16;
		await_sleep(r, want);
		uint64_t w = wakes(r);
		produce(r, seq, seq + 1, 40);
		/* Woken when its batch is whole or an epoch starts (here
		 * the batch's own first sample: one spare wake per epoch),
		 * never otherwise. */
		ck_assert_uint_eq(wakes(r), w + (seq + 1 == want || seq == 0));
	}
	/* The consumer waits for 48; epoch 1's first sample wakes it to take
	 * the 8 left of epoch 0. */
	await_sleep(r, 48);
	uint64_t w = wakes(r);
	produce(r, 40, 41, 40);
	ck_assert_uint_eq(wakes(r), w + 1);
	ts_ring_finish(r, 0);
	pthread_join(t, NULL);
	ck_assert_uint_eq(s.got, 4);
	ck_assert_uint_eq(s.n[0], 16);
	ck_assert_uint_eq(s.n[1], 16);
	ck_assert_uint_eq(s.n[2], 8);
	ck_assert_uint_eq(s.n[3], 1);
	ts_ring_local_destroy(s.l);
	ts_ring_destroy(r);
}
END_TEST

/* A consumer whose batches are published before it asks makes no system
 * call: no futex wait on its side, no wake on the producer's. */
START_TEST(test_fast_path_no_syscall)
{
	struct ts_ring *r = make_ring(256, 2048, 16);
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_local_create(r, 16, TS_JOIN_NOW, false, &l, NULL), 0);
	uint64_t w = wakes(r);
	for (uint64_t seq = 0; seq < 1024; seq += 128) {
		produce(r, seq, seq + 128, 2048);
		for (int k = 0; k < 8; k++) {
			ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
			ck_assert_uint_eq(b.n, 16);
			ck_assert_uint_eq(b.seq, seq + 16 * (uint64_t)k);
		}
	}
	ck_assert_uint_eq(ts_ring_local_sleeps(l), 0);
	ck_assert_uint_eq(wakes(r), w);
	/* Asking before the producer published does sleep (the counter
	 * counts). */
	struct ts_error err;
	ck_assert_int_eq(ts_ring_local_next(l, &b, 20, &err), -ETIMEDOUT);
	ck_assert_uint_ge(ts_ring_local_sleeps(l), 1);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

START_TEST(test_threads)
{
	static const uint32_t batches[] = { 7, 32, 100 };
	struct ts_ring *r = make_ring(256, 1000, 16);
	struct thr p = { .r = r, .total = 20000 };
	struct thr c[3];
	pthread_t tp, tc[3];
	for (int i = 0; i < 3; i++) {
		c[i] = (struct thr){ .r = r };
		ck_assert_int_eq(ts_ring_local_create(r, batches[i], TS_JOIN_NOW,
						      false, &c[i].l, NULL), 0);
		pthread_create(&tc[i], NULL, consumer_thread, &c[i]);
	}
	pthread_create(&tp, NULL, producer_thread, &p);
	pthread_join(tp, NULL);
	for (int i = 0; i < 3; i++) {
		pthread_join(tc[i], NULL);
		ck_assert_int_eq(c[i].bad, 0);
		ck_assert_uint_eq(c[i].seen, 20000);
		ts_ring_local_destroy(c[i].l);
	}
	ck_assert_int_eq(p.bad, 0);
	ts_ring_destroy(r);
}
END_TEST

/* A 299x299x3 uint8 ring asked for 64: its slots are padded to 268,224
 * bytes so that it holds 64 samples (17 MiB, not 4,096 in 1 GiB), and
 * batches, across the wrap too, have their samples sample_stride apart
 * with every byte as written. */
START_TEST(test_padded_slots)
{
	struct ts_ring_params p = { .height = 299, .width = 299, .channels = 3,
				    .dtype = TS_DTYPE_U8, .capacity = 64 };
	struct ts_ring *r = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &r, &err), 0);
	struct ts_ring_info in;
	ts_ring_get_info(r, &in);
	ck_assert_uint_eq(in.capacity, 64);
	ck_assert_uint_eq(in.sample_bytes, 268203);
	ck_assert_uint_eq(in.sample_stride, 268224);
	struct stat st;
	ck_assert_int_eq(fstat(ts_ring_fd(r), &st), 0);
	ck_assert_int_lt(st.st_size, 64 * 268224 + (1 << 20));
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_local_create(r, 24, TS_JOIN_NOW, false, &l, NULL), 0);
	uint8_t *want = malloc(in.sample_bytes);
	ck_assert_ptr_nonnull(want);
	uint64_t seq = 0;
	for (int round = 0; round < 8; round++) {  /* 192 samples: wraps twice */
		for (uint64_t s = seq; s < seq + 24; s++) {
			ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
			uint8_t *x = ts_ring_slot(r, s);
			for (size_t k = 0; k < in.sample_bytes; k++)
				x[k] = (uint8_t)(s * 7 + k);
			ts_ring_set_meta(r, s, (int32_t)s, 0, s);
		}
		ts_ring_publish(r, seq + 24);
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
		ck_assert_uint_eq(b.n, 24);
		ck_assert_uint_eq(b.seq, seq);
		ck_assert_uint_eq(b.sample_stride, 268224);
		for (size_t i = 0; i < 24; i++) {
			for (size_t k = 0; k < in.sample_bytes; k++)
				want[k] = (uint8_t)((seq + i) * 7 + k);
			ck_assert_msg(memcmp((const uint8_t *)b.data + i * b.sample_stride, want,
					     in.sample_bytes) == 0,
				      "sample %llu of the batch at %llu", (unsigned long long)i,
				      (unsigned long long)seq);
			ck_assert_int_eq(b.labels[i], (int32_t)(seq + i));
		}
		seq += 24;
	}
	free(want);
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
}
END_TEST

/* A header a producer may forge: the reader refuses one whose capacity *
 * sample_stride wraps past 2^64 to the data_bytes it claims (2^24 slots
 * of 2^40 + 256 bytes "are" 4 GiB: slot 1 would lie 1 TiB past the
 * mapping), and a padded stride that is not a multiple of 64 (float32
 * samples read misaligned). A sane header of the same file opens. */
static int open_crafted(uint64_t cap, uint64_t sb, uint64_t stride, uint64_t data_bytes)
{
	int fd = memfd_create("crafted", 0), cfd = memfd_create("ctl", 0);
	uint64_t meta_off = 4096 + data_bytes, meta_bytes = (cap * 16 + 4095) / 4096 * 4096;
	ck_assert(fd >= 0 && cfd >= 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(meta_off + meta_bytes)), 0);
	ck_assert_int_eq(ftruncate(cfd, 4096), 0);
	struct ts_ring_hdr *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct ts_ring_ctl *c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	ck_assert(h != MAP_FAILED && c != MAP_FAILED);
	h->magic = TS_RING_MAGIC;
	h->version = TS_RING_VERSION;
	h->height = h->width = h->channels = 1;
	h->dtype = TS_DTYPE_F32;
	h->sample_bytes = sb;
	h->sample_stride = stride;
	h->capacity = cap;
	h->data_offset = 4096;
	h->data_bytes = data_bytes;
	h->meta_offset = meta_off;
	h->meta_bytes = meta_bytes;
	h->file_bytes = meta_off + meta_bytes;
	c->magic = TS_RING_CTL_MAGIC;
	struct ts_ring_reader_opts o = { .batch = 2 };
	struct ts_ring_reader *rd = NULL;
	struct ts_error err = {0};
	int rc = ts_ring_reader_open(fd, cfd, &o, &rd, &err);
	ts_ring_reader_destroy(rd);
	munmap(h, 4096);
	munmap(c, 4096);
	close(fd);
	close(cfd);
	return rc;
}

START_TEST(test_crafted_headers)
{
	const uint64_t big = 1ull << 40;
	ck_assert_int_eq(open_crafted(1ull << 24, big, big + 256, (1ull << 24) * (big + 256)),
			 TS_E_PROTOCOL);
	ck_assert_int_eq(open_crafted(4096, 24, 25, 4096 * 25), TS_E_PROTOCOL);
	ck_assert_int_eq(open_crafted(4096, 24, 23, 4096 * 23), TS_E_PROTOCOL);
	ck_assert_int_eq(open_crafted(64, 24, 64, 64 * 64), 0);
	ck_assert_int_eq(open_crafted(1024, 24, 24, 1024 * 24), 0);
}
END_TEST

/* A ring of rank-2 float32 samples (2 x 3) with a label tensor of 3
 * float32 per sample (tsrun.serve's layout): the shapes reach the
 * consumer side, and a batch across the wrap gets its labels in order. */
START_TEST(test_label_tensors)
{
	struct ts_ring_params p = { .height = 1, .width = 6, .channels = 1,
				    .dtype = TS_DTYPE_F32, .capacity = 64,
				    .ndim = 2, .dims = { 2, 3 },
				    .label_ndim = 1, .label_dims = { 3 },
				    .label_dtype = TS_DTYPE_F32, .label_bytes = 12 };
	struct ts_ring *r = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &r, &err), 0);
	struct ts_ring_info in;
	ts_ring_get_info(r, &in);
	ck_assert_int_eq(in.ndim, 2);
	ck_assert_uint_eq(in.dims[0], 2);
	ck_assert_uint_eq(in.dims[1], 3);
	ck_assert_int_eq(in.label_ndim, 1);
	ck_assert_uint_eq(in.label_dims[0], 3);
	ck_assert_uint_eq(in.label_bytes, 12);
	uint64_t cap = in.capacity;
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	ck_assert_int_eq(ts_ring_local_create(r, 24, TS_JOIN_NOW, false, &l, NULL), 0);
	uint64_t seq = 0;
	/* Enough rounds that batches straddle the end of the label region. */
	for (uint64_t round = 0; round < 2 * cap / 24 + 2; round++) {
		for (uint64_t s = seq; s < seq + 24; s++) {
			ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
			float *x = ts_ring_slot(r, s), *y = ts_ring_label_slot(r, s);
			for (int i = 0; i < 6; i++)
				x[i] = (float)s;
			for (int i = 0; i < 3; i++)
				y[i] = (float)(s * 10 + (uint64_t)i);
			ts_ring_set_meta(r, s, 0, 0, s);
		}
		ts_ring_publish(r, seq + 24);
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
		ck_assert_uint_eq(b.n, 24);
		ck_assert_ptr_nonnull(b.label_data);
		const float *x = b.data, *y = b.label_data;
		for (size_t i = 0; i < 24; i++) {
			ck_assert_float_eq(x[i * 6 + 5], (float)(seq + i));
			for (int k = 0; k < 3; k++)
				ck_assert_float_eq(y[i * 3 + (size_t)k], (float)((seq + i) * 10 + (uint64_t)k));
		}
		seq += 24;
	}
	ts_ring_local_destroy(l);
	ts_ring_destroy(r);
	/* A pipeline's ring has neither. */
	r = make_ring(64, 100, 16);
	ts_ring_get_info(r, &in);
	ck_assert_int_eq(in.ndim, 0);
	ck_assert_uint_eq(in.label_bytes, 0);
	ck_assert_ptr_null(ts_ring_label_slot(r, 0));
	ts_ring_destroy(r);
}
END_TEST

struct next_arg {
	struct ts_ring_local *l;
	struct ts_ring_batch b;
	int rc;
};

static void *next_thread(void *arg)
{
	struct next_arg *a = arg;
	a->rc = ts_ring_local_next(a->l, &a->b, 5000, NULL);
	return NULL;
}

/* An epoch closed by the producer ends the batch being filled at once,
 * with no sample of the next epoch published: a consumer asleep on it is
 * woken and gets the short batch (or, under drop_last, skips it). */
START_TEST(test_close_epoch)
{
	for (int drop = 0; drop < 2; drop++) {
		struct ts_ring *r = make_ring(256, 0, 16);
		struct ts_ring_local *l;
		struct ts_ring_batch b;
		ck_assert_int_eq(ts_ring_local_create(r, 32, TS_JOIN_NOW, drop, &l, NULL), 0);
		produce(r, 0, 40, 1000);   /* epoch 0: 40 samples */
		ck_assert_int_eq(ts_ring_local_next(l, &b, 1000, NULL), 0);
		ck_assert_uint_eq(b.n, 32);
		/* 8 left: nothing ends the batch yet. */
		ck_assert_int_eq(ts_ring_local_next(l, &b, 50, NULL), -ETIMEDOUT);
		struct next_arg a = { .l = l };
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, next_thread, &a), 0);
		usleep(200 * 1000);        /* asleep in the futex by now */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ts_ring_close_epoch(r, 40);
		if (drop) {
			/* The short batch is skipped; the next epoch's first
			 * batch is what the thread gets. */
			usleep(100 * 1000);
			for (uint64_t s = 40; s < 72; s++) {
				ck_assert_int_eq(ts_ring_wait_writable(r, s, 1000), 0);
				ts_ring_set_meta(r, s, 0, 1, s - 40);
			}
			ts_ring_publish(r, 72);
		}
		pthread_join(t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		ck_assert_int_eq(a.rc, 0);
		ck_assert_uint_eq(a.b.n, drop ? 32 : 8);
		ck_assert_uint_eq(a.b.epoch, drop ? 1 : 0);
		ck_assert_uint_eq(a.b.index, drop ? 0 : 32);
		ck_assert(dt < 1.0);      /* woken, not timed out (5 s) */
		ts_ring_local_destroy(l);
		ts_ring_destroy(r);
	}
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("layout");
	tcase_add_test(tc, test_capacity_rounding);
	tcase_add_test(tc, test_plan_matches_ring);
	tcase_add_test(tc, test_padded_slots);
	tcase_add_test(tc, test_crafted_headers);
	tcase_add_test(tc, test_consumer_seals);
	tcase_add_test(tc, test_bad_params);
	tcase_add_test(tc, test_wrap_contiguous);
	tcase_add_test(tc, test_prefault_first_lap);
	suite_add_tcase(s, tc);
	tc = tcase_create("batches");
	tcase_add_test(tc, test_epoch_boundaries);
	tcase_add_test(tc, test_producer_error);
	tcase_add_test(tc, test_producer_reason);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_wake_per_batch);
	tcase_add_test(tc, test_fast_path_no_syscall);
	suite_add_tcase(s, tc);
	tc = tcase_create("accounting");
	tcase_add_test(tc, test_space_accounting);
	tcase_add_test(tc, test_refuse_batch);
	tcase_add_test(tc, test_stall);
	tcase_add_test(tc, test_wait_figures);
	suite_add_tcase(s, tc);
	tc = tcase_create("join");
	tcase_add_test(tc, test_join_policies);
	tcase_add_test(tc, test_join_now_aligns);
	tcase_add_test(tc, test_join_next_epoch_whole);
	tcase_add_test(tc, test_resume_position);
	tcase_add_test(tc, test_join_next_epoch_skip);
	tcase_add_test(tc, test_min_consumers);
	suite_add_tcase(s, tc);
	tc = tcase_create("tensors");
	tcase_add_test(tc, test_label_tensors);
	tcase_add_test(tc, test_close_epoch);
	suite_add_tcase(s, tc);
	tc = tcase_create("threads");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ring_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
