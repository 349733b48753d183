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
#include <strings.h>

#include "util.h"

/* cudaHostRegister flags, cudaIpcOpenMemHandle flags and cudaMemcpyKind
 * (cuda_runtime_api.h / driver_types.h). */
#define CUDA_HOST_REGISTER_PORTABLE 0x01u
#define CUDA_HOST_REGISTER_READ_ONLY 0x08u
#define CUDA_IPC_LAZY_ENABLE_PEER_ACCESS 0x01u
#define CUDA_MEMCPY_DEFAULT 4

/* cudaIpcMemHandle_t: 64 opaque bytes, passed by value. */
struct ipc_handle {
	char reserved[64];
};

struct cudart {
	int (*get_device_count)(int *);
	int (*host_register)(void *, size_t, unsigned int);
	int (*host_unregister)(void *);
	const char *(*get_error_string)(int);
	/* for the device ring; NULL when the runtime lacks them */
	int (*get_device)(int *);
	int (*set_device)(int);
	int (*pci_bus_id)(char *, int, int);
	int (*ipc_open)(void **, struct ipc_handle, unsigned int);
	int (*ipc_close)(void *);
	int (*malloc)(void **, size_t);
	int (*free)(void *);
	int (*memcpy)(void *, const void *, size_t, int);
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
	*(void **)&rt.get_device = dlsym(h, "cudaGetDevice");
	*(void **)&rt.set_device = dlsym(h, "cudaSetDevice");
	*(void **)&rt.pci_bus_id = dlsym(h, "cudaDeviceGetPCIBusId");
	*(void **)&rt.ipc_open = dlsym(h, "cudaIpcOpenMemHandle");
	*(void **)&rt.ipc_close = dlsym(h, "cudaIpcCloseMemHandle");
	*(void **)&rt.malloc = dlsym(h, "cudaMalloc");
	*(void **)&rt.free = dlsym(h, "cudaFree");
	*(void **)&rt.memcpy = dlsym(h, "cudaMemcpy");
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

struct ts_client_device {
	struct ts_client_device_info info;
	int device;
	bool zero_copy;
	uint8_t *base;                /* the producer's slots, mapped here */
	uint8_t *buf;                 /* peer copies (another GPU) */
	size_t buf_samples;
};

static int cuda_err(struct ts_error *err, int code, const char *what, int e)
{
	return ts_error_set(err, code, "%s: %s", what, rt.get_error_string(e));
}

TS_EXPORT int ts_client_device_open(struct ts_client *c, int device,
				    struct ts_client_device **out, struct ts_error *err)
{
	struct ts_client_device_info info;
	struct ts_client_info ci;
	struct ipc_handle h;
	char pci[32] = "";
	int rc, e;

	if (!c || !out)
		return ts_error_set(err, TS_E_ARG, "device open: no client");
	rc = ts_client_device_info(c, &info, err);
	if (rc < 0)
		return rc;
	rc = rt_get(err);
	if (rc < 0)
		return rc;
	if (!rt.get_device || !rt.set_device || !rt.pci_bus_id || !rt.ipc_open ||
	    !rt.ipc_close || !rt.malloc || !rt.free || !rt.memcpy)
		return ts_error_set(err, TS_E_NODEV,
				    "the CUDA runtime found lacks the IPC calls (cudaIpcOpenMemHandle)");
	if (device >= 0 && (e = rt.set_device(device)) != 0)
		return cuda_err(err, TS_E_NODEV, "cudaSetDevice", e);
	if ((e = rt.get_device(&device)) != 0)
		return cuda_err(err, TS_E_NODEV, "cudaGetDevice", e);
	if ((e = rt.pci_bus_id(pci, (int)sizeof(pci), device)) != 0)
		return cuda_err(err, TS_E_NODEV, "cudaDeviceGetPCIBusId", e);
	struct ts_client_device *d = calloc(1, sizeof(*d));
	if (!d)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	d->info = info;
	d->device = device;
	d->zero_copy = strcasecmp(pci, info.pci_bus_id) == 0;
	_Static_assert(sizeof(h.reserved) == sizeof(info.ipc), "IPC handle sizes");
	memcpy(h.reserved, info.ipc, sizeof(h.reserved));
	/* on the producer's GPU: its memory itself; on another one the
	 * driver maps it with peer access */
	e = rt.ipc_open((void **)&d->base, h, CUDA_IPC_LAZY_ENABLE_PEER_ACCESS);
	if (e != 0) {
		rc = ts_error_set(err, TS_E_NODEV,
				  "cannot open the producer's device ring (pid %d, GPU %s; "
				  "this process on device %d, %s): cudaIpcOpenMemHandle: %s",
				  info.producer_pid, info.pci_bus_id, device, pci,
				  rt.get_error_string(e));
		free(d);
		return rc;
	}
	if (!d->zero_copy) {
		ts_client_info(c, &ci);
		d->buf_samples = ci.batch_size;
		e = rt.malloc((void **)&d->buf, d->buf_samples * info.sample_bytes);
		if (e != 0) {
			rc = cuda_err(err, TS_E_NOMEM, "cudaMalloc of the peer-copy buffer", e);
			rt.ipc_close(d->base);
			free(d);
			return rc;
		}
	}
	*out = d;
	return 0;
}

TS_EXPORT int ts_client_device_zero_copy(const struct ts_client_device *d)
{
	return d->zero_copy;
}

TS_EXPORT int ts_client_device_ordinal(const struct ts_client_device *d)
{
	return d->device;
}

TS_EXPORT int ts_client_device_batch(struct ts_client_device *d, const struct ts_batch *b,
				     void **ptr, struct ts_error *err)
{
	if (!d || !b || !ptr)
		return ts_error_set(err, TS_E_ARG, "device batch: no batch");
	uint64_t slot = b->seq % d->info.capacity;
	size_t sb = d->info.sample_bytes;
	if (slot + b->n > d->info.capacity + d->info.mirror)
		return ts_error_set(err, TS_E_ARG,
				    "device batch of %zu samples at slot %llu runs past the ring's "
				    "mirror (%llu)", b->n, (unsigned long long)slot,
				    (unsigned long long)d->info.mirror);
	uint8_t *src = d->base + slot * sb;
	if (d->zero_copy) {
		*ptr = src;
		return 0;
	}
	if (b->n > d->buf_samples)
		return ts_error_set(err, TS_E_ARG, "device batch larger than the granted batch");
	/* unified addressing: a peer-to-peer copy onto our GPU */
	int e = rt.memcpy(d->buf, src, b->n * sb, CUDA_MEMCPY_DEFAULT);
	if (e != 0)
		return cuda_err(err, TS_E_NODEV, "peer copy of a device batch (cudaMemcpy)", e);
	*ptr = d->buf;
	return 0;
}

TS_EXPORT int ts_client_device_copy(struct ts_client_device *d, const struct ts_batch *b,
				    void *dst, struct ts_error *err)
{
	void *src = NULL;
	if (!dst)
		return ts_error_set(err, TS_E_ARG, "device copy: no destination");
	int rc = ts_client_device_batch(d, b, &src, err);
	if (rc < 0)
		return rc;
	int e = rt.memcpy(dst, src, b->n * d->info.sample_bytes, CUDA_MEMCPY_DEFAULT);
	if (e != 0)
		return cuda_err(err, TS_E_NODEV, "copy of a device batch (cudaMemcpy)", e);
	return 0;
}

TS_EXPORT void ts_client_device_close(struct ts_client_device *d)
{
	if (!d)
		return;
	if (d->buf)
		rt.free(d->buf);
	if (d->base)
		rt.ipc_close(d->base);
	free(d);
}
