/*
 * proto.h - the tensorsocket wire messages (tensorsocket(7)): encoding
 * and decoding of hello / welcome / refuse, all fixed-width little-endian,
 * and sending/receiving one message with its descriptors (SCM_RIGHTS).
 * Shared by the server (runtime) and the client library. Decoders trust
 * nothing: every length and enum is checked.
 *
 * Every message: an 8-byte header {u32 magic, u16 type, u16 body length}
 * followed by the body.
 */
#ifndef TS_PROTO_H
#define TS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define TS_PROTO_MAGIC 0x4b535354u   /* "TSSK" little-endian */
/* 2: the hello names a job (rank, world size, drop or pad), so the ranks
 * of a data-parallel job split the stream. 3: a welcome may carry the
 * device fallback tail (the pipeline ends in device(cuda), but the host
 * ring serves its uint8 NHWC samples: what was promised and why). 4: the
 * device tail carries its slots' sample_stride (finished samples padded
 * to 16 bytes, so the finishing kernel's vectors are aligned for every
 * sample size). */
#define TS_PROTO_VERSION 4u
#define TS_PROTO_HDR_LEN 8
#define TS_PROTO_JOB_MAX 63          /* bytes of a job name */
#define TS_PROTO_HELLO_JOB_OFF 28    /* the name, NUL padded to 64 bytes */
#define TS_PROTO_HELLO_LEN (TS_PROTO_HELLO_JOB_OFF + TS_PROTO_JOB_MAX + 1)
#define TS_PROTO_RESUME_LEN 24       /* optional hello tail: a resume */
#define TS_PROTO_WELCOME_LEN 80
#define TS_PROTO_DEVICE_LEN 144      /* optional welcome tail: device ring */
#define TS_PROTO_FALLBACK_LEN 168    /* or instead: the device fallback */
#define TS_PROTO_FALLBACK_WHY 128    /* bytes of its reason, NUL padded */
#define TS_PROTO_REFUSE_MAX 240      /* bytes of reason text */
#define TS_PROTO_MAX_BODY 256

enum ts_proto_type {
	TS_MSG_HELLO = 1,
	TS_MSG_WELCOME = 2,
	TS_MSG_REFUSE = 3,
};

/* Refusal reasons (wire values). */
enum ts_proto_reason {
	TS_REFUSE_VERSION = 1,
	TS_REFUSE_BATCH = 2,
	TS_REFUSE_PERMISSION = 3,
	TS_REFUSE_PROTOCOL = 4,
	TS_REFUSE_FULL = 5,
	TS_REFUSE_FINISHED = 6,
	TS_REFUSE_JOB = 7,        /* the rank does not fit its job */
};

/*
 * Body (little-endian): 0 version, 4 batch, 8 join, 9 drop_last, 10 u16 0,
 * 12 pid, 16 rank, 20 world (0: no job), 24 job_drop, 25..27 0, 28 the job
 * name (1..63 printable bytes with a job, none without), NUL padded to 64.
 * A lone trainer that resumes (Loader.load_state_dict) appends the resume
 * tail, TS_PROTO_RESUME_LEN bytes: 92 u32 flags (bit 0 set; bit 1: epochs
 * given), 96 u64 index, 104 u32 epoch, 108 u32 epochs, 112 u32 0. A
 * producer older than the tail refuses such a hello (its length).
 */
struct ts_proto_hello {
	uint32_t version;
	uint32_t batch;
	uint8_t join;        /* enum ts_ring_join */
	uint8_t drop_last;   /* 0 or 1 */
	uint32_t pid;
	uint32_t rank;       /* < world */
	uint32_t world;      /* ranks in the job; 0: a lone trainer */
	uint8_t job_drop;    /* 0: equal shares by pad; 1: by drop */
	char job[TS_PROTO_JOB_MAX + 1];   /* NUL-terminated; "" without */
	/* The resume tail (tensorsocket(7), Join policies): begin at index
	 * resume_index of epoch resume_epoch, or of a later epoch when the
	 * ring has moved past it; resume_epochs the epochs still owed, the
	 * rest of that one counted (with has_resume_epochs; else the
	 * stream's from its start). Never with a job. */
	bool resume;
	bool has_resume_epochs;
	uint32_t resume_epoch;
	uint64_t resume_index;
	uint32_t resume_epochs;
};
/* The wire sizes crossing processes, fixed: a change is a new version. */
_Static_assert(TS_PROTO_HELLO_LEN == 92, "hello body is 92 bytes since version 2");
_Static_assert(TS_PROTO_HELLO_LEN + TS_PROTO_RESUME_LEN <= TS_PROTO_MAX_BODY,
	       "hello fits a message");

/* The device ring a producer serves with device(cuda): finished samples
 * (float NCHW) in GPU memory, opened with a CUDA IPC handle. Same seq
 * numbering and validity as the host ring. Slots [capacity, capacity +
 * mirror) repeat slots [0, mirror), so any batch of up to mirror samples
 * is one contiguous device span. Slot i is at i * sample_stride: a
 * multiple of 16 bytes, sample_bytes or more (the padding is not data).
 * Body of the tail (little-endian): 0 dtype, 4 layout, 8 sample_bytes,
 * 16 capacity, 24 mirror, 32 device, 36 pid, 40 pci_bus_id, 56 ipc,
 * 120 uuid, 136 sample_stride. */
struct ts_proto_device {
	uint32_t dtype, layout;       /* enum ts_dtype (F32/F16), NCHW */
	uint64_t sample_bytes;        /* one finished sample */
	uint64_t sample_stride;       /* slot to slot (version 4) */
	uint64_t capacity;            /* slots (the host ring's) */
	uint64_t mirror;              /* repeated slots after capacity */
	int32_t device;               /* the producer's ordinal (its view) */
	int32_t pid;                  /* the producer */
	char pci_bus_id[16];          /* "0000:3b:00.0", NUL padded */
	uint8_t ipc[64];              /* cudaIpcMemHandle_t */
	uint8_t uuid[16];             /* the GPU's (or MIG instance's) UUID:
					 MIG instances share a PCI bus id */
};

/* The device fallback: the pipeline ends in device(cuda) but the producer
 * serves the host ring (no usable GPU, or the device ring did not start).
 * What the pipeline promised, so that a trainer can refuse or convert,
 * and why. Body (little-endian): 0 dtype (enum ts_dtype, F32/F16), 4
 * normalize (0/1), 8 f32 mean[4], 24 f32 std[4], 40 the reason (printable
 * bytes, NUL padded to 128). */
struct ts_proto_fallback {
	uint32_t dtype;
	uint32_t normalize;
	float mean[4], std[4];
	char why[TS_PROTO_FALLBACK_WHY];   /* NUL-terminated */
};

struct ts_proto_welcome {
	uint32_t version;
	uint32_t producer_pid;
	uint32_t height, width, channels;
	uint32_t dtype, layout;
	uint32_t epochs;
	uint64_t sample_bytes;
	uint64_t capacity;
	uint64_t samples_per_epoch;
	uint64_t start;
	uint32_t min_epoch;
	uint32_t batch;
	uint64_t head;
	/* Optional tail (body TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN):
	 * the producer serves a device ring too. */
	bool has_device;
	struct ts_proto_device device;
	/* Or, instead of the device ring's, the fallback tail (body
	 * TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN). */
	bool has_fallback;
	struct ts_proto_fallback fallback;
};
_Static_assert(TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN <= TS_PROTO_MAX_BODY,
	       "the welcome with its device tail fits a message");
_Static_assert(TS_PROTO_DEVICE_LEN != TS_PROTO_FALLBACK_LEN, "the tails differ by length");
_Static_assert(TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN <= TS_PROTO_MAX_BODY,
	       "the welcome with its fallback tail fits a message");
_Static_assert(40 + TS_PROTO_FALLBACK_WHY == TS_PROTO_FALLBACK_LEN, "fallback tail layout");

struct ts_proto_refuse {
	uint32_t reason;                        /* enum ts_proto_reason */
	char text[TS_PROTO_REFUSE_MAX + 1];     /* NUL-terminated */
};

/* Encode a whole message (header + body) into buf, which must hold
 * TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY bytes; returns its length (a
 * hello with resume carries the resume tail). */
size_t ts_proto_put_hello(uint8_t *buf, const struct ts_proto_hello *m);
size_t ts_proto_put_welcome(uint8_t *buf, const struct ts_proto_welcome *m);
size_t ts_proto_put_refuse(uint8_t *buf, const struct ts_proto_refuse *m);

/* Decode a header: 0 and *type, *body_len, or TS_E_PROTOCOL (bad magic,
 * unknown type, body longer than TS_PROTO_MAX_BODY). */
int ts_proto_get_header(const uint8_t *buf, uint16_t *type,
			uint16_t *body_len, struct ts_error *err);

/* Decode bodies. hello: the version is read first so a newer client gets
 * a version refusal rather than a length error (a body of at least 4
 * bytes decodes the version, the rest must be TS_PROTO_HELLO_LEN, or
 * that plus TS_PROTO_RESUME_LEN without a job).
 * Return 0 or TS_E_PROTOCOL; *m written on success. */
int ts_proto_get_hello(const uint8_t *body, size_t len,
		       struct ts_proto_hello *m, struct ts_error *err);
int ts_proto_get_welcome(const uint8_t *body, size_t len,
			 struct ts_proto_welcome *m, struct ts_error *err);
int ts_proto_get_refuse(const uint8_t *body, size_t len,
			struct ts_proto_refuse *m, struct ts_error *err);

/* Send len bytes plus nfds (0..2) descriptors in one sendmsg
 * (MSG_NOSIGNAL). Returns 0 or -errno. */
int ts_proto_send(int sock, const uint8_t *buf, size_t len, const int *fds,
		  int nfds);

/*
 * Receive one whole message (blocking, at most timeout_ms in total; < 0
 * forever): *type, the body into body (TS_PROTO_MAX_BODY bytes), *len,
 * and up to 2 descriptors (O_CLOEXEC) into fds / *nfds; the caller owns
 * them. Returns 0, TS_E_PROTOCOL, TS_E_PRODUCER (peer hung up),
 * -ETIMEDOUT or -errno.
 */
int ts_proto_recv(int sock, int timeout_ms, uint16_t *type, uint8_t *body,
		  uint16_t *len, int *fds, int *nfds, struct ts_error *err);

#endif
