/*
 * tsclient_cuda.c - pinned ring mappings and the device ring for trainers
 * (tsclient_cuda.h).
 *
 * The CUDA runtime is reached through dlopen so that libtsclient links
 * nothing of CUDA and loads on any host. The entry points used are
 * declared here with CUDA's C ABI (cudaError_t is an int enum; streams
 * and events are pointers).
 *
 * The runtime found is usually the host program's own (PyTorch's), so
 * this file must leave it as it found it: every failing call is followed
 * by cudaGetLastError (through rt_fail), or its error would stick and be
 * reported by the host's next kernel launch.
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

/* tsclient.c, not exported: once the mapping is closed after the end of
 * the stream, the producer may stop waiting for this trainer */
void ts_client_hang_up(struct ts_client *c);

/* cudaHostRegister flags, cudaIpcOpenMemHandle flags, cudaMemcpyKind,
 * cudaDeviceAttr, cudaComputeMode and event flags (driver_types.h). */
#define CUDA_HOST_REGISTER_PORTABLE 0x01u
#define CUDA_HOST_REGISTER_READ_ONLY 0x08u
#define CUDA_IPC_LAZY_ENABLE_PEER_ACCESS 0x01u
#define CUDA_MEMCPY_DEFAULT 4
#define CUDA_ATTR_COMPUTE_MODE 20
#define CUDA_ATTR_HOST_REGISTER_READ_ONLY 113
#define CUDA_COMPUTE_MODE_PROHIBITED 2
#define CUDA_COMPUTE_MODE_EXCLUSIVE_PROCESS 3
#define CUDA_EVENT_DISABLE_TIMING 0x02u
#define CUDA_ERROR_NOT_READY 600

/* cudaIpcMemHandle_t: 64 opaque bytes, passed by value. */
struct ipc_handle {
	char reserved[64];
};

/* cudaDeviceProp begins with char name[256] and cudaUUID_t uuid in every
 * runtime since CUDA 10; the struct grows between versions, so it is
 * read into a buffer larger than any of them. */
#define PROP_BUF 8192
#define PROP_UUID_OFF 256

struct cudart {
	int (*get_device_count)(int *);
	int (*host_register)(void *, size_t, unsigned int);
	int (*host_unregister)(void *);
	const char *(*get_error_string)(int);
	int (*get_last_error)(void);
	/* optional: NULL when the runtime lacks them */
	int (*driver_version)(int *);
	int (*runtime_version)(int *);
	int (*get_attribute)(int *, int, int);
	int (*get_properties)(void *, int);
	/* for the device ring */
	int (*get_device)(int *);
	int (*set_device)(int);
	int (*pci_bus_id)(char *, int, int);
	int (*ipc_open)(void **, struct ipc_handle, unsigned int);
	int (*ipc_close)(void *);
	int (*malloc)(void **, size_t);
	int (*free)(void *);
	int (*memcpy_async)(void *, const void *, size_t, int, void *);
	int (*memcpy_2d_async)(void *, size_t, const void *, size_t, size_t, size_t, int,
			       void *);
	int (*stream_sync)(void *);
	int (*event_create)(void **, unsigned int);
	int (*event_destroy)(void *);
	int (*event_record)(void *, void *);
	int (*event_sync)(void *);
	int (*event_query)(void *);
	/* optional: the device a stream belongs to (CUDA 12.8 on), and a
	 * device-wide wait before a mapping goes */
	int (*stream_get_device)(void *, int *);
	int (*device_sync)(void);
	char why[200];                /* when not loaded */
};

static struct cudart rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

#define SYM(field, name) (*(void **)&rt.field = dlsym(h, name))

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
	SYM(get_device_count, "cudaGetDeviceCount");
	SYM(host_register, "cudaHostRegister");
	SYM(host_unregister, "cudaHostUnregister");
	SYM(get_error_string, "cudaGetErrorString");
	SYM(get_last_error, "cudaGetLastError");
	SYM(driver_version, "cudaDriverGetVersion");
	SYM(runtime_version, "cudaRuntimeGetVersion");
	SYM(get_attribute, "cudaDeviceGetAttribute");
	/* CUDA 12 exports the current layout as _v2 (its header renames
	 * the call); CUDA 13 under the plain name */
	if (!SYM(get_properties, "cudaGetDeviceProperties_v2"))
		SYM(get_properties, "cudaGetDeviceProperties");
	SYM(get_device, "cudaGetDevice");
	SYM(set_device, "cudaSetDevice");
	SYM(pci_bus_id, "cudaDeviceGetPCIBusId");
	SYM(ipc_open, "cudaIpcOpenMemHandle");
	SYM(ipc_close, "cudaIpcCloseMemHandle");
	SYM(malloc, "cudaMalloc");
	SYM(free, "cudaFree");
	SYM(memcpy_async, "cudaMemcpyAsync");
	SYM(memcpy_2d_async, "cudaMemcpy2DAsync");
	SYM(stream_sync, "cudaStreamSynchronize");
	SYM(event_create, "cudaEventCreateWithFlags");
	SYM(event_destroy, "cudaEventDestroy");
	SYM(event_record, "cudaEventRecord");
	SYM(event_sync, "cudaEventSynchronize");
	SYM(event_query, "cudaEventQuery");
	SYM(stream_get_device, "cudaStreamGetDevice");
	SYM(device_sync, "cudaDeviceSynchronize");
	if (!rt.get_device_count || !rt.host_register || !rt.host_unregister ||
	    !rt.get_error_string || !rt.get_last_error) {
		snprintf(rt.why, sizeof(rt.why),
			 "the CUDA runtime found lacks cudaHostRegister or cudaGetLastError");
		rt.get_device_count = NULL;
	}
	/* the handle stays open for the life of the process */
}

/* A CUDA call failed with e: clear the runtime's last error (it sticks
 * until read, and would surface in the host's next kernel launch) and
 * fill err with what, the CUDA message and code. */
static int rt_fail(struct ts_error *err, int code, const char *what, int e)
{
	rt.get_last_error();
	return ts_error_set(err, code, "%s: %s (CUDA error %d)", what,
			    rt.get_error_string(e), e);
}

TS_EXPORT void ts_client_cuda_versions(int *driver, int *runtime)
{
	int d = 0, r = 0;
	pthread_once(&rt_once, rt_load);
	if (rt.get_device_count && rt.driver_version && rt.driver_version(&d) != 0) {
		d = 0;
		rt.get_last_error();
	}
	if (rt.get_device_count && rt.runtime_version && rt.runtime_version(&r) != 0) {
		r = 0;
		rt.get_last_error();
	}
	if (driver)
		*driver = d;
	if (runtime)
		*runtime = r;
}

static int rt_get(struct ts_error *err)
{
	int n = 0, e;

	pthread_once(&rt_once, rt_load);
	if (!rt.get_device_count)
		return ts_error_set(err, TS_E_NODEV, "%s", rt.why);
	e = rt.get_device_count(&n);
	if (e != 0) {
		int drv = 0, run = 0;
		rt.get_last_error();
		ts_client_cuda_versions(&drv, &run);
		/* a runtime newer than the driver fails here: say both */
		return ts_error_set(err, TS_E_NODEV,
				    "no CUDA device found (cudaGetDeviceCount: %s; driver "
				    "supports CUDA %d.%d, runtime is CUDA %d.%d%s)",
				    rt.get_error_string(e), drv / 1000, drv % 1000 / 10,
				    run / 1000, run % 1000 / 10,
				    drv == 0 ? ", no driver" : drv < run ?
				    ", a driver too old for this runtime" : "");
	}
	if (n <= 0)
		return ts_error_set(err, TS_E_NODEV,
				    "no CUDA device found (cudaGetDeviceCount: 0 devices)");
	return n;
}

TS_EXPORT int ts_client_cuda_devices(struct ts_error *err)
{
	return rt_get(err);
}

/* One line of /proc/self/maps. */
struct mapping {
	uintptr_t s, e;
	unsigned long long off, ino;
	char dev[32];
};

/* The file offset mapped at address a of m. */
static unsigned long long file_off(const struct mapping *m, uintptr_t a)
{
	return m->off + (a - m->s);
}

/*
 * The double-mapped region whose seam is where mapping a ends and b
 * begins: the same file, and b's offset jumps back by L from where a's
 * left off, with a covering the L bytes before the seam and b the L
 * after (the kernel may have merged a neighbouring mapping of the same
 * file into either, so they can be longer). 0 and [*lo, *hi) or -1.
 */
static int seam(const struct mapping *a, const struct mapping *b, uintptr_t *lo,
		uintptr_t *hi)
{
	if (a->ino == 0 || a->ino != b->ino || strcmp(a->dev, b->dev) != 0 || a->e != b->s)
		return -1;
	unsigned long long end_a = file_off(a, a->e);
	if (b->off >= end_a)
		return -1;
	uintptr_t len = (uintptr_t)(end_a - b->off);
	if (a->e - a->s < len || b->e - b->s < len)
		return -1;
	*lo = a->e - len;
	*hi = b->s + len;
	return 0;
}

/* The ring's data region around addr, from /proc/self/maps: libtsclient
 * maps the data region twice back to back (slot capacity - 1 runs on
 * into slot 0), so its two halves map the same file range; the region is
 * exactly those two halves, whatever else of the file is mapped next to
 * them (the header, another view). An address in no such pair gets the
 * one mapping that holds it. */
static int find_mapping(uintptr_t addr, uintptr_t *lo, uintptr_t *hi,
			struct ts_error *err)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	struct mapping prev = {0}, cur = {0}, hit = {0};
	bool have_prev = false, found = false;
	uintptr_t l, h;

	if (!f)
		return ts_error_set(err, -errno, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char perms[8];
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %31s %llu",
			   &cur.s, &cur.e, perms, &cur.off, cur.dev, &cur.ino) != 6)
			continue;
		if (found) {
			/* addr in the first half: the seam at the hit's end */
			if (seam(&hit, &cur, &l, &h) == 0 && addr >= l && addr < h) {
				*lo = l;
				*hi = h;
				fclose(f);
				return 0;
			}
			break;
		}
		if (addr >= cur.s && addr < cur.e) {
			if (cur.ino == 0) {
				fclose(f);
				return ts_error_set(err, -ENOENT,
						    "address %#" PRIxPTR " is not in a shared ring mapping",
						    addr);
			}
			found = true;
			hit = cur;
			/* in the second half: the seam at its start */
			if (have_prev && seam(&prev, &cur, &l, &h) == 0 && addr >= l && addr < h) {
				*lo = l;
				*hi = h;
				fclose(f);
				return 0;
			}
		}
		prev = cur;
		have_prev = true;
	}
	fclose(f);
	if (!found)
		return ts_error_set(err, -ENOENT, "address %#" PRIxPTR " is not mapped", addr);
	*lo = hit.s;
	*hi = hit.e;
	return 0;
}

TS_EXPORT int ts_client_pin_mapping(const void *addr, struct ts_client_pinned *out,
				    struct ts_error *err)
{
	uintptr_t lo = 0, hi = 0;
	int rc, e, dev = 0, ro = 0;

	if (!addr || !out)
		return ts_error_set(err, TS_E_ARG, "pin: no address");
	rc = rt_get(err);
	if (rc < 0)
		return rc;
	rc = find_mapping((uintptr_t)addr, &lo, &hi, err);
	if (rc < 0)
		return rc;
	/* The ring is mapped read-only: without cudaHostRegisterReadOnly
	 * the driver would try to pin it writable and fail, so the device
	 * must support that flag (CUDA >= 11.1 and the hardware). */
	if (!rt.get_device || !rt.get_attribute)
		return ts_error_set(err, TS_E_NODEV,
				    "the CUDA runtime found lacks cudaDeviceGetAttribute");
	if ((e = rt.get_device(&dev)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaGetDevice", e);
	if ((e = rt.get_attribute(&ro, CUDA_ATTR_HOST_REGISTER_READ_ONLY, dev)) != 0)
		return rt_fail(err, TS_E_NODEV,
			       "cudaDeviceGetAttribute(cudaDevAttrHostRegisterReadOnlySupported)", e);
	if (!ro)
		return ts_error_set(err, TS_E_NODEV,
				    "device %d cannot page-lock read-only memory "
				    "(cudaDevAttrHostRegisterReadOnlySupported is 0), and the ring is "
				    "mapped read-only; copies from it stay pageable", dev);
	e = rt.host_register((void *)lo, hi - lo,
			     CUDA_HOST_REGISTER_PORTABLE | CUDA_HOST_REGISTER_READ_ONLY);
	if (e != 0) {
		char what[96];
		snprintf(what, sizeof(what), "cudaHostRegister of the ring (%zu bytes)",
			 (size_t)(hi - lo));
		return rt_fail(err, TS_E_NODEV, what, e);
	}
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
	if (!rt.get_device_count)
		return ts_error_set(err, TS_E_NODEV, "%s", rt.why);
	e = rt.host_unregister(p->base);
	if (e != 0)
		return rt_fail(err, TS_E_NODEV, "cudaHostUnregister", e);
	p->base = NULL;
	p->len = 0;
	return 0;
}

#define MAX_USES 16
#define MAX_OUTSTANDING 8

/* A batch handed out in outstanding mode, with the uses recorded on it. */
struct held {
	uint64_t seq;
	unsigned slot;                /* its part of the peer-copy buffer */
	size_t n_uses;
	void *uses[MAX_USES];
	int use_dev[MAX_USES];
};

struct ts_client_device {
	struct ts_client *c;
	struct ts_client_device_info info;
	int device;
	bool zero_copy;
	bool ended;                   /* the stream ended */
	unsigned holds;
	bool closed;                  /* ts_client_device_close came while
					 held: the last unhold frees */
	uint8_t *base;                /* the producer's slots, mapped here;
					 NULL once closed */
	uint8_t *buf;                 /* peer copies (another GPU) */
	size_t buf_samples;
	/* events recorded by ts_client_device_record_use, with the device
	 * each was created on */
	void *uses[MAX_USES];
	int use_dev[MAX_USES];
	size_t n_uses;
	void *pool[MAX_USES];         /* events to reuse */
	int pool_dev[MAX_USES];
	size_t n_pool;
	/* outstanding mode (ts_client_device_set_outstanding, k > 1): the
	 * batches handed out and not yet given back, oldest first */
	unsigned k;
	bool started;
	struct held out[MAX_OUTSTANDING];
	size_t n_out;
};

/* The device's compute mode forbids sharing it with the producer. */
static int check_compute_mode(int device, struct ts_error *err)
{
	int mode = 0, e;
	if (!rt.get_attribute)
		return 0;
	if ((e = rt.get_attribute(&mode, CUDA_ATTR_COMPUTE_MODE, device)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaDeviceGetAttribute(cudaDevAttrComputeMode)", e);
	if (mode == CUDA_COMPUTE_MODE_EXCLUSIVE_PROCESS)
		return ts_error_set(err, TS_E_NODEV,
				    "device %d is in exclusive-process compute mode (one process "
				    "per GPU, common under Slurm): this trainer cannot share it "
				    "with the producer's device ring; ask for the default compute "
				    "mode (nvidia-smi -c DEFAULT) or run the pipeline without "
				    "device(cuda)", device);
	if (mode == CUDA_COMPUTE_MODE_PROHIBITED)
		return ts_error_set(err, TS_E_NODEV,
				    "device %d is in prohibited compute mode (nvidia-smi -c "
				    "PROHIBITED): no process may use it", device);
	return 0;
}

/* The UUID of device (cudaDeviceProp.uuid), or TS_E_NODEV. */
static int device_uuid(int device, unsigned char uuid[16], struct ts_error *err)
{
	unsigned char *prop;
	int e;
	if (!rt.get_properties)
		return ts_error_set(err, TS_E_NODEV,
				    "the CUDA runtime found lacks cudaGetDeviceProperties");
	prop = calloc(1, PROP_BUF);
	if (!prop)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	e = rt.get_properties(prop, device);
	if (e == 0)
		memcpy(uuid, prop + PROP_UUID_OFF, 16);
	free(prop);
	return e ? rt_fail(err, TS_E_NODEV, "cudaGetDeviceProperties", e) : 0;
}

static bool uuid_zero(const unsigned char u[16])
{
	for (int i = 0; i < 16; i++)
		if (u[i])
			return false;
	return true;
}

TS_EXPORT int ts_client_device_open(struct ts_client *c, int device,
				    struct ts_client_device **out, struct ts_error *err)
{
	struct ts_client_device_info info;
	struct ts_client_info ci;
	struct ipc_handle h;
	unsigned char want[16], have[16];
	char pci[32] = "";
	int rc, e;

	if (!c || !out)
		return ts_error_set(err, TS_E_ARG, "device open: no client");
	rc = ts_client_device_info(c, &info, err);
	if (rc < 0)
		return rc;
	rc = ts_client_device_uuid(c, want, err);
	if (rc < 0)
		return rc;
	rc = rt_get(err);
	if (rc < 0)
		return rc;
	if (!rt.get_device || !rt.set_device || !rt.pci_bus_id || !rt.ipc_open ||
	    !rt.ipc_close || !rt.malloc || !rt.free || !rt.memcpy_async ||
	    !rt.memcpy_2d_async || !rt.stream_sync ||
	    !rt.event_create || !rt.event_destroy || !rt.event_record || !rt.event_sync ||
	    !rt.event_query)
		return ts_error_set(err, TS_E_NODEV,
				    "the CUDA runtime found lacks the IPC, stream or event calls");
	if (device >= 0 && (e = rt.set_device(device)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaSetDevice", e);
	if ((e = rt.get_device(&device)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaGetDevice", e);
	rc = check_compute_mode(device, err);
	if (rc < 0)
		return rc;
	if ((e = rt.pci_bus_id(pci, (int)sizeof(pci), device)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaDeviceGetPCIBusId", e);
	rc = device_uuid(device, have, err);
	if (rc < 0)
		return rc;
	struct ts_client_device *d = calloc(1, sizeof(*d));
	if (!d)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	d->c = c;
	d->info = info;
	d->device = device;
	d->k = 1;
	/* MIG instances of one GPU share its PCI bus id: the UUID decides
	 * (a producer too old to send one sends zeros: the bus id then) */
	d->zero_copy = uuid_zero(want) ? strcasecmp(pci, info.pci_bus_id) == 0
				       : memcmp(want, have, 16) == 0;
	_Static_assert(sizeof(h.reserved) == sizeof(info.ipc), "IPC handle sizes");
	memcpy(h.reserved, info.ipc, sizeof(h.reserved));
	/* on the producer's GPU: its memory itself; on another one the
	 * driver maps it with peer access */
	e = rt.ipc_open((void **)&d->base, h, CUDA_IPC_LAZY_ENABLE_PEER_ACCESS);
	if (e != 0) {
		char what[256];
		snprintf(what, sizeof(what),
			 "cannot open the producer's device ring (pid %d, GPU %s; this "
			 "process on device %d, %s%s): cudaIpcOpenMemHandle",
			 info.producer_pid, info.pci_bus_id, device, pci,
			 strcasecmp(pci, info.pci_bus_id) == 0 && !d->zero_copy ?
			 ", another MIG instance of the same GPU: CUDA IPC does not cross "
			 "MIG instances" : "");
		rc = rt_fail(err, TS_E_NODEV, what, e);
		free(d);
		return rc;
	}
	if (!d->zero_copy) {
		ts_client_info(c, &ci);
		d->buf_samples = ci.batch_size;
		e = rt.malloc((void **)&d->buf, d->buf_samples * info.sample_stride);
		if (e != 0) {
			rc = rt_fail(err, TS_E_NOMEM, "cudaMalloc of the peer-copy buffer", e);
			if (rt.ipc_close(d->base) != 0)
				rt.get_last_error();
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

TS_EXPORT int ts_client_device_mapped(const struct ts_client_device *d)
{
	return d && d->base != NULL;
}

/* b's samples in the mapped ring (one span, thanks to the mirror). */
static int span(struct ts_client_device *d, const struct ts_batch *b, uint8_t **src,
		struct ts_error *err)
{
	if (!d || !b)
		return ts_error_set(err, TS_E_ARG, "device batch: no batch");
	if (!d->base)
		return ts_error_set(err, TS_E_EOS,
				    "the device ring was closed at the end of the stream");
	uint64_t slot = b->seq % d->info.capacity;
	if (slot + b->n > d->info.capacity + d->info.mirror)
		return ts_error_set(err, TS_E_ARG,
				    "device batch of %zu samples at slot %llu runs past the ring's "
				    "mirror (%llu)", b->n, (unsigned long long)slot,
				    (unsigned long long)d->info.mirror);
	*src = d->base + slot * d->info.sample_stride;
	return 0;
}

/* Copy rows of width bytes, spitch apart at src, dpitch apart at dst
 * (one plain copy when both are width), on stream. */
static int copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
		     size_t rows, void *stream)
{
	if (dpitch == width && spitch == width)
		return rt.memcpy_async(dst, src, rows * width, CUDA_MEMCPY_DEFAULT, stream);
	return rt.memcpy_2d_async(dst, dpitch, src, spitch, width, rows, CUDA_MEMCPY_DEFAULT,
				  stream);
}

/* Copy n samples from the ring's slots at src (sample_stride apart) to
 * dst, dpitch apart (sample_stride: the same layout; sample_bytes:
 * packed), on stream; with sync, on the legacy stream of the batch's
 * device (made current: the copy is queued on the current device's
 * stream) and waited for. A device-to-device cudaMemcpy would not wait
 * on the host, so the plain calls synchronise explicitly. */
static int copy(struct ts_client_device *d, void *dst, size_t dpitch, const void *src,
		size_t n, void *stream, bool sync, const char *what, struct ts_error *err)
{
	/* the same layout (w = sp): one copy of the whole span, padding and
	 * all; packed: sample_bytes of each slot */
	size_t sp = d->info.sample_stride, w = dpitch < sp ? dpitch : sp;
	int e, cur = d->device;
	if (!sync) {
		e = copy_rows(dst, dpitch, src, sp, w, n, stream);
		return e ? rt_fail(err, TS_E_NODEV, what, e) : 0;
	}
	/* the caller's current device is put back afterwards (PyTorch
	 * keeps its own notion of it) */
	if ((e = rt.get_device(&cur)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaGetDevice", e);
	if (cur != d->device && (e = rt.set_device(d->device)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaSetDevice", e);
	e = copy_rows(dst, dpitch, src, sp, w, n, NULL);
	if (e == 0)
		e = rt.stream_sync(NULL);
	int rc = e ? rt_fail(err, TS_E_NODEV, what, e) : 0;
	if (cur != d->device && rt.set_device(cur) != 0)
		rt.get_last_error();
	return rc;
}

static int batch(struct ts_client_device *d, const struct ts_batch *b, void *stream,
		 bool sync, void **ptr, struct ts_error *err)
{
	uint8_t *src = NULL;
	int rc = span(d, b, &src, err);
	if (rc < 0)
		return rc;
	if (!ptr)
		return ts_error_set(err, TS_E_ARG, "device batch: no pointer");
	if (d->zero_copy) {
		*ptr = src;
		return 0;
	}
	if (b->n > d->buf_samples)
		return ts_error_set(err, TS_E_ARG, "device batch larger than the granted batch");
	/* outstanding batches each have their own part of the buffer */
	uint8_t *dst = d->buf;
	if (d->k > 1) {
		size_t i = 0;
		while (i < d->n_out && d->out[i].seq != b->seq)
			i++;
		if (i == d->n_out)
			return ts_error_set(err, TS_E_ARG,
					    "device batch at seq %llu is not outstanding",
					    (unsigned long long)b->seq);
		dst += (size_t)d->out[i].slot * d->buf_samples * d->info.sample_stride;
	}
	/* unified addressing: a peer-to-peer copy onto our GPU, in the
	 * ring's layout (samples sample_stride apart, as zero-copy) */
	rc = copy(d, dst, d->info.sample_stride, src, b->n, stream, sync,
		  "peer copy of a device batch (cudaMemcpyAsync)", err);
	if (rc < 0)
		return rc;
	*ptr = dst;
	return 0;
}

TS_EXPORT int ts_client_device_batch(struct ts_client_device *d, const struct ts_batch *b,
				     void **ptr, struct ts_error *err)
{
	return batch(d, b, NULL, true, ptr, err);
}

TS_EXPORT int ts_client_device_batch_async(struct ts_client_device *d,
					   const struct ts_batch *b, void *stream,
					   void **ptr, struct ts_error *err)
{
	return batch(d, b, stream, false, ptr, err);
}

static int copy_out(struct ts_client_device *d, const struct ts_batch *b, void *dst,
		    void *stream, bool sync, struct ts_error *err)
{
	uint8_t *src = NULL;
	if (!dst)
		return ts_error_set(err, TS_E_ARG, "device copy: no destination");
	int rc = span(d, b, &src, err);
	if (rc < 0)
		return rc;
	/* packed: the slots' padding stays behind */
	return copy(d, dst, d->info.sample_bytes, src, b->n, stream, sync,
		    d->info.sample_stride == d->info.sample_bytes
			    ? "copy of a device batch (cudaMemcpyAsync)"
			    : "copy of a device batch (cudaMemcpy2DAsync)", err);
}

TS_EXPORT int ts_client_device_copy(struct ts_client_device *d, const struct ts_batch *b,
				    void *dst, struct ts_error *err)
{
	return copy_out(d, b, dst, NULL, true, err);
}

TS_EXPORT int ts_client_device_copy_async(struct ts_client_device *d,
					  const struct ts_batch *b, void *dst, void *stream,
					  struct ts_error *err)
{
	return copy_out(d, b, dst, stream, false, err);
}

TS_EXPORT int ts_client_device_record_use(struct ts_client_device *d, void *stream,
					  struct ts_error *err)
{
	void *ev = NULL;
	int dev = 0, e;

	if (!d)
		return ts_error_set(err, TS_E_ARG, "record use: no device");
	if (d->n_uses == MAX_USES)
		return ts_error_set(err, TS_E_ARG,
				    "more than %d uses recorded for one batch", MAX_USES);
	/* an event must be recorded on a stream of the device it was
	 * created on ("cudaErrorInvalidResourceHandle" otherwise, and no
	 * use recorded): the stream's own device where the runtime says
	 * (cudaStreamGetDevice), else the caller's current one */
	int cur = 0, sdev = -1;
	if ((e = rt.get_device(&cur)) != 0)
		return rt_fail(err, TS_E_NODEV, "cudaGetDevice", e);
	dev = cur;
	if (rt.stream_get_device) {
		if ((e = rt.stream_get_device(stream, &sdev)) != 0)
			return rt_fail(err, TS_E_ARG, "cudaStreamGetDevice (the stream of a use)", e);
		dev = sdev;
	}
	for (size_t i = 0; i < d->n_pool; i++)
		if (d->pool_dev[i] == dev) {
			ev = d->pool[i];
			d->pool[i] = d->pool[--d->n_pool];
			d->pool_dev[i] = d->pool_dev[d->n_pool];
			break;
		}
	if (!ev) {
		/* created on the stream's device, made current for it */
		if (dev != cur && (e = rt.set_device(dev)) != 0)
			return rt_fail(err, TS_E_NODEV, "cudaSetDevice (the stream's device)", e);
		e = rt.event_create(&ev, CUDA_EVENT_DISABLE_TIMING);
		if (dev != cur && rt.set_device(cur) != 0)
			rt.get_last_error();
		if (e != 0)
			return rt_fail(err, TS_E_NODEV, "cudaEventCreateWithFlags", e);
	}
	if ((e = rt.event_record(ev, stream)) != 0) {
		int rc = rt_fail(err, TS_E_NODEV, "cudaEventRecord", e);
		if (rt.event_destroy(ev) != 0)
			rt.get_last_error();
		return rc;
	}
	d->uses[d->n_uses] = ev;
	d->use_dev[d->n_uses++] = dev;
	return 0;
}

static void recycle(struct ts_client_device *d, void *ev, int dev);

TS_EXPORT int ts_client_device_wait_uses(struct ts_client_device *d, struct ts_error *err)
{
	int rc = 0;
	if (!d)
		return 0;
	for (size_t i = 0; i < d->n_uses; i++) {
		int e = rt.event_sync(d->uses[i]);
		if (e != 0 && rc == 0)
			rc = rt_fail(err, TS_E_NODEV, "cudaEventSynchronize (a recorded use)", e);
		recycle(d, d->uses[i], d->use_dev[i]);
	}
	d->n_uses = 0;
	return rc;
}

/* Give an event back to the pool (or destroy it when the pool is full). */
static void recycle(struct ts_client_device *d, void *ev, int dev)
{
	if (d->n_pool < MAX_USES) {
		d->pool[d->n_pool] = ev;
		d->pool_dev[d->n_pool++] = dev;
	} else if (rt.event_destroy(ev) != 0) {
		rt.get_last_error();
	}
}

/* Whether every use recorded on h has finished; wait for them with block. */
static bool held_done(struct ts_client_device *d, struct held *h, bool block,
		      struct ts_error *err, int *rc)
{
	for (size_t i = 0; i < h->n_uses; i++) {
		int e = block ? rt.event_sync(h->uses[i]) : rt.event_query(h->uses[i]);
		if (e == CUDA_ERROR_NOT_READY) {
			/* "not actually an error", but the runtime keeps it
			 * as the last error: clear it, as PyTorch's
			 * CUDAEvent::query does, or the host program's next
			 * check reports it */
			rt.get_last_error();
			return false;
		}
		if (e != 0 && *rc == 0)
			*rc = rt_fail(err, TS_E_NODEV, "a recorded use of a device batch", e);
		recycle(d, h->uses[i], h->use_dev[i]);
		h->uses[i] = h->uses[h->n_uses - 1];
		h->use_dev[i] = h->use_dev[h->n_uses - 1];
		h->n_uses--;
		i--;
	}
	return true;
}

/* Outstanding mode: give back the oldest batches whose uses finished,
 * waiting for the oldest ones until at most keep remain; the ring's
 * slots below the oldest batch still held go back to the producer. */
static int settle(struct ts_client_device *d, size_t keep, struct ts_error *err)
{
	int rc = 0;
	size_t gone = 0;
	while (gone < d->n_out &&
	       held_done(d, &d->out[gone], d->n_out - gone > keep, err, &rc))
		gone++;
	if (gone) {
		memmove(d->out, d->out + gone, (d->n_out - gone) * sizeof(d->out[0]));
		d->n_out -= gone;
		ts_client_release_below(d->c, d->n_out ? d->out[0].seq : UINT64_MAX);
	}
	return rc;
}

/* The uses recorded since the last batch belong to the newest one held. */
static void file_uses(struct ts_client_device *d)
{
	struct held *h = d->n_out ? &d->out[d->n_out - 1] : NULL;
	for (size_t i = 0; i < d->n_uses; i++) {
		if (h && h->n_uses < MAX_USES) {
			h->uses[h->n_uses] = d->uses[i];
			h->use_dev[h->n_uses++] = d->use_dev[i];
		} else {
			/* no batch to file it under: wait here */
			if (rt.event_sync(d->uses[i]) != 0)
				rt.get_last_error();
			recycle(d, d->uses[i], d->use_dev[i]);
		}
	}
	d->n_uses = 0;
}

/* Close the IPC mapping once (recorded uses finished first). */
static void unmap(struct ts_client_device *d)
{
	if (!d->base)
		return;
	ts_client_device_wait_uses(d, NULL);
	if (d->k > 1 && d->c) {
		settle(d, 0, NULL);
	}
	/* work still queued on any stream of the mapping's device may read
	 * it (a peer copy, or a caller's non-blocking stream reading a raw
	 * view without a recorded use): cudaDeviceSynchronize waits for all
	 * of it, where syncing the legacy stream waits only for its own */
	int cur = d->device, e;
	if (rt.get_device(&cur) != 0)
		rt.get_last_error();
	if (cur != d->device && rt.set_device(d->device) != 0)
		rt.get_last_error();
	e = rt.device_sync ? rt.device_sync() : rt.stream_sync(NULL);
	if (e != 0)
		rt.get_last_error();
	if (rt.ipc_close(d->base) != 0)
		rt.get_last_error();
	if (cur != d->device && rt.set_device(cur) != 0)
		rt.get_last_error();
	d->base = NULL;
}

TS_EXPORT int ts_client_device_next(struct ts_client_device *d, struct ts_batch *b,
				    struct ts_error *err)
{
	if (!d || !b)
		return ts_error_set(err, TS_E_ARG, "device next: no device or batch");
	int rc;
	d->started = true;
	if (d->k > 1) {
		/* outstanding mode: at most k - 1 held before one more */
		file_uses(d);
		rc = settle(d, d->k - 1, err);
		if (rc < 0)
			return rc;
		while ((rc = ts_client_next_held(d->c, b, err)) == -EAGAIN && d->n_out > 0) {
			/* the oldest batch's slots keep the producer from
			 * publishing the next one: wait for its uses */
			rc = settle(d, d->n_out - 1, err);
			if (rc < 0)
				return rc;
		}
		if (rc == 0) {
			/* a part of the peer-copy buffer no held batch uses */
			unsigned slot = 0;
			for (size_t i = 0; i < d->n_out; i++)
				if (d->out[i].slot == slot) {
					slot++;
					i = (size_t)-1;
				}
			d->out[d->n_out++] = (struct held){ .seq = b->seq, .slot = slot };
			return 0;
		}
	} else {
		/* the previous batch's slots go back inside ts_client_next:
		 * the GPU work that reads them must be done by then */
		rc = ts_client_device_wait_uses(d, err);
		if (rc < 0)
			return rc;
		rc = ts_client_next(d->c, b, err);
	}
	if (rc == TS_E_EOS || rc == TS_E_PRODUCER) {
		d->ended = true;
		if (d->holds == 0) {
			unmap(d);
			ts_client_hang_up(d->c);
		}
	}
	return rc;
}

TS_EXPORT int ts_client_device_set_outstanding(struct ts_client_device *d, unsigned k,
					       struct ts_error *err)
{
	if (!d || k < 1 || k > MAX_OUTSTANDING)
		return ts_error_set(err, TS_E_ARG, "outstanding batches: 1 to %d",
				    MAX_OUTSTANDING);
	if (d->started)
		return ts_error_set(err, TS_E_ARG,
				    "outstanding batches: set before the first batch");
	if (!d->zero_copy && k != d->k) {
		/* peer copies: one batch's worth of buffer per outstanding batch */
		void *buf = NULL;
		int e = rt.malloc(&buf, (size_t)k * d->buf_samples * d->info.sample_stride);
		if (e != 0)
			return rt_fail(err, TS_E_NOMEM, "cudaMalloc of the peer-copy buffers", e);
		if (rt.free(d->buf) != 0)
			rt.get_last_error();
		d->buf = buf;
	}
	d->k = k;
	return 0;
}

TS_EXPORT unsigned ts_client_device_outstanding(const struct ts_client_device *d)
{
	return d ? (unsigned)d->n_out : 0;
}

TS_EXPORT void ts_client_device_hold(struct ts_client_device *d)
{
	if (d)
		d->holds++;
}

static void destroy(struct ts_client_device *d);

TS_EXPORT void ts_client_device_unhold(struct ts_client_device *d)
{
	if (!d || d->holds == 0)
		return;
	if (--d->holds == 0 && d->closed) {
		destroy(d);          /* closed while held: the last view went */
	} else if (d->holds == 0 && d->ended) {
		unmap(d);
		ts_client_hang_up(d->c);
	}
}

TS_EXPORT void ts_client_device_close(struct ts_client_device *d)
{
	if (!d)
		return;
	if (d->closed)
		return;              /* closed already, views still held */
	if (d->holds > 0) {
		/* views still read the mapping (tensorsocket(7): it lives
		 * while a tensor views it): what needs the client is done
		 * now (the uses waited for, the held batches given back), and
		 * the mapping and this handle go at the last unhold */
		ts_client_device_wait_uses(d, NULL);
		if (d->k > 1)
			settle(d, 0, NULL);
		d->c = NULL;
		d->ended = true;
		d->closed = true;
		return;
	}
	destroy(d);
}

static void destroy(struct ts_client_device *d)
{
	unmap(d);
	for (size_t i = 0; i < d->n_pool; i++)
		if (rt.event_destroy(d->pool[i]) != 0)
			rt.get_last_error();
	if (d->buf && rt.free(d->buf) != 0)
		rt.get_last_error();
	free(d);
}
