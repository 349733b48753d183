/*
 * gpu-trainer.c - a C trainer of the device ring through libtsclient, for
 * tsrun-trainers.sh: several of them read one `tsrun run` at once.
 *
 *   gpu-trainer --probe                    exit 0 with a GPU, 77 without
 *   gpu-trainer --versions                 the driver and runtime versions
 *   gpu-trainer SOCKET DEVICE MEAN STD HOLD_MS [EXPECT]
 *
 * Each batch: the device view (zero-copy on the producer's GPU, else a
 * peer copy on the trainer's own stream) is copied to a pinned host
 * buffer on that stream, the use recorded (ts_client_device_record_use),
 * and the samples compared, bit for bit, with ts_finish_reference of the
 * host ring's uint8 samples of the same batch. HOLD_MS > 0: the trainer
 * holds the mapping (ts_client_device_hold) past the end of the stream,
 * sleeps HOLD_MS, reads its last device batch again (the producer must
 * not have freed the ring under it), then lets go. It prints
 * "trainer PID: N samples identical, zero-copy Z, closed at T" (T in
 * CLOCK_REALTIME seconds) and exits 0, or prints FAIL and exits 1.
 */
#include <cuda_runtime_api.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu-common.h"
#include "tsclient.h"
#include "tsclient_cuda.h"

static double wall(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define FAIL(...) do { printf("FAIL: trainer %d: ", (int)getpid()); \
	printf(__VA_ARGS__); printf("\n"); fflush(stdout); exit(1); } while (0)

int main(int argc, char **argv)
{
	struct ts_error err = {0};
	if (argc == 2 && (strcmp(argv[1], "--probe") == 0 || strcmp(argv[1], "--versions") == 0)) {
		int n = ts_client_cuda_devices(&err);
		if (argv[1][2] == 'v') {
			/* libtsclient's runtime is the libcudart.so it dlopens;
			 * tsrun's is linked in statically */
			int drv = 0, run = 0, sdrv = 0, srun = 0;
			ts_client_cuda_versions(&drv, &run);
			ts_cuda_versions(&sdrv, &srun);
			printf("CUDA driver: %d.%d; libtsclient's runtime (dlopen'd libcudart): %d.%d; "
			       "tsrun's static runtime: %d.%d; devices: %d%s%s\n",
			       drv / 1000, drv % 1000 / 10, run / 1000, run % 1000 / 10,
			       srun / 1000, srun % 1000 / 10, n < 0 ? 0 : n,
			       n < 0 ? " - " : "", n < 0 ? err.msg : "");
			return n < 0 ? SKIP : 0;
		}
		if (n < 0) {
			printf("gpu-trainer: SKIP: %s\n", err.msg);
			return SKIP;
		}
		return 0;
	}
	if (argc < 6)
		FAIL("usage: gpu-trainer SOCKET DEVICE MEAN STD HOLD_MS [EXPECT]");
	const char *sock = argv[1];
	int device = atoi(argv[2]);
	float mean = (float)atof(argv[3]), stdv = (float)atof(argv[4]);
	int hold_ms = atoi(argv[5]);
	long expect = argc > 6 ? atol(argv[6]) : -1;

	struct ts_client_opts o;
	ts_client_opts_init(&o);
	o.timeout_ms = 60000;
	struct ts_client *c = NULL;
	if (ts_client_connect(sock, &o, &c, &err) < 0)
		FAIL("connect: %s", err.msg);
	struct ts_client_device_info di;
	if (ts_client_device_info(c, &di, &err) < 0)
		FAIL("the producer serves no device ring: %s", err.msg);
	struct ts_client_device *d = NULL;
	if (ts_client_device_open(c, device, &d, &err) < 0)
		FAIL("device open: %s", err.msg);
	if (hold_ms > 0)
		ts_client_device_hold(d);
	struct ts_finish_params p = { .height = di.height, .width = di.width,
				      .channels = di.channels,
				      .dtype = di.dtype == TS_CLIENT_FLOAT16 ? TS_DTYPE_F16
									 : TS_DTYPE_F32,
				      .normalize = true };
	for (int k = 0; k < 4; k++) {
		p.mean[k] = mean;
		p.std[k] = stdv;
	}
	struct ts_client_info ci;
	ts_client_info(c, &ci);
	size_t sb = ts_finish_sample_bytes(&p), max = ci.batch_size;
	CHECK(sb == di.sample_bytes, "sample bytes %zu, the ring's %zu", sb, di.sample_bytes);
	/* slots padded to 16 bytes: every sample starts aligned */
	size_t ss = di.sample_stride;
	CHECK(ss >= sb && ss % 16 == 0 && ss - sb < 16, "device sample stride %zu for %zu bytes",
	      ss, sb);
	uint8_t *got = NULL, *want = malloc(max * sb), *last_in = malloc(max * ci.sample_bytes);
	CHECK(want && last_in && cudaMallocHost((void **)&got, max * sb) == cudaSuccess, "alloc");
	cudaStream_t st;
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess, "stream");

	struct ts_batch b, last = {0};
	long n = 0;
	int rc;
	while ((rc = ts_client_device_next(d, &b, &err)) == 0) {
		void *ptr = NULL;
		if (ts_client_device_batch_async(d, &b, st, &ptr, &err) < 0)
			FAIL("device batch: %s", err.msg);
		CHECK((uintptr_t)ptr % 16 == 0, "device batch at %p not 16-byte aligned", ptr);
		CHECK(cudaMemcpy2DAsync(got, sb, ptr, ss, sb, b.n, cudaMemcpyDeviceToHost, st) ==
		      cudaSuccess, "D2H");
		if (ts_client_device_record_use(d, st, &err) < 0)
			FAIL("record use: %s", err.msg);
		CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
		/* the host batch packed (its slots may be padded: sample_stride) */
		for (size_t k = 0; k < b.n; k++)
			memcpy(last_in + k * ci.sample_bytes,
			       (const uint8_t *)b.data + k * b.sample_stride, ci.sample_bytes);
		ts_finish_reference(last_in, want, b.n, &p);
		if (memcmp(got, want, b.n * sb) != 0)
			FAIL("batch at seq %llu differs from the reference",
			     (unsigned long long)b.seq);
		last = b;
		n += (long)b.n;
	}
	if (rc != TS_E_EOS && rc != TS_E_PRODUCER)
		FAIL("next: %s", err.msg);
	if (expect >= 0 && n != expect)
		FAIL("%ld samples, expected %ld", n, expect);
	if (hold_ms > 0) {
		/* the stream is over and the producer knows it; it must wait
		 * for us before it frees the ring */
		CHECK(ts_client_device_mapped(d), "mapping closed despite the hold");
		usleep((useconds_t)hold_ms * 1000);
		if (last.n) {
			void *ptr = NULL;
			if (ts_client_device_batch(d, &last, &ptr, &err) < 0)
				FAIL("device batch after the end: %s", err.msg);
			CHECK(cudaMemcpy2D(got, sb, ptr, ss, sb, last.n, cudaMemcpyDeviceToHost) ==
			      cudaSuccess, "D2H after the end: %s",
			      cudaGetErrorString(cudaGetLastError()));
			ts_finish_reference(last_in, want, last.n, &p);
			/* the producer may rewrite no slot after the end */
			if (memcmp(got, want, last.n * sb) != 0)
				FAIL("the last batch changed after the end of the stream");
		}
		ts_client_device_unhold(d);
		CHECK(!ts_client_device_mapped(d), "mapping still open after the last unhold");
	} else {
		CHECK(!ts_client_device_mapped(d), "mapping still open after the end");
	}
	int zero = ts_client_device_zero_copy(d);
	ts_client_device_close(d);
	double closed = wall();
	ts_client_close(c);
	cudaStreamDestroy(st);
	cudaFreeHost(got);
	free(want);
	free(last_in);
	printf("trainer %d: %ld samples identical, zero-copy %d, closed at %.3f\n",
	       (int)getpid(), n, zero, closed);
	return 0;
}
