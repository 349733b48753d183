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
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "status.h"
#include "util.h"

/* The pid of the tsrun serving socket_path, or -1 with why[] filled: its
 * status file must be fresh and name a live process called tsrun, so a
 * stale file (a SIGKILLed run, its pid reused) never gets another program
 * signalled. */
static long producer_pid(const char *socket_path, char *why, size_t why_n)
{
	char *text = NULL;
	size_t len = 0;
	long pid = -1;
	double age = 0;
	struct ts_status_info info = {0};
	int rc = ts_status_load(socket_path, &text, &len, &info, &age);
	if (rc == TS_E_PROTOCOL)
		snprintf(why, why_n, "%s.status.json is not a tsrun status file", socket_path);
	else if (rc < 0)
		snprintf(why, why_n, "no status file %s.status.json", socket_path);
	else if (age > TS_STATUS_STALE_S)
		snprintf(why, why_n, "its status file is %.0f s old (pid %ld): a tsrun "
			 "that was killed or is stopped", age, (long)info.pid);
	else
		pid = (long)info.pid;
	ts_status_info_free(&info);
	free(text);
	if (pid > 0) {
		char comm_path[64], comm[32] = "";
		snprintf(comm_path, sizeof(comm_path), "/proc/%ld/comm", pid);
		FILE *f = fopen(comm_path, "re");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = 0;
		if (strcmp(comm, "tsrun") != 0) {
			snprintf(why, why_n, "its status file names pid %ld, which is %s", pid,
				 comm[0] ? "not a tsrun" : "gone");
			pid = -1;
		}
	}
	return pid;
}

/* How long tsrun may take to check a pipeline and open its source (a
 * large folder takes a while to list). */
#define ANSWER_TIMEOUT_S 300

/* Wait for tsrun's answer in file ans: "ok: ..." or "rejected: ...". */
static int await_answer(const char *ans, long pid, const char *file)
{
	double end = ts_clock_now() + ANSWER_TIMEOUT_S;
	char buf[1024];
	while (ts_clock_now() < end) {
		/* only a regular file of ours: a FIFO or a symlink planted
		 * there is neither waited on nor followed */
		struct stat st;
		char *text = NULL;
		size_t n = 0;
		if (ts_cli_read_side_file(ans, sizeof(buf) - 1, (unsigned)-1, &text, &n,
					  &st) == 0) {
			memcpy(buf, text, n + 1);
			free(text);
			unlink(ans);
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
	int st = ts_cli_compile_max("reload", file, NULL, TS_CLI_RELOAD_MAX_SOURCE, &plan);
	if (st != TS_EXIT_OK)
		return st;
	ts_plan_destroy(plan);
	char why[512];
	long pid = producer_pid(socket_path, why, sizeof(why));
	if (pid <= 0) {
		ts_cli_error("reload", "no tsrun is serving %s: %s; start one with 'tsrun run'",
			     socket_path, why);
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
	/* Our own request and answer files: reloads at the same time do not
	 * overwrite each other, and each gets its answer. */
	char *tmp = NULL, *req = NULL, *ans = NULL;
	long me = (long)getpid();
	int ok = asprintf(&req, "%s.%ld.req", rpath, me) >= 0 &&
		 asprintf(&ans, "%s.%ld", rpath, me) >= 0;
	if (ans)
		unlink(ans);
	/* created exclusively under a random name, then renamed: a symlink
	 * planted at either name is not followed */
	FILE *f = ok ? ts_cli_side_create(req, &tmp) : NULL;
	int e = f ? 0 : -errno;
	if (f) {
		fprintf(f, "%s\n", abs);
		e = ts_cli_side_commit(f, tmp, req);
		tmp = NULL;
	}
	int st_out = TS_EXIT_INVALID;
	if (!ok || e) {
		ts_cli_error("reload", "cannot write %s: %s", req ? req : rpath,
			     strerror(e ? -e : ENOMEM));
	} else if (kill((pid_t)pid, SIGHUP) != 0) {
		ts_cli_error("reload", "cannot signal tsrun (pid %ld): %s", pid, strerror(errno));
		unlink(req);
	} else {
		st_out = await_answer(ans, pid, abs);
		unlink(req); /* still there if tsrun never read it */
	}
	free(ans);
	free(req);
	free(tmp);
	free(abs);
	free(rpath);
	return st_out;
}
