/*
 * test-devring.c - the device ring across processes: the producer fills
 * it (wrapping), exports its CUDA IPC handle through a pipe to a child
 * process (a fresh exec: CUDA does not survive fork), which opens it on
 * the same GPU, reads the slots in place and compares with the reference;
 * with two or more GPUs a second child opens it on device 1 (peer).
 * The mirror slots after the last make a wrapping batch one span.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu-common.h"

#define CAP 10
#define BATCH 4
static const struct ts_finish_params P = { .height = 16, .width = 16, .channels = 3,
					   .dtype = TS_DTYPE_F32, .normalize = true,
					   .mean = {0.5f, 0.5f, 0.5f},
					   .std = {0.25f, 0.25f, 0.25f} };

/* Child: read the handle from stdin, import on device argv[2], copy out
 * samples seq 8..11 (slots 8, 9, 0, 1: across the wrap) and compare. */
static int child(int dev)
{
	struct ts_devring_handle h;
	struct ts_devring *r = NULL;
	struct ts_error err = {0};
	size_t in = 16 * 16 * 3, sb = ts_finish_sample_bytes(&P);
	uint8_t *src = malloc(BATCH * in), *want = malloc(BATCH * sb), *got = malloc(BATCH * sb);
	void *dst = NULL;

	CHECK(read(0, &h, sizeof(h)) == (ssize_t)sizeof(h), "handle");
	CHECK(ts_cuda_set_device(dev, &err) == 0, "%s", err.msg);
	CHECK(ts_devring_import(&h, &r, &err) == 0, "%s", err.msg);
	CHECK(ts_devring_capacity(r) == CAP && ts_devring_sample_bytes(r) == sb, "geometry");
	CHECK(cudaMalloc(&dst, BATCH * sb) == cudaSuccess, "cudaMalloc");
	CHECK(ts_devring_copy_out(r, 8, BATCH, dst, NULL, &err) == 0, "%s", err.msg);
	CHECK(cudaMemcpy(got, dst, BATCH * sb, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
	fill_pixels(src, BATCH * in, 3); /* the producer's third batch */
	ts_finish_reference(src, want, BATCH, &P);
	CHECK(memcmp(got, want, BATCH * sb) == 0, "device %d: imported samples differ", dev);
	/* the mirror: samples 8..11 are also one span from slot 8 on */
	void *span = ts_devring_span(r, 8, BATCH);
	CHECK(span != NULL, "no contiguous span for 8..11 (mirror %d)", CAP / 2);
	memset(got, 0, BATCH * sb);
	CHECK(cudaMemcpy(got, span, BATCH * sb, cudaMemcpyDefault) == cudaSuccess, "span D2H");
	CHECK(memcmp(got, want, BATCH * sb) == 0, "device %d: the mirrored span differs", dev);
	CHECK(ts_devring_span(r, 8, CAP) == NULL, "a span longer than the mirror allows");
	/* on the caller's stream: there once that stream is synchronised */
	cudaStream_t st;
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess, "stream");
	CHECK(cudaMemset(dst, 0, BATCH * sb) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess,
	      "clear");
	CHECK(ts_devring_copy_out(r, 8, BATCH, dst, st, &err) == 0, "%s", err.msg);
	CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
	CHECK(cudaMemcpy(got, dst, BATCH * sb, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
	CHECK(memcmp(got, want, BATCH * sb) == 0, "device %d: copy on a stream differs", dev);
	cudaStreamDestroy(st);
	CHECK(cudaGetLastError() == cudaSuccess, "an error left behind");
	cudaFree(dst);
	ts_devring_destroy(r);
	free(src);
	free(want);
	free(got);
	printf("child on device %d (producer on %d): samples 8..11 identical\n", dev, h.device);
	return 0;
}

static void run_child(const char *self, int dev, const struct ts_devring_handle *h)
{
	int fd[2], st;
	char d[16];
	pid_t pid;

	CHECK(pipe(fd) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		snprintf(d, sizeof(d), "%d", dev);
		dup2(fd[0], 0);
		close(fd[1]);
		execl(self, self, "child", d, (char *)NULL);
		_exit(127);
	}
	close(fd[0]);
	CHECK(write(fd[1], h, sizeof(*h)) == (ssize_t)sizeof(*h), "write handle");
	close(fd[1]);
	CHECK(waitpid(pid, &st, 0) == pid, "wait");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child on device %d failed", dev);
}

/* Odd sample sizes (7x5, 33x35, 299x299 RGB; float32 and float16): the
 * slots are padded to 16 bytes, so every slot, the mirror's included,
 * starts aligned (a zero-copy view may be read with vector loads, and
 * the one vector kernel writes it); a span read at the slot stride and a
 * packed copy_out both give the reference. Seq 4..7 of a ring of 6
 * wraps (slots 4, 5, 0, 1). */
static void odd_sizes(void)
{
	static const int sizes[][3] = { { 7, 5, 0 }, { 33, 35, 1 }, { 299, 299, 0 }, { 7, 5, 1 } };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct ts_finish_params p = P;
		struct ts_devring *r = NULL;
		struct ts_error err = {0};
		p.height = sizes[k][0];
		p.width = sizes[k][1];
		p.dtype = sizes[k][2] ? TS_DTYPE_F16 : TS_DTYPE_F32;
		size_t in = (size_t)p.height * p.width * 3, sb = ts_finish_sample_bytes(&p);
		size_t ss = ts_finish_sample_stride(&p);
		uint8_t *src = malloc(4 * in), *want = malloc(4 * sb), *got = malloc(4 * sb);
		void *dst = NULL;
		CHECK(src && want && got, "alloc");
		CHECK(sb % 16 != 0, "case %zu is not odd", k);
		CHECK(ts_devring_create(0, 6, 3, &p, 4, &r, &err) == 0, "%s", err.msg);
		CHECK(ts_devring_sample_bytes(r) == sb && ts_devring_sample_stride(r) == ss &&
		      ss % 16 == 0 && ss - sb < 16, "%dx%d: slots %zu apart for %zu bytes",
		      p.height, p.width, ts_devring_sample_stride(r), sb);
		fill_pixels(src, 4 * in, 40 + (uint32_t)k);
		CHECK(ts_devring_fill(r, src, in, 4, 4, &err) == 0, "%s", err.msg);
		ts_finish_reference(src, want, 4, &p);
		for (uint64_t seq = 0; seq < 9; seq++) {
			uint8_t *sp = ts_devring_span(r, seq, 1);
			CHECK(sp && (uintptr_t)sp % 16 == 0, "%dx%d: slot of seq %llu at %p",
			      p.height, p.width, (unsigned long long)seq, (void *)sp);
		}
		uint8_t *span = ts_devring_span(r, 4, 4);
		CHECK(span != NULL, "a span through the mirror");
		CHECK(cudaMemcpy2D(got, sb, span, ss, sb, 4, cudaMemcpyDeviceToHost) == cudaSuccess,
		      "span D2H");
		CHECK(memcmp(got, want, 4 * sb) == 0, "%dx%d: the span at the slot stride differs",
		      p.height, p.width);
		CHECK(cudaMalloc(&dst, 4 * sb) == cudaSuccess, "cudaMalloc");
		CHECK(ts_devring_copy_out(r, 4, 4, dst, NULL, &err) == 0, "%s", err.msg);
		CHECK(cudaMemcpy(got, dst, 4 * sb, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		CHECK(memcmp(got, want, 4 * sb) == 0, "%dx%d: the packed copy differs", p.height,
		      p.width);
		struct ts_devring_handle h;
		CHECK(ts_devring_export(r, &h, &err) == 0 && h.sample_stride == ss, "handle stride");
		cudaFree(dst);
		ts_devring_destroy(r);
		free(src);
		free(want);
		free(got);
		printf("%dx%dx3 %s: slots of %zu bytes for %zu, aligned, identical\n", p.height,
		       p.width, ts_dtype_name(p.dtype), ss, sb);
	}
}

int main(int argc, char **argv)
{
	struct ts_devring *r = NULL;
	struct ts_devring_handle h;
	struct ts_error err = {0};
	size_t in = 16 * 16 * 3;
	uint8_t *src = malloc(BATCH * in);
	int n = 0;

	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child(atoi(argv[2]));
	need_gpu("test-devring");
	CHECK(ts_cuda_probe(&n, &err) == 0, "%s", err.msg);
	CHECK(ts_devring_create(0, CAP, CAP / 2, &P, BATCH, &r, &err) == 0, "%s", err.msg);
	CHECK(ts_devring_create(0, 2, 1, &P, BATCH, &(struct ts_devring *){0}, &err) == TS_E_ARG,
	      "batch larger than the ring is refused");
	/* batches 1, 2, 3 at seq 0, 4, 8: the third wraps (slots 8, 9, 0, 1) */
	for (uint32_t b = 1; b <= 3; b++) {
		fill_pixels(src, BATCH * in, b);
		CHECK(ts_devring_fill(r, src, in, (b - 1) * BATCH, BATCH, &err) == 0, "%s", err.msg);
	}
	CHECK(ts_devring_export(r, &h, &err) == 0, "%s", err.msg);
	CHECK(h.capacity == CAP && h.pid == getpid(), "handle fields");
	run_child("/proc/self/exe", 0, &h);
	if (n >= 2)
		run_child("/proc/self/exe", 1, &h);
	else
		printf("one GPU: the peer-to-peer import is not tested here\n");
	/* padded host slots (the host ring of an odd-sized sample,
	 * sample_stride = in + 64): batch 4 at seq 12 (slots 2..5) from a
	 * strided buffer reads back as the packed samples' finish */
	{
		size_t stride = in + 64, sb = ts_finish_sample_bytes(&P);
		uint8_t *pad = malloc(BATCH * stride), *want = malloc(BATCH * sb),
			*got = malloc(BATCH * sb);
		void *dst = NULL;
		CHECK(pad && want && got, "alloc");
		fill_pixels(src, BATCH * in, 4);
		memset(pad, 0xee, BATCH * stride);
		for (size_t k = 0; k < BATCH; k++)
			memcpy(pad + k * stride, src + k * in, in);
		CHECK(ts_devring_fill(r, pad, in - 1, 12, BATCH, &err) == TS_E_ARG,
		      "a host stride below the sample is refused");
		CHECK(ts_devring_fill(r, pad, stride, 12, BATCH, &err) == 0, "%s", err.msg);
		CHECK(cudaMalloc(&dst, BATCH * sb) == cudaSuccess, "cudaMalloc");
		CHECK(ts_devring_copy_out(r, 12, BATCH, dst, NULL, &err) == 0, "%s", err.msg);
		CHECK(cudaMemcpy(got, dst, BATCH * sb, cudaMemcpyDeviceToHost) == cudaSuccess,
		      "D2H");
		ts_finish_reference(src, want, BATCH, &P);
		CHECK(memcmp(got, want, BATCH * sb) == 0, "samples from padded host slots differ");
		cudaFree(dst);
		free(pad);
		free(want);
		free(got);
	}
	/* a host ring page-locked in pieces of 2 slots: a fill of seq 13..16
	 * from slots 1..4 of a host buffer is split at the piece boundaries
	 * (slots 1 | 2 3 | 4: three copies, each within one registration)
	 * and finishes as one */
	{
		size_t sb = ts_finish_sample_bytes(&P);
		uint8_t *hostring = malloc(6 * in), *want = malloc(BATCH * sb),
			*got = malloc(BATCH * sb);
		void *dst = NULL;
		int *copies = dlsym(RTLD_DEFAULT, "fake_cudart_async_memcpys");
		CHECK(hostring && want && got, "alloc");
		fill_pixels(hostring, 6 * in, 5);
		ts_devring_host_pieces(r, hostring, 2);
		int c0 = copies ? *copies : 0;
		CHECK(ts_devring_fill(r, hostring + in, in, 13, BATCH, &err) == 0, "%s", err.msg);
		if (copies)
			CHECK(*copies - c0 == 3, "%d host copies for a fill across 3 pieces",
			      *copies - c0);
		ts_devring_host_pieces(r, NULL, 0);
		CHECK(cudaMalloc(&dst, BATCH * sb) == cudaSuccess, "cudaMalloc");
		CHECK(ts_devring_copy_out(r, 13, BATCH, dst, NULL, &err) == 0, "%s", err.msg);
		CHECK(cudaMemcpy(got, dst, BATCH * sb, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		ts_finish_reference(hostring + in, want, BATCH, &P);
		CHECK(memcmp(got, want, BATCH * sb) == 0, "a fill split at pieces differs");
		cudaFree(dst);
		free(hostring);
		free(want);
		free(got);
	}
	ts_devring_destroy(r);
	odd_sizes();
	free(src);
	printf("test-devring: ok\n");
	return 0;
}
