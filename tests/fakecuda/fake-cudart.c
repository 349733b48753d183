/*
 * fake-cudart.c - a stand-in CUDA runtime for testing libtsclient's device
 * path on a host without a GPU (tests/test-client-device.c). Built as
 * libcudart.so.13 in its own folder and found through LD_LIBRARY_PATH by
 * the client's dlopen. Two "GPUs" with PCI bus ids 0000:0N:00.0; "device
 * memory" is host memory; an IPC handle is the text "fakecuda:FD" of a
 * memfd that cudaIpcOpenMemHandle maps; copies are memcpy. Counters let
 * the test see which calls the client made. Only the calls tsclient_cuda.c
 * resolves exist.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define EXPORT __attribute__((visibility("default")))

struct ipc_handle {
	char reserved[64];
};

/* The runtime API's C signatures (cudaError_t is an int enum). */
int cudaGetDeviceCount(int *n);
int cudaGetDevice(int *d);
int cudaSetDevice(int d);
int cudaDeviceGetPCIBusId(char *buf, int len, int d);
const char *cudaGetErrorString(int e);
int cudaHostRegister(void *p, size_t n, unsigned int flags);
int cudaHostUnregister(void *p);
int cudaIpcOpenMemHandle(void **p, struct ipc_handle h, unsigned int flags);
int cudaIpcCloseMemHandle(void *p);
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
extern int fake_cudart_memcpys, fake_cudart_opens, fake_cudart_closes;

static int cur;                     /* current device */
EXPORT int fake_cudart_memcpys;     /* read by the test */
EXPORT int fake_cudart_opens;
EXPORT int fake_cudart_closes;

EXPORT int cudaGetDeviceCount(int *n)
{
	*n = 2;
	return 0;
}

EXPORT int cudaGetDevice(int *d)
{
	*d = cur;
	return 0;
}

EXPORT int cudaSetDevice(int d)
{
	if (d < 0 || d > 1)
		return 101;           /* cudaErrorInvalidDevice */
	cur = d;
	return 0;
}

EXPORT int cudaDeviceGetPCIBusId(char *buf, int len, int d)
{
	snprintf(buf, (size_t)len, "0000:0%d:00.0", d + 1);
	return 0;
}

EXPORT const char *cudaGetErrorString(int e)
{
	return e == 101 ? "invalid device ordinal (fake)" : "fake cuda error";
}

EXPORT int cudaHostRegister(void *p, size_t n, unsigned int flags)
{
	(void)p, (void)n, (void)flags;
	return 0;
}

EXPORT int cudaHostUnregister(void *p)
{
	(void)p;
	return 0;
}

static struct { void *p; size_t len; } maps[16];

EXPORT int cudaIpcOpenMemHandle(void **p, struct ipc_handle h, unsigned int flags)
{
	int fd = -1;
	struct stat st;
	(void)flags;
	h.reserved[63] = 0;
	if (sscanf(h.reserved, "fakecuda:%d", &fd) != 1 || fstat(fd, &st) != 0)
		return 400;           /* cudaErrorInvalidResourceHandle */
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		if (maps[i].p)
			continue;
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return 2;
		maps[i].p = m;
		maps[i].len = (size_t)st.st_size;
		fake_cudart_opens++;
		*p = m;
		return 0;
	}
	return 2;
}

EXPORT int cudaIpcCloseMemHandle(void *p)
{
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		if (maps[i].p == p) {
			munmap(p, maps[i].len);
			maps[i].p = NULL;
			fake_cudart_closes++;
			return 0;
		}
	}
	return 400;
}

EXPORT int cudaMalloc(void **p, size_t n)
{
	*p = malloc(n);
	return *p ? 0 : 2;
}

EXPORT int cudaFree(void *p)
{
	free(p);
	return 0;
}

EXPORT int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	(void)kind;
	memcpy(dst, src, n);
	fake_cudart_memcpys++;
	return 0;
}
