/* test-client-device.c - libtsclient's device-ring path (tsclient_cuda.h)
 * end to end on a host without a GPU: a server announces a device ring
 * whose "device memory" is a memfd, the fake CUDA runtime in
 * tests/fakecuda (two GPUs, 0000:01:00.0 and 0000:02:00.0) stands in for
 * libcudart, and two trainers read the same stream: one on the producer's
 * GPU (zero-copy pointers into the ring, the mirror keeping a batch that
 * wraps contiguous), one on the other GPU (peer copies into its own
 * buffer). Every finished sample is checked. */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "server.h"
#include "tsclient.h"
#include "tsclient_cuda.h"

#define H 8
#define W 8
#define C 3
#define DEV_SB (H * W * C * 4)      /* float32 finished sample */
#define TOTAL 700
#define SPE 1000

static struct ts_ring *ring;
static uint64_t cap, mirror;
static uint8_t *dev;                 /* (cap + mirror) * DEV_SB, the memfd */
static int dev_fd = -1;

static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 13 + i * 7);
}

/* Write sample seq into its host slot and its device slot (and the
 * mirror, as the device ring's filler does), then publish it. */
static void *produce(void *arg)
{
	(void)arg;
	struct ts_ring_info in;
	ts_ring_get_info(ring, &in);
	for (uint64_t s = 0; s < TOTAL; s++) {
		if (ts_ring_wait_writable(ring, s, 10000) < 0)
			return NULL;
		memset(ts_ring_slot(ring, s), (int)(s & 0xff), in.sample_bytes);
		uint64_t slot = s % cap;
		for (size_t i = 0; i < DEV_SB; i++)
			dev[slot * DEV_SB + i] = pattern(s, i);
		if (slot < mirror)
			memcpy(dev + (cap + slot) * DEV_SB, dev + slot * DEV_SB, DEV_SB);
		ts_ring_set_meta(ring, s, (int32_t)(s % 10), (uint32_t)(s / SPE), s % SPE);
		ts_ring_publish(ring, s + 1);
	}
	ts_ring_finish(ring, 0);
	return NULL;
}

static void check_samples(const void *p, const struct ts_batch *b)
{
	const uint8_t *d = p;
	for (size_t k = 0; k < b->n; k++)
		for (size_t i = 0; i < DEV_SB; i += 97)
			ck_assert_msg(d[k * DEV_SB + i] == pattern(b->seq + k, i),
				      "sample %llu byte %zu", (unsigned long long)(b->seq + k), i);
}

START_TEST(test_two_gpus)
{
	char dir[] = "/tmp/ts-cdev-XXXXXX", sock[96];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);

	/* the fake runtime, found by name as libtsclient will find it */
	void *rt = dlopen("libcudart.so.13", RTLD_NOW);
	ck_assert_msg(rt != NULL, "fake libcudart.so.13 not found: %s", dlerror());
	int *memcpys = dlsym(rt, "fake_cudart_memcpys");
	int *opens = dlsym(rt, "fake_cudart_opens");
	int *closes = dlsym(rt, "fake_cudart_closes");
	ck_assert(memcpys && opens && closes);

	struct ts_ring_params p = { .height = H, .width = W, .channels = C,
				    .dtype = TS_DTYPE_U8, .capacity = 200,
				    .epochs = 1, .samples_per_epoch = SPE,
				    .min_consumers = 2, .default_batch = 48 };
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &ring, &err), 0);
	struct ts_ring_info in;
	ts_ring_get_info(ring, &in);
	cap = in.capacity;
	mirror = cap / 2;
	dev_fd = memfd_create("fake-device-ring", MFD_CLOEXEC);
	ck_assert_int_ge(dev_fd, 0);
	ck_assert_int_eq(ftruncate(dev_fd, (off_t)((cap + mirror) * DEV_SB)), 0);
	dev = mmap(NULL, (cap + mirror) * DEV_SB, PROT_READ | PROT_WRITE, MAP_SHARED, dev_fd, 0);
	ck_assert(dev != MAP_FAILED);

	struct ts_proto_device pd = {
		.dtype = TS_DTYPE_F32, .layout = TS_LAYOUT_NCHW, .sample_bytes = DEV_SB,
		.capacity = cap, .mirror = mirror, .device = 0, .pid = (int32_t)getpid(),
		.pci_bus_id = "0000:01:00.0",
	};
	snprintf((char *)pd.ipc, sizeof(pd.ipc), "fakecuda:%d", dev_fd);
	struct ts_server *srv = NULL;
	ck_assert_int_eq(ts_server_create_device(ring, sock, NULL, &pd, &srv, &err), 0);

	struct ts_client *a = NULL, *b = NULL;
	struct ts_client_opts o;
	ts_client_opts_init(&o);
	o.timeout_ms = 10000;
	ck_assert_int_eq(ts_client_connect(sock, &o, &a, &err), 0);
	ck_assert_int_eq(ts_client_connect(sock, &o, &b, &err), 0);
	struct ts_client_device *da = NULL, *db = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &da, &err) == 0, "%s", err.msg);
	ck_assert_msg(ts_client_device_open(b, 1, &db, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(da), 1);
	ck_assert_int_eq(ts_client_device_zero_copy(db), 0);
	ck_assert_int_eq(ts_client_device_ordinal(db), 1);
	ck_assert_int_eq(*opens, 2);
	/* an ordinal the runtime does not have */
	struct ts_client_device *dx = NULL;
	ck_assert_int_eq(ts_client_device_open(a, 7, &dx, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "cudaSetDevice"));

	pthread_t t;
	pthread_create(&t, NULL, produce, NULL);
	uint64_t seen_a = 0, seen_b = 0;
	int wrapped = 0, ra = 0, rb = 0;
	uint8_t *base_a = NULL;
	uint8_t *own = malloc(48 * DEV_SB);
	while (ra == 0 || rb == 0) {
		struct ts_batch ba, bb;
		void *pa = NULL, *pb = NULL;
		if (ra == 0 && (ra = ts_client_next(a, &ba, &err)) == 0) {
			ck_assert_int_eq(ts_client_device_batch(da, &ba, &pa, &err), 0);
			uint64_t slot = ba.seq % cap;
			/* zero-copy: the ring's own slot (in the runtime's mapping
			 * of it, which the first batch, at slot 0, shows), one span
			 * across the wrap */
			if (!base_a) {
				ck_assert_uint_eq(slot, 0);
				base_a = pa;
			}
			ck_assert_ptr_eq(pa, base_a + slot * DEV_SB);
			wrapped += slot + ba.n > cap;
			check_samples(pa, &ba);
			/* and the same bytes through the copy call */
			ck_assert_int_eq(ts_client_device_copy(da, &ba, own, &err), 0);
			check_samples(own, &ba);
			seen_a += ba.n;
		}
		if (rb == 0 && (rb = ts_client_next(b, &bb, &err)) == 0) {
			int before = *memcpys;
			ck_assert_int_eq(ts_client_device_batch(db, &bb, &pb, &err), 0);
			ck_assert_int_eq(*memcpys, before + 1);   /* a peer copy */
			ck_assert((uint8_t *)pb < dev || (uint8_t *)pb >= dev + (cap + mirror) * DEV_SB);
			check_samples(pb, &bb);
			seen_b += bb.n;
		}
	}
	ck_assert_int_eq(ra, TS_E_EOS);
	ck_assert_int_eq(rb, TS_E_EOS);
	ck_assert_uint_eq(seen_a, TOTAL);
	ck_assert_uint_eq(seen_b, TOTAL);
	ck_assert_int_ge(wrapped, 1);
	pthread_join(t, NULL);
	free(own);
	ts_client_device_close(da);
	ts_client_device_close(db);
	ck_assert_int_eq(*closes, 2);
	ts_client_close(a);
	ts_client_close(b);
	ts_server_destroy(srv);
	ts_ring_destroy(ring);
	munmap(dev, (cap + mirror) * DEV_SB);
	close(dev_fd);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client-device");
	TCase *tc = tcase_create("fake-cuda");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_gpus);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
