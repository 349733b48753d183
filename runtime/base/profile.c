/* profile.c - the per-stage CPU counters of profile.h. */
#include "profile.h"

#include <time.h>

#include "barrier.h"

/* Relaxed throughout (barrier.h): the flag only gates probes, and the
 * counters are statistics read after the threads that add to them are
 * joined (the join orders those adds before the read). */
bool ts_prof_enabled;
static uint64_t counters[TS_PROF_N];

void ts_prof_enable(bool on)
{
	WRITE_ONCE(ts_prof_enabled, on); /* gates probes only: no ordering */
}

void ts_prof_reset(void)
{
	for (int i = 0; i < TS_PROF_N; i++)
		WRITE_ONCE(counters[i], 0); /* before the workers start */
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
	if (!READ_ONCE(ts_prof_enabled))
		return 0;
	return thread_ns();
}

void ts_prof_add(enum ts_prof_stage s, uint64_t t0)
{
	if (t0 == 0 || !READ_ONCE(ts_prof_enabled))
		return;
	uint64_t t1 = thread_ns();
	if (t1 > t0)
		ATOMIC_ADD_RELAXED(&counters[s], t1 - t0); /* a statistic */
}

void ts_prof_add_thread(enum ts_prof_stage s)
{
	if (!READ_ONCE(ts_prof_enabled))
		return;
	ATOMIC_ADD_RELAXED(&counters[s], thread_ns()); /* a statistic */
}

void ts_prof_get(uint64_t ns[TS_PROF_N])
{
	for (int i = 0; i < TS_PROF_N; i++)
		ns[i] = READ_ONCE(counters[i]); /* the adders are joined */
}
