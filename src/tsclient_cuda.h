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
 * out-parameters written only on success, nothing printed. Thread safe.
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
 * the whole run of adjacent mappings of the same shared file, which
 * covers both halves of the double-mapped ring. Returns 0 and *out, or
 * TS_E_NODEV (no CUDA), -ENOENT (addr is not in a file mapping), or
 * TS_E_NODEV with the CUDA error (cudaHostRegister refused). Unregister
 * with ts_client_unpin before ts_client_close unmaps the ring.
 */
int ts_client_pin_mapping(const void *addr, struct ts_client_pinned *out,
			  struct ts_error *err);

/* Undo ts_client_pin_mapping. A zeroed p is a no-op. */
int ts_client_unpin(struct ts_client_pinned *p, struct ts_error *err);

/* ---- the producer's device ring (device(cuda) pipelines) --------------
 *
 * ts_client_device_open maps the producer's device ring into this
 * process with its CUDA IPC handle. On the producer's GPU (the same PCI
 * bus id), a batch is a device pointer straight into the producer's ring:
 * no copy. On another GPU, each batch is copied peer to peer into a
 * buffer of this client on that GPU.
 *
 * Ordering: a device batch is valid, like its host view, until the next
 * ts_client_next / ts_client_release. GPU work queued on it must have
 * finished before then (synchronize your stream), or the producer may
 * refill the slots under it.
 */
struct ts_client_device;

/* Open on CUDA device `device` (an ordinal of this process; -1: the
 * current device). Makes it the calling thread's current device. Returns
 * 0, TS_E_NODEV (no device ring served, no CUDA runtime or device, the
 * handle cannot be opened: err says which) or TS_E_NOMEM. */
int ts_client_device_open(struct ts_client *c, int device,
			  struct ts_client_device **out, struct ts_error *err);

/* Whether batches are zero-copy (1: the producer's GPU) or peer copies. */
int ts_client_device_zero_copy(const struct ts_client_device *d);

/* The CUDA device ordinal the batches are on. */
int ts_client_device_ordinal(const struct ts_client_device *d);

/* The device address of b's finished samples: b->n * sample_bytes of
 * ts_client_device_info, float NCHW. b comes from ts_client_next on the
 * same client. 0 or TS_E_NODEV with the CUDA error. */
int ts_client_device_batch(struct ts_client_device *d, const struct ts_batch *b,
			   void **ptr, struct ts_error *err);

/* Copy b's finished samples into dst, device memory of the caller's
 * (b->n * sample_bytes), on the GPU: for hosts that cannot wrap a device
 * pointer without a copy. 0 or TS_E_NODEV with the CUDA error. */
int ts_client_device_copy(struct ts_client_device *d, const struct ts_batch *b,
			  void *dst, struct ts_error *err);

/* Close the mapping and free the copy buffer. NULL is a no-op. Call
 * before ts_client_close. */
void ts_client_device_close(struct ts_client_device *d);

#ifdef __cplusplus
}
#endif
#endif
