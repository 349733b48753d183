/*
 * trace.h - the draw trace (`tsrun bench --trace FILE`, tsrun(1)): while
 * a worker thread runs one sample with tracing on, the kernels append what
 * they drew (a crop's box, a flip, color_jitter's order and factors, a
 * policy's choice) to that thread's record, and the engine writes the
 * record as one JSON line when the sample is done. A test replays each
 * line with torchvision (tests/torch-trace.py).
 *
 * Off (ts_trace_cur NULL, the default) a kernel's only cost is the test
 * of one thread-local pointer. The form of a line is tsrun(1)'s and stays
 * stable: fields may be added, none renamed or removed.
 *
 * Thread safety: the record is the calling thread's own; ts_trace_cur is
 * thread-local.
 */
#ifndef TS_TRACE_H
#define TS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TS_TRACE_MAX_DEPTH 8

/* One sample's record: the draws, as comma-separated JSON objects. */
struct ts_trace {
	char *buf;
	size_t len, cap;
	bool failed;              /* an append did not fit (out of memory):
				     the line says "truncated": true */
	int n;                    /* objects so far */
	int view;                 /* views(): the view being made, -1 outside */
	/* The stages of the policies (random_apply, random_choice) the ops
	 * being run are inside, outermost first. */
	int in[TS_TRACE_MAX_DEPTH];
	int depth;
};

/* The calling thread's record while it runs a traced sample, else NULL. */
extern __thread struct ts_trace *ts_trace_cur;

/* Start a fresh record (keeps the buffer). */
void ts_trace_reset(struct ts_trace *t);
void ts_trace_fini(struct ts_trace *t);

/* Append one draw of the op named op at stage (its position, the stream
 * id it draws under) to the calling thread's record, if there is one:
 * {"op": "...", "stage": N, ["view": V,] ["in": [...],] <fields>}, where
 * fields is the printf-formatted rest (JSON members without braces, may
 * be empty). */
void ts_trace_note(const char *op, int stage, const char *fields, ...)
	__attribute__((format(printf, 3, 4)));

/* Enter and leave a policy stage (ts_trace_cur may be NULL: no-op). */
void ts_trace_enter(int stage);
void ts_trace_leave(void);

/* Stop and restart recording on this thread, around calls that draw
 * without applying (an output stage asked for its shape): returns what
 * ts_trace_resume takes back. */
struct ts_trace *ts_trace_pause(void);
void ts_trace_resume(struct ts_trace *t);

/* s as a JSON string (quoted, escaped) appended to t. */
void ts_trace_str(struct ts_trace *t, const char *s);
/* Raw text appended to t. */
void ts_trace_raw(struct ts_trace *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
