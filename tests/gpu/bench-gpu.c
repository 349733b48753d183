/*
 * bench-gpu.c - GPU figures for tests/gpu/run: host-to-device bandwidth
 * from pageable against pinned (cudaHostRegister'd) memory, the finishing
 * kernel's throughput against the device's peak memory bandwidth, and N
 * trainer processes that import one device ring over CUDA IPC and each
 * copy it whole into their own buffer (ts_devring_copy_out, a
 * device-to-device copy: the figure is HBM copy bandwidth, what the
 * Loader's default "device copy" costs, not zero-copy reading), started
 * together from a barrier, as total bytes over the span from the first
 * start to the last end.
 * Prints "key: value" lines; exits 77 without a device. TS_GPU_BENCH_SMALL=1
 * (tests/gpu/run --fake, against the stand-in runtime, whose "GPU" is
 * the host's memory) runs every part at a few MiB: the figures then mean
 * nothing, the sequence and its keys are checked.
 */
#include <cuda_runtime_api.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu-common.h"

#define REPS 7

/* TS_GPU_BENCH_SMALL=1: every part at a size the stand-in runtime does in
 * well under a second */
static int small(void)
{
	const char *v = getenv("TS_GPU_BENCH_SMALL");
	return v && *v == '1';
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* GB/s of REPS host-to-device copies of len bytes, each timed between
 * two synchronisations; median. */
static double h2d(void *dev, const void *host, size_t len)
{
	double r[REPS];
	for (int i = 0; i < REPS; i++) {
		CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
		double t = now();
		CHECK(cudaMemcpyAsync(dev, host, len, cudaMemcpyHostToDevice, 0) == cudaSuccess, "H2D");
		CHECK(cudaStreamSynchronize(0) == cudaSuccess, "sync");
		r[i] = (double)len / (now() - t) / 1e9;
	}
	return median(r, REPS);
}

static void bench_h2d(void)
{
	size_t len = small() ? 8u << 20 : 256u << 20;
	uint8_t *host = malloc(len);
	void *dev = NULL;

	CHECK(host && cudaMalloc(&dev, len) == cudaSuccess, "alloc");
	memset(host, 1, len); /* fault the pages in */
	h2d(dev, host, len);  /* warm up */
	printf("h2d_pageable_GBps: %.2f\n", h2d(dev, host, len));
	CHECK(cudaHostRegister(host, len, cudaHostRegisterPortable) == cudaSuccess, "register");
	printf("h2d_pinned_GBps: %.2f\n", h2d(dev, host, len));
	CHECK(cudaHostUnregister(host) == cudaSuccess, "unregister");
	cudaFree(dev);
	free(host);
}

static void bench_kernel(double peak)
{
	const size_t n = small() ? 4 : 256;
	/* 224x224, and 299x299 (an odd size: padded slots, the same vector
	 * kernel; its figures under kernel_<dtype>_299_*) */
	for (int k = 0; k < 4; k++) {
		int side = k < 2 ? 224 : 299;
		char key[32];
		struct ts_finish_params p = { .height = side, .width = side, .channels = 3,
					      .dtype = k % 2 ? TS_DTYPE_F16 : TS_DTYPE_F32,
					      .normalize = true,
					      .mean = {0.485f, 0.456f, 0.406f},
					      .std = {0.229f, 0.224f, 0.225f} };
		size_t in = n * (size_t)side * side * 3, out = n * ts_finish_sample_stride(&p);
		void *src = NULL, *dst = NULL;
		cudaEvent_t a, b;
		float ms = 0;
		const int iters = small() ? 2 : 50;
		struct ts_error err = {0};

		CHECK(cudaMalloc(&src, in) == cudaSuccess && cudaMalloc(&dst, out) == cudaSuccess, "alloc");
		cudaMemset(src, 7, in);
		cudaEventCreate(&a);
		cudaEventCreate(&b);
		CHECK(ts_finish_launch(src, dst, n, &p, NULL, &err) == 0, "%s", err.msg);
		cudaEventRecord(a, 0);
		for (int i = 0; i < iters; i++)
			ts_finish_launch(src, dst, n, &p, NULL, NULL);
		cudaEventRecord(b, 0);
		CHECK(cudaEventSynchronize(b) == cudaSuccess, "kernel");
		cudaEventElapsedTime(&ms, a, b);
		{
			double s = ms / 1e3 / iters, gbs = (double)(in + out) / s / 1e9;
			snprintf(key, sizeof(key), "%s%s", ts_dtype_name(p.dtype),
				 side == 224 ? "" : "_299");
			printf("kernel_%s_batch%zu_ms: %.3f\n", key, n, s * 1e3);
			printf("kernel_%s_GBps: %.1f\n", key, gbs);
			printf("kernel_%s_images_per_s: %.0f\n", key, (double)n / s);
			if (peak > 0)
				printf("kernel_%s_of_peak: %.0f%%\n", key, 100.0 * gbs / (peak / 1e9));
		}
		cudaEventDestroy(a);
		cudaEventDestroy(b);
		cudaFree(src);
		cudaFree(dst);
	}
}

/* Trainer: import the ring, warm up, tell the parent it is ready (a byte
 * on stdout) and wait for the start (stdin closes: every trainer starts
 * at once), then copy the ring whole `reps` times into its own buffer
 * (what a training step's first read costs) on its own stream, and
 * synchronise before taking the end time. Prints "bytes start end" with
 * CLOCK_MONOTONIC times, which all processes share. */
static int trainer(int reps)
{
	struct ts_devring_handle h;
	struct ts_devring *r = NULL;
	struct ts_error err = {0};
	cudaStream_t st;
	void *dst = NULL;
	size_t bytes;
	char go;

	CHECK(read(0, &h, sizeof(h)) == (ssize_t)sizeof(h), "handle");
	CHECK(ts_devring_import(&h, &r, &err) == 0, "%s", err.msg);
	bytes = ts_devring_capacity(r) * ts_devring_sample_bytes(r);
	CHECK(cudaMalloc(&dst, bytes) == cudaSuccess, "alloc");
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess, "stream");
	CHECK(ts_devring_copy_out(r, 0, ts_devring_capacity(r), dst, st, &err) == 0, "%s",
	      err.msg); /* warm */
	CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
	CHECK(write(1, "r", 1) == 1, "ready");
	CHECK(read(0, &go, 1) == 0, "start");     /* EOF: the barrier */
	double t0 = now();
	for (int i = 0; i < reps; i++)
		CHECK(ts_devring_copy_out(r, 0, ts_devring_capacity(r), dst, st, &err) == 0, "%s",
		      err.msg);
	CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
	double t1 = now();
	printf("%zu %.9f %.9f\n", bytes * (size_t)reps, t0, t1);
	fflush(stdout);
	cudaStreamDestroy(st);
	cudaFree(dst);
	ts_devring_destroy(r);
	return 0;
}

/* N trainer processes from a barrier; the figure is the bytes all of them
 * copied out of the ring (device to device) over the span from the first
 * start to the last end, and the slowest trainer's own rate: keys
 * trainers_N_copy_out_*, named for what they measure. */
static void bench_trainers(void)
{
	struct ts_finish_params p = { .height = 224, .width = 224, .channels = 3,
				      .dtype = TS_DTYPE_F16 };
	struct ts_devring *r = NULL;
	struct ts_devring_handle h;
	struct ts_error err = {0};
	static const int ns[] = {1, 2, 4, 8};

	CHECK(ts_devring_create(0, small() ? 32 : 1024, small() ? 16 : 512, &p, small() ? 8 : 256,
				&r, &err) == 0, "%s", err.msg);
	CHECK(ts_devring_export(r, &h, &err) == 0, "%s", err.msg);
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		int n = ns[k], in[8], out[8];
		pid_t pid[8];
		double first = 1e300, last = 0, min = 1e300, total = 0;
		for (int i = 0; i < n; i++) {
			int a[2], b[2];
			CHECK(pipe(a) == 0 && pipe(b) == 0, "pipe");
			pid[i] = fork();
			CHECK(pid[i] >= 0, "fork");
			if (pid[i] == 0) {
				dup2(a[0], 0);
				dup2(b[1], 1);
				close(a[1]);
				close(b[0]);
				execl("/proc/self/exe", "bench-gpu", "trainer", (char *)NULL);
				_exit(127);
			}
			close(a[0]);
			close(b[1]);
			in[i] = a[1];
			out[i] = b[0];
			CHECK(write(in[i], &h, sizeof(h)) == (ssize_t)sizeof(h), "handle");
		}
		for (int i = 0; i < n; i++) {
			char c;
			CHECK(read(out[i], &c, 1) == 1 && c == 'r', "trainer %d did not get ready", i);
		}
		for (int i = 0; i < n; i++)
			close(in[i]);               /* go */
		for (int i = 0; i < n; i++) {
			char buf[128] = "";
			int st;
			ssize_t got = read(out[i], buf, sizeof(buf) - 1);
			double bytes = 0, t0 = 0, t1 = 0;
			close(out[i]);
			CHECK(waitpid(pid[i], &st, 0) == pid[i] && WIFEXITED(st) &&
			      WEXITSTATUS(st) == 0, "trainer %d failed", i);
			CHECK(got > 0 && sscanf(buf, "%lf %lf %lf", &bytes, &t0, &t1) == 3 && t1 > t0,
			      "trainer %d: %s", i, buf);
			total += bytes;
			first = t0 < first ? t0 : first;
			last = t1 > last ? t1 : last;
			double g = bytes / (t1 - t0) / 1e9;
			min = g < min ? g : min;
		}
		printf("trainers_%d_copy_out_total_GBps: %.1f\n", n, total / (last - first) / 1e9);
		printf("trainers_%d_copy_out_min_per_trainer_GBps: %.1f\n", n, min);
		fflush(stdout);
	}
	ts_devring_destroy(r);
}

int main(int argc, char **argv)
{
	struct ts_cuda_info info;
	struct ts_error err = {0};

	if (argc == 2 && strcmp(argv[1], "trainer") == 0)
		return trainer(small() ? 2 : 20);
	setvbuf(stdout, NULL, _IOLBF, 0);   /* lines survive a timeout */
	need_gpu("bench-gpu");
	CHECK(ts_cuda_info(0, &info, &err) == 0, "%s", err.msg);
	printf("device: %s (sm_%d%d, %d SMs, %.0f GiB)\n", info.name, info.major, info.minor,
	       info.sm_count, (double)info.total_mem / (1u << 30));
	printf("device_peak_mem_GBps: %.0f\n", info.mem_bandwidth / 1e9);
	fflush(stdout);
	bench_h2d();
	bench_kernel(info.mem_bandwidth);
	bench_trainers();
	return 0;
}
