/* fuzz-ctlpage.c - libFuzzer target: a consumer's control page as the
 * producer reads it (runtime/ring.c). The page is the consumer's own
 * memfd, mapped read-write on both sides: a trainer may write anything
 * into it at any time (its release, skipped count, the head it waits
 * for, the futex word, even the magic, and its wait accounting at 384 to
 * 432: a seqlock it may leave odd, times and counts of any value). Here one ring lives for the
 * whole run; each input attaches a consumer, two honest ones stay
 * attached beside it, the input's first 512 bytes overwrite the page
 * (the rest is a script of producer steps: publish, stat, the stall
 * clock, another overwrite), then it detaches. The producer must never
 * crash, block (every wait has timeout 0), let a writer past its own
 * head plus the capacity, or report a lag past its head; a snapshot reads
 * the accounting in a bounded number of tries and reports figures only
 * from a steady, nonzero page. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)


static struct ts_ring *ring;
static uint64_t capacity;   /* as the ring rounded it */
static struct ts_ring_consumer *honest[2];
static struct ts_ring_ctl *honest_ctl[2];

static void setup(void)
{
	struct ts_ring_params p = {
		.height = 2, .width = 2, .channels = 1, .dtype = TS_DTYPE_U8,
		.layout = TS_LAYOUT_NHWC, .capacity = 64, .min_consumers = 0,
		.default_batch = 4,
	};
	struct ts_error err = { 0 };
	CHECK(ts_ring_create(&p, &ring, &err) == 0);
	struct ts_ring_info info;
	ts_ring_get_info(ring, &info);
	capacity = info.capacity;
	for (int i = 0; i < 2; i++) {
		struct ts_ring_join_req req = { .batch = 4, .join = TS_JOIN_NOW, .pid = 1 };
		struct ts_ring_join_pos pos;
		CHECK(ts_ring_attach(ring, &req, &honest[i], &pos, &err) == 0);
		honest_ctl[i] = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
				     ts_ring_consumer_ctl_fd(honest[i]), 0);
		CHECK(honest_ctl[i] != MAP_FAILED);
	}
}

/* Publish up to n samples, each only when the ring says it may. */
static void publish(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t seq = ts_ring_head(ring);
		int rc = ts_ring_wait_writable(ring, seq, 0);
		CHECK(rc == 0 || rc == -ETIMEDOUT);
		if (rc)
			return;
		/* never past the producer's own head plus the capacity,
		 * whatever a release says */
		CHECK(seq < ts_ring_head(ring) + capacity);
		memset(ts_ring_slot(ring, seq), (int)(seq & 0xff), 4);
		ts_ring_set_meta(ring, seq, (int32_t)(seq % 7), 0, seq);
		ts_ring_publish(ring, seq + 1);
	}
}

/* The honest consumers release everything published, so that only the
 * fuzzed one can hold the ring. */
static void honest_release(void)
{
	for (int i = 0; i < 2; i++)
		__atomic_store_n(&honest_ctl[i]->release, ts_ring_head(ring), __ATOMIC_RELEASE);
}

static void stat_check(void)
{
	static struct ts_ring_stat st;
	ts_ring_stat(ring, &st);
	CHECK(st.n_consumers <= TS_RING_MAX_CONSUMERS);
	CHECK(st.capacity == capacity);
	for (size_t i = 0; i < st.n_consumers; i++) {
		const struct ts_ring_consumer_stat *c = &st.consumers[i];
		CHECK(c->lag <= st.head);
		/* figures only from a page that has them, never negative */
		CHECK(!c->has_acct || (c->joined > 0 && c->waited >= 0));
	}
	CHECK(st.wait_slot_s >= 0 && st.wait_idle_s >= 0 && st.wait_self_s >= 0);
	CHECK(st.n_departed <= TS_RING_MAX_CONSUMERS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_error err = { 0 };
	struct ts_ring_consumer *c = NULL;
	struct ts_ring_join_pos pos;
	struct ts_ring_join_req req = { .batch = 4, .join = TS_JOIN_NOW, .pid = 2 };

	if (!ring)
		setup();
	if (size > 4096 + 64)
		return 0;
	honest_release();
	if (ts_ring_attach(ring, &req, &c, &pos, &err) != 0)
		return 0;
	int fd = ts_ring_consumer_ctl_fd(c);
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(page != MAP_FAILED);
	size_t head_n = size < 512 ? size : 512;
	memcpy(page, data, head_n);
	/* The script: each byte one step. */
	for (size_t i = head_n; i < size; i++) {
		uint8_t op = data[i];
		switch (op & 7) {
		case 0: case 1: case 2:
			publish((op >> 3) & 15);
			break;
		case 3:
			stat_check();
			break;
		case 4: {
			double held = ts_ring_consumer_held(ring, c);
			CHECK(held >= 0 && held < 1e9);
			break;
		}
		case 5:
			/* overwrite 8 bytes of the page at the next byte's offset */
			if (i + 9 < size) {
				memcpy(page + (data[i + 1] & 0xf8), data + i + 2, 8);
				i += 9;
			}
			break;
		case 6:
			honest_release();
			break;
		default:
			if (op & 0x80)
				ts_ring_consumer_mark_stalled(ring, c, 1000, 500);
			break;
		}
	}
	publish(80);
	stat_check();
	ts_ring_detach(ring, c);
	stat_check();
	munmap(page, 4096);
	return 0;
}
