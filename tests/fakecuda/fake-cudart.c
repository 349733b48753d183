/*
 * fake-cudart.c - a stand-in CUDA runtime for testing libtsclient's device
 * path on a host without a GPU (tests/test-client-device.c and the
 * Python tests). Built as libcudart.so.13 in its own folder and found
 * through LD_LIBRARY_PATH by the client's dlopen.
 *
 * It keeps the semantics of the real runtime that the client can get
 * wrong, so that a mistake shows as a failed test rather than on a GPU:
 *
 *  - a last error per thread that sticks until cudaGetLastError reads it
 *    (cudaPeekAtLastError leaves it): every failing call sets it, as the
 *    real runtime does, and a library that does not clear it poisons the
 *    host program's next kernel launch;
 *  - streams and events: cudaMemcpyAsync, and a cudaMemcpy between two
 *    device buffers ("no host-side synchronization is performed", the
 *    runtime's API synchronization notes), are queued on their stream and
 *    carried out later: at a synchronisation (stream, event, device, a
 *    cudaMemcpy to the host on that stream) or, one operation per call,
 *    when the host polls cudaStreamQuery / cudaEventQuery. A missing sync
 *    shows as stale bytes;
 *  - host registration is a table: overlapping ranges are refused
 *    (cudaErrorHostMemoryAlreadyRegistered), the flags are checked against
 *    the device's attributes, and a knob makes it fail;
 *  - devices have compute modes, UUIDs, PCI bus ids and attributes that a
 *    test can set: two GPUs 0000:01:00.0 and 0000:02:00.0 by default, or
 *    two MIG instances of one GPU (one PCI bus id, two UUIDs).
 *
 * "Device memory" is host memory: cudaMalloc'd blocks and IPC mappings
 * are tracked so that cudaMemcpyDefault can tell device from host. An IPC
 * handle is the text "fakecuda:FD" of a memfd that cudaIpcOpenMemHandle
 * maps, once per device and process, with a reference count as the real
 * runtime keeps (a second open returns the same pointer; the mapping goes
 * with the last close). Knobs are exported ints (set through dlsym in-process) with
 * FAKE_CUDART_* environment variables as their initial values (for
 * subprocesses); counters let a test see which calls were made.
 */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* cudaError_t values (driver_types.h) */
enum {
	OK = 0,
	E_INVALID_VALUE = 1,
	E_MEMORY_ALLOCATION = 2,
	E_INSUFFICIENT_DRIVER = 35,
	E_DEVICES_UNAVAILABLE = 46,
	E_INVALID_DEVICE = 101,
	E_INVALID_RESOURCE_HANDLE = 400,
	E_INVALID_DEVICE_FUNCTION = 98,
	E_ILLEGAL_ADDRESS = 700,
	E_MISALIGNED_ADDRESS = 716,
	E_NOT_READY = 600,
	E_HOST_MEMORY_ALREADY_REGISTERED = 712,
	E_HOST_MEMORY_NOT_REGISTERED = 713,
	E_NOT_SUPPORTED = 801,
};

/* cudaDeviceAttr values used by the client */
enum {
	ATTR_COMPUTE_MODE = 20,
	ATTR_MEMORY_CLOCK_RATE = 36,
	ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
	ATTR_UNIFIED_ADDRESSING = 41,
	ATTR_HOST_REGISTER_SUPPORTED = 99,
	ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED = 113,
};

#define REGISTER_READ_ONLY 0x08u
#define NDEV 2

struct ipc_handle {
	char reserved[64];
};

/* ---- knobs and counters (read and set by the tests) ----------------- */
EXPORT int fake_cudart_memcpys;           /* cudaMemcpy + cudaMemcpyAsync */
EXPORT int fake_cudart_async_memcpys;     /* cudaMemcpyAsync */
EXPORT int fake_cudart_opens;
EXPORT int fake_cudart_closes;
EXPORT int fake_cudart_registers;
EXPORT int fake_cudart_errors;            /* calls that failed */
EXPORT int fake_cudart_fail_register;     /* cudaHostRegister fails (E_MEMORY_ALLOCATION) */
EXPORT int fake_cudart_fail_ipc_open;     /* cudaIpcOpenMemHandle fails */
EXPORT int fake_cudart_fail_malloc;       /* cudaMalloc fails */
EXPORT int fake_cudart_compute_mode;      /* cudaComputeMode of every device */
EXPORT int fake_cudart_mig;               /* both devices: one GPU's MIG instances */
EXPORT int fake_cudart_ro_register = 1;   /* HostRegisterReadOnlySupported */
EXPORT int fake_cudart_no_device;         /* cudaGetDeviceCount: no device */
EXPORT int fake_cudart_driver_version = 13000;
EXPORT int fake_cudart_vec_launches;      /* finish_vec kernels run */
EXPORT int fake_cudart_double_closes;     /* cudaIpcCloseMemHandle of a closed mapping */
EXPORT int fake_cudart_resets;            /* cudaDeviceReset */
/* cudaHostRegister takes this long per MiB (the driver faults in and
 * locks every page), holding the driver's lock (drv_lock): copies,
 * kernel launches and synchronisations of other threads wait for it, as
 * on a GPU, where page-locking serialises on driver-wide locks */
EXPORT double fake_cudart_register_ms_per_mib;
/* FAKE_CUDART_COPY_US: each copy call takes this long once the driver
 * serves it (as a DMA does), so that a thread registering in pieces is
 * back in the driver's queue before the copier's next call: without it
 * the order of the two is a race the copier wins on an idle machine */
EXPORT int fake_cudart_copy_us;
/* Devices whose primary context this process holds: made by the first
 * call that needs one (cudaSetDevice does, since CUDA 12), given back
 * by cudaDeviceReset. FAKE_CUDART_REPORT=FILE: at exit, a line
 * "pid P contexts_left C blocks_left B" is appended to FILE (for tests of
 * a subprocess's teardown). */
static int context_held[NDEV];

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* A device-side error (a kernel's misaligned or illegal access) ends the
 * context: every synchronisation and cudaGetLastError return it from then
 * on, as on a GPU. */
static int context_error;
static __thread int last_error;
static __thread int cur;                  /* current device */

/* The driver's lock, first come first served: cudaHostRegister holds it
 * while it "locks pages"; the calls that would need it on a GPU (copies,
 * launches, stream synchronisation) wait their turn. */
static pthread_mutex_t drv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drv_cv = PTHREAD_COND_INITIALIZER;
static unsigned long drv_next, drv_serving;

static void drv_lock(void)
{
	pthread_mutex_lock(&drv_mu);
	unsigned long t = drv_next++;
	while (t != drv_serving)
		pthread_cond_wait(&drv_cv, &drv_mu);
	pthread_mutex_unlock(&drv_mu);
}

static void drv_unlock(void)
{
	pthread_mutex_lock(&drv_mu);
	drv_serving++;
	pthread_cond_broadcast(&drv_cv);
	pthread_mutex_unlock(&drv_mu);
}

/* A call that needs the driver: waits for a registration under way. */
static void drv_wait(void)
{
	if (fake_cudart_register_ms_per_mib > 0) {
		drv_lock();
		drv_unlock();
	}
}

/* A copy call: waits for the driver, then takes its time. */
static void drv_copy(void)
{
	drv_wait();
	if (fake_cudart_copy_us > 0)
		usleep((useconds_t)fake_cudart_copy_us);
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

__attribute__((constructor)) static void fake_init(void)
{
	fake_cudart_fail_register = env_int("FAKE_CUDART_FAIL_REGISTER", 0);
	fake_cudart_fail_ipc_open = env_int("FAKE_CUDART_FAIL_IPC_OPEN", 0);
	fake_cudart_fail_malloc = env_int("FAKE_CUDART_FAIL_MALLOC", 0);
	fake_cudart_compute_mode = env_int("FAKE_CUDART_COMPUTE_MODE", 0);
	fake_cudart_mig = env_int("FAKE_CUDART_MIG", 0);
	fake_cudart_ro_register = env_int("FAKE_CUDART_RO_REGISTER", 1);
	fake_cudart_no_device = env_int("FAKE_CUDART_NO_DEVICE", 0);
	fake_cudart_driver_version = env_int("FAKE_CUDART_DRIVER_VERSION", 13000);
	{
		const char *v = getenv("FAKE_CUDART_REGISTER_MS_PER_MIB");
		fake_cudart_register_ms_per_mib = v && *v ? atof(v) : 0.0;
	}
	fake_cudart_copy_us = env_int("FAKE_CUDART_COPY_US", 0);
}

/* Every failing call goes through here: the error sticks. */
static int fail(int e)
{
	last_error = e;
	__atomic_add_fetch(&fake_cudart_errors, 1, __ATOMIC_RELAXED);
	return e;
}

/* The runtime API's C signatures (cudaError_t is an int enum). */
int cudaGetDeviceCount(int *n);
int cudaGetDevice(int *d);
int cudaSetDevice(int d);
int cudaDeviceGetPCIBusId(char *buf, int len, int d);
int cudaDeviceGetAttribute(int *v, int attr, int d);
int cudaGetDeviceProperties(void *prop, int d);
int cudaGetDeviceProperties_v2(void *prop, int d);
int cudaDriverGetVersion(int *v);
int cudaRuntimeGetVersion(int *v);
const char *cudaGetErrorString(int e);
int cudaGetLastError(void);
int cudaPeekAtLastError(void);
int cudaHostRegister(void *p, size_t n, unsigned int flags);
int cudaHostUnregister(void *p);
int cudaIpcOpenMemHandle(void **p, struct ipc_handle h, unsigned int flags);
int cudaIpcCloseMemHandle(void *p);
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream);
int cudaStreamCreateWithFlags(void **s, unsigned int flags);
int cudaStreamDestroy(void *s);
int cudaStreamSynchronize(void *s);
int cudaStreamQuery(void *s);
int cudaStreamWaitEvent(void *s, void *e, unsigned int flags);
int cudaDeviceSynchronize(void);
int cudaEventCreateWithFlags(void **e, unsigned int flags);
int cudaEventDestroy(void *e);
int cudaEventRecord(void *e, void *s);
int cudaEventQuery(void *e);
int cudaEventSynchronize(void *e);
int fake_cudart_registered(const void *p, size_t *len, unsigned *flags);
int fake_cudart_pending(void);
int cudaEventCreate(void **e);
int cudaStreamGetDevice(void *s, int *d);
int cudaDeviceReset(void);
int cudaEventElapsedTime(float *ms, void *a, void *b);
int cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
		      size_t height, int kind, void *stream);
int cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
		 size_t height, int kind);
int cudaMemset(void *p, int value, size_t n);
int cudaMallocHost(void **p, size_t n);
int cudaFreeHost(void *p);
struct pointer_attributes;
int cudaPointerGetAttributes(struct pointer_attributes *a, const void *p);
struct ipc_handle;
int cudaIpcGetMemHandle(struct ipc_handle *h, void *p);
struct dim3;
void **__cudaRegisterFatBinary(void *fatbin);
void __cudaRegisterFatBinaryEnd(void **h);
void __cudaUnregisterFatBinary(void **h);
void __cudaRegisterFunction(void **h, const char *host, char *dev, const char *name, int limit,
			    void *tid, void *bid, void *bdim, void *gdim, int *wsize);
int __cudaGetKernel(void **out, const void *host);
unsigned __cudaPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
				     void *stream);
int __cudaPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
			       void *stream);
int __cudaLaunchKernel(void *kernel, struct dim3 grid, struct dim3 block, void **args,
		       size_t shared, void *stream);
int __cudaLaunchKernel_ptsz(void *kernel, struct dim3 grid, struct dim3 block, void **args,
			    size_t shared, void *stream);

/* ---- devices ---------------------------------------------------------- */

EXPORT int cudaGetDeviceCount(int *n)
{
	if (fake_cudart_no_device)
		return fail(100);         /* cudaErrorNoDevice */
	*n = NDEV;
	return OK;
}

EXPORT int cudaGetDevice(int *d)
{
	*d = cur;
	return OK;
}

EXPORT int cudaSetDevice(int d)
{
	if (d < 0 || d >= NDEV)
		return fail(E_INVALID_DEVICE);
	/* exclusive-process: one process per device; this fake has no
	 * other process, so the mode is only reported, as by the driver */
	if (fake_cudart_compute_mode == 2)   /* prohibited */
		return fail(E_DEVICES_UNAVAILABLE);
	cur = d;
	context_held[d] = 1;
	return OK;
}

EXPORT int cudaDeviceGetPCIBusId(char *buf, int len, int d)
{
	if (d < 0 || d >= NDEV)
		return fail(E_INVALID_DEVICE);
	snprintf(buf, (size_t)len, "0000:0%d:00.0", fake_cudart_mig ? 1 : d + 1);
	return OK;
}

EXPORT int cudaDeviceGetAttribute(int *v, int attr, int d)
{
	if (d < 0 || d >= NDEV)
		return fail(E_INVALID_DEVICE);
	switch (attr) {
	case ATTR_COMPUTE_MODE: *v = fake_cudart_compute_mode; return OK;
	case ATTR_UNIFIED_ADDRESSING: *v = 1; return OK;
	case ATTR_MEMORY_CLOCK_RATE: *v = 2619000; return OK;
	case ATTR_GLOBAL_MEMORY_BUS_WIDTH: *v = 6144; return OK;
	case ATTR_HOST_REGISTER_SUPPORTED: *v = 1; return OK;
	case ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED: *v = fake_cudart_ro_register; return OK;
	default: return fail(E_INVALID_VALUE);
	}
}

/* cudaDeviceProp starts with char name[256] and cudaUUID_t uuid (16
 * bytes) in every runtime since CUDA 10; the rest is left zero. */
/* fake-props.c, built when the CUDA headers are there (the fake then
 * stands in for the producer's runtime too): the rest of cudaDeviceProp
 * (compute capability, memory, SM count, bus width) at the header's
 * offsets. */
__attribute__((weak)) void fake_props_fill(void *prop, int d);

EXPORT int cudaGetDeviceProperties(void *prop, int d)
{
	if (d < 0 || d >= NDEV)
		return fail(E_INVALID_DEVICE);
	char *p = prop;
	if (fake_props_fill)
		fake_props_fill(prop, d);
	else
		memset(p, 0, 272);
	snprintf(p, 256, fake_cudart_mig ? "Fake GPU MIG 1g.10gb (device %d)" : "Fake GPU %d", d);
	for (int i = 0; i < 16; i++)
		p[256 + i] = (char)(0xa0 + d * 16 + i);
	return OK;
}

EXPORT int cudaGetDeviceProperties_v2(void *prop, int d)
{
	return cudaGetDeviceProperties(prop, d);
}

EXPORT int cudaDriverGetVersion(int *v)
{
	*v = fake_cudart_driver_version;
	return OK;
}

EXPORT int cudaRuntimeGetVersion(int *v)
{
	*v = 13000;
	return OK;
}

EXPORT const char *cudaGetErrorString(int e)
{
	switch (e) {
	case OK: return "no error";
	case E_INVALID_VALUE: return "invalid argument (fake)";
	case E_MEMORY_ALLOCATION: return "out of memory (fake)";
	case E_INSUFFICIENT_DRIVER: return "CUDA driver version is insufficient for CUDA runtime version (fake)";
	case E_DEVICES_UNAVAILABLE: return "CUDA-capable device(s) is/are busy or unavailable (fake)";
	case E_INVALID_DEVICE: return "invalid device ordinal (fake)";
	case E_INVALID_RESOURCE_HANDLE: return "invalid resource handle (fake)";
	case E_NOT_READY: return "device not ready (fake)";
	case E_HOST_MEMORY_ALREADY_REGISTERED: return "part or all of the requested memory range is already mapped (fake)";
	case E_HOST_MEMORY_NOT_REGISTERED: return "pointer does not correspond to a registered memory region (fake)";
	case E_NOT_SUPPORTED: return "operation not supported (fake)";
	default: return "fake cuda error";
	}
}

EXPORT int cudaGetLastError(void)
{
	if (context_error)
		return context_error;
	int e = last_error;
	last_error = OK;
	return e;
}

EXPORT int cudaPeekAtLastError(void)
{
	return last_error;
}

/* ---- memory: which ranges are "device" and which are registered ------- */

struct range {
	uint8_t *p;
	size_t len;
	unsigned flags;
	int kind;                     /* 0 free, 1 cudaMalloc, 2 IPC, 3 registered */
	/* IPC: the memfd's inode and the device it was opened on, and how
	 * many opens it has ("already opened by the current context: the
	 * reference count is incremented and the same pointer returned") */
	unsigned long long ino;
	int device, refs;
	int fd;                       /* cudaMalloc: the memfd behind it */
};

static struct range ranges[256];

static struct range *find_range(const void *p, int kind)
{
	const uint8_t *q = p;
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (ranges[i].kind == kind && q >= ranges[i].p && q < ranges[i].p + ranges[i].len)
			return &ranges[i];
	return NULL;
}

static struct range *add_range(void *p, size_t len, unsigned flags, int kind)
{
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (ranges[i].kind == 0) {
			ranges[i] = (struct range){ p, len, flags, kind, 0, cur, 1, -1 };
			return &ranges[i];
		}
	return NULL;
}

static int is_device(const void *p)
{
	return find_range(p, 1) || find_range(p, 2);
}

static int is_pinned(const void *p)
{
	return find_range(p, 3) != NULL;
}

EXPORT int cudaHostRegister(void *p, size_t n, unsigned int flags)
{
	int rc = OK;
	if (fake_cudart_register_ms_per_mib > 0) {
		drv_lock();
		usleep((useconds_t)(fake_cudart_register_ms_per_mib * 1000.0 * (double)n /
				    (1 << 20)));
		drv_unlock();
	}
	pthread_mutex_lock(&mu);
	fake_cudart_registers++;
	if (!p || n == 0)
		rc = E_INVALID_VALUE;
	else if (fake_cudart_fail_register)
		rc = E_MEMORY_ALLOCATION;
	else if ((flags & REGISTER_READ_ONLY) && !fake_cudart_ro_register)
		rc = E_NOT_SUPPORTED;
	else if (find_range(p, 3) || find_range((uint8_t *)p + n - 1, 3))
		rc = E_HOST_MEMORY_ALREADY_REGISTERED;
	else if (!add_range(p, n, flags, 3))
		rc = E_MEMORY_ALLOCATION;
	pthread_mutex_unlock(&mu);
	return rc ? fail(rc) : OK;
}

EXPORT int cudaHostUnregister(void *p)
{
	int rc = E_HOST_MEMORY_NOT_REGISTERED;
	pthread_mutex_lock(&mu);
	struct range *r = find_range(p, 3);
	if (r && r->p == p) {
		r->kind = 0;
		rc = OK;
	}
	pthread_mutex_unlock(&mu);
	return rc ? fail(rc) : OK;
}

/* For the tests: 1 and the registered range's length and flags when p
 * starts a registered range, else 0. */
EXPORT int fake_cudart_registered(const void *p, size_t *len, unsigned *flags)
{
	pthread_mutex_lock(&mu);
	struct range *r = find_range(p, 3);
	int yes = r && r->p == p;
	if (yes) {
		*len = r->len;
		*flags = r->flags;
	}
	pthread_mutex_unlock(&mu);
	return yes;
}

EXPORT int cudaIpcOpenMemHandle(void **p, struct ipc_handle h, unsigned int flags)
{
	int fd = -1;
	struct stat st;
	(void)flags;
	if (fake_cudart_fail_ipc_open)
		return fail(E_INVALID_RESOURCE_HANDLE);
	int pid = 0, own = 0;
	h.reserved[63] = 0;
	if (sscanf(h.reserved, "fakecuda:%d:%d", &pid, &fd) == 2) {
		/* from cudaIpcGetMemHandle in another process: its memfd
		 * through /proc (same user, as CUDA IPC needs too) */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return fail(E_INVALID_RESOURCE_HANDLE);
		own = 1;
	} else if (sscanf(h.reserved, "fakecuda:%d", &fd) != 1) {
		return fail(E_INVALID_RESOURCE_HANDLE);
	}
	if (fstat(fd, &st) != 0 || st.st_size == 0) {
		/* an exporter that freed the block (or exited) truncated it */
		if (own)
			close(fd);
		return fail(E_INVALID_RESOURCE_HANDLE);
	}
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (ranges[i].kind == 2 && ranges[i].ino == (unsigned long long)st.st_ino &&
		    ranges[i].device == cur) {
			ranges[i].refs++;
			fake_cudart_opens++;
			*p = ranges[i].p;
			pthread_mutex_unlock(&mu);
			if (own)
				close(fd);
			return OK;
		}
	pthread_mutex_unlock(&mu);
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (own)
		close(fd);
	if (m == MAP_FAILED)
		return fail(E_MEMORY_ALLOCATION);
	pthread_mutex_lock(&mu);
	struct range *r = add_range(m, (size_t)st.st_size, 0, 2);
	if (r) {
		r->ino = (unsigned long long)st.st_ino;
		r->device = cur;
		fake_cudart_opens++;
	}
	pthread_mutex_unlock(&mu);
	if (!r) {
		munmap(m, (size_t)st.st_size);
		return fail(E_MEMORY_ALLOCATION);
	}
	*p = m;
	return OK;
}

int fake_cudart_pending(void);
static void drain_all(void);

EXPORT int cudaIpcCloseMemHandle(void *p)
{
	/* "When the reference count reaches 0, this API unmaps the memory":
	 * no wait for work still queued that reads it. Such work then fails
	 * with an illegal address when it runs (run_op), ending the
	 * context: a caller must synchronise every stream that may read the
	 * mapping first. */
	pthread_mutex_lock(&mu);
	struct range *r = find_range(p, 2);
	int ok = r && r->p == p;
	if (ok) {
		if (--r->refs == 0) {
			munmap(r->p, r->len);
			r->kind = 0;
		}
		fake_cudart_closes++;
	} else {
		/* a mapping closed twice (or never opened): the real runtime
		 * answers invalid handle, and a pointer reused since then
		 * would have lost someone else's mapping */
		fake_cudart_double_closes++;
	}
	pthread_mutex_unlock(&mu);
	return ok ? OK : fail(E_INVALID_RESOURCE_HANDLE);
}

/* The block goes for every process: the memfd is truncated, so another
 * process that still maps it (an IPC importer) faults on its next read,
 * as its reads of freed device memory end its context on a GPU. */
static void free_block(struct range *r)
{
	if (ftruncate(r->fd, 0) != 0)
		(void)0;
	munmap(r->p, r->len);
	close(r->fd);
}

/* The context goes with the process: so do its blocks (for importers
 * too), unless the process freed them first. */
__attribute__((destructor)) static void fake_exit(void)
{
	int blocks = 0, contexts = 0;
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (ranges[i].kind == 1 && ranges[i].fd >= 0) {
			blocks++;
			if (ftruncate(ranges[i].fd, 0) != 0)
				(void)0;
		}
	for (int d = 0; d < NDEV; d++)
		contexts += context_held[d];
	const char *path = getenv("FAKE_CUDART_REPORT");
	FILE *f = path && *path ? fopen(path, "ae") : NULL;
	if (f) {
		fprintf(f, "pid %d contexts_left %d blocks_left %d\n", (int)getpid(), contexts,
			blocks);
		fclose(f);
	}
}

/* "Destroy all allocations and reset all state on the current device in
 * the current process": its blocks go (for importers too), and its
 * primary context. */
EXPORT int cudaDeviceReset(void)
{
	drain_all();
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (ranges[i].kind == 1 && ranges[i].device == cur) {
			struct range gone = ranges[i];
			ranges[i].kind = 0;
			free_block(&gone);
		}
	context_held[cur] = 0;
	fake_cudart_resets++;
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cudaMalloc(void **p, size_t n)
{
	if (fake_cudart_fail_malloc)
		return fail(E_MEMORY_ALLOCATION);
	/* a memfd, so that cudaIpcGetMemHandle can hand it to another
	 * process */
	size_t len = n ? n : 1;
	int fd = memfd_create("fakecuda-device", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
		if (fd >= 0)
			close(fd);
		return fail(E_MEMORY_ALLOCATION);
	}
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return fail(E_MEMORY_ALLOCATION);
	}
	pthread_mutex_lock(&mu);
	struct range *r = add_range(m, len, 0, 1);
	if (r)
		r->fd = fd;
	context_held[cur] = 1;
	pthread_mutex_unlock(&mu);
	if (!r) {
		munmap(m, len);
		close(fd);
		return fail(E_MEMORY_ALLOCATION);
	}
	*p = m;
	return OK;
}

EXPORT int cudaFree(void *p)
{
	if (!p)
		return OK;
	drain_all();
	pthread_mutex_lock(&mu);
	struct range *r = find_range(p, 1);
	int ok = r && r->p == p;
	struct range gone = {0};
	if (ok) {
		gone = *r;
		r->kind = 0;
	}
	pthread_mutex_unlock(&mu);
	if (!ok)
		return fail(E_INVALID_VALUE);
	free_block(&gone);
	return OK;
}

/* ---- streams, events and queued copies --------------------------------
 * A stream is a FIFO of operations: copies (carried out when they come
 * off the queue, reading the source then, as a DMA engine would) and
 * event markers. The legacy default stream is NULL. */

struct kernel_run;

struct op {
	struct op *next;
	uint8_t *dst;
	const uint8_t *src;
	uint8_t *snapshot;            /* pageable source, staged at the call */
	size_t n;
	struct event *ev;             /* an event marker instead of a copy */
	struct kernel_run *kern;      /* a kernel launch instead of a copy */
	int memset_value;             /* >= 0: cudaMemset of dst */
	int src_dev, dst_dev;         /* device memory at the call: still
					 mapped when the op runs? */
};

struct stream {
	struct op *head, *tail;
	struct stream *next_all;
	int device;
};

struct event {
	struct stream *s;             /* recorded on, NULL: never recorded */
	uint64_t pending;             /* markers of it still queued */
	int device;                   /* current device at its creation */
	double t;                     /* when its marker came off the queue */
};

static void run_kernel(struct kernel_run *k);

static struct stream legacy;
static struct stream *all_streams = &legacy;

static struct stream *stream_of(void *s)
{
	/* NULL, cudaStreamLegacy (1) and cudaStreamPerThread (2): the
	 * default stream */
	return (uintptr_t)s <= 2 ? &legacy : s;
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run_op(struct op *o)
{
	if (o->ev) {
		o->ev->pending--;
		o->ev->t = mono();
	} else if (o->kern) {
		run_kernel(o->kern);
	} else if ((o->src_dev && !is_device(o->src)) || (o->dst_dev && !is_device(o->dst))) {
		/* the mapping went (cudaIpcCloseMemHandle, cudaFree) while
		 * this was queued: an illegal address ends the context */
		context_error = E_ILLEGAL_ADDRESS;
	} else if (o->memset_value >= 0) {
		memset(o->dst, o->memset_value, o->n);
	} else {
		memcpy(o->dst, o->snapshot ? o->snapshot : o->src, o->n);
	}
	free(o->snapshot);
	free(o);
}

/* Carry out up to max operations of s (mu held); returns how many. */
static int drain(struct stream *s, int max)
{
	int done = 0;
	while (s->head && done < max) {
		struct op *o = s->head;
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		run_op(o);
		done++;
	}
	return done;
}

static void drain_all(void)
{
	pthread_mutex_lock(&mu);
	for (struct stream *s = all_streams; s; s = s->next_all)
		drain(s, 1 << 30);
	pthread_mutex_unlock(&mu);
}

static void enqueue(struct stream *s, struct op *o)
{
	o->next = NULL;
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
}

/* For the tests: operations queued on all streams, not yet carried out. */
EXPORT int fake_cudart_pending(void)
{
	int n = 0;
	pthread_mutex_lock(&mu);
	for (struct stream *s = all_streams; s; s = s->next_all)
		for (struct op *o = s->head; o; o = o->next)
			n += o->ev == NULL && o->kern == NULL;
	pthread_mutex_unlock(&mu);
	return n;
}

EXPORT int cudaStreamCreateWithFlags(void **out, unsigned int flags)
{
	(void)flags;
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return fail(E_MEMORY_ALLOCATION);
	s->device = cur;
	pthread_mutex_lock(&mu);
	s->next_all = all_streams;
	all_streams = s;
	pthread_mutex_unlock(&mu);
	*out = s;
	return OK;
}

EXPORT int cudaStreamDestroy(void *p)
{
	struct stream *s = stream_of(p);
	if (s == &legacy)
		return fail(E_INVALID_RESOURCE_HANDLE);
	pthread_mutex_lock(&mu);
	/* "work still pending completes, then the resources go" */
	drain(s, 1 << 30);
	for (struct stream **q = &all_streams; *q; q = &(*q)->next_all)
		if (*q == s) {
			*q = s->next_all;
			break;
		}
	pthread_mutex_unlock(&mu);
	free(s);
	return OK;
}

EXPORT int cudaStreamGetDevice(void *p, int *d)
{
	*d = (uintptr_t)p <= 2 ? cur : ((struct stream *)p)->device;
	return OK;
}

EXPORT int cudaStreamSynchronize(void *p)
{
	drv_wait();
	pthread_mutex_lock(&mu);
	drain(stream_of(p), 1 << 30);
	pthread_mutex_unlock(&mu);
	return context_error ? fail(context_error) : OK;
}

/* The host polls: the GPU gets on with one operation meanwhile. */
EXPORT int cudaStreamQuery(void *p)
{
	pthread_mutex_lock(&mu);
	struct stream *s = stream_of(p);
	drain(s, 1);
	int busy = s->head != NULL;
	pthread_mutex_unlock(&mu);
	/* "not actually an error", but the runtime records it as the last
	 * error all the same: callers clear it (PyTorch's CUDAStream::query
	 * and CUDAEvent::query call cudaGetLastError after it) */
	return busy ? fail(E_NOT_READY) : OK;
}

EXPORT int cudaDeviceSynchronize(void)
{
	drain_all();
	return context_error ? fail(context_error) : OK;
}

EXPORT int cudaEventCreateWithFlags(void **e, unsigned int flags)
{
	(void)flags;
	struct event *ev = calloc(1, sizeof(*ev));
	if (!ev)
		return fail(E_MEMORY_ALLOCATION);
	ev->device = cur;
	*e = ev;
	return OK;
}

EXPORT int cudaEventCreate(void **e)
{
	return cudaEventCreateWithFlags(e, 0);
}

EXPORT int cudaEventElapsedTime(float *ms, void *a, void *b)
{
	struct event *x = a, *y = b;
	if (!x || !y || !x->s || !y->s || x->pending || y->pending)
		return fail(!x || !y ? E_INVALID_RESOURCE_HANDLE : E_NOT_READY);
	*ms = (float)((y->t - x->t) * 1e3);
	return OK;
}

EXPORT int cudaEventDestroy(void *e)
{
	struct event *ev = e;
	if (!ev)
		return fail(E_INVALID_RESOURCE_HANDLE);
	/* markers still queued keep a pointer: complete them first */
	while (ev->pending && ev->s)
		cudaStreamSynchronize(ev->s == &legacy ? NULL : ev->s);
	free(ev);
	return OK;
}

EXPORT int cudaEventRecord(void *e, void *p)
{
	struct event *ev = e;
	struct op *o = calloc(1, sizeof(*o));
	if (o)
		o->memset_value = -1;
	if (!ev || !o) {
		free(o);
		return fail(ev ? E_MEMORY_ALLOCATION : E_INVALID_RESOURCE_HANDLE);
	}
	/* "event and stream must be on the same device": an event is bound
	 * to the device current at its creation; the legacy stream is the
	 * current device's */
	int sdev = (uintptr_t)p <= 2 ? cur : ((struct stream *)p)->device;
	if (sdev != ev->device) {
		free(o);
		return fail(E_INVALID_RESOURCE_HANDLE);
	}
	pthread_mutex_lock(&mu);
	ev->s = stream_of(p);
	ev->pending++;
	o->ev = ev;
	enqueue(ev->s, o);
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cudaEventQuery(void *e)
{
	struct event *ev = e;
	if (!ev)
		return fail(E_INVALID_RESOURCE_HANDLE);
	pthread_mutex_lock(&mu);
	if (ev->pending && ev->s)
		drain(ev->s, 1);
	int busy = ev->pending != 0;
	pthread_mutex_unlock(&mu);
	return busy ? fail(E_NOT_READY) : OK;   /* sticky, as cudaStreamQuery's */
}

EXPORT int cudaEventSynchronize(void *e)
{
	struct event *ev = e;
	if (!ev)
		return fail(E_INVALID_RESOURCE_HANDLE);
	pthread_mutex_lock(&mu);
	while (ev->pending && ev->s && drain(ev->s, 1))
		;
	pthread_mutex_unlock(&mu);
	return OK;
}

/* Work queued on s after this waits for e: this fake carries out e's
 * stream up to the event now, which orders the same way. */
EXPORT int cudaStreamWaitEvent(void *s, void *e, unsigned int flags)
{
	(void)s, (void)flags;
	return cudaEventSynchronize(e);
}

/* cudaMemcpyKind: 0 H2H, 1 H2D, 2 D2H, 3 D2D, 4 default (inferred) */
static int copy(void *dst, const void *src, size_t n, int kind, void *p, int async)
{
	int dst_dev, src_dev;
	if (kind < 0 || kind > 4 || (n && (!dst || !src)))
		return fail(E_INVALID_VALUE);
	dst_dev = kind == 4 ? is_device(dst) : kind == 1 || kind == 3;
	src_dev = kind == 4 ? is_device(src) : kind == 2 || kind == 3;
	if (kind != 4 && (dst_dev != is_device(dst) || src_dev != is_device(src)))
		return fail(E_INVALID_VALUE);  /* a direction that lies */
	__atomic_add_fetch(&fake_cudart_memcpys, 1, __ATOMIC_RELAXED);
	if (async)
		__atomic_add_fetch(&fake_cudart_async_memcpys, 1, __ATOMIC_RELAXED);
	struct stream *s = stream_of(p);
	if (!dst_dev && !src_dev) {
		memcpy(dst, src, n);          /* host to host: synchronous */
		return OK;
	}
	if (!dst_dev && (!async || !is_pinned(dst))) {
		/* to pageable host memory (or any cudaMemcpy to the host):
		 * returns once the copy is done, after the stream's work */
		pthread_mutex_lock(&mu);
		drain(s, 1 << 30);
		pthread_mutex_unlock(&mu);
		memcpy(dst, src, n);
		return OK;
	}
	struct op *o = calloc(1, sizeof(*o));
	if (!o)
		return fail(E_MEMORY_ALLOCATION);
	o->memset_value = -1;
	o->dst = dst;
	o->src = src;
	o->n = n;
	o->src_dev = src_dev;
	o->dst_dev = dst_dev;
	if (!src_dev && !is_pinned(src)) {
		/* pageable source: staged at the call */
		o->snapshot = malloc(n ? n : 1);
		if (!o->snapshot) {
			free(o);
			return fail(E_MEMORY_ALLOCATION);
		}
		memcpy(o->snapshot, src, n);
	}
	pthread_mutex_lock(&mu);
	enqueue(s, o);
	if (!async && !src_dev)
		drain(s, 1 << 30);            /* cudaMemcpy from the host: synchronous */
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	drv_copy();
	/* device to device: queued on the legacy stream, no host sync */
	return copy(dst, src, n, kind, NULL, 0);
}

EXPORT int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream)
{
	drv_copy();
	return copy(dst, src, n, kind, stream, 1);
}

EXPORT int cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
			     size_t width, size_t height, int kind, void *stream)
{
	drv_copy();
	if (width > dpitch || width > spitch)
		return fail(E_INVALID_VALUE);
	for (size_t y = 0; y < height; y++) {
		int rc = copy((uint8_t *)dst + y * dpitch, (const uint8_t *)src + y * spitch,
			      width, kind, stream, 1);
		if (rc)
			return rc;
	}
	return OK;
}

/* As cudaMemcpy, row by row. */
EXPORT int cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			size_t height, int kind)
{
	drv_copy();
	if (width > dpitch || width > spitch)
		return fail(E_INVALID_VALUE);
	for (size_t y = 0; y < height; y++) {
		int rc = copy((uint8_t *)dst + y * dpitch, (const uint8_t *)src + y * spitch,
			      width, kind, NULL, 0);
		if (rc)
			return rc;
	}
	return OK;
}

/* Device memory only; ordered on the legacy stream, asynchronous. */
EXPORT int cudaMemset(void *p, int value, size_t n)
{
	struct op *o;
	if (!is_device(p) || (n && !is_device((uint8_t *)p + n - 1)))
		return fail(E_INVALID_VALUE);
	o = calloc(1, sizeof(*o));
	if (!o)
		return fail(E_MEMORY_ALLOCATION);
	o->dst = p;
	o->n = n;
	o->dst_dev = 1;
	o->memset_value = value & 0xff;
	pthread_mutex_lock(&mu);
	enqueue(&legacy, o);
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int cudaMallocHost(void **p, size_t n)
{
	void *m = malloc(n ? n : 1);
	if (!m)
		return fail(E_MEMORY_ALLOCATION);
	pthread_mutex_lock(&mu);
	struct range *r = add_range(m, n ? n : 1, 0, 3);
	pthread_mutex_unlock(&mu);
	if (!r) {
		free(m);
		return fail(E_MEMORY_ALLOCATION);
	}
	*p = m;
	return OK;
}

EXPORT int cudaFreeHost(void *p)
{
	if (!p)
		return OK;
	drain_all();
	if (cudaHostUnregister(p) != OK)
		return E_INVALID_VALUE;
	free(p);
	return OK;
}

/* struct cudaPointerAttributes (CUDA 11 on): type, device, devicePointer,
 * hostPointer. cudaMemoryType: 0 unregistered, 1 host, 2 device. */
struct pointer_attributes {
	int type, device;
	void *device_pointer, *host_pointer;
};

EXPORT int cudaPointerGetAttributes(struct pointer_attributes *a, const void *p)
{
	pthread_mutex_lock(&mu);
	struct range *d = find_range(p, 1), *i = find_range(p, 2), *h = find_range(p, 3);
	*a = (struct pointer_attributes){ 0, cur, NULL, NULL };
	if (d || i) {
		a->type = 2;
		a->device = (d ? d : i)->device;
		a->device_pointer = (void *)p;
	} else if (h) {
		a->type = 1;
		a->device_pointer = a->host_pointer = (void *)p;
	}
	pthread_mutex_unlock(&mu);
	return OK;
}

/* "fakecuda:PID:FD": the memfd of a cudaMalloc'd block, opened by
 * another process through /proc. */
EXPORT int cudaIpcGetMemHandle(struct ipc_handle *h, void *p)
{
	pthread_mutex_lock(&mu);
	struct range *r = find_range(p, 1);
	int ok = r && r->p == p;
	if (ok) {
		memset(h, 0, sizeof(*h));
		snprintf(h->reserved, sizeof(h->reserved), "fakecuda:%d:%d", (int)getpid(), r->fd);
	}
	pthread_mutex_unlock(&mu);
	return ok ? OK : fail(E_INVALID_VALUE);
}

/* ---- kernels -----------------------------------------------------------
 * nvcc's host stubs register each kernel by its host stub's address and
 * its mangled name, and launch through __cudaPushCallConfiguration /
 * __cudaPopCallConfiguration and __cudaLaunchKernel (CUDA 13's
 * crt/host_runtime.h). The fake knows tsrun's finishing kernels
 * (runtime/cuda/finish.cu) by name and runs them on the host when their
 * launch comes off its stream, the arguments copied at the launch. The
 * vector kernel's alignment contract is checked as the hardware does: a
 * misaligned 16-byte store (a slot stride or a destination that is not a
 * multiple of 16) ends the context (a sticky cudaErrorMisalignedAddress).
 * It writes what the kernel writes: each slot's sample flat in NCHW, then
 * zeros to the end of its last 16-byte vector (the slot's padding). An
 * unknown kernel is an invalid device function. */

struct dim3 {
	unsigned x, y, z;
};

struct kernel_fn {
	const void *host;
	const char *name;
	int half;                     /* finish_vec<__half> */
};

static struct kernel_fn kernels[32];
static int nkernels;
static int fatbin_handle;

struct kernel_run {
	const struct kernel_fn *fn;
	const uint8_t *src;
	void *dst, *dst2;
	size_t n, hw, n2, stride;
	int channels;
	float scale[4], bias[4];
};

EXPORT void **__cudaRegisterFatBinary(void *fatbin)
{
	(void)fatbin;
	return (void **)&fatbin_handle;
}

EXPORT void __cudaRegisterFatBinaryEnd(void **h)
{
	(void)h;
}

EXPORT void __cudaUnregisterFatBinary(void **h)
{
	(void)h;
}

EXPORT void __cudaRegisterFunction(void **h, const char *host, char *dev, const char *name,
				   int limit, void *tid, void *bid, void *bdim, void *gdim,
				   int *wsize)
{
	(void)h, (void)dev, (void)limit, (void)tid, (void)bid, (void)bdim, (void)gdim,
		(void)wsize;
	if (nkernels == (int)(sizeof(kernels) / sizeof(kernels[0])))
		return;
	struct kernel_fn *k = &kernels[nkernels++];
	k->host = host;
	k->name = name;
	/* finish_vec<float> is ..finish_vecIfEv.., finish_vec<__half> ..I6__halfEv.. */
	k->half = strstr(name, "__half") != NULL;
}

EXPORT int __cudaGetKernel(void **out, const void *host)
{
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].host == host) {
			*out = &kernels[i];
			return OK;
		}
	return fail(E_INVALID_DEVICE_FUNCTION);
}

static __thread struct {
	struct dim3 grid, block;
	size_t shared;
	void *stream;
} config[4];
static __thread int nconfig;

EXPORT unsigned __cudaPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
					    void *stream)
{
	if (nconfig == 4)
		return 1;
	config[nconfig].grid = grid;
	config[nconfig].block = block;
	config[nconfig].shared = shared;
	config[nconfig].stream = stream;
	nconfig++;
	return 0;
}

EXPORT int __cudaPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
				      void *stream)
{
	if (nconfig == 0)
		return fail(E_INVALID_VALUE);
	nconfig--;
	*grid = config[nconfig].grid;
	*block = config[nconfig].block;
	*shared = config[nconfig].shared;
	*(void **)stream = config[nconfig].stream;
	return OK;
}


static int device_range_ok(const void *p, size_t n)
{
	return n == 0 || (is_device(p) && is_device((const uint8_t *)p + n - 1));
}

/* float to IEEE half, rounding to nearest even as __float2half does; by
 * hand, as clang 14 has no _Float16 on x86-64 (the ASan build's). */
static uint16_t f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
	if (e == 0xff)
		return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0u));
	int ee = (int)e - 127 + 15;
	if (ee >= 0x1f)
		return (uint16_t)(sign | 0x7c00u);
	if (ee <= 0) {
		if (ee < -10)
			return (uint16_t)sign;
		m |= 0x800000u;
		unsigned shift = (unsigned)(14 - ee);
		uint32_t h = m >> shift, rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
		if (rem > mid || (rem == mid && (h & 1u)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = sign | ((uint32_t)ee << 10) | (m >> 13), rem = m & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++; /* a carry into the exponent is the right rounding */
	return (uint16_t)h;
}

static void store(void *dst, size_t i, int half, float v)
{
	if (half) {
		uint16_t h = f32_to_f16(v);
		memcpy((uint8_t *)dst + i * 2, &h, 2);
	} else {
		memcpy((uint8_t *)dst + i * 4, &v, 4);
	}
}

static void run_kernel(struct kernel_run *k)
{
	const struct kernel_fn *fn = k->fn;
	size_t es = fn->half ? 2 : 4, C = (size_t)k->channels, elems = k->hw * C;
	size_t in = k->n * elems, out = k->n * k->stride;
	if (k->stride % 16 || k->stride < elems * es || (uintptr_t)k->dst % 16 ||
	    (k->n2 && (uintptr_t)k->dst2 % 16)) {
		context_error = E_MISALIGNED_ADDRESS;
		goto done;
	}
	if (!device_range_ok(k->src, in) || !device_range_ok(k->dst, out) ||
	    (k->n2 && !device_range_ok(k->dst2, k->n2 * k->stride))) {
		context_error = E_ILLEGAL_ADDRESS;
		goto done;
	}
	__atomic_add_fetch(&fake_cudart_vec_launches, 1, __ATOMIC_RELAXED);
	for (size_t s = 0; s < k->n; s++) {
		uint8_t *d = (uint8_t *)k->dst + s * k->stride;
		uint8_t *d2 = s < k->n2 ? (uint8_t *)k->dst2 + s * k->stride : NULL;
		for (size_t c = 0; c < C; c++)
			for (size_t p = 0; p < k->hw; p++) {
				float v = fmaf((float)k->src[(s * k->hw + p) * C + c], k->scale[c],
					       k->bias[c]);
				store(d, c * k->hw + p, fn->half, v);
				if (d2)
					store(d2, c * k->hw + p, fn->half, v);
			}
		/* the last vector's elements past the sample: zeros */
		size_t end = (elems * es + 15) / 16 * 16;
		memset(d + elems * es, 0, end - elems * es);
		if (d2)
			memset(d2 + elems * es, 0, end - elems * es);
	}
done:
	free(k);
}

static int launch(void *kernel, struct dim3 grid, struct dim3 block, void **args, size_t shared,
		  void *stream)
{
	const struct kernel_fn *fn = kernel;
	(void)grid, (void)block, (void)shared;
	drv_wait();
	if (context_error)
		return fail(context_error);
	if (!fn || !strstr(fn->name, "finish_vec"))
		return fail(E_INVALID_DEVICE_FUNCTION);
	struct kernel_run *k = calloc(1, sizeof(*k));
	struct op *o = calloc(1, sizeof(*o));
	if (!k || !o) {
		free(k);
		free(o);
		return fail(E_MEMORY_ALLOCATION);
	}
	/* finish_vec(src, dst, n, hw, C, stride, affine, dst2, n2) */
	int i = 0;
	k->fn = fn;
	k->src = *(const uint8_t **)args[i++];
	k->dst = *(void **)args[i++];
	k->n = *(size_t *)args[i++];
	k->hw = *(size_t *)args[i++];
	k->channels = *(int *)args[i++];
	k->stride = *(size_t *)args[i++];
	memcpy(k->scale, args[i], sizeof(k->scale));
	memcpy(k->bias, (const float *)args[i++] + 4, sizeof(k->bias));
	k->dst2 = *(void **)args[i++];
	k->n2 = *(size_t *)args[i++];
	o->kern = k;
	o->memset_value = -1;
	pthread_mutex_lock(&mu);
	enqueue(stream_of(stream), o);
	pthread_mutex_unlock(&mu);
	return OK;
}

EXPORT int __cudaLaunchKernel(void *kernel, struct dim3 grid, struct dim3 block, void **args,
			      size_t shared, void *stream)
{
	return launch(kernel, grid, block, args, shared, stream);
}

EXPORT int __cudaLaunchKernel_ptsz(void *kernel, struct dim3 grid, struct dim3 block, void **args,
				   size_t shared, void *stream)
{
	return launch(kernel, grid, block, args, shared, stream);
}
