/*
 * devring.c - the device ring: finished samples in GPU memory, filled
 * from the host ring, shared with trainers through CUDA IPC handles.
 *
 * The producer owns one cudaMalloc'd block of capacity slots and a
 * staging buffer for one batch of uint8 samples. A fill copies the batch
 * in (DMA straight from the host ring when the trainer side registered
 * it; a staged copy when pageable), runs the finishing kernel into the
 * slots and waits. Trainers open the block by its cudaIpcMemHandle: on
 * the producer's GPU the pointer is the producer's memory (no copy); on
 * another GPU the driver maps it with peer access and reads cross the
 * link. Which samples are valid, and when a slot may be overwritten, is
 * the host ring's business (the same seq numbers index both rings).
 */
#include "tscuda.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct ts_devring {
	bool imported;
	int device;
	uint64_t capacity;
	uint64_t mirror;              /* slots after capacity repeating 0.. */
	size_t sample_bytes;          /* finished */
	size_t sample_stride;         /* slot to slot: sample_bytes padded to
					 16 bytes, for the vector kernel */
	size_t in_bytes;              /* one uint8 NHWC sample */
	size_t max_batch;
	struct ts_finish_params p;
	void *data;                   /* (capacity + mirror) * sample_stride */
	uint8_t *staging;             /* max_batch * in_bytes, device */
	const uint8_t *host_base;     /* ts_devring_host_pieces */
	uint64_t host_piece;          /* slots per registered piece (0: none) */
	cudaStream_t stream;
};

static int cuda_fail(struct ts_error *err, const char *what, cudaError_t e)
{
	cudaGetLastError();   /* not the caller's next call's error */
	return ts_error_set(err, e == cudaErrorMemoryAllocation ? TS_E_NOMEM : TS_E_NODEV,
			    "%s: %s", what, cudaGetErrorString(e));
}

int ts_devring_create(int dev, uint64_t capacity, uint64_t mirror,
		      const struct ts_finish_params *p, size_t max_batch,
		      struct ts_devring **out, struct ts_error *err)
{
	struct ts_devring *r;
	cudaError_t e;
	int rc;

	if (!p || !out || capacity == 0 || max_batch == 0 || max_batch > capacity ||
	    mirror > capacity)
		return ts_error_set(err, TS_E_ARG,
				    "devring: need capacity >= max_batch >= 1 and mirror <= capacity");
	rc = ts_cuda_set_device(dev, err);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	r->device = dev;
	r->capacity = capacity;
	r->mirror = mirror;
	r->p = *p;
	r->sample_bytes = ts_finish_sample_bytes(p);
	r->sample_stride = ts_finish_sample_stride(p);
	r->in_bytes = (size_t)p->height * (size_t)p->width * (size_t)p->channels;
	r->max_batch = max_batch;
	/* cudaMalloc's block is 256-byte aligned: with slots a multiple of
	 * 16 bytes apart, every slot is as the kernel's vectors need */
	e = cudaMalloc(&r->data, (capacity + mirror) * r->sample_stride);
	if (e != cudaSuccess) {
		rc = cuda_fail(err, "devring: cudaMalloc", e);
		goto fail;
	}
	e = cudaMalloc((void **)&r->staging, max_batch * r->in_bytes);
	if (e != cudaSuccess) {
		rc = cuda_fail(err, "devring: cudaMalloc (staging)", e);
		goto fail;
	}
	e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		rc = cuda_fail(err, "devring: cudaStreamCreate", e);
		goto fail;
	}
	*out = r;
	return 0;
fail:
	ts_devring_destroy(r);
	return rc;
}

void ts_devring_destroy(struct ts_devring *r)
{
	if (!r)
		return;
	/* copies still queued on the ring's stream read it: finish them */
	if (r->stream) {
		cudaStreamSynchronize(r->stream);
		cudaStreamDestroy(r->stream);
	}
	if (r->imported) {
		if (r->data)
			cudaIpcCloseMemHandle(r->data);
	} else {
		cudaFree(r->staging);
		cudaFree(r->data);
	}
	cudaGetLastError();
	free(r);
}

void *ts_devring_data(const struct ts_devring *r)
{
	return r->data;
}

uint64_t ts_devring_capacity(const struct ts_devring *r)
{
	return r->capacity;
}

size_t ts_devring_sample_bytes(const struct ts_devring *r)
{
	return r->sample_bytes;
}

size_t ts_devring_sample_stride(const struct ts_devring *r)
{
	return r->sample_stride;
}

/* Finish k staged samples into slots [slot, slot + k) (no wrap) and, in
 * the same kernel, the mirror slots capacity + slot.. for those below
 * mirror. */
static int launch_piece(struct ts_devring *r, const uint8_t *src, uint64_t slot,
			uint64_t k, struct ts_error *err)
{
	uint8_t *data = r->data;
	uint64_t m = slot < r->mirror ? (r->mirror - slot < k ? r->mirror - slot : k) : 0;
	return ts_finish_launch_mirrored(src, data + slot * r->sample_stride, k,
					 m ? data + (r->capacity + slot) * r->sample_stride : NULL,
					 m, &r->p, r->stream, err);
}

void ts_devring_host_pieces(struct ts_devring *r, const void *base, uint64_t slots)
{
	r->host_base = base;
	r->host_piece = slots;
}

/* n host samples, host_stride apart, into staging (packed), on the
 * ring's stream: one copy, or a 2D one that packs padded slots. */
static cudaError_t copy_in(struct ts_devring *r, uint8_t *dst, const uint8_t *host,
			   size_t host_stride, size_t n)
{
	if (host_stride == r->in_bytes)
		return cudaMemcpyAsync(dst, host, n * r->in_bytes, cudaMemcpyHostToDevice,
				       r->stream);
	return cudaMemcpy2DAsync(dst, r->in_bytes, host, host_stride, r->in_bytes, n,
				 cudaMemcpyHostToDevice, r->stream);
}

int ts_devring_fill(struct ts_devring *r, const void *host, size_t host_stride,
		    uint64_t seq, size_t n, struct ts_error *err)
{
	size_t k = 0;
	uint64_t slot, first;
	cudaError_t e;
	int rc;

	if (!r || r->imported || !host || n > r->max_batch)
		return ts_error_set(err, TS_E_ARG,
				    "devring fill: at most %zu samples, on the producer's ring",
				    r ? r->max_batch : 0);
	if (host_stride < r->in_bytes)
		return ts_error_set(err, TS_E_ARG,
				    "devring fill: host samples %zu bytes apart, but each is %zu",
				    host_stride, r->in_bytes);
	if (n == 0)
		return 0;
	/* pageable host memory makes this a staged, synchronous copy; a
	 * registered host ring makes it one DMA; padded host slots a 2D one
	 * that packs the samples in staging. A ring registered in pieces:
	 * one copy per piece the run touches, each within one registration */
	e = cudaSuccess;
	while (k < n && e == cudaSuccess) {
		const uint8_t *h = (const uint8_t *)host + k * host_stride;
		size_t m = n - k;
		if (r->host_piece && h >= r->host_base) {
			uint64_t idx = (uint64_t)(h - r->host_base) / host_stride;
			uint64_t left = r->host_piece - idx % r->host_piece;
			if (left < m)
				m = (size_t)left;
		}
		e = copy_in(r, r->staging + k * r->in_bytes, h, host_stride, m);
		k += m;
	}
	if (e != cudaSuccess)
		return cuda_fail(err, host_stride == r->in_bytes
					      ? "devring fill: cudaMemcpyAsync"
					      : "devring fill: cudaMemcpy2DAsync", e);
	slot = seq % r->capacity;
	first = r->capacity - slot < n ? r->capacity - slot : n;
	rc = launch_piece(r, r->staging, slot, first, err);
	if (rc == 0 && first < n)
		rc = launch_piece(r, r->staging + first * r->in_bytes, 0, n - first, err);
	e = cudaStreamSynchronize(r->stream);
	if (rc < 0)
		return rc;
	if (e != cudaSuccess)
		return cuda_fail(err, "devring fill", e);
	return 0;
}

int ts_devring_export(const struct ts_devring *r, struct ts_devring_handle *h,
		      struct ts_error *err)
{
	struct ts_devring_handle out = {0};
	cudaIpcMemHandle_t ipc;
	cudaError_t e;

	_Static_assert(sizeof(ipc) <= sizeof(out.ipc), "IPC handle fits");
	if (!r || r->imported || !h)
		return ts_error_set(err, TS_E_ARG, "devring export: not a producer's ring");
	e = cudaIpcGetMemHandle(&ipc, r->data);
	if (e != cudaSuccess)
		return cuda_fail(err, "devring export: cudaIpcGetMemHandle", e);
	memcpy(out.ipc, &ipc, sizeof(ipc));
	out.capacity = r->capacity;
	out.mirror = r->mirror;
	out.sample_bytes = r->sample_bytes;
	out.sample_stride = r->sample_stride;
	out.device = r->device;
	out.pid = (int32_t)getpid();
	*h = out;
	return 0;
}

int ts_devring_import(const struct ts_devring_handle *h,
		      struct ts_devring **out, struct ts_error *err)
{
	struct ts_devring *r;
	cudaIpcMemHandle_t ipc;
	cudaError_t e;
	int dev = 0;

	if (!h || !out || h->capacity == 0 || h->sample_bytes == 0 ||
	    h->sample_stride < h->sample_bytes || h->sample_stride % TS_FINISH_ALIGN)
		return ts_error_set(err, TS_E_ARG, "devring import: bad handle");
	e = cudaGetDevice(&dev);
	if (e != cudaSuccess)
		return cuda_fail(err, "devring import: cudaGetDevice", e);
	r = calloc(1, sizeof(*r));
	if (!r)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	memcpy(&ipc, h->ipc, sizeof(ipc));
	/* same device: the producer's memory itself; another device: the
	 * driver enables peer access on first use */
	e = cudaIpcOpenMemHandle(&r->data, ipc, cudaIpcMemLazyEnablePeerAccess);
	if (e != cudaSuccess) {
		cudaGetLastError();
		free(r);
		return ts_error_set(err, TS_E_NODEV,
				    "devring import: cudaIpcOpenMemHandle (producer pid %d, device %d; this process on device %d): %s",
				    (int)h->pid, (int)h->device, dev, cudaGetErrorString(e));
	}
	e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		cudaIpcCloseMemHandle(r->data);
		free(r);
		return cuda_fail(err, "devring import: cudaStreamCreate", e);
	}
	r->imported = true;
	r->device = dev;
	r->capacity = h->capacity;
	r->mirror = h->mirror;
	r->sample_bytes = h->sample_bytes;
	r->sample_stride = h->sample_stride;
	*out = r;
	return 0;
}

void *ts_devring_span(const struct ts_devring *r, uint64_t seq, size_t n)
{
	uint64_t slot = seq % r->capacity;
	if (slot + n > r->capacity + r->mirror)
		return NULL;
	return (uint8_t *)r->data + slot * r->sample_stride;
}

/* n slots from src into n packed samples at dst, on st. */
static cudaError_t copy_slots(const struct ts_devring *r, void *dst, const void *src,
			      size_t n, cudaStream_t st)
{
	if (r->sample_stride == r->sample_bytes)
		return cudaMemcpyAsync(dst, src, n * r->sample_bytes, cudaMemcpyDefault, st);
	return cudaMemcpy2DAsync(dst, r->sample_bytes, src, r->sample_stride, r->sample_bytes,
				 n, cudaMemcpyDefault, st);
}

int ts_devring_copy_out(struct ts_devring *r, uint64_t seq, size_t n,
			void *dst, void *stream, struct ts_error *err)
{
	uint64_t slot, first;
	cudaStream_t st;
	cudaError_t e;

	if (!r || !dst || n > r->capacity)
		return ts_error_set(err, TS_E_ARG, "devring copy: bad arguments");
	/* A device-to-device cudaMemcpy does not wait on the host and runs
	 * on the legacy stream of the current device, racing the caller's
	 * other streams: copy on a named stream, and wait when asked to. */
	st = stream ? (cudaStream_t)stream : r->stream;
	slot = seq % r->capacity;
	first = r->capacity + r->mirror - slot < n ? r->capacity - slot : n;
	/* cudaMemcpyDefault: unified addressing finds both devices; a peer
	 * copy when dst is on another GPU */
	e = copy_slots(r, dst, (const uint8_t *)r->data + slot * r->sample_stride, first, st);
	if (e == cudaSuccess && first < n)
		e = copy_slots(r, (uint8_t *)dst + first * r->sample_bytes, r->data, n - first, st);
	if (e == cudaSuccess && !stream)
		e = cudaStreamSynchronize(st);
	if (e != cudaSuccess)
		return cuda_fail(err, "devring copy", e);
	return 0;
}
