/*
 * test-pin.c - the client's pinning of a ring-like mapping: a memfd mapped
 * read-only twice back to back (as libtsclient maps the ring) is
 * registered in one call through the dlopen'd runtime, exactly those two
 * halves (the writable view that filled it is unmapped first, so that no
 * adjacent mapping of the file can be counted in), and the driver says it
 * is page-locked host memory (cudaPointerGetAttributes). An asynchronous
 * copy across the seam lands the right bytes; a copy from the pinned ring
 * is faster than the same copy from pageable memory (each timed between
 * two synchronisations, median of 5); unpinning works and leaves no
 * error behind.
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpu-common.h"
#include "tsclient_cuda.h"

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

/* GB/s of a host-to-device copy of len bytes from host, median of 5. */
static double h2d(void *dev, const void *host, size_t len, cudaStream_t st)
{
	double r[5];
	for (int i = 0; i < 5; i++) {
		CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
		double t = now();
		CHECK(cudaMemcpyAsync(dev, host, len, cudaMemcpyHostToDevice, st) == cudaSuccess,
		      "H2D");
		CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
		r[i] = (double)len / (now() - t) / 1e9;
	}
	qsort(r, 5, sizeof(r[0]), cmp);
	return r[2];
}

int main(void)
{
	size_t len = 64u << 20;
	struct ts_client_pinned pin = {0};
	struct ts_error err = {0};
	struct cudaPointerAttributes pa;
	uint8_t *w, *base, *want, *got, *pageable;
	void *dev = NULL;
	cudaStream_t st;
	int fd, n;

	need_gpu("test-pin");
	n = ts_client_cuda_devices(&err);
	CHECK(n >= 1, "client runtime: %s", err.msg);
	fd = memfd_create("test-pin", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)len) == 0, "memfd");
	w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(w != MAP_FAILED, "mmap");
	fill_pixels(w, len, 7);
	pageable = malloc(len);
	CHECK(pageable != NULL, "malloc");
	memcpy(pageable, w, len);
	munmap(w, len);   /* no writable view next to the ring's halves */
	base = mmap(NULL, 2 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(base != MAP_FAILED, "reserve");
	CHECK(mmap(base, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == base &&
	      mmap(base + len, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == base + len,
	      "double map");
	CHECK(cudaMalloc(&dev, len) == cudaSuccess, "cudaMalloc");
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess, "stream");
	/* fault the pages in, then time the pageable copy of the same bytes */
	h2d(dev, pageable, len, st);
	double gb_pageable = h2d(dev, pageable, len, st);

	CHECK(cudaPointerGetAttributes(&pa, base) == cudaSuccess &&
	      pa.type != cudaMemoryTypeHost, "the ring is page-locked before pinning");
	CHECK(ts_client_pin_mapping(base + len / 2, &pin, &err) == 0, "%s", err.msg);
	CHECK(pin.base == base && pin.len == 2 * len, "pinned %p+%zu, want %p+%zu",
	      pin.base, pin.len, (void *)base, 2 * len);
	CHECK(cudaPeekAtLastError() == cudaSuccess, "an error left behind");
	for (int half = 0; half < 2; half++) {
		CHECK(cudaPointerGetAttributes(&pa, base + (size_t)half * len + 4096) == cudaSuccess,
		      "cudaPointerGetAttributes");
		CHECK(pa.type == cudaMemoryTypeHost, "half %d of the ring is not page-locked "
		      "(memory type %d)", half, (int)pa.type);
	}
	/* a range across the seam, as a batch that wraps */
	want = base + len - 4096;
	got = malloc(8192);
	CHECK(cudaMemcpyAsync(dev, want, 8192, cudaMemcpyHostToDevice, st) == cudaSuccess, "H2D");
	CHECK(cudaMemcpyAsync(got, dev, 8192, cudaMemcpyDeviceToHost, st) == cudaSuccess, "D2H");
	CHECK(cudaStreamSynchronize(st) == cudaSuccess, "sync");
	CHECK(memcmp(got, want, 8192) == 0, "bytes across the seam");
	h2d(dev, base, len, st);
	double gb_pinned = h2d(dev, base, len, st);
	printf("test-pin: H2D of %zu MiB: pageable %.2f GB/s, pinned ring %.2f GB/s\n",
	       len >> 20, gb_pageable, gb_pinned);
	CHECK(gb_pinned > gb_pageable, "the pinned ring (%.2f GB/s) is not faster than pageable "
	      "memory (%.2f GB/s)", gb_pinned, gb_pageable);
	CHECK(ts_client_unpin(&pin, &err) == 0, "%s", err.msg);
	CHECK(pin.base == NULL, "cleared");
	CHECK(cudaPointerGetAttributes(&pa, base) == cudaSuccess && pa.type != cudaMemoryTypeHost,
	      "still page-locked after unpin");
	CHECK(ts_client_pin_mapping(got, &pin, &err) == -ENOENT && pin.base == NULL,
	      "heap memory is not a ring mapping");
	CHECK(cudaGetLastError() == cudaSuccess, "an error left behind");
	cudaStreamDestroy(st);
	cudaFree(dev);
	free(got);
	free(pageable);
	munmap(base, 2 * len);
	close(fd);
	printf("test-pin: ok\n");
	return 0;
}
