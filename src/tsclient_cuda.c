/*
 * tsclient_cuda.c - pinned ring mappings for trainers (tsclient_cuda.h).
 *
 * The CUDA runtime is reached through dlopen so that libtsclient links
 * nothing of CUDA and loads on any host. The four entry points used are
 * declared here with CUDA's C ABI (cudaError_t is an int enum).
 */
#include "tsclient_cuda.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* cudaHostRegister flags (cuda_runtime_api.h). */
#define CUDA_HOST_REGISTER_PORTABLE 0x01u
#define CUDA_HOST_REGISTER_READ_ONLY 0x08u

struct cudart {
	int (*get_device_count)(int *);
	int (*host_register)(void *, size_t, unsigned int);
	int (*host_unregister)(void *);
	const char *(*get_error_string)(int);
	char why[200];                /* when not loaded */
};

static struct cudart rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

/* Prefer a runtime the process already has (PyTorch's), then load one. */
static void rt_load(void)
{
	static const char *const names[] = { "libcudart.so.13", "libcudart.so.12",
					     "libcudart.so" };
	void *h = NULL;

	for (size_t i = 0; !h && i < TS_ARRAY_LEN(names); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	for (size_t i = 0; !h && i < TS_ARRAY_LEN(names); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(rt.why, sizeof(rt.why),
			 "no CUDA runtime (dlopen libcudart.so: %s)", dlerror());
		return;
	}
	/* POSIX: a void * from dlsym converts to a function pointer */
	*(void **)&rt.get_device_count = dlsym(h, "cudaGetDeviceCount");
	*(void **)&rt.host_register = dlsym(h, "cudaHostRegister");
	*(void **)&rt.host_unregister = dlsym(h, "cudaHostUnregister");
	*(void **)&rt.get_error_string = dlsym(h, "cudaGetErrorString");
	if (!rt.get_device_count || !rt.host_register || !rt.host_unregister ||
	    !rt.get_error_string) {
		snprintf(rt.why, sizeof(rt.why),
			 "the CUDA runtime found lacks cudaHostRegister");
		rt.get_device_count = NULL;
	}
	/* the handle stays open for the life of the process */
}

static int rt_get(struct ts_error *err)
{
	int n = 0, e;

	pthread_once(&rt_once, rt_load);
	if (!rt.get_device_count)
		return ts_error_set(err, TS_E_NODEV, "%s", rt.why);
	e = rt.get_device_count(&n);
	if (e != 0)
		return ts_error_set(err, TS_E_NODEV,
				    "no CUDA device found (cudaGetDeviceCount: %s)",
				    rt.get_error_string(e));
	if (n <= 0)
		return ts_error_set(err, TS_E_NODEV,
				    "no CUDA device found (cudaGetDeviceCount: 0 devices)");
	return n;
}

TS_EXPORT int ts_client_cuda_devices(struct ts_error *err)
{
	return rt_get(err);
}

/* The run of adjacent mappings of one file that holds addr, from
 * /proc/self/maps. */
static int find_mapping(uintptr_t addr, uintptr_t *lo, uintptr_t *hi,
			struct ts_error *err)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t run_lo = 0, run_hi = 0;
	unsigned long long run_ino = 0;
	char run_dev[32] = "";
	bool found = false;

	if (!f)
		return ts_error_set(err, -errno, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		unsigned long long off, ino;
		char perms[8], dev[32];
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %31s %llu",
			   &s, &e, perms, &off, dev, &ino) != 6)
			continue;
		if (ino != 0 && ino == run_ino && strcmp(dev, run_dev) == 0 &&
		    s == run_hi) {
			run_hi = e; /* extends the run */
		} else {
			if (found)
				break;
			run_lo = s;
			run_hi = e;
			run_ino = ino;
			snprintf(run_dev, sizeof(run_dev), "%s", dev);
		}
		if (addr >= s && addr < e) {
			if (ino == 0) {
				fclose(f);
				return ts_error_set(err, -ENOENT,
						    "address %#" PRIxPTR " is not in a shared ring mapping",
						    addr);
			}
			found = true;
		}
	}
	fclose(f);
	if (!found)
		return ts_error_set(err, -ENOENT, "address %#" PRIxPTR " is not mapped", addr);
	*lo = run_lo;
	*hi = run_hi;
	return 0;
}

TS_EXPORT int ts_client_pin_mapping(const void *addr, struct ts_client_pinned *out,
				    struct ts_error *err)
{
	uintptr_t lo, hi;
	int rc, e;

	if (!addr || !out)
		return ts_error_set(err, TS_E_ARG, "pin: no address");
	rc = rt_get(err);
	if (rc < 0)
		return rc;
	rc = find_mapping((uintptr_t)addr, &lo, &hi, err);
	if (rc < 0)
		return rc;
	/* the ring is mapped read-only: ask for a read-only registration
	 * (CUDA >= 11.1), else the driver would try to pin it writable */
	e = rt.host_register((void *)lo, hi - lo,
			     CUDA_HOST_REGISTER_PORTABLE | CUDA_HOST_REGISTER_READ_ONLY);
	if (e != 0)
		return ts_error_set(err, TS_E_NODEV,
				    "cudaHostRegister of the ring (%zu bytes): %s",
				    (size_t)(hi - lo), rt.get_error_string(e));
	out->base = (void *)lo;
	out->len = hi - lo;
	return 0;
}

TS_EXPORT int ts_client_unpin(struct ts_client_pinned *p, struct ts_error *err)
{
	int e;

	if (!p || !p->base)
		return 0;
	pthread_once(&rt_once, rt_load);
	if (!rt.host_unregister)
		return ts_error_set(err, TS_E_NODEV, "%s", rt.why);
	e = rt.host_unregister(p->base);
	if (e != 0)
		return ts_error_set(err, TS_E_NODEV, "cudaHostUnregister: %s",
				    rt.get_error_string(e));
	p->base = NULL;
	p->len = 0;
	return 0;
}
