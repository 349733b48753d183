/*
 * cmd_reload.c - `tsrun reload SOCKET FILE`: check FILE here, then hand
 * it to the `tsrun run` serving SOCKET, which checks it again, opens its
 * source, and answers: it takes it over at its next epoch boundary, or
 * rejects it and carries on. Exit 0 when accepted, 1 when rejected.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "status.h"

/* The serving process's pid from its status file, or -1. */
static long producer_pid(const char *socket_path)
{
	char *sp = ts_status_path(socket_path);
	char *text = NULL;
	size_t len = 0;
	long pid = -1;
	if (sp && ts_cli_read_file(sp, &text, &len) == 0) {
		struct ts_status_info st = {0};
		if (ts_status_parse(text, len, &st))
			pid = (long)st.pid;
		ts_status_info_free(&st);
	}
	free(text);
	free(sp);
	return pid;
}

/* How long tsrun may take to check a pipeline and open its source (a
 * large folder takes a while to list). */
#define ANSWER_TIMEOUT_S 300

/* Wait for tsrun's answer in file ans: "ok: ..." or "rejected: ...". */
static int await_answer(const char *ans, long pid, const char *file)
{
	double end = ts_cli_now() + ANSWER_TIMEOUT_S;
	char buf[1024];
	while (ts_cli_now() < end) {
		int fd = open(ans, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
				st.st_uid != geteuid())) {
			close(fd);
			fd = -1;
		}
		FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (fd >= 0 && !f)
			close(fd);
		if (f) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			unlink(ans);
			buf[n] = 0;
			buf[strcspn(buf, "\n")] = 0;
			if (strncmp(buf, "ok", 2) == 0) {
				printf("tsrun reload: %s accepted by tsrun (pid %ld): %s\n", file,
				       pid, buf[2] == ':' ? buf + 4 : buf + 2);
				return TS_EXIT_OK;
			}
			ts_cli_error("reload", "%s %s; the running pipeline carries on", file, buf);
			return TS_EXIT_INVALID;
		}
		if (kill((pid_t)pid, 0) != 0) {
			ts_cli_error("reload", "tsrun (pid %ld) exited before it answered", pid);
			return TS_EXIT_INVALID;
		}
		usleep(20 * 1000);
	}
	ts_cli_error("reload", "no answer from tsrun (pid %ld) within %d s; another reload "
		     "may have replaced this one: see its log", pid, ANSWER_TIMEOUT_S);
	return TS_EXIT_INVALID;
}

int ts_cmd_reload(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: tsrun reload SOCKET FILE\n");
		return TS_EXIT_OK;
	}
	if (argc != 3) {
		if (argc < 3)
			ts_cli_error("reload", "%s", argc < 2 ? "no SOCKET and FILE given"
							  : "no FILE given");
		else
			ts_cli_error("reload", "unexpected argument '%s'", argv[3]);
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
	char *tmp = NULL, *ans = NULL;
	int ok = asprintf(&tmp, "%s.tmp", rpath) >= 0 &&
		 asprintf(&ans, "%s.%ld", rpath, (long)getpid()) >= 0;
	if (ans)
		unlink(ans);
	FILE *f = ok ? fopen(tmp, "we") : NULL;
	ok = f && fprintf(f, "%s\n%ld\n", abs, (long)getpid()) > 0;
	if (f && fclose(f) != 0)
		ok = 0;
	if (ok && rename(tmp, rpath) != 0)
		ok = 0;
	int st_out = TS_EXIT_INVALID;
	if (!ok) {
		ts_cli_error("reload", "cannot write %s: %s", rpath, strerror(errno));
		if (tmp)
			unlink(tmp);
	} else if (kill((pid_t)pid, SIGHUP) != 0) {
		ts_cli_error("reload", "cannot signal tsrun (pid %ld): %s", pid, strerror(errno));
	} else {
		st_out = await_answer(ans, pid, abs);
	}
	free(ans);
	free(tmp);
	free(abs);
	free(rpath);
	return st_out;
}
