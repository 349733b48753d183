/*
 * cmd_stat.c - `tsrun stat SOCKET [--json]`: show a running tsrun's state
 * from the status file it rewrites once a second next to its socket
 * ("<socket>.status.json", see status.h). Read-only: it never connects to
 * the socket, so looking does not make a consumer appear.
 *
 * The file is parsed by status_read.c; a truncated or garbage file is an
 * error message, never a crash.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "util.h"
#include "status.h"

/* --- the report --- */

/* The producer's split of its time, in the window and since it started. */
static void print_producer(const struct ts_status_info *st)
{
	if (st->prod_work < 0)
		return;
	printf("producer:  working %.0f%%, waiting for a free slot %.0f%%, idle %.0f%% "
	       "(last %.1f s)", st->prod_work * 100.0, st->prod_slot * 100.0,
	       st->prod_idle * 100.0, st->window_s);
	if (st->prod_work_total >= 0)
		printf("; since start %.0f%%, %.0f%%, %.0f%%", st->prod_work_total * 100.0,
		       st->prod_slot_total * 100.0, st->prod_idle_total * 100.0);
	putchar('\n');
}

static void print_report(const struct ts_status_info *st, const char *path, double age)
{
	printf("pipeline:  %s (%s), pid %ld, %s, updated %.1f s ago\n",
	       st->pipeline[0] ? st->pipeline : "?", st->file[0] ? st->file : "?",
	       (long)st->pid, st->state[0] ? st->state : "?", age);
	printf("socket:    %s\n", path);
	/* Once the last epoch is produced the head sits at the next one. */
	bool done = st->epochs > 0 && st->epoch >= st->epochs;
	/* from 0, as trainers, --start and the status file count epochs */
	printf("position:  epoch %.0f", done ? st->epochs : st->epoch);
	if (st->epochs > 0)
		printf("/%.0f", st->epochs);
	else
		printf(" (forever)");
	double index = done ? st->epoch_size : st->index;
	printf(", index %.0f", index);
	if (st->epoch_size > 0)
		printf("/%.0f (%.0f%%)", st->epoch_size, 100.0 * index / st->epoch_size);
	printf(", %.0f samples produced\n", st->samples);
	printf("rate:      %.0f img/s, %.0f thread%s, batch %.0f\n", st->rate, st->threads,
	       st->threads == 1 ? "" : "s", st->batch);
	printf("ring:      %.0f/%.0f samples filled", st->ring_fill, st->capacity);
	if (st->capacity > 0)
		printf(" (%.0f%%)", 100.0 * st->ring_fill / st->capacity);
	printf("\nskipped:   %.0f\n", st->skipped);
	print_producer(st);
	if (st->cache_bytes > 0)
		printf("cache:     %.0f items in %.1f of %.1f MiB (%s), %.0f of %.0f lookups hit "
		       "(%.1f%%)\n", st->cache_items, st->cache_used / 1048576.0,
		       st->cache_bytes / 1048576.0, st->cache_locked ? "locked" : "not locked",
		       st->cache_hits, st->cache_lookups,
		       st->cache_lookups > 0 ? 100.0 * st->cache_hits / st->cache_lookups : 0.0);
	printf("consumers: %zu\n", st->n_consumers);
	if (!st->n_consumers)
		return;
	/* The one with the largest lag is the slowest; it holds the ring back
	 * when the ring is full (holding_back). */
	size_t slow = 0;
	for (size_t i = 1; i < st->n_consumers; i++)
		if (st->consumers[i].lag > st->consumers[slow].lag)
			slow = i;
	printf("  %8s %6s %12s %8s %9s %6s %6s\n", "pid", "batch", "position", "lag", "img/s",
	       "wait", "total");
	for (size_t i = 0; i < st->n_consumers; i++) {
		const struct ts_status_consumer *c = &st->consumers[i];
		printf("  %8ld %6.0f %12.0f %8.0f %9.1f", c->pid, c->batch, c->position, c->lag,
		       c->rate);
		/* the trainer's own wait: in the window, since it connected */
		if (c->wait >= 0)
			printf(" %5.0f%%", c->wait * 100.0);
		else
			printf(" %6s", "-");
		if (c->wait_total >= 0)
			printf(" %5.0f%%", c->wait_total * 100.0);
		else
			printf(" %6s", "-");
		if (c->job[0])
			printf("  job %s", c->job);
		if (st->holding_back == c->pid)
			printf("  holding the ring back");
		else if (st->holding_back < 0 && i == slow && st->n_consumers > 1)
			printf("  slowest");
		putchar('\n');
	}
	if (st->holding_back > 0)
		printf("held back by: pid %ld (the ring is full until it reads on)\n",
		       st->holding_back);
	if (st->who_waits[0])
		printf("who waits: %s\n", st->who_waits);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tsrun stat SOCKET [--json | --metrics]\n"
		   "Show a running tsrun's pipeline, position, rate, ring fill, its\n"
		   "producer's time (working, waiting for a free slot, idle) and\n"
		   "consumers (pid, batch size, lag, rate, time waiting for batches),\n"
		   "and who waits on whom, from SOCKET.status.json.\n"
		   "  --json      print the status file's JSON object as is\n"
		   "  --metrics   print it in the Prometheus text format\n");
}

int ts_cmd_stat(int argc, char **argv)
{
	const char *path = NULL;
	bool json = false, metrics = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return TS_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--metrics")) {
			metrics = true;
		} else if (a[0] == '-' && a[1]) {
			ts_cli_error("stat", "unknown option '%s'", a);
			usage(stderr);
			return TS_EXIT_USAGE;
		} else if (path) {
			ts_cli_error("stat", "one SOCKET only (got '%s' and '%s')", path, a);
			return TS_EXIT_USAGE;
		} else {
			path = a;
		}
	}
	if (json && metrics) {
		ts_cli_error("stat", "--json and --metrics: give one (both print the status, "
			     "as JSON or as Prometheus text)");
		return TS_EXIT_USAGE;
	}
	if (!path) {
		ts_cli_error("stat", "no SOCKET given");
		usage(stderr);
		return TS_EXIT_USAGE;
	}

	struct stat sb;
	if (stat(path, &sb) < 0) {
		if (errno == ENOENT)
			ts_cli_error("stat", "no such socket: %s (is 'tsrun run' serving there? "
				     "the path is the serve block's socket or --socket)", path);
		else
			ts_cli_error("stat", "%s: %s", path, strerror(errno));
		return TS_EXIT_USAGE;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		ts_cli_error("stat", "%s is not a socket", path);
		return TS_EXIT_USAGE;
	}
	char *spath = ts_status_path(path);
	if (!spath) {
		ts_cli_error("stat", "out of memory");
		return TS_EXIT_INVALID;
	}
	int status = TS_EXIT_INVALID;
	char *text = NULL;
	size_t len = 0;
	struct ts_status_info st = {0};
	double age = 0;
	int rc = ts_status_load(path, &text, &len, &st, &age);
	if (rc == -ENOENT) {
		ts_cli_error("stat", "no tsrun serving %s: no status file %s (a stale socket "
			     "of a run that was killed?)", path, spath);
		goto out;
	}
	if (rc == TS_E_PROTOCOL) {
		ts_cli_error("stat", "%s is not a tsrun status file (truncated or garbage)", spath);
		goto out;
	}
	if (rc < 0) {
		ts_cli_error("stat", "cannot read %s: %s", spath, ts_error_name(rc));
		goto out;
	}
	long pid = (long)st.pid;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
		ts_cli_error("stat", "no tsrun serving %s: stale status file %s names pid %ld, "
			     "which is gone (the run was killed; remove both files)", path, spath, pid);
		goto out;
	}
	if (age > TS_STATUS_STALE_S) {
		ts_cli_error("stat", "stale status file %s: last written %.0f s ago by pid %ld, "
			     "which still exists (stopped? see 'ps -o stat= -p %ld')", spath, age,
			     pid, pid);
		goto out;
	}
	if (json)
		fwrite(text, 1, len, stdout);
	else if (metrics)
		ts_status_metrics(&st, stdout);
	else
		print_report(&st, path, age);
	status = TS_EXIT_OK;
out:
	ts_status_info_free(&st);
	free(text);
	free(spath);
	return status;
}
