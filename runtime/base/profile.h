/*
 * profile.h - per-stage CPU time of the engine, for `tsrun bench
 * --profile`: where a sample's CPU goes (read, decode, crop/resample,
 * output pass, ring), summed over every thread of the process.
 *
 * Off by default, and then each probe is one relaxed atomic load. On,
 * a probe reads the calling thread's CPU clock (CLOCK_THREAD_CPUTIME_ID:
 * user + system time, page faults included, waiting excluded) and adds
 * the difference to a process-wide counter: a few hundred nanoseconds a
 * sample. Process-wide: two engines in one process profiled at once share
 * the counters (bench runs one).
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef TS_PROFILE_H
#define TS_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

enum ts_prof_stage {
	TS_PROF_READ_IO,  /* the I/O thread, whole (io_uring submit and reap) */
	TS_PROF_READ,     /* reads in the workers (no io_uring, retries) */
	TS_PROF_DECODE,   /* header, ROI / DCT-scaled decode, colour conversion */
	TS_PROF_RESAMPLE, /* crop, resize (the fused one too), other augments */
	TS_PROF_OUTPUT,   /* flip, normalize, dtype, layout into the slot */
	TS_PROF_RING,     /* waiting for a writable slot, metadata, publishing */
	TS_PROF_WORKER,   /* worker threads, whole (the stages above are in it) */
	TS_PROF_N
};

/* Whether the probes run (profile.c reads and writes it with READ_ONCE /
 * WRITE_ONCE). */
extern bool ts_prof_enabled;

/* Turn the probes on or off (counters are kept; ts_prof_reset zeroes). */
void ts_prof_enable(bool on);
void ts_prof_reset(void);

/* The calling thread's CPU time in ns when profiling is on, else 0. */
uint64_t ts_prof_now(void);

/* Add the CPU time since t0 (from ts_prof_now) to stage s; nothing when
 * profiling is off or t0 is 0. */
void ts_prof_add(enum ts_prof_stage s, uint64_t t0);

/* Add the calling thread's whole CPU time to s (at a thread's end). */
void ts_prof_add_thread(enum ts_prof_stage s);

/* The counters, ns per stage. */
void ts_prof_get(uint64_t ns[TS_PROF_N]);

#endif
