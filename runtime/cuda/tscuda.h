/*
 * tscuda.h - the optional GPU parts of the runtime: device probe, the
 * on-GPU finishing kernel (uint8 NHWC -> float32/float16 NCHW, optionally
 * normalized, one kernel) and the device ring shared over CUDA IPC.
 *
 * Three prefixes, one per file: ts_cuda_* (device.c: probe, facts),
 * ts_finish_* (finish.cu: the kernel) and ts_devring_* (devring.c: the
 * device ring and its IPC handles). When tsrun is built without CUDA
 * (meson -Dcuda=disabled, or no nvcc), nocuda.c provides every function and
 * each returns TS_E_NODEV with a message saying so; callers need no #if.
 *
 * Conventions: functions return 0 or a negative code (-errno or TS_E_*);
 * TS_E_NODEV means "no usable CUDA device" (none present, no driver, or a
 * build without CUDA). err, when non-NULL, is filled on failure. Nothing
 * here prints or exits. Out-parameters are written only on success.
 *
 * Thread safety: ts_cuda_* are thread safe. A struct ts_devring is used
 * by one thread at a time. All work runs on the current CUDA device of
 * the calling thread unless a function takes a device ordinal.
 *
 * Internal to tsrun (runtime and tests); not installed.
 */
#ifndef TS_TSCUDA_H
#define TS_TSCUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device.c: probe and facts ---------------------------------------- */

/* Whether this build has the CUDA parts (false: nocuda.c). */
bool ts_cuda_built(void);

/*
 * How many CUDA devices this process can use. Returns 0 and *count >= 1,
 * or TS_E_NODEV with err->msg such as "no CUDA device found
 * (cudaGetDeviceCount: no CUDA-capable device is detected)" or "tsrun was
 * built without CUDA". Never crashes on a host without a driver.
 */
int ts_cuda_probe(int *count, struct ts_error *err);

struct ts_cuda_info {
	char name[256];
	int major, minor;             /* compute capability */
	uint64_t total_mem;           /* bytes */
	double mem_bandwidth;         /* peak, bytes/s, from memory clock and
					 bus width (0 when unknown) */
	int sm_count;
};

/* Facts about device dev (0-based). */
int ts_cuda_info(int dev, struct ts_cuda_info *out, struct ts_error *err);

/* Make dev the calling thread's current device. */
int ts_cuda_set_device(int dev, struct ts_error *err);

/* The PCI bus id of dev ("0000:3b:00.0"): how processes with different
 * CUDA_VISIBLE_DEVICES agree on a GPU. */
int ts_cuda_pci_bus_id(int dev, char *buf, size_t len, struct ts_error *err);

/* The UUID of dev (cudaDeviceProp.uuid): a MIG instance's own when the
 * GPU is partitioned (its instances share one PCI bus id). */
int ts_cuda_uuid(int dev, uint8_t uuid[16], struct ts_error *err);

/* 0 when other processes may use dev alongside this one; TS_E_NODEV with
 * the reason when its compute mode (cudaDevAttrComputeMode) is
 * exclusive-process or prohibited, so trainers could not open the device
 * ring on it. */
int ts_cuda_check_shareable(int dev, struct ts_error *err);

/* The driver's and the runtime's CUDA versions (1000 * major + 10 *
 * minor; 0 when unknown, e.g. no driver). */
void ts_cuda_versions(int *driver, int *runtime);

/* Page-lock host memory (cudaHostRegister) so copies from it are DMA;
 * TS_E_NODEV with the reason when refused. Unregister before unmapping. */
int ts_cuda_host_register(void *p, size_t len, struct ts_error *err);
void ts_cuda_host_unregister(void *p);

/* Give device dev's primary context back (cudaDeviceReset): its memory,
 * streams and the hundreds of MiB the context itself holds. Only for a
 * process that has no other use of that device (tsrun run after its
 * device ring failed to start, before serving the host ring instead). */
void ts_cuda_release(int dev);

/* ---- finish.cu: the finishing kernel ---------------------------------- */

/* What one finished sample looks like. mean/std are on the 0..1 scale,
 * as in normalize(); with normalize false, x -> x / 255. */
struct ts_finish_params {
	int height, width, channels;  /* channels 1..4 */
	enum ts_dtype dtype;          /* TS_DTYPE_F32 or TS_DTYPE_F16 */
	bool normalize;
	float mean[4], std[4];
};

/* Fill p from a plan's device(cuda) stage and its CPU sample shape.
 * Returns TS_E_ARG when the plan has no device stage. Available in every
 * build (no CUDA needed). */
int ts_finish_params_from_plan(const struct ts_plan *plan,
			       struct ts_finish_params *p, struct ts_error *err);

/* Bytes of one finished sample. */
size_t ts_finish_sample_bytes(const struct ts_finish_params *p);

/* Bytes from one finished sample's slot to the next: sample_bytes
 * rounded up to a multiple of 16 (TS_FINISH_ALIGN), so that every slot
 * of a 16-byte aligned block starts aligned and the kernel stores whole
 * 16-byte vectors for every sample size. The padding is not data (the
 * kernel writes zeros there). */
#define TS_FINISH_ALIGN 16
size_t ts_finish_sample_stride(const struct ts_finish_params *p);

/*
 * Launch the kernel: n samples of uint8 NHWC at src (device memory,
 * height*width*channels bytes each, contiguous) into n slots at dst
 * (device memory, 16-byte aligned, n * ts_finish_sample_stride bytes:
 * sample s, NCHW, at dst + s * stride, its padding zeroed). stream is a
 * cudaStream_t (NULL: the default stream). Asynchronous: returns after
 * the launch; launch errors are reported, execution errors surface at
 * the next sync. TS_E_ARG for a misaligned dst.
 */
int ts_finish_launch(const uint8_t *src, void *dst, size_t n,
		     const struct ts_finish_params *p, void *stream,
		     struct ts_error *err);

/* As ts_finish_launch, and the first n2 (<= n) samples also into dst2
 * (device memory), from the same pass: the device ring's mirror slots. */
int ts_finish_launch_mirrored(const uint8_t *src, void *dst, size_t n,
			      void *dst2, size_t n2,
			      const struct ts_finish_params *p, void *stream,
			      struct ts_error *err);

/* The same computation on the CPU, the reference the tests compare with:
 * the same single-precision formula, x * scale[c] + bias[c]. dst holds
 * n finished samples (float, or IEEE half as uint16_t), packed
 * (ts_finish_sample_bytes apart, not the device slots' stride). */
void ts_finish_reference(const uint8_t *src, void *dst, size_t n,
			 const struct ts_finish_params *p);

/* ---- devring.c: the device ring and CUDA IPC --------------------------- */

/*
 * A device ring: capacity finished samples in one cudaMalloc'd block on
 * one device, filled batch by batch from the host ring (pinned or not)
 * through a device staging buffer and the finishing kernel. The producer
 * creates it; trainers import it from an IPC handle and read samples in
 * place (same GPU) or copy them peer to peer (another GPU).
 */
struct ts_devring;

/* The handle a producer sends a trainer (fixed size, plain bytes; fits a
 * protocol message). */
struct ts_devring_handle {
	uint8_t ipc[64];              /* cudaIpcMemHandle_t */
	uint64_t capacity;            /* samples */
	uint64_t mirror;              /* slots after capacity repeating the
					 first ones (contiguous batches) */
	uint64_t sample_bytes;        /* finished sample */
	uint64_t sample_stride;       /* slot to slot (ts_finish_sample_stride) */
	int32_t device;               /* the producer's device ordinal */
	int32_t pid;                  /* the producer */
};

/* Create a ring of capacity finished samples on device dev, with a
 * staging buffer for up to max_batch CPU samples per fill. mirror extra
 * slots after the last repeat slots 0..mirror-1, so any run of up to
 * mirror samples is one contiguous device span (ts_devring_span). */
int ts_devring_create(int dev, uint64_t capacity, uint64_t mirror,
		      const struct ts_finish_params *p, size_t max_batch,
		      struct ts_devring **out, struct ts_error *err);

/* Free a created ring (its producer must outlive the trainers that
 * imported it: the socket protocol tells them when it goes), or close an
 * imported one (cudaIpcCloseMemHandle). NULL is a no-op. */
void ts_devring_destroy(struct ts_devring *r);

/* The device pointer of slot 0; slot i is at i * sample_stride. */
void *ts_devring_data(const struct ts_devring *r);
uint64_t ts_devring_capacity(const struct ts_devring *r);
size_t ts_devring_sample_bytes(const struct ts_devring *r);
size_t ts_devring_sample_stride(const struct ts_devring *r);

/*
 * Finish n CPU samples (uint8 NHWC, contiguous at host, e.g. a batch
 * view of the host ring) into device slots seq % capacity onwards,
 * wrapping. Copies host -> staging (asynchronous DMA when host is pinned),
 * launches the kernel and waits for it: on return the slots are written.
 * n <= max_batch. Samples are host_stride bytes apart in host (the host
 * ring's sample_stride: one sample's bytes or more, padding skipped).
 */
int ts_devring_fill(struct ts_devring *r, const void *host, size_t host_stride,
		    uint64_t seq, size_t n, struct ts_error *err);

/* The host ring behind fills is page-locked in pieces of `slots` slots
 * from base (its slot 0), one cudaHostRegister each: a fill then splits
 * its host copy at piece boundaries, so that each copy lies within one
 * registration (one DMA). slots 0: no split (the default). */
void ts_devring_host_pieces(struct ts_devring *r, const void *base, uint64_t slots);

/* The IPC handle of a created ring. */
int ts_devring_export(const struct ts_devring *r, struct ts_devring_handle *h,
		      struct ts_error *err);

/* Open a ring exported by another process, on the calling thread's
 * current device: the same device as the producer's gives a pointer into
 * the producer's memory (no copy); another device maps it with peer
 * access (cudaIpcMemLazyEnablePeerAccess). */
int ts_devring_import(const struct ts_devring_handle *h,
		      struct ts_devring **out, struct ts_error *err);

/* The device address of samples [seq, seq + n) as one span, or NULL
 * when the run is longer than the ring's mirror allows. */
void *ts_devring_span(const struct ts_devring *r, uint64_t seq, size_t n);

/* Copy n samples from slot seq % capacity (wrapping) to dst, device
 * memory on any device (peer to peer when it is another one), packed
 * (n * sample_bytes: the slots' padding is left behind). stream
 * NULL: on the ring's own stream, and waited for (on return dst holds
 * the samples). Otherwise queued on stream (a cudaStream_t of the
 * calling thread's current device) and not waited for: work queued
 * after it on that stream sees the samples. */
int ts_devring_copy_out(struct ts_devring *r, uint64_t seq, size_t n,
			void *dst, void *stream, struct ts_error *err);

/* ---- devserve.c: a producer's device ring behind its host ring --------
 *
 * With device(cuda), `tsrun run` writes uint8 NHWC samples into a staged
 * host ring (ring.h); a finisher thread (ring_finisher.h) copies each published
 * run to the GPU, runs the finishing kernel into the device ring, and only
 * then shows the run to consumers. Both rings share seq numbers, capacity
 * and release positions, so a device slot is rewritten only when every
 * consumer has released it. The welcome of the protocol carries the
 * device ring (ts_devserve_describe) next to the host ring's descriptors.
 * Built in every build: without CUDA, start returns TS_E_NODEV.
 */
struct ts_devserve;
struct ts_ring;
struct ts_proto_device;

struct ts_devserve_stats {
	uint64_t samples;        /* finished on the device */
	double fill_s;           /* seconds copying + finishing */
	bool pinned;             /* host ring page-locked (DMA) */
	int device;
	char name[128];
	char pci_bus_id[16];
	/* why the host ring is not page-locked (registration refused), or
	 * "" (pinned, or still being registered: it runs beside serving) */
	char pin_note[192];
};

/* Start serving: ring must have been created with params.staged, for
 * plan's CPU sample (uint8 NHWC), before the engine writes. dev is a
 * device ordinal. note (when non-NULL, 256 bytes) gets a remark for the
 * operator, e.g. why the host ring could not be pinned, or "". */
int ts_devserve_start(struct ts_ring *ring, const struct ts_plan *plan, int dev,
		      struct ts_devserve **out, char *note, struct ts_error *err);

/* The device ring, for the welcome. */
void ts_devserve_describe(const struct ts_devserve *d, struct ts_proto_device *out);

void ts_devserve_stats(struct ts_devserve *d, struct ts_devserve_stats *out);

/*
 * Trainers map the device ring with cudaIpcOpenMemHandle; freeing it
 * while one still has it open is undefined behaviour (CUDA runtime,
 * cudaIpcOpenMemHandle). So the end of a served stream waits: poll
 * importers(arg), the number of processes that may hold it (the socket
 * server's connected consumers: a trainer closes its mapping at the end
 * of the stream, then hangs up), every 10 ms until it is 0 or timeout_ms
 * passed. Returns the number left.
 */
unsigned ts_devserve_wait_importers(unsigned (*importers)(void *arg), void *arg,
				    int timeout_ms);

/* Stop the finisher, unpin, and free the device ring, unless importers
 * (what ts_devserve_wait_importers returned) is not 0: then it is left
 * allocated, for the process's exit to reclaim, rather than freed under
 * a trainer. Returns 0 or the error that ended the stream on the device
 * side (err filled). NULL: no-op. */
int ts_devserve_stop(struct ts_devserve *d, unsigned importers, struct ts_error *err);

#ifdef __cplusplus
}
#endif
#endif
