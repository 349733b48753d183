/*
 * session.h - one served pipeline (functions ts_session_*): the sample
 * ring, the engine filling it, the socket server handing it to trainers, the device ring when the plan
 * ends in device(cuda) and a GPU is there, and hot reload (a checked plan
 * waiting for the epoch boundary, then taking over in the same ring).
 * What `tsrun run` drives; it prints, this does not.
 */
#ifndef TS_SESSION_H
#define TS_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "plan.h"
#include "ring.h"
#include "tscuda.h"

struct ts_session;

struct ts_session_opts {
	const char *socket_path;  /* NULL: the plan's socket */
	int epochs;               /* -1: the plan's; 0: forever */
	int threads;              /* 0: the plan's, else online cores */
	uint64_t start_epoch, start_index;
	unsigned wait;            /* trainers to wait for before the first sample */
	int device;               /* CUDA ordinal for device(cuda) */
};

/* What ts_session_create set up, for the caller to report. */
struct ts_session_info {
	const char *socket_path;  /* as bound */
	int epochs;               /* resolved; 0 = forever */
	bool device;              /* a device ring is served */
	struct ts_devserve_stats dev;  /* with device: GPU, name, bus id */
	/* device(cuda) asked for but served from the host ring instead (no
	 * GPU, no CUDA build, ...), or a note of the device ring's; "" none */
	char device_note[256];
	bool device_fallback;     /* device_note says why the host ring serves */
	const char *reader_note;  /* why reads are not io_uring, or NULL */
};

/* Set up everything for plan and bind the socket; the engine starts with
 * ts_session_start. Takes ownership of plan (freed by ts_session_destroy, or
 * by a takeover). On failure plan is freed too. Returns 0, TS_E_NODEV for
 * an ordinal past the GPUs this process sees (err: "device N, but this
 * process sees M ..."), or the error of the ring, engine or server. */
int ts_session_create(struct ts_plan *plan, const struct ts_session_opts *o,
		    struct ts_session **out, struct ts_error *err);

void ts_session_get_info(const struct ts_session *s, struct ts_session_info *out);

/* The plan running now (changes at a takeover). */
const struct ts_plan *ts_session_plan(const struct ts_session *s);

int ts_session_start(struct ts_session *s, struct ts_error *err);

/* A snapshot of the engine and the ring, with the consumers. */
void ts_session_stats(struct ts_session *s, struct ts_engine_stats *es, struct ts_ring_stat *rs);

/* Offer next (ownership passes, whatever the result) to take over at the
 * next epoch boundary: it must pass ts_engine_check_reload against the
 * running plan. A pending one is replaced (*replaced set). Returns 0 with
 * *epoch the epoch it starts, TS_E_STATE when the stream ends with the
 * current epoch, or the check's error (err says why). */
int ts_session_reload(struct ts_session *s, struct ts_plan *next, uint64_t *epoch,
		    bool *replaced, struct ts_error *err);

enum ts_session_event {
	TS_SESSION_NOTHING,
	TS_SESSION_TOOK_OVER,   /* the reloaded plan runs now (ts_session_plan) */
	TS_SESSION_FELL_BACK,   /* it could not start (err); the old plan goes on */
};

/* Call periodically: performs a pending takeover once the engine reached
 * the boundary. Returns 0 with *ev, or the error of a reloaded plan that
 * could start neither itself nor the old one (the stream has ended). */
int ts_session_poll(struct ts_session *s, enum ts_session_event *ev, struct ts_error *err);

/* The stream has ended (every epoch delivered, or an error). */
bool ts_session_ended(struct ts_session *s);

/* Stop the engine at the next sample (trainers are told "stopped"). */
void ts_session_stop(struct ts_session *s);

/* Wait for the engine; returns 0 or its error. */
int ts_session_join(struct ts_session *s, struct ts_error *err);

/* The process is about to end without ts_session_destroy (a stop that took
 * too long): fail the stream as stopped, so trainers hear so at once,
 * and remove the socket. Safe while the other threads run. */
void ts_session_abort(struct ts_session *s);

/* The next line for the log (a trainer detached for stalling), as
 * ts_server_take_note. */
bool ts_session_take_note(struct ts_session *s, char *buf, size_t n);

/* Trainers connected now. */
unsigned ts_session_consumers(struct ts_session *s);

/* Skipped items ("path: reason", each once), valid until destroy. */
size_t ts_session_skipped(const struct ts_session *s, const char *const **list);

/* Device ring figures; false when none is served. */
bool ts_session_device_stats(struct ts_session *s, struct ts_devserve_stats *out);

/* Close the socket, stop everything and free it. Returns 0, or the error
 * that ended the stream on the device side (err). NULL: no-op. */
int ts_session_destroy(struct ts_session *s, struct ts_error *err);

#endif
