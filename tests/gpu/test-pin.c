/*
 * test-pin.c - the client's pinning of a ring-like mapping: a memfd mapped
 * read-only twice back to back (as libtsclient maps the ring) is
 * registered in one call through the dlopen'd runtime, an asynchronous
 * copy from it lands the right bytes, and unpinning works.
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpu-common.h"
#include "tsclient_cuda.h"

int main(void)
{
	size_t len = 4u << 20;
	struct ts_client_pinned pin = {0};
	struct ts_error err = {0};
	uint8_t *w, *base, *want, *got;
	void *dev = NULL;
	int fd, n;

	need_gpu("test-pin");
	n = ts_client_cuda_devices(&err);
	CHECK(n >= 1, "client runtime: %s", err.msg);
	fd = memfd_create("test-pin", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)len) == 0, "memfd");
	w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(w != MAP_FAILED, "mmap");
	fill_pixels(w, len, 7);
	base = mmap(NULL, 2 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(base != MAP_FAILED, "reserve");
	CHECK(mmap(base, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == base &&
	      mmap(base + len, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == base + len,
	      "double map");
	CHECK(ts_client_pin_mapping(base + len / 2, &pin, &err) == 0, "%s", err.msg);
	CHECK(pin.base == base && pin.len == 2 * len, "pinned %p+%zu, want %p+%zu",
	      pin.base, pin.len, (void *)base, 2 * len);
	/* a range across the seam, as a batch that wraps */
	want = base + len - 4096;
	got = malloc(8192);
	CHECK(cudaMalloc(&dev, 8192) == cudaSuccess, "cudaMalloc");
	CHECK(cudaMemcpyAsync(dev, want, 8192, cudaMemcpyHostToDevice, 0) == cudaSuccess, "H2D");
	CHECK(cudaMemcpy(got, dev, 8192, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
	CHECK(memcmp(got, want, 8192) == 0, "bytes across the seam");
	CHECK(ts_client_unpin(&pin, &err) == 0, "%s", err.msg);
	CHECK(pin.base == NULL, "cleared");
	CHECK(ts_client_pin_mapping(got, &pin, &err) == -ENOENT || pin.base == NULL,
	      "heap memory is not a ring mapping");
	cudaFree(dev);
	free(got);
	munmap(base, 2 * len);
	munmap(w, len);
	close(fd);
	printf("test-pin: ok\n");
	return 0;
}
