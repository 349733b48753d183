/*
 * tsrun.h - embed the tsrun runtime in a program: compile a pipeline from
 * text, open it, pull batches, close. No sockets and no global state.
 *
 * Conventions: every function returns 0 on success or a negative code:
 * -errno for operating-system failures or a TS_E_* code (error.h). When
 * err is non-NULL it is filled on failure with the code, a message and,
 * for pipeline errors, the location. Out-parameters are written only on
 * success. Nothing here prints or exits.
 *
 * Thread safety: a struct ts_pipeline is immutable after compile and may be
 * opened from several threads at once. A struct ts_stream is used by one
 * thread at a time (internally it runs its own worker threads).
 */
#ifndef TSRUN_H
#define TSRUN_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The project's version (meson.build), major.minor: the libraries' symbol
 * nodes are TSRUN_<major>.<minor> and TSCLIENT_<major>.<minor> */
#define TSRUN_VERSION_MAJOR 0
#define TSRUN_VERSION_MINOR 4

struct ts_pipeline;
struct ts_stream;

/* Compile pipeline text. name is shown in diagnostics ("pipe.ts");
 * pipeline selects one pipeline by name (NULL: the served one, or the only
 * one); base_dir resolves relative data paths (NULL: the current
 * directory). On TS_E_SYNTAX or TS_E_CHECK, err holds the first error and,
 * when diagnostics is non-NULL, *diagnostics receives every diagnostic
 * rendered as text (file:line:col, source line, caret), malloc'd, which
 * the caller frees. Returns 0 and *out, owned by the caller. */
int ts_pipeline_compile(const char *text, size_t len, const char *name,
			const char *pipeline, const char *base_dir,
			struct ts_pipeline **out, char **diagnostics,
			struct ts_error *err);

/* Bytes the plan needs (ring + worker scratch + I/O buffers + the decoded
 * cache its serve block sets) with the given thread count (0: the
 * pipeline's setting). */
uint64_t ts_pipeline_memory(const struct ts_pipeline *p, int threads);

/* Shape of one sample: height, width, channels, dtype, layout; and the
 * pipeline's default batch size. Any pointer may be NULL. The embedding
 * API runs the CPU stages only: with a device(cuda) stage, this is the
 * uint8 NHWC sample before it, and so are the batches. */
void ts_pipeline_shape(const struct ts_pipeline *p, int *height, int *width,
		       int *channels, enum ts_dtype *dtype,
		       enum ts_layout *layout, int *batch);

/* views(...) (tsrun-pipeline(5), VIEWS): a pipeline that makes several
 * views of each image holds them one after another in every sample
 * (ts_pipeline_shape and the batches' shape fields are then view 0's,
 * sample_bytes all of them). View i's tensor, where it starts in a
 * sample and its bytes; group is its views() group, from 0. */
struct ts_stream_view {
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	int group;
	size_t offset, bytes;
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[2];
};
/* The number of views of each sample (0: one image per sample); when
 * 0 <= i < that number and out is not NULL, view i into *out. */
int ts_pipeline_views(const struct ts_pipeline *p, int i, struct ts_stream_view *out);

void ts_pipeline_destroy(struct ts_pipeline *p);

struct ts_stream_opts {
	/* sizeof(struct ts_stream_opts) as the caller's header declares
	 * it, set by the caller: struct ts_stream_opts o = { .size =
	 * sizeof o, ... }. The library reads the fields that fit in size
	 * and takes the defaults for the rest, so a program built against
	 * an older header keeps working; it refuses size 0 (unset) and,
	 * from a newer header, a size whose fields past its own are not
	 * zero (libtsrun(3), Sized structs). */
	size_t size;
	int threads;            /* 0: the pipeline's setting */
	int epochs;             /* -1: the pipeline's setting; 0: forever */
	uint64_t start_epoch;   /* resume position (at most UINT32_MAX: the
				   ring holds 32 bits; TS_E_ARG above) */
	uint64_t start_index;
	uint64_t memory_budget; /* 0: the pipeline's; refuse to open above */
	size_t batch;           /* samples per batch; 0: the pipeline's */
	int drop_last;          /* drop each epoch's short last batch */
	/* The decoded cache (tsrun-pipeline(5), cache): its size in bytes;
	 * 0: the pipeline's setting; TS_STREAM_CACHE_OFF: none;
	 * TS_STREAM_CACHE_AUTO: what the memory budget leaves. Since symbol
	 * version TSRUN_0.3 (libtsrun(3)). */
	uint64_t cache;
};
#define TS_STREAM_CACHE_OFF UINT64_MAX
#define TS_STREAM_CACHE_AUTO (UINT64_MAX - 1)

/* Start producing. opts may be NULL for defaults. Fails with TS_E_BUDGET
 * (with a breakdown in err->msg) when the plan needs more memory than the
 * budget, TS_E_SOURCE when the data source is missing or empty. */
int ts_pipeline_open(const struct ts_pipeline *p,
		     const struct ts_stream_opts *opts, struct ts_stream **out,
		     struct ts_error *err);

struct ts_stream_batch {
	const void *data;       /* n samples, sample_stride bytes apart; valid
				   until the next ts_stream_next or
				   ts_stream_close */
	const int32_t *labels;  /* n labels */
	size_t n;
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	size_t sample_bytes;
	uint64_t epoch;         /* epoch of every sample of the batch */
	uint64_t index;         /* index in the epoch of the first sample */
	/* Sample s is at (const char *)data + s * sample_stride: sample_bytes
	 * (the batch contiguous), or more when the ring pads the slots of an
	 * odd-sized sample (libtsrun(3)). */
	size_t sample_stride;
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[4];
};

/* The next batch of up to opts.batch samples. A batch never spans two
 * epochs: the last one of an epoch may be short (unless drop_last).
 * Returns 0, TS_E_EOS after the last epoch, or the error that stopped the
 * pipeline (e.g. TS_E_DECODE with the file's path under on_error = fail).
 * Releases the previous batch. */
int ts_stream_next(struct ts_stream *s, struct ts_stream_batch *b,
		   struct ts_error *err);

/* Replace the running pipeline with new text, checked completely first:
 * on TS_E_SYNTAX or TS_E_CHECK nothing changes and the running pipeline
 * carries on (diagnostics as in ts_pipeline_compile); likewise when its
 * source cannot be opened and indexed now (TS_E_SOURCE, say). A valid pipeline
 * takes over at the next epoch boundary in the same ring, so no batch is
 * torn; it must write samples of the same shape, dtype and layout
 * (TS_E_CHECK otherwise). TS_E_STATE when the stream ends with the current
 * epoch. A second reload before the takeover replaces the first. Call from
 * the thread that calls ts_stream_next, which performs the takeover. */
int ts_stream_reload(struct ts_stream *s, const char *text, size_t len,
		     const char *name, const char *pipeline,
		     const char *base_dir, char **diagnostics,
		     struct ts_error *err);

/* Samples skipped so far under on_error = skip. */
uint64_t ts_stream_skipped(const struct ts_stream *s);

struct ts_stream_stats {
	uint64_t samples;     /* published into the ring so far */
	uint64_t bytes_read;  /* encoded bytes read from the source */
	uint64_t skipped;     /* items replaced under on_error = skip */
	uint64_t epoch_size;  /* source items per epoch */
	int threads;          /* worker threads */
	int uring;            /* 1: reads go through io_uring */
	uint64_t reloads_failed; /* accepted reloads that could not start at
				    their epoch boundary (their source went
				    away since); the running pipeline went on */
	/* Zero: later versions add fields here, so the size stays. */
	uint64_t reserved[4];
};
void ts_stream_stats(const struct ts_stream *s, struct ts_stream_stats *st);

/* The skipped items so far, as "path: reason" strings owned by the
 * stream (valid until ts_stream_close), each distinct one once: a file
 * skipped in every epoch is listed once (ts_stream_skipped counts every
 * skip). Returns their count. */
size_t ts_stream_skipped_paths(const struct ts_stream *s,
			       const char *const **list);

/* A note worth showing the user (why reads do not use io_uring), or NULL. */
const char *ts_stream_note(const struct ts_stream *s);

/* Stop the workers and free everything; NULL is a no-op. */
void ts_stream_close(struct ts_stream *s);

#ifdef __cplusplus
}
#endif
#endif
