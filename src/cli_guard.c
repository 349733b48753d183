/*
 * cli_guard.c - the bound on stopping: SIGINT or SIGTERM ends `tsrun run`
 * within a second whatever its threads are doing (a worker in the middle
 * of a large decode, a reader waiting on a slow file, the start still
 * listing the source). The orderly stop (summary, socket removed) runs
 * as usual; a watchdog thread ends the process if it has not finished in
 * time, after telling the trainers the producer was stopped.
 */
#include "cli.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	sem_t signalled, done;
	pthread_mutex_t lock;          /* last and arg */
	void (*last)(void *);
	void *arg;
	int ms;
	volatile sig_atomic_t status;
	bool started;
} guard = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *guard_main(void *unused)
{
	(void)unused;
	while (sem_wait(&guard.signalled) < 0 && errno == EINTR)
		;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(guard.ms % 1000) * 1000000L;
	ts.tv_sec += guard.ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	int rc;
	while ((rc = sem_timedwait(&guard.done, &ts)) < 0 && errno == EINTR)
		;
	if (rc == 0)
		return NULL;
	pthread_mutex_lock(&guard.lock);
	if (guard.last && guard.arg)
		guard.last(guard.arg);
	static const char msg[] = "tsrun: stopping took too long (a worker is still busy, "
				  "such as with a large image); exiting now, without the summary\n";
	ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	_exit(guard.status);
}

int ts_cli_guard_start(int ms, int status, void (*last)(void *))
{
	if (guard.started)
		return 0;
	if (sem_init(&guard.signalled, 0, 0) < 0 || sem_init(&guard.done, 0, 0) < 0)
		return -errno;
	guard.ms = ms;
	guard.status = status;
	guard.last = last;
	pthread_t t;
	int rc = pthread_create(&t, NULL, guard_main, NULL);
	if (rc)
		return -rc;
	pthread_detach(t);
	guard.started = true;
	return 0;
}

void ts_cli_guard_set_arg(void *arg)
{
	pthread_mutex_lock(&guard.lock);
	guard.arg = arg;
	pthread_mutex_unlock(&guard.lock);
}

void ts_cli_guard_signal(int status)
{
	if (!guard.started)
		return;
	if (status >= 0)
		guard.status = status;
	sem_post(&guard.signalled);  /* async-signal-safe */
}

void ts_cli_guard_done(void)
{
	if (guard.started)
		sem_post(&guard.done);
}
