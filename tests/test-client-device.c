/* test-client-device.c - libtsclient's device-ring path (tsclient_cuda.h)
 * end to end on a host without a GPU: a server announces a device ring
 * whose "device memory" is a memfd, the fake CUDA runtime in
 * tests/fakecuda (two GPUs, 0000:01:00.0 and 0000:02:00.0) stands in for
 * libcudart, and two trainers read the same stream: one on the producer's
 * GPU (zero-copy pointers into the ring, the mirror keeping a batch that
 * wraps contiguous), one on the other GPU (peer copies into its own
 * buffer). Every finished sample is checked. The tests after it hold
 * libtsclient to the runtime's semantics that the fake keeps (issue 19):
 * errors cleared, copies on a stream, release after the recorded use,
 * teardown at the end of the stream, compute mode, MIG, exact pinning. */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "server.h"
#include "tsclient.h"
#include "tsclient_cuda.h"
#include "tscuda.h"

#define H 8
#define W 8
#define C 3
#define DEV_SB (H * W * C * 4)      /* float32 finished sample */
#define TOTAL 700
#define SPE 1000

static struct ts_ring *ring;
static uint64_t cap, mirror;
static uint8_t *dev;                 /* (cap + mirror) * dev_ss, the memfd */
/* The device ring's sample and slot stride: DEV_SB both, unless a test
 * pads the slots (test_padded_slots) */
static size_t dev_sb = DEV_SB, dev_ss = DEV_SB;
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
		for (size_t i = 0; i < dev_sb; i++)
			dev[slot * dev_ss + i] = pattern(s, i);
		memset(dev + slot * dev_ss + dev_sb, 0, dev_ss - dev_sb);
		if (slot < mirror)
			memcpy(dev + (cap + slot) * dev_ss, dev + slot * dev_ss, dev_ss);
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
	ck_assert_int_eq(ftruncate(dev_fd, (off_t)((cap + mirror) * dev_ss)), 0);
	dev = mmap(NULL, (cap + mirror) * dev_ss, PROT_READ | PROT_WRITE, MAP_SHARED, dev_fd, 0);
	ck_assert(dev != MAP_FAILED);

	struct ts_proto_device pd = {
		.dtype = TS_DTYPE_F32, .layout = TS_LAYOUT_NCHW, .sample_bytes = dev_sb,
		.sample_stride = dev_ss,
		.capacity = cap, .mirror = mirror, .device = 0, .pid = (int32_t)getpid(),
		.pci_bus_id = "0000:01:00.0",
	};
	for (int i = 0; i < 16; i++)
		pd.uuid[i] = (uint8_t)(0xa0 + i);   /* the fake's device 0 */
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
	munmap(dev, (cap + mirror) * dev_ss);
	close(dev_fd);
	rmdir(dir);
}
END_TEST

/* ---- the CUDA semantics the fake keeps (tests/fakecuda) ---------------
 * Each test below runs a producer thread and a server announcing a fake
 * device ring, as test_two_gpus does, with the fake's knobs set. */

struct fx {
	char dir[32], sock[96];
	struct ts_server *srv;
	pthread_t producer;
	void *rt;
	int (*peek)(void);
	int (*pending)(void);
	int (*registered)(const void *, size_t *, unsigned *);
	int (*stream_create)(void **, unsigned);
	int (*stream_sync)(void *);
	int (*memcpy_async)(void *, const void *, size_t, int, void *);
	int (*cmalloc)(void **, size_t);
	int (*set_device)(int);
	int (*get_device)(int *);
	int *knob_fail_register, *knob_fail_ipc, *knob_mode, *knob_mig, *knob_ro;
	int *registers, *closes, *errors;
};

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	ck_assert_msg(p != NULL, "the fake runtime lacks %s", name);
	return p;
}

/* A served stream of total samples behind a fake device ring. */
static void fx_start(struct fx *f, uint32_t consumers)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/ts-cdev-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/s.sock", f->dir);
	f->rt = dlopen("libcudart.so.13", RTLD_NOW);
	ck_assert_msg(f->rt != NULL, "fake libcudart.so.13 not found: %s", dlerror());
	*(void **)&f->peek = sym(f->rt, "cudaPeekAtLastError");
	*(void **)&f->pending = sym(f->rt, "fake_cudart_pending");
	*(void **)&f->registered = sym(f->rt, "fake_cudart_registered");
	*(void **)&f->stream_create = sym(f->rt, "cudaStreamCreateWithFlags");
	*(void **)&f->stream_sync = sym(f->rt, "cudaStreamSynchronize");
	*(void **)&f->memcpy_async = sym(f->rt, "cudaMemcpyAsync");
	*(void **)&f->cmalloc = sym(f->rt, "cudaMalloc");
	*(void **)&f->set_device = sym(f->rt, "cudaSetDevice");
	*(void **)&f->get_device = sym(f->rt, "cudaGetDevice");
	f->knob_fail_register = sym(f->rt, "fake_cudart_fail_register");
	f->knob_fail_ipc = sym(f->rt, "fake_cudart_fail_ipc_open");
	f->knob_mode = sym(f->rt, "fake_cudart_compute_mode");
	f->knob_mig = sym(f->rt, "fake_cudart_mig");
	f->knob_ro = sym(f->rt, "fake_cudart_ro_register");
	f->registers = sym(f->rt, "fake_cudart_registers");
	f->closes = sym(f->rt, "fake_cudart_closes");
	f->errors = sym(f->rt, "fake_cudart_errors");

	struct ts_ring_params p = { .height = H, .width = W, .channels = C,
				    .dtype = TS_DTYPE_U8, .capacity = 200,
				    .epochs = 1, .samples_per_epoch = SPE,
				    .min_consumers = consumers, .default_batch = 48 };
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &ring, &err), 0);
	struct ts_ring_info in;
	ts_ring_get_info(ring, &in);
	cap = in.capacity;
	mirror = cap / 2;
	dev_fd = memfd_create("fake-device-ring", MFD_CLOEXEC);
	ck_assert_int_ge(dev_fd, 0);
	ck_assert_int_eq(ftruncate(dev_fd, (off_t)((cap + mirror) * dev_ss)), 0);
	dev = mmap(NULL, (cap + mirror) * dev_ss, PROT_READ | PROT_WRITE, MAP_SHARED, dev_fd, 0);
	ck_assert(dev != MAP_FAILED);
	struct ts_proto_device pd = {
		.dtype = TS_DTYPE_F32, .layout = TS_LAYOUT_NCHW, .sample_bytes = dev_sb,
		.sample_stride = dev_ss,
		.capacity = cap, .mirror = mirror, .device = 0, .pid = (int32_t)getpid(),
		.pci_bus_id = "0000:01:00.0",
	};
	for (int i = 0; i < 16; i++)
		pd.uuid[i] = (uint8_t)(0xa0 + i);   /* the fake's device 0 */
	snprintf((char *)pd.ipc, sizeof(pd.ipc), "fakecuda:%d", dev_fd);
	ck_assert_int_eq(ts_server_create_device(ring, f->sock, NULL, &pd, &f->srv, &err), 0);
}

static struct ts_client *fx_connect(struct fx *f)
{
	struct ts_client *c = NULL;
	struct ts_client_opts o;
	struct ts_error err;
	ts_client_opts_init(&o);
	o.timeout_ms = 10000;
	ck_assert_msg(ts_client_connect(f->sock, &o, &c, &err) == 0, "%s", err.msg);
	return c;
}

static void fx_produce(struct fx *f)
{
	pthread_create(&f->producer, NULL, produce, NULL);
}

static void fx_stop(struct fx *f)
{
	pthread_join(f->producer, NULL);
	ts_server_destroy(f->srv);
	ts_ring_destroy(ring);
	munmap(dev, (cap + mirror) * dev_ss);
	close(dev_fd);
	rmdir(f->dir);
}

/* Slots padded to 16 bytes (issue 29): a device sample of 420 bytes, as
 * a 7x5 RGB float32 one is, in slots 432 apart. ts_client_device_info
 * says so (sample_stride); a zero-copy batch is a 16-byte aligned
 * pointer at slot * 432 in the ring, its samples 432 apart; a peer batch
 * has the same layout; a device copy is packed (n * 420 bytes: the
 * padding stays behind, the bytes after it untouched). */
static void check_pitch(const uint8_t *d, const struct ts_batch *b, size_t pitch)
{
	for (size_t k = 0; k < b->n; k++)
		for (size_t i = 0; i < dev_sb; i += 13)
			ck_assert_msg(d[k * pitch + i] == pattern(b->seq + k, i),
				      "sample %llu byte %zu (pitch %zu)",
				      (unsigned long long)(b->seq + k), i, pitch);
}

START_TEST(test_padded_slots)
{
	struct fx f;
	struct ts_error err;
	dev_sb = 7 * 5 * 3 * 4;
	dev_ss = 432;
	fx_start(&f, 2);
	struct ts_client *a = fx_connect(&f), *b2 = fx_connect(&f);
	struct ts_client_device_info di;
	ck_assert_int_eq(ts_client_device_info(a, &di, &err), 0);
	ck_assert_uint_eq(di.sample_bytes, 420);
	ck_assert_uint_eq(di.sample_stride, 432);
	struct ts_client_device *da = NULL, *db = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &da, &err) == 0, "%s", err.msg);
	ck_assert_msg(ts_client_device_open(b2, 1, &db, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(da), 1);
	ck_assert_int_eq(ts_client_device_zero_copy(db), 0);
	uint8_t *own = NULL;
	ck_assert_int_eq(f.cmalloc((void **)&own, 48 * dev_ss), 0);
	fx_produce(&f);
	struct ts_batch ba, bb;
	int n = 0, rc;
	const uint8_t *base = NULL;
	while ((rc = ts_client_next(a, &ba, &err)) == 0) {
		ck_assert_int_eq(ts_client_next(b2, &bb, &err), 0);
		void *pa = NULL, *pb = NULL;
		ck_assert_int_eq(ts_client_device_batch(da, &ba, &pa, &err), 0);
		if (!base)
			base = (const uint8_t *)pa - (ba.seq % cap) * dev_ss;
		ck_assert_ptr_eq(pa, base + (ba.seq % cap) * dev_ss);
		ck_assert_uint_eq((uintptr_t)pa % 16, 0);
		check_pitch(pa, &ba, dev_ss);
		ck_assert_int_eq(ts_client_device_batch(db, &bb, &pb, &err), 0);
		ck_assert_uint_eq((uintptr_t)pb % 16, 0);
		check_pitch(pb, &bb, dev_ss);
		/* packed, and nothing written past n * sample_bytes */
		memset(own, 0xee, 48 * dev_ss);
		ck_assert_int_eq(ts_client_device_copy(da, &ba, own, &err), 0);
		check_pitch(own, &ba, dev_sb);
		for (size_t i = ba.n * dev_sb; i < 48 * dev_ss; i++)
			ck_assert_msg(own[i] == 0xee, "device copy wrote byte %zu of a %zu-sample batch",
				      i, ba.n);
		n += (int)ba.n;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_int_eq(n, TOTAL);
	ts_client_device_close(da);
	ts_client_device_close(db);
	ts_client_close(a);
	ts_client_close(b2);
	fx_stop(&f);
	dev_sb = dev_ss = DEV_SB;
}
END_TEST

/* Item 1: a failing CUDA call inside libtsclient leaves no error behind
 * for the host program's next call (PyTorch reports the runtime's last
 * error at its next kernel launch). */
START_TEST(test_errors_cleared)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;

	/* an ordinal the runtime does not have */
	int before = *f.errors;
	ck_assert_int_eq(ts_client_device_open(a, 7, &d, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "cudaSetDevice"));
	ck_assert_int_gt(*f.errors, before);          /* it did fail in CUDA */
	ck_assert_int_eq(f.peek(), 0);                /* and left nothing */
	/* the IPC handle cannot be opened */
	*f.knob_fail_ipc = 1;
	before = *f.errors;
	ck_assert_int_eq(ts_client_device_open(a, 0, &d, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "cudaIpcOpenMemHandle"));
	ck_assert_int_gt(*f.errors, before);
	ck_assert_int_eq(f.peek(), 0);
	*f.knob_fail_ipc = 0;
	/* cudaHostRegister refused */
	struct ts_batch b;
	fx_produce(&f);
	ck_assert_int_eq(ts_client_next(a, &b, &err), 0);
	struct ts_client_pinned pin = {0};
	*f.knob_fail_register = 1;
	before = *f.errors;
	ck_assert_int_eq(ts_client_pin_mapping(b.data, &pin, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "cudaHostRegister"));
	ck_assert_int_gt(*f.errors, before);
	ck_assert_int_eq(f.peek(), 0);
	ck_assert_ptr_null(pin.base);
	*f.knob_fail_register = 0;
	/* registered twice: the runtime refuses, the error is cleared */
	ck_assert_msg(ts_client_pin_mapping(b.data, &pin, &err) == 0, "%s", err.msg);
	struct ts_client_pinned again = {0};
	ck_assert_int_eq(ts_client_pin_mapping(b.data, &again, &err), TS_E_NODEV);
	ck_assert_int_eq(f.peek(), 0);
	ck_assert_int_eq(ts_client_unpin(&pin, &err), 0);
	/* unpinning what is not pinned */
	struct ts_client_pinned bogus = { .base = (void *)b.data, .len = 4096 };
	ck_assert_int_eq(ts_client_unpin(&bogus, &err), TS_E_NODEV);
	ck_assert_int_eq(f.peek(), 0);
	while (ts_client_next(a, &b, &err) == 0)
		;
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

/* Item 5: the environment. Read-only registration only where the device
 * supports it; exclusive-process compute mode said, not a crash later;
 * MIG instances (one PCI bus id) told apart by UUID. */
START_TEST(test_environments)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	struct ts_batch b;

	fx_produce(&f);
	ck_assert_int_eq(ts_client_next(a, &b, &err), 0);
	struct ts_client_pinned pin = {0};
	*f.knob_ro = 0;
	int regs = *f.registers;
	ck_assert_int_eq(ts_client_pin_mapping(b.data, &pin, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "cudaDevAttrHostRegisterReadOnlySupported"));
	ck_assert_int_eq(*f.registers, regs);         /* asked first, not tried */
	*f.knob_ro = 1;
	ck_assert_msg(ts_client_pin_mapping(b.data, &pin, &err) == 0, "%s", err.msg);
	size_t len = 0;
	unsigned flags = 0;
	ck_assert(f.registered(pin.base, &len, &flags));
	ck_assert_uint_eq(len, pin.len);
	ck_assert_uint_eq(flags & 0x08u, 0x08u);     /* cudaHostRegisterReadOnly */
	ck_assert_int_eq(ts_client_unpin(&pin, &err), 0);

	*f.knob_mode = 3;                               /* exclusive-process */
	ck_assert_int_eq(ts_client_device_open(a, 0, &d, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "exclusive-process"));
	ck_assert_int_eq(f.peek(), 0);
	*f.knob_mode = 0;

	/* MIG: both fake devices are instances of GPU 0000:01:00.0 */
	*f.knob_mig = 1;
	ck_assert_msg(ts_client_device_open(a, 1, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(d), 0);   /* another instance */
	ts_client_device_close(d);
	ck_assert_msg(ts_client_device_open(a, 0, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(d), 1);
	ts_client_device_close(d);
	*f.knob_mig = 0;

	int drv = 0, run = 0;
	ts_client_cuda_versions(&drv, &run);
	ck_assert_int_eq(drv, 13000);
	ck_assert_int_eq(run, 13000);
	while (ts_client_next(a, &b, &err) == 0)
		;
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

/* Item 6: pinning takes exactly the double-mapped data region, not a
 * neighbouring mapping of the same file, even one the kernel merged
 * with the first half (contiguous file offsets). */
START_TEST(test_pin_exact)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 0);
	size_t len = 16 * 4096;
	int fd = memfd_create("pin-exact", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(2 * len)), 0);
	/* [file 0..len)[file len..2len)[file len..2len): the first two
	 * merge into one mapping; the data region is the last two */
	uint8_t *r = mmap(NULL, 3 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(r != MAP_FAILED);
	ck_assert(mmap(r, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == r);
	ck_assert(mmap(r + len, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)len) == r + len);
	ck_assert(mmap(r + 2 * len, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)len) ==
		  r + 2 * len);
	struct ts_client_pinned pin = {0};
	const uint8_t *at[] = { r + len + 100, r + 2 * len + 100 };   /* either half */
	for (size_t k = 0; k < 2; k++) {
		ck_assert_msg(ts_client_pin_mapping(at[k], &pin, &err) == 0, "%s", err.msg);
		ck_assert_ptr_eq(pin.base, r + len);
		ck_assert_uint_eq(pin.len, 2 * len);
		ck_assert_int_eq(ts_client_unpin(&pin, &err), 0);
	}
	/* an address of the plain view: its own mapping only */
	ck_assert_msg(ts_client_pin_mapping(r + 100, &pin, &err) == 0, "%s", err.msg);
	ck_assert(pin.base == r && pin.len <= 2 * len);
	ck_assert_int_eq(ts_client_unpin(&pin, &err), 0);
	int x;
	ck_assert_int_eq(ts_client_pin_mapping(&x, &pin, &err), -ENOENT);
	munmap(r, 3 * len);
	close(fd);
	fx_stop(&f);
}
END_TEST

/* Item 2: copies run on a stream and the plain calls wait for them. The
 * fake carries out a device-to-device copy only at a sync, so a copy not
 * waited for reads as stale bytes. */
START_TEST(test_stream_copies)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *b1 = fx_connect(&f);
	struct ts_client_device *d = NULL;
	ck_assert_msg(ts_client_device_open(b1, 1, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(d), 0);
	void *st = NULL, *own = NULL;
	ck_assert_int_eq(f.stream_create(&st, 1), 0);
	ck_assert_int_eq(f.cmalloc(&own, 48 * DEV_SB), 0);
	fx_produce(&f);
	struct ts_batch b;
	int n = 0, rc;
	while ((rc = ts_client_next(b1, &b, &err)) == 0) {
		void *p = NULL;
		/* the plain call: finished on return, on the batch's device,
		 * and the caller's current device is left as it was */
		ck_assert_int_eq(f.set_device(0), 0);
		ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
		ck_assert_int_eq(f.pending(), 0);
		int cur = -1;
		ck_assert_int_eq(f.get_device(&cur), 0);
		ck_assert_int_eq(cur, 0);
		ck_assert_int_eq(f.set_device(1), 0);
		check_samples(p, &b);
		/* on the caller's stream: queued until that stream syncs */
		memset(p, 0, b.n * DEV_SB);
		ck_assert_int_eq(ts_client_device_batch_async(d, &b, st, &p, &err), 0);
		ck_assert_int_ge(f.pending(), 1);
		ck_assert_int_eq(((uint8_t *)p)[1], 0);   /* not yet there */
		ck_assert_int_eq(f.stream_sync(st), 0);
		check_samples(p, &b);
		/* a copy out, both ways */
		memset(own, 0, b.n * DEV_SB);
		ck_assert_int_eq(ts_client_device_copy_async(d, &b, own, st, &err), 0);
		ck_assert_int_ge(f.pending(), 1);
		ck_assert_int_eq(f.stream_sync(st), 0);
		check_samples(own, &b);
		memset(own, 0, b.n * DEV_SB);
		ck_assert_int_eq(ts_client_device_copy(d, &b, own, &err), 0);
		check_samples(own, &b);
		n += (int)b.n;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_int_eq(n, TOTAL);
	ts_client_device_close(d);
	ts_client_close(b1);
	fx_stop(&f);
}
END_TEST

/* Item 3: release after the trainer's use. The trainer's use of a
 * zero-copy batch (a copy out of the ring on its stream) is recorded;
 * ts_client_device_next waits for exactly that before the slots go back,
 * so the copy has read the right samples. Without the record the copy
 * would still be queued when the slots are released. */
START_TEST(test_release_after_use)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(d), 1);
	void *st = NULL;
	uint8_t *own = NULL;
	ck_assert_int_eq(f.stream_create(&st, 1), 0);
	ck_assert_int_eq(f.cmalloc((void **)&own, 48 * DEV_SB), 0);
	fx_produce(&f);
	struct ts_batch b, prev = {0};
	int rc, k = 0, unrecorded = 0;
	while ((rc = ts_client_device_next(d, &b, &err)) == 0) {
		if (k > 0 && k % 2 == 0) {
			/* the previous batch's use, recorded: done by now */
			check_samples(own, &prev);
		}
		void *p = NULL;
		ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
		ck_assert_int_eq(f.memcpy_async(own, p, b.n * DEV_SB, 3, st), 0);
		if (k % 2 == 0) {
			ck_assert_int_eq(ts_client_device_record_use(d, st, &err), 0);
		} else {
			/* not recorded: still queued at release */
			unrecorded += f.pending() > 0;
			ck_assert_int_eq(f.stream_sync(st), 0);
		}
		prev = b;
		k++;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_int_ge(unrecorded, 1);
	ck_assert_int_eq(f.pending(), 0);
	ts_client_device_close(d);
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

/* Item 3, outstanding: with k = 4 the trainer keeps up to four batches
 * out, each given back once the copy recorded on it has run; the slots
 * of a batch still being copied are never refilled (every copy reads its
 * own batch's samples), and the ring's limit (4 x 48 of 200 slots) is
 * met by waiting for the oldest rather than by an error. */
START_TEST(test_outstanding)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_set_outstanding(d, 9, &err), TS_E_ARG);
	ck_assert_int_eq(ts_client_device_set_outstanding(d, 4, &err), 0);
	void *st = NULL;
	ck_assert_int_eq(f.stream_create(&st, 1), 0);
	enum { K = 4, BUFS = 8 };
	uint8_t *own[BUFS];
	struct ts_batch copied[BUFS];
	for (int i = 0; i < BUFS; i++)
		ck_assert_int_eq(f.cmalloc((void **)&own[i], 48 * DEV_SB), 0);
	fx_produce(&f);
	struct ts_batch b;
	int rc, k = 0;
	unsigned most = 0;
	long n = 0;
	while ((rc = ts_client_device_next(d, &b, &err)) == 0) {
		unsigned out = ts_client_device_outstanding(d);
		ck_assert_uint_le(out, K);
		/* polling the uses (cudaEventQuery: NotReady) left no error */
		ck_assert_int_eq(f.peek(), 0);
		most = out > most ? out : most;
		/* the buffer of BUFS batches ago has had its copy run: check */
		if (k >= BUFS) {
			ck_assert_int_eq(f.stream_sync(st), 0);
			check_samples(own[k % BUFS], &copied[k % BUFS]);
		}
		void *p = NULL;
		ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
		ck_assert_int_eq(f.memcpy_async(own[k % BUFS], p, b.n * DEV_SB, 3, st), 0);
		ck_assert_int_eq(ts_client_device_record_use(d, st, &err), 0);
		copied[k % BUFS] = b;
		n += (long)b.n;
		k++;
	}
	ck_assert_msg(rc == TS_E_EOS, "%d %s", rc, err.msg);
	ck_assert_int_eq(n, TOTAL);
	ck_assert_uint_ge(most, 2);                      /* it did run ahead */
	ck_assert_int_eq(ts_client_device_set_outstanding(d, 2, &err), TS_E_ARG);  /* too late */
	ck_assert_int_eq(f.pending(), 0);
	for (int j = k - BUFS; j < k; j++)
		if (j >= 0)
			check_samples(own[j % BUFS], &copied[j % BUFS]);
	ck_assert_int_eq(ts_client_device_mapped(d), 0);
	ts_client_device_close(d);
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

/* Outstanding on another GPU: each outstanding batch gets its own part
 * of the peer-copy buffer, so a later batch's copy does not overwrite
 * an earlier one still in use. */
START_TEST(test_outstanding_peer)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	ck_assert_msg(ts_client_device_open(a, 1, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_zero_copy(d), 0);
	ck_assert_int_eq(ts_client_device_set_outstanding(d, 3, &err), 0);
	void *st = NULL;
	ck_assert_int_eq(f.stream_create(&st, 1), 0);
	fx_produce(&f);
	struct ts_batch b;
	void *prev[2] = { NULL, NULL };
	struct ts_batch prevb[2];
	int rc, k = 0;
	uint8_t *own = NULL;
	unsigned most = 0;
	ck_assert_int_eq(f.cmalloc((void **)&own, 48 * DEV_SB), 0);
	while ((rc = ts_client_device_next(d, &b, &err)) == 0) {
		void *p = NULL;
		unsigned out = ts_client_device_outstanding(d);
		most = out > most ? out : most;
		ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
		check_samples(p, &b);
		/* the batches still out kept their own copies */
		for (int j = 0; j < 2 && j < k; j++) {
			if (out > (unsigned)(j + 1)) {
				ck_assert_ptr_ne(prev[j], p);
				check_samples(prev[j], &prevb[j]);
			}
		}
		/* the trainer's use, queued and recorded, not waited for */
		ck_assert_int_eq(f.memcpy_async(own, p, b.n * DEV_SB, 3, st), 0);
		ck_assert_int_eq(ts_client_device_record_use(d, st, &err), 0);
		prev[1] = prev[0];
		prevb[1] = prevb[0];
		prev[0] = p;
		prevb[0] = b;
		k++;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_uint_ge(most, 2);
	ts_client_device_close(d);
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

/* A view that outlives its loader: ts_client_device_close with a hold
 * remaining must leave the mapping and the handle to the last unhold
 * (tensorsocket(7): the mapping lives while a tensor views it), and no
 * longer touch the client, which may be closed at once. Closing at once
 * would unmap under the view; the unhold would then run on freed memory
 * and close the mapping twice. */
START_TEST(test_close_while_held)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	int *double_closes = sym(f.rt, "fake_cudart_double_closes");
	ck_assert_msg(ts_client_device_open(a, 0, &d, &err) == 0, "%s", err.msg);
	fx_produce(&f);
	struct ts_batch b;
	void *p = NULL;
	ck_assert_int_eq(ts_client_device_next(d, &b, &err), 0);
	ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
	check_samples(p, &b);
	ts_client_device_hold(d);                /* the view: a live tensor */
	int closes = *f.closes;
	ts_client_device_close(d);
	ts_client_close(a);                      /* the Loader's close, in order */
	ck_assert_int_eq(*f.closes, closes);     /* still mapped for the view */
	volatile uint8_t x = *(volatile uint8_t *)p;   /* and readable */
	(void)x;
	ts_client_device_close(d);               /* a second close: no-op */
	ck_assert_int_eq(*f.closes, closes);
	ts_client_device_unhold(d);              /* the view goes: all of it */
	ck_assert_int_eq(*f.closes, closes + 1);
	ck_assert_int_eq(*double_closes, 0);
	ck_assert_int_eq(f.peek(), 0);
	fx_stop(&f);
}
END_TEST

/* A caller's non-blocking stream still reads a batch (no use recorded)
 * when the trainer closes: the mapping may go only after that read ran
 * (cudaIpcCloseMemHandle does not wait; the fake, like the driver, then
 * faults the read with an illegal address). Syncing the legacy stream
 * alone does not order a non-blocking stream. */
START_TEST(test_close_syncs_streams)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &d, &err) == 0, "%s", err.msg);
	void *st = NULL;
	uint8_t *own = NULL;
	ck_assert_int_eq(f.stream_create(&st, 1), 0);     /* cudaStreamNonBlocking */
	ck_assert_int_eq(f.cmalloc((void **)&own, 48 * DEV_SB), 0);
	fx_produce(&f);
	struct ts_batch b;
	void *p = NULL;
	ck_assert_int_eq(ts_client_device_next(d, &b, &err), 0);
	ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
	ck_assert_int_eq(f.memcpy_async(own, p, b.n * DEV_SB, 3, st), 0);
	ck_assert_int_eq(f.pending(), 1);                  /* queued, not run */
	ts_client_device_close(d);
	ck_assert_int_eq(f.pending(), 0);                  /* run before the unmap */
	ck_assert_int_eq(f.stream_sync(st), 0);            /* no illegal address */
	check_samples(own, &b);
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

/* record_use on a stream of another device than the current one: the
 * event must be created on the stream's device (an event recorded on a
 * stream of another device is refused, and the use would be lost), and
 * the NotReady of polling it (outstanding mode) must not stay behind as
 * the runtime's last error. */
START_TEST(test_use_other_device)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 1);
	struct ts_client *a = fx_connect(&f);
	struct ts_client_device *d = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &d, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ts_client_device_set_outstanding(d, 3, &err), 0);
	void *st1 = NULL;
	uint8_t *own = NULL;
	ck_assert_int_eq(f.set_device(1), 0);
	ck_assert_int_eq(f.stream_create(&st1, 1), 0);     /* a stream of device 1 */
	ck_assert_int_eq(f.cmalloc((void **)&own, 48 * DEV_SB), 0);
	ck_assert_int_eq(f.set_device(0), 0);              /* current: device 0 */
	fx_produce(&f);
	struct ts_batch b;
	int rc, k = 0;
	while ((rc = ts_client_device_next(d, &b, &err)) == 0) {
		ck_assert_int_eq(f.peek(), 0);                 /* no NotReady left */
		void *p = NULL;
		ck_assert_int_eq(ts_client_device_batch(d, &b, &p, &err), 0);
		ck_assert_int_eq(f.memcpy_async(own, p, b.n * DEV_SB, 3, st1), 0);
		ck_assert_msg(ts_client_device_record_use(d, st1, &err) == 0, "%s", err.msg);
		int cur = -1;
		ck_assert_int_eq(f.get_device(&cur), 0);
		ck_assert_int_eq(cur, 0);                      /* put back */
		k++;
	}
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_int_gt(k, 3);
	ck_assert_int_eq(f.peek(), 0);
	ck_assert_int_eq(f.pending(), 0);
	ts_client_device_close(d);
	ts_client_close(a);
	fx_stop(&f);
}
END_TEST

static unsigned consumers_of(void *srv)
{
	return ts_server_consumers(srv);
}

/* At the end of the stream a trainer that closed its mapping (no holds)
 * hangs up its side at once, before it closes its client: the producer's
 * teardown then waits for mappings still open, not for idle sockets (a
 * Python Loader alive after its last epoch kept tsrun 10 s at exit). */
START_TEST(test_done_hangs_up)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 2);
	struct ts_client *a = fx_connect(&f), *h = fx_connect(&f);
	struct ts_client_device *da = NULL, *dh = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &da, &err) == 0, "%s", err.msg);
	ck_assert_msg(ts_client_device_open(h, 0, &dh, &err) == 0, "%s", err.msg);
	ts_client_device_hold(dh);
	fx_produce(&f);
	struct ts_batch ba, bh;
	int ra = 0, rh = 0;
	while (ra == 0 || rh == 0) {
		if (ra == 0)
			ra = ts_client_device_next(da, &ba, &err);
		if (rh == 0)
			rh = ts_client_device_next(dh, &bh, &err);
	}
	ck_assert_int_eq(ra, TS_E_EOS);
	/* a: unmapped and hung up, its client still open; h: still maps */
	ck_assert_uint_eq(ts_devserve_wait_importers(consumers_of, f.srv, 2000), 1);
	ts_client_device_unhold(dh);               /* h's last view goes */
	ck_assert_uint_eq(ts_devserve_wait_importers(consumers_of, f.srv, 2000), 0);
	ts_client_device_close(da);
	ts_client_device_close(dh);
	ts_client_close(a);
	ts_client_close(h);
	fx_stop(&f);
}
END_TEST

/* Item 4: teardown. At the end of the stream the trainer closes its IPC
 * mapping (at once without holds, at the last unhold with one); the
 * producer waits, bounded, for its consumers before freeing the ring. */
START_TEST(test_teardown)
{
	struct fx f;
	struct ts_error err;
	fx_start(&f, 2);
	struct ts_client *a = fx_connect(&f), *h = fx_connect(&f);
	struct ts_client_device *da = NULL, *dh = NULL;
	ck_assert_msg(ts_client_device_open(a, 0, &da, &err) == 0, "%s", err.msg);
	ck_assert_msg(ts_client_device_open(h, 0, &dh, &err) == 0, "%s", err.msg);
	ts_client_device_hold(dh);                      /* a view outliving its batch */
	int closes = *f.closes;
	fx_produce(&f);
	struct ts_batch ba, bh;
	int ra = 0, rh = 0;
	while (ra == 0 || rh == 0) {
		if (ra == 0)
			ra = ts_client_device_next(da, &ba, &err);
		if (rh == 0)
			rh = ts_client_device_next(dh, &bh, &err);
	}
	ck_assert_int_eq(ra, TS_E_EOS);
	ck_assert_int_eq(rh, TS_E_EOS);
	ck_assert_int_eq(ts_client_device_mapped(da), 0);   /* closed at the end */
	ck_assert_int_eq(ts_client_device_mapped(dh), 1);   /* held */
	ck_assert_int_eq(*f.closes, closes + 1);
	void *p = NULL;
	ck_assert_int_eq(ts_client_device_batch(da, &ba, &p, &err), TS_E_EOS);
	/* the producer's wait: bounded while a consumer still maps the ring */
	ts_client_device_close(da);
	ts_client_close(a);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_uint_eq(ts_devserve_wait_importers(consumers_of, f.srv, 300), 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	ck_assert_msg(s >= 0.29 && s < 5.0, "waited %.3f s", s);
	/* and done as soon as the last one closes its mapping (its
	 * client still open: it hung up its side) */
	ts_client_device_unhold(dh);
	ck_assert_int_eq(ts_client_device_mapped(dh), 0);
	ck_assert_int_eq(*f.closes, closes + 2);
	ck_assert_uint_eq(ts_devserve_wait_importers(consumers_of, f.srv, 5000), 0);
	ts_client_device_close(dh);
	ts_client_close(h);
	fx_stop(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client-device");
	TCase *tc = tcase_create("fake-cuda");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_gpus);
	tcase_add_test(tc, test_padded_slots);
	tcase_add_test(tc, test_errors_cleared);
	tcase_add_test(tc, test_environments);
	tcase_add_test(tc, test_pin_exact);
	tcase_add_test(tc, test_stream_copies);
	tcase_add_test(tc, test_release_after_use);
	tcase_add_test(tc, test_outstanding);
	tcase_add_test(tc, test_outstanding_peer);
	tcase_add_test(tc, test_teardown);
	tcase_add_test(tc, test_close_while_held);
	tcase_add_test(tc, test_close_syncs_streams);
	tcase_add_test(tc, test_use_other_device);
	tcase_add_test(tc, test_done_hangs_up);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
