/*
 * tsclient.h - consume batches from a tsrun producer (libtsclient).
 *
 * A trainer connects to the producer's Unix socket, says hello (its batch
 * size and join policy) and receives a read-only view of the shared sample
 * ring. Each ts_client_next() returns a zero-copy view of the next batch:
 * all consumers of one producer see the same samples in the same order,
 * each with its own batch size; a batch never spans two epochs.
 *
 * Conventions: functions return 0 on success or a negative code: -errno
 * or a TS_E_* code from error.h (TS_E_EOS at the end of the stream,
 * TS_E_PRODUCER when the producer died or failed, TS_E_REFUSED when it
 * refused the hello). When err is non-NULL it is filled on failure.
 * Out-parameters are written only on success. Nothing here prints.
 *
 * Thread safety: a struct ts_client is used by one thread at a time;
 * distinct clients are independent. The wire protocol is tensorsocket(7).
 */
#ifndef TSCLIENT_H
#define TSCLIENT_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ts_client;

enum ts_client_join {
	TS_CLIENT_JOIN_NOW = 0,        /* start at the producer's head, at
					  the next batch boundary (an index
					  that is a multiple of the batch) */
	TS_CLIENT_JOIN_NEXT_EPOCH = 1, /* the default: start at a whole
					  epoch, the current one when its
					  start is still in the ring (nobody
					  is rewound), else the next */
};

struct ts_client_opts {
	/* sizeof(struct ts_client_opts) as the caller's header declares it:
	 * set by ts_client_opts_init (a caller that fills the struct itself
	 * sets it). The library reads the fields that fit in size and
	 * takes the defaults for the rest, so a program built against an
	 * older header keeps working; it refuses size 0 (unset) and, from
	 * a newer header, a size whose fields past its own are not zero
	 * (libtsrun(3), Sized structs). */
	size_t size;
	uint32_t batch_size;     /* 0: the pipeline's batch(n) */
	int join;                /* enum ts_client_join */
	int drop_last;           /* nonzero: drop each epoch's short last
				    batch */
	int timeout_ms;          /* longest wait in ts_client_next; < 0
				    (default through ts_client_opts_init):
				    no limit */
	int connect_timeout_ms;  /* for the hello; default 5000 */
	/* A rank of a data-parallel job (tensorsocket(7)). job names it (1
	 * to 63 printable bytes without spaces; NULL: a lone trainer); this
	 * trainer is rank `rank` of `world_size` (1 to 64). Every rank of a
	 * job must ask for the same world size, batch size, join policy,
	 * drop_last and job_drop_last. Each rank reads a disjoint share of
	 * every epoch, all shares equal in length and together the whole
	 * epoch: with M samples and batch B, rounds of world_size * B
	 * samples give rank r the r-th batch of each round; the M mod
	 * (world_size * B) samples left give each rank q more, in one last
	 * batch, q = ceil(rest / world_size) (the last ranks' batches
	 * overlap at the epoch's end: a pad) or, with job_drop_last,
	 * floor(rest / world_size) (the last rest mod world_size samples
	 * are read by none). So each rank reads ceil(M / world_size) or
	 * floor(M / world_size) samples per epoch, as
	 * DistributedSampler(drop_last=job_drop_last). */
	const char *job;
	uint32_t rank;
	uint32_t world_size;
	int job_drop_last;
	/* Resume a lone trainer (tensorsocket(7), Join policies), as
	 * tsrun.Loader.load_state_dict does: nonzero resume begins at index
	 * resume_index of epoch resume_epoch (the first sample it had not
	 * read) when that sample is still in the ring or not published yet
	 * (the same samples: exact); otherwise at that index of the first
	 * later epoch in which the ring has not passed it (other samples).
	 * join is then not used. resume_epochs (when has_resume_epochs is
	 * nonzero) is the epochs it still owes, the rest of the one it
	 * begins in counted, at most the stream's (0: none, TS_E_EOS at
	 * once); without it, the stream's epochs less resume_epoch (at
	 * least 1). Not with a job. */
	int resume;
	uint64_t resume_epoch;   /* at most UINT32_MAX (TS_E_ARG above) */
	uint64_t resume_index;
	int has_resume_epochs;
	uint32_t resume_epochs;
};

/* Fill o with defaults: batch 0, join next_epoch (whole epochs), keep the
 * last batch, no timeout, 5 s to connect, no job; and its size. Call it
 * as ts_client_opts_init(o), which passes sizeof *o: the library writes
 * no byte past the caller's struct (from a newer header, it zeroes the
 * fields it does not know). */
void ts_client_opts_init_size(struct ts_client_opts *o, size_t size);
#define ts_client_opts_init(o) ts_client_opts_init_size((o), sizeof *(o))

/*
 * Make o a rank of job `job` as torchrun started this process: rank from
 * LOCAL_RANK, world_size from LOCAL_WORLD_SIZE (the ranks on this node,
 * which read this node's tsrun). job is not copied: it must outlive o's
 * use. Returns 0, or TS_E_ARG when a variable is missing or malformed
 * (err says which; o is unchanged then).
 */
int ts_client_opts_torchrun(struct ts_client_opts *o, const char *job,
			    struct ts_error *err);

/* One batch: a view into the shared ring, valid until the next
 * ts_client_next, ts_client_release or ts_client_close on the client. */
struct ts_batch {
	const void *data;        /* n samples, sample_stride bytes apart */
	size_t n;                /* samples in this batch (1..batch_size) */
	const int32_t *labels;   /* n labels */
	int height, width, channels;
	int dtype;               /* enum ts_dtype */
	int layout;              /* enum ts_layout */
	size_t sample_bytes;
	uint64_t epoch;          /* epoch of every sample in the batch (64
				    bits, as ts_stream_batch's) */
	uint64_t index;          /* index within the epoch of the first */
	uint64_t seq;            /* stream sequence number of the first */
	/* Sample s of the batch is at (const char *)data + s *
	 * sample_stride. It is sample_bytes (the batch is one contiguous
	 * n * sample_bytes block) unless sample_bytes is an odd size that
	 * would round the ring up far: then the ring pads every slot to 64
	 * bytes or to a page, and the padding between samples is not data
	 * (tensorsocket(7), RING). A batch built by hand with 0 here reads
	 * as packed. */
	size_t sample_stride;
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[4];
};

/* What the producer told us at connect time. */
struct ts_client_info {
	int height, width, channels;
	int dtype;               /* enum ts_dtype */
	int layout;              /* enum ts_layout */
	size_t sample_bytes;
	uint32_t batch_size;     /* granted (the pipeline's when 0 asked) */
	uint64_t capacity;       /* ring size in samples */
	uint64_t samples_per_epoch; /* 0: unknown */
	uint32_t epochs;         /* 0: forever */
	uint64_t start;          /* seq this consumer starts at */
	uint64_t start_epoch;    /* first epoch it will see (next_epoch) */
	int producer_pid;
	size_t sample_stride;    /* as struct ts_batch */
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[8];
};

/* The device ring of a producer whose pipeline ends in device(cuda) and
 * that has a GPU: finished samples (float NCHW) in GPU memory, with the
 * same seq numbers as the host ring. Open it with tsclient_cuda.h. Slot
 * i is at i * sample_stride: sample_bytes rounded up to a multiple of 16
 * (so every slot is 16-byte aligned; the padding is not data). */
struct ts_client_device_info {
	int height, width, channels;
	int dtype;               /* TS_DTYPE_F32 or TS_DTYPE_F16 */
	int layout;              /* TS_LAYOUT_NCHW */
	size_t sample_bytes;     /* one finished sample */
	uint64_t capacity;       /* slots, as the host ring */
	uint64_t mirror;         /* slots repeated after the last: batches of
				    up to mirror samples are contiguous */
	int producer_device;     /* the GPU's ordinal in the producer */
	int producer_pid;
	char pci_bus_id[16];     /* the GPU, "0000:3b:00.0" */
	unsigned char ipc[64];   /* cudaIpcMemHandle_t of the slots */
	size_t sample_stride;    /* slot to slot: sample_bytes or more, a
				    multiple of 16 */
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[4];
};

/* A tensor's description: one sample's, or one label's (tsrun.serve). */
#define TS_CLIENT_MAX_DIMS 8
struct ts_client_tensor {
	int ndim;                /* 1 .. TS_CLIENT_MAX_DIMS (0: a scalar) */
	int dtype;               /* enum ts_dtype */
	int64_t dims[TS_CLIENT_MAX_DIMS];
	size_t bytes;            /* of one sample's tensor */
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[2];
};

/*
 * Connect to the producer at socket_path. opts may be NULL (defaults).
 * The producer must run as this user, as root, or as a uid listed in the
 * environment's TSRUN_PRODUCER_UID (comma-separated), checked with
 * SO_PEERCRED before anything is sent (tensorsocket(7), SECURITY).
 * Returns 0 and *out (free with ts_client_close), or: -ENOENT /
 * -ECONNREFUSED (no producer there), -ENOTSOCK (the path is a file that is
 * not a socket: a pipeline file?), TS_E_REFUSED (err->msg says why:
 * a producer of another user, version mismatch, batch larger than half
 * the ring, permission),
 * TS_E_PROTOCOL, -ETIMEDOUT.
 */
int ts_client_connect(const char *socket_path,
		      const struct ts_client_opts *opts,
		      struct ts_client **out, struct ts_error *err);

/* Shape and stream facts from the welcome. */
void ts_client_info(const struct ts_client *c, struct ts_client_info *out);

/* The epoch this trainer's stream ends before: its epochs from where it
 * joined or resumed, counted per trainer (tensorsocket(7), Join
 * policies; a job's rank learns it once its job starts); 0 when the
 * stream is endless. ts_client_next returns TS_E_EOS at its first
 * sample. */
uint64_t ts_client_end_epoch(const struct ts_client *c);

/* 0 and *out when the producer serves a device ring; TS_E_NODEV when it
 * does not (its pipeline has no device(cuda) stage, or it has no GPU: the
 * host ring's uint8 NHWC samples are then the batches). */
int ts_client_device_info(const struct ts_client *c,
			  struct ts_client_device_info *out,
			  struct ts_error *err);

/* The UUID of the producer's GPU (cudaDeviceProp.uuid; a MIG instance's
 * own when the GPU is partitioned, whose instances share one PCI bus id).
 * 0, or TS_E_NODEV as ts_client_device_info. */
int ts_client_device_uuid(const struct ts_client *c, unsigned char uuid[16],
			  struct ts_error *err);

/* A producer whose pipeline ends in device(cuda) but that serves the host
 * ring instead (no usable GPU, or the device ring did not start): what
 * the pipeline promised, and why it is not served. The batches are then
 * the host ring's uint8 NHWC samples, not the promised float NCHW ones. */
struct ts_client_fallback {
	int dtype;               /* promised: TS_DTYPE_F32 or TS_DTYPE_F16 */
	int normalize;           /* 1: y = (x / 255 - mean[c]) / std[c]; 0: x / 255 */
	float mean[4], std[4];
	char why[128];           /* the producer's reason, NUL-terminated */
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[2];
};

/* 1 and *out (out may be NULL) when the producer fell back from its
 * device(cuda) stage to the host ring; 0 otherwise (a device ring is
 * served, or the pipeline has no device stage). A trainer that asked for
 * the device's batches should refuse, or convert the uint8 NHWC samples
 * itself with these parameters, rather than take them for finished ones. */
int ts_client_device_fallback(const struct ts_client *c, struct ts_client_fallback *out);

/* The shape of one sample: for a pipeline (channels, height, width) or
 * (height, width, channels) after its layout; for a tsrun.serve producer
 * the per-sample shape of its DataLoader's tensors, whatever their rank. */
void ts_client_sample_tensor(const struct ts_client *c,
			     struct ts_client_tensor *out);

/* 0 and *out when every sample carries a label tensor (a tsrun.serve
 * producer whose loader yields one per sample, such as a one-hot or a
 * mask); TS_E_STATE when labels are integer classes (ts_batch.labels). */
int ts_client_label_tensor(const struct ts_client *c,
			   struct ts_client_tensor *out, struct ts_error *err);

/* views(...) (tsrun-pipeline(5), VIEWS): a pipeline may make several
 * views of each image, all in one sample, one after another. A view as
 * the producer lays it out in every sample: a height x width x channels
 * tensor (channels first in nchw), at offset bytes into the sample
 * (sample s of batch b: (const char *)b->data + s * b->sample_stride +
 * offset), bytes long, from the views() group group (0, 1, ...). */
struct ts_client_view {
	int height, width, channels;
	int dtype;               /* enum ts_dtype */
	int layout;              /* enum ts_layout */
	int group;
	size_t offset;
	size_t bytes;
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[2];
};

/* The producer's node share when its pipeline has shard() (tsrun-
 * pipeline(5)): node *index of *count; 0 of 0 without one (or from a
 * producer older than this call). The position of sample (epoch, i) in
 * the whole epoch, the key the producer's own draws use, is index + count
 * * i (i itself when count is 0): key a trainer's draws by it, as
 * tsrun.Loader does for its mixup (ts_client_mix_params takes it as the
 * batch's index), and no two nodes draw alike. Thread safe. */
void ts_client_node(const struct ts_client *c, uint32_t *index, uint32_t *count);

/* The number of views of each sample: 0 when a sample is one tensor
 * (ts_client_sample_tensor; ts_batch's shape fields), else 1..32. Thread
 * safe (reads what connect stored). */
int ts_client_views(const struct ts_client *c);

/* View i (0 <= i < ts_client_views(c)) into *out: 0, or TS_E_ARG (i out
 * of range, or no views) with err filled. Thread safe. */
int ts_client_view_info(const struct ts_client *c, int i, struct ts_client_view *out,
			struct ts_error *err);

/* The label tensors of b, the batch ts_client_next returned last or a
 * tail of it (b->n of them, contiguous, each ts_client_label_tensor().bytes
 * long; a copy owned by the client, valid as b is), or NULL when labels
 * are integer classes
 * (b->labels is then the label; with label tensors b->labels is all 0). */
const void *ts_client_batch_label_data(const struct ts_client *c,
				       const struct ts_batch *b);

/*
 * The next batch (releasing the previous one first). Blocks until a full
 * batch, the end of an epoch or the end of the stream. Returns 0 and *b,
 * TS_E_EOS after the last sample, TS_E_PRODUCER when the producer died
 * (noticed within about 100 ms) or failed, TS_E_JOB when another rank of
 * this trainer's job left before the end of the stream (err names it),
 * TS_E_DETACHED when the producer detached this trainer for holding the
 * ring past its stall_timeout (tensorsocket(7); err says how long; a new
 * ts_client_connect joins again), -ETIMEDOUT after opts.timeout_ms.
 */
int ts_client_next(struct ts_client *c, struct ts_batch *b,
		   struct ts_error *err);

/* Give b's samples back early so the producer can reuse their slots; b
 * must not be read afterwards. Optional: ts_client_next implies it. */
void ts_client_release(struct ts_client *c, const struct ts_batch *b);

/* ---- who waits: this trainer's own figures ------------------------------
 *
 * The client counts the time spent inside ts_client_next (and the
 * Python client's calls for held batches) waiting for a batch (one
 * already published costs microseconds) and what it handed out, and publishes both in its control
 * page for the producer's status file, `tsrun stat` and summary. The cost
 * is two clock reads (vDSO, no system call) and a dozen stores to a cache
 * line of its own per batch. The window is the last 5 to 10 s (two
 * buckets of 5 s); until the trainer has been connected 5 s, it is the
 * time since connect.
 */
struct ts_client_stats {
	double connected_s;       /* since ts_client_connect returned */
	double wait_s;            /* of which inside next() */
	double wait_fraction;     /* wait_s / connected_s, 0 .. 1 */
	double window_s;          /* the window's length */
	double window_wait_fraction;  /* waited in the window / window_s */
	double window_samples_per_s;  /* handed out in the window / window_s */
	uint64_t samples;         /* handed out (less what the Python client
				     read ahead and did not use) */
	uint64_t batches;
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[4];
};

/* This trainer's figures now. Thread safety: as ts_client_next (call it
 * from the thread that reads batches, or between calls). */
void ts_client_stats(const struct ts_client *c, struct ts_client_stats *out);

/* Disconnect (the producer stops waiting for us at once) and free.
 * NULL is a no-op. Spans stay valid. */
void ts_client_close(struct ts_client *c);

/* A short English text for a return code ("end of stream", "producer
 * gone", or strerror for -errno). Static storage. */
const char *ts_client_strerror(int code);

/* ---- label mixing: Mixup, CutMix and label smoothing (tsclient_mix.c) ---
 *
 * Applied by each trainer to its own batches, with its own parameters (the
 * alpha a sweep varies), as timm.data.Mixup documents them: in "batch" mode
 * one draw per batch, sample i mixed with sample n-1-i; in "pair" mode one
 * draw per pair (i, n-1-i), both ways; in "elem" mode one per sample. A
 * draw is, with probability prob, a Mixup (a blend x*lam + x'*(1-lam),
 * lam ~ Beta(mixup_alpha, mixup_alpha)) or, with probability switch_prob
 * when both alphas are > 0, a CutMix (a box of the partner pasted in,
 * of area (1-lam) of the image, lam ~ Beta(cutmix_alpha, cutmix_alpha);
 * its lam then corrected to the box's real area when correct_lam or
 * cutmix_max is set). The targets are float32 rows of num_classes:
 * y_i*lam + y_j*(1-lam), y the one-hot label smoothed to
 * 1-label_smoothing+label_smoothing/num_classes on its class and
 * label_smoothing/num_classes elsewhere. Both alphas 0 (or enabled 0) is
 * label smoothing alone. The middle sample of an odd batch (its own
 * partner) is left as it is, its target its smoothed label (timm refuses
 * odd batches; an epoch's last batch may be one).
 *
 * The draws are a pure function of (seed, the batch's epoch, the index in
 * its epoch of its first sample), so a rerun mixes alike, and the Python
 * client (tsrun.Mixup) calls these same functions: for the same seed and
 * batch both give the same bytes. Reentrant: no state between calls.
 */
enum ts_client_mix_mode {
	TS_CLIENT_MIX_BATCH = 0,  /* one draw per batch (timm's default) */
	TS_CLIENT_MIX_PAIR = 1,   /* one per pair of samples */
	TS_CLIENT_MIX_ELEM = 2,   /* one per sample */
};

struct ts_client_mix {
	/* sizeof(struct ts_client_mix) as the caller's header declares it:
	 * set by ts_client_mix_init (a caller that fills the struct itself
	 * sets it). The library reads the fields that fit in size and
	 * takes the defaults for the rest, so a program built against an
	 * older header keeps working; it refuses size 0 (unset) and, from
	 * a newer header, a size whose fields past its own are not zero
	 * (libtsrun(3), Sized structs). */
	size_t size;
	double mixup_alpha;      /* > 0: Mixup on (default 1.0, as timm) */
	double cutmix_alpha;     /* > 0: CutMix on (default 0) */
	/* cutmix_max 0 (the default): a square-ratio box from lam; else
	 * 0 <= cutmix_min < cutmix_max <= 1: box sides drawn uniformly in
	 * [min, max) of the image's, CutMix on with cutmix_alpha taken as 1. */
	double cutmix_min, cutmix_max;
	double prob;             /* of mixing a batch / pair / sample (1.0) */
	double switch_prob;      /* of CutMix rather than Mixup (0.5) */
	int mode;                /* enum ts_client_mix_mode (batch) */
	int correct_lam;         /* nonzero (default): lam from the box's
				    area once clipped by the image border */
	double label_smoothing;  /* 0 .. 1 (0.1, as timm) */
	uint32_t num_classes;    /* target width, >= 1 (1000, as timm) */
	uint64_t seed;           /* the draws' key with (epoch, index) (0) */
	int enabled;             /* 0: no mixing, targets only (timm's
				    mixup_enabled; default 1) */
};

/* What was drawn for one sample of a batch, for a trainer that mixes
 * something else alike (a mask, a CUDA tensor: tsrun.Mixup does) or checks. */
enum ts_client_mix_op {
	TS_CLIENT_MIX_NONE = 0,   /* pixels unchanged */
	TS_CLIENT_MIX_BLEND = 1,  /* x_i*lam + x_partner*lam_partner */
	TS_CLIENT_MIX_BOX = 2,    /* the box's pixels are the partner's */
};
struct ts_client_mix_sample {
	uint64_t partner;        /* n - 1 - i */
	int op;                  /* enum ts_client_mix_op */
	int y0, y1, x0, x1;      /* BOX: rows [y0, y1), columns [x0, x1) */
	float lam;               /* weight of this sample's label (and pixels) */
	float lam_partner;       /* of the partner's: 1 - lam, rounded as
				    timm rounds it in this mode */
	double lam_drawn;        /* lam before its rounding to float (in
				    batch mode timm's is a double) */
};

/* Fill m with timm.data.Mixup's defaults (label_smoothing 0.1, num_classes 1000). */
void ts_client_mix_init_size(struct ts_client_mix *m, size_t size);
#define ts_client_mix_init(m) ts_client_mix_init_size((m), sizeof *(m))

/* 0, or TS_E_ARG with err naming the field, its value and its range. */
int ts_client_mix_check(const struct ts_client_mix *m, struct ts_error *err);

/*
 * The draws for batch b (its n, height, width, epoch and index; its data
 * is not read) into out[0 .. b->n - 1]. 0, or TS_E_ARG (m invalid, or an
 * empty batch).
 */
int ts_client_mix_params(const struct ts_client_mix *m, const struct ts_batch *b,
			 struct ts_client_mix_sample *out, struct ts_error *err);

/*
 * Mix batch b (float32, NCHW or NHWC, integer labels in 0 ..
 * num_classes - 1) into images (b->n * b->sample_bytes bytes, samples
 * packed: the caller's own buffer; or b->data itself to mix in place
 * when that is writable, samples then b->sample_stride apart as they
 * are; never a buffer overlapping b->data otherwise) and targets
 * (b->n * num_classes floats). b->data may be the read-only ring. 0, or
 * TS_E_ARG (m invalid; not float32; a sample_stride that is not a whole
 * number of floats at least sample_bytes; a label out of range, err says
 * which sample), TS_E_NOMEM. Nothing is written on failure.
 */
int ts_client_mix_batch(const struct ts_client_mix *m, const struct ts_batch *b,
			float *images, float *targets, struct ts_error *err);

#ifdef __cplusplus
}
#endif
#endif
