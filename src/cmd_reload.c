/*
 * cmd_reload.c - `tsrun reload SOCKET FILE`: check FILE here, then hand
 * it to the `tsrun run` serving SOCKET, which checks it again, and takes
 * it over at its next epoch boundary (or rejects it and carries on).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "status.h"

/* The serving process's pid from its status file, or -1. */
static long producer_pid(const char *socket_path)
{
	char *sp = ts_status_path(socket_path);
	if (!sp)
		return -1;
	char buf[4096];
	size_t n = 0;
	FILE *f = fopen(sp, "re");
	free(sp);
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strstr(buf, "\"pid\":");
	if (!p)
		return -1;
	long pid = strtol(p + 6, NULL, 10);
	return pid > 0 ? pid : -1;
}

int ts_cmd_reload(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: tsrun reload SOCKET FILE\n");
		return TS_EXIT_OK;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: tsrun reload SOCKET FILE\n");
		return TS_EXIT_USAGE;
	}
	const char *socket_path = argv[1], *file = argv[2];
	struct ts_plan *plan = NULL;
	int st = ts_cli_compile("reload", file, NULL, &plan);
	if (st != TS_EXIT_OK)
		return st;
	ts_plan_destroy(plan);
	long pid = producer_pid(socket_path);
	if (pid <= 0 || kill((pid_t)pid, 0) != 0) {
		ts_cli_error("reload", "no tsrun is serving %s (no live status file %s.status.json); "
			     "start one with 'tsrun run'", socket_path, socket_path);
		return TS_EXIT_INVALID;
	}
	char *abs = realpath(file, NULL);
	char *rpath = ts_cmd_run_reload_path(socket_path);
	if (!abs || !rpath) {
		ts_cli_error("reload", "cannot resolve %s: %s", file, strerror(errno));
		free(abs);
		free(rpath);
		return TS_EXIT_USAGE;
	}
	char *tmp = NULL;
	int ok = asprintf(&tmp, "%s.tmp", rpath) >= 0;
	FILE *f = ok ? fopen(tmp, "we") : NULL;
	ok = f && fprintf(f, "%s\n", abs) > 0;
	if (f && fclose(f) != 0)
		ok = 0;
	if (ok && rename(tmp, rpath) != 0)
		ok = 0;
	if (!ok) {
		ts_cli_error("reload", "cannot write %s: %s", rpath, strerror(errno));
		if (tmp)
			unlink(tmp);
	} else if (kill((pid_t)pid, SIGHUP) != 0) {
		ts_cli_error("reload", "cannot signal tsrun (pid %ld): %s", pid, strerror(errno));
		ok = 0;
	} else {
		printf("tsrun reload: %s is valid; sent to tsrun (pid %ld), which takes it over at "
		       "its next epoch boundary (see its log)\n", abs, pid);
	}
	free(tmp);
	free(abs);
	free(rpath);
	return ok ? TS_EXIT_OK : TS_EXIT_INVALID;
}
