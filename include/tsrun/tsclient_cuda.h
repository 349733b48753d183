/*
 * tsclient_cuda.h - page-locking a trainer's view of the ring for CUDA
 * (part of libtsclient).
 *
 * A batch from ts_client_next() lies in a read-only shared mapping of the
 * ring. Registering that mapping with cudaHostRegister makes it pinned
 * memory: host-to-device copies of batches become asynchronous DMA at
 * full link speed, with no bounce through a driver staging buffer and no
 * extra copy into a pinned buffer (what torch's pin_memory() does).
 *
 * libtsclient does not link CUDA: the CUDA runtime is loaded on first use
 * with dlopen (the one already loaded in the process, e.g. by PyTorch,
 * when there is one: libcudart.so.13, .so.12, then libcudart.so). On a
 * host without it, or without a GPU, the calls return TS_E_NODEV with a
 * message and the caller keeps using the (unpinned) batches.
 *
 * Conventions as tsclient.h: 0 or a negative code, err filled on failure,
 * out-parameters written only on success, nothing printed. The pinning
 * calls are thread safe; a struct ts_client_device is used by one thread
 * at a time, like its client.
 */
#ifndef TSCLIENT_CUDA_H
#define TSCLIENT_CUDA_H

#include <stddef.h>
#include "error.h"
#include "tsclient.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices (>= 1), or TS_E_NODEV: no CUDA runtime to load,
 * no driver, or no device; err->msg says which. */
int ts_client_cuda_devices(struct ts_error *err);

/* A registered host range. */
struct ts_client_pinned {
	void *base;
	size_t len;
};

/*
 * Register the ring mapping that contains addr (e.g. a batch's data):
 * exactly the double-mapped data region, i.e. the mapping holding addr
 * and its twin (the adjacent mapping of the same file at the same offset
 * and length, the other half of the ring), never a neighbouring mapping
 * of the same file. Read-only registration (cudaHostRegisterReadOnly),
 * asked only when the device reports
 * cudaDevAttrHostRegisterReadOnlySupported. Returns 0 and *out, or
 * TS_E_NODEV (no CUDA; the device cannot page-lock read-only memory;
 * cudaHostRegister refused: err says which), -ENOENT (addr is not in a
 * file mapping). Unregister with ts_client_unpin before ts_client_close
 * unmaps the ring.
 */
int ts_client_pin_mapping(const void *addr, struct ts_client_pinned *out,
			  struct ts_error *err);

/* Undo ts_client_pin_mapping. A zeroed p is a no-op. */
int ts_client_unpin(struct ts_client_pinned *p, struct ts_error *err);

/*
 * Error hygiene, for every call of this header: a CUDA call that fails
 * inside libtsclient has its error cleared (cudaGetLastError) before the
 * call returns, so the host program's next, unrelated CUDA call (a
 * PyTorch kernel launch) does not report it. The runtime used is the one
 * already loaded in the process when there is one (PyTorch's).
 */

/* The CUDA driver and runtime versions (1000 * major + 10 * minor; 0
 * when unknown) of the runtime libtsclient uses: for messages when the
 * runtime is unusable (a runtime newer than the driver). */
void ts_client_cuda_versions(int *driver, int *runtime);

/* ---- the producer's device ring (device(cuda) pipelines) --------------
 *
 * ts_client_device_open maps the producer's device ring into this
 * process with its CUDA IPC handle. On the producer's GPU (the same
 * device UUID: MIG instances of one GPU share a PCI bus id but not a
 * UUID), a batch is a device pointer straight into the producer's ring:
 * no copy. On another GPU, each batch is copied peer to peer into a
 * buffer of this client on that GPU.
 *
 * Stream ordering. The CUDA runtime orders work per stream, and a
 * device-to-device cudaMemcpy does not wait on the host, so every copy
 * here either runs on the caller's stream (the _async calls: work the
 * caller queues after it on that stream sees the data) or is finished
 * before the call returns (the plain calls: queued on the legacy default
 * stream of the batch's device, made current for the copy, then
 * synchronised; the caller's current device is restored).
 *
 * Release. A device batch is valid, like its host view, until the next
 * ts_client_next / ts_client_release. GPU work that reads it must have
 * finished by then, or the producer may refill the slots under it: record
 * it with ts_client_device_record_use on each stream that reads the batch
 * (any device), and take batches with ts_client_device_next, which waits
 * for exactly those uses (not the whole device) before it releases the
 * batch. Without recorded uses, synchronise your streams yourself.
 *
 * Teardown. The producer frees its device ring only once no trainer holds
 * it (it waits, bounded, for its consumers to hang up). At the end of the
 * stream, ts_client_device_next closes the IPC mapping itself when no
 * hold (ts_client_device_hold) remains, and the closing hold does it
 * otherwise: hosts whose views outlive a batch (a framework tensor)
 * hold the mapping while such a view exists. Device calls after the
 * mapping closed return TS_E_EOS.
 */
struct ts_client_device;

/* Open on CUDA device `device` (an ordinal of this process; -1: the
 * current device). Makes it the calling thread's current device. c must
 * outlive the returned object. Returns 0, TS_E_NODEV (no device ring
 * served, no CUDA runtime or device, the device is in exclusive-process
 * or prohibited compute mode, the handle cannot be opened: err says
 * which) or TS_E_NOMEM. */
int ts_client_device_open(struct ts_client *c, int device,
			  struct ts_client_device **out, struct ts_error *err);

/* Whether batches are zero-copy (1: the producer's GPU) or peer copies. */
int ts_client_device_zero_copy(const struct ts_client_device *d);

/* The CUDA device ordinal the batches are on. */
int ts_client_device_ordinal(const struct ts_client_device *d);

/* The device address of b's finished samples: b->n samples of
 * sample_bytes (ts_client_device_info), float NCHW, sample_stride apart
 * (a multiple of 16 bytes: every sample starts 16-byte aligned; the
 * padding between samples is not data). b comes from ts_client_next on
 * the same client. Zero-copy: a pointer into the ring. Peer: a copy into
 * this client's buffer, in the same layout, finished when the call
 * returns. 0, TS_E_EOS (the
 * mapping closed at the end of the stream) or TS_E_NODEV with the CUDA
 * error. */
int ts_client_device_batch(struct ts_client_device *d, const struct ts_batch *b,
			   void **ptr, struct ts_error *err);

/* As ts_client_device_batch, but a peer copy is queued on stream (a
 * cudaStream_t of the batch's device; NULL: the legacy default stream)
 * and not waited for: work queued after it on stream sees the samples. */
int ts_client_device_batch_async(struct ts_client_device *d, const struct ts_batch *b,
				 void *stream, void **ptr, struct ts_error *err);

/* Copy b's finished samples into dst, device memory of the caller's,
 * packed (b->n * sample_bytes, contiguous: the slots' padding is left
 * behind), on the GPU; finished when the call returns.
 * 0, TS_E_EOS or TS_E_NODEV with the CUDA error. */
int ts_client_device_copy(struct ts_client_device *d, const struct ts_batch *b,
			  void *dst, struct ts_error *err);

/* As ts_client_device_copy, queued on stream (cudaStream_t of dst's
 * device or NULL) and not waited for. */
int ts_client_device_copy_async(struct ts_client_device *d, const struct ts_batch *b,
				void *dst, void *stream, struct ts_error *err);

/* Record that work queued so far on stream (a cudaStream_t of any
 * device, or NULL: the current device's legacy stream) reads the current
 * batch: an event (cudaEventRecord) that ts_client_device_next waits
 * for, created on the stream's own device (cudaStreamGetDevice; with a
 * runtime older than CUDA 12.8, the calling thread's current device,
 * which must then be the stream's). Up to 16 uses per batch. 0, TS_E_ARG
 * (too many, or a stream the runtime does not know) or TS_E_NODEV. A
 * caller that ignores a failure lets the slots go back under its GPU
 * work. */
int ts_client_device_record_use(struct ts_client_device *d, void *stream,
				struct ts_error *err);

/* Wait on the host until every use recorded since the last batch has
 * finished (cudaEventSynchronize on each), then forget them. 0 or
 * TS_E_NODEV with the CUDA error. */
int ts_client_device_wait_uses(struct ts_client_device *d, struct ts_error *err);

/* The next batch for a device trainer: waits for the recorded uses of the
 * previous batch, then ts_client_next. At the end of the stream (TS_E_EOS,
 * or TS_E_PRODUCER) it closes the IPC mapping when no hold remains.
 * Returns as ts_client_next. */
int ts_client_device_next(struct ts_client_device *d, struct ts_batch *b,
			  struct ts_error *err);

/*
 * Keep up to k (1..8, default 1) batches outstanding, so that the host
 * runs ahead of the GPU: ts_client_device_next then takes batches with
 * ts_client_next_held and gives each back (ts_client_release_below) at
 * the first ts_client_device_next after the uses recorded on it have
 * finished (cudaEventQuery, without waiting), waiting only for the
 * oldest when k are out, or when its slots keep the producer from
 * publishing the next batch. A batch's device view is then valid until
 * its recorded uses are done and a later ts_client_device_next ran (one
 * without recorded uses: until the next call, as with k = 1). On another
 * GPU each outstanding batch has its own peer-copy buffer (k batches'
 * worth are allocated). Set before the first batch. 0, TS_E_ARG or
 * TS_E_NOMEM.
 */
int ts_client_device_set_outstanding(struct ts_client_device *d, unsigned k,
				     struct ts_error *err);

/* How many batches are outstanding now (outstanding mode). */
unsigned ts_client_device_outstanding(const struct ts_client_device *d);

/* Holds on the mapping: a view that may outlive its batch takes one and
 * gives it back when it goes. The mapping stays open while holds remain;
 * after the end of the stream, the last unhold closes it. */
void ts_client_device_hold(struct ts_client_device *d);
void ts_client_device_unhold(struct ts_client_device *d);

/* Whether the IPC mapping is still open (0 after the end of the stream
 * closed it). */
int ts_client_device_mapped(const struct ts_client_device *d);

/* Close the mapping (waiting for recorded uses, then for all work queued
 * on the mapping's device, first) and free the copy buffer and events.
 * With holds remaining, the handle is detached instead: it no longer
 * touches its client (ts_client_close may follow at once), the mapping
 * stays valid for the views that hold it, and the last
 * ts_client_device_unhold closes and frees it; d must not be used
 * otherwise after close. A second close of a detached handle is a no-op.
 * NULL is a no-op. Call before ts_client_close. */
void ts_client_device_close(struct ts_client_device *d);

#ifdef __cplusplus
}
#endif
#endif
