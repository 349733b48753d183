/* profile.c - the per-stage CPU counters of profile.h. */
#include "profile.h"

#include <time.h>

/* Relaxed throughout: the flag only gates probes, and the counters are
 * statistics read after the threads that add to them are joined (the
 * join orders those adds before the read). */
atomic_bool ts_prof_enabled;
static atomic_uint_fast64_t counters[TS_PROF_N];

void ts_prof_enable(bool on)
{
	atomic_store(&ts_prof_enabled, on);
}

void ts_prof_reset(void)
{
	for (int i = 0; i < TS_PROF_N; i++)
		atomic_store(&counters[i], 0);
}

static uint64_t thread_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ts_prof_now(void)
{
	if (!atomic_load_explicit(&ts_prof_enabled, memory_order_relaxed))
		return 0;
	return thread_ns();
}

void ts_prof_add(enum ts_prof_stage s, uint64_t t0)
{
	if (t0 == 0 || !atomic_load_explicit(&ts_prof_enabled, memory_order_relaxed))
		return;
	uint64_t t1 = thread_ns();
	if (t1 > t0)
		atomic_fetch_add_explicit(&counters[s], t1 - t0, memory_order_relaxed);
}

void ts_prof_add_thread(enum ts_prof_stage s)
{
	if (!atomic_load_explicit(&ts_prof_enabled, memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&counters[s], thread_ns(), memory_order_relaxed);
}

void ts_prof_get(uint64_t ns[TS_PROF_N])
{
	for (int i = 0; i < TS_PROF_N; i++)
		ns[i] = atomic_load(&counters[i]);
}
