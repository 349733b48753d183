/*
 * cli.h - the tsrun command line: one function per subcommand and the
 * helpers they share (reading a pipeline file, compiling it, printing
 * diagnostics with optional colour).
 *
 * A subcommand is `int ts_cmd_NAME(int argc, char **argv)`: argv[0] is
 * the subcommand's name, the return value is the process exit status
 * (TS_EXIT_*). Adding one is a row in main.c's table plus its cmd_*.c
 * file.
 *
 * The CLI alone prints and decides exit statuses; none of this is
 * thread safe (it is only called from main's thread).
 */
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include "dsl.h"

/* Exit statuses, documented in tsrun(1). */
#define TS_EXIT_OK 0       /* success; for check: every file is valid */
#define TS_EXIT_INVALID 1  /* a pipeline is not valid, or the run failed */
#define TS_EXIT_USAGE 2    /* bad command line, or a file cannot be read */

#define TS_CMD(name) int ts_cmd_##name(int argc, char **argv)
TS_CMD(check);
TS_CMD(graph);
TS_CMD(run);
TS_CMD(bench);
TS_CMD(consume);
TS_CMD(stat);
TS_CMD(make_dataset);
TS_CMD(reload);
TS_CMD(preview);
#undef TS_CMD

/* Colour for diagnostics: "auto" (a terminal and no NO_COLOR), "always"
 * or "never". Returns false for any other word. */
bool ts_cli_set_color(const char *mode);
/* Whether output to f is coloured under the current mode. */
bool ts_cli_color(FILE *f);

/* Read a whole file ("-" is standard input) into a malloc'd,
 * NUL-terminated buffer. With max 0, any file, but no more than
 * TS_CLI_MAX_SOURCE bytes (-EFBIG past it). With max > 0, only a regular file of at most max
 * bytes ("-" is then a file name), opened without blocking: -EINVAL for
 * anything else, -EFBIG when larger. Returns 0 with *out and *len set,
 * TS_E_NOMEM, or -errno. */
int ts_cli_read_file(const char *path, size_t max, char **out, size_t *len);

/* Side files: the status file, reload requests and answers, which live
 * next to the socket, in a folder other users may write (/tmp). Read
 * one: opened with O_NOFOLLOW | O_NONBLOCK (a planted symlink or FIFO
 * neither redirects nor blocks us), only a regular file owned by this
 * user or by owner (another uid, e.g. the socket's; (uid_t)-1: none),
 * at most max bytes. Returns 0 with *out (malloc'd, NUL-terminated),
 * *len and *st set; -ELOOP (a symlink), -EINVAL (not a regular file),
 * -EPERM (another user's), -EFBIG, TS_E_NOMEM or another -errno. */
int ts_cli_read_side_file(const char *path, size_t max, unsigned owner, char **out,
			  size_t *len, struct stat *st);
/* Write one: a new file of a random name next to path, created
 * exclusively (mkostemp: no symlink or existing file is followed), mode
 * 0644, that ts_cli_side_commit renames onto path. Returns the stream
 * with *tmp (malloc'd) set, or NULL with errno. */
FILE *ts_cli_side_create(const char *path, char **tmp);
/* Close f, then rename tmp onto path (or remove it after an error);
 * frees tmp. Returns 0 or -errno (a full disk: -ENOSPC). */
int ts_cli_side_commit(FILE *f, char *tmp, const char *path);

/* The stop bound (cli_guard.c): ts_cli_guard_start starts a watchdog;
 * after ts_cli_guard_signal (async-signal-safe: call it from the SIGINT
 * and SIGTERM handler) the process has ms milliseconds to call
 * ts_cli_guard_done (the orderly stop finished), else the watchdog calls
 * last(arg) when an arg is set (ts_cli_guard_set_arg; NULL before what it
 * names is freed), prints why and _exits with status (the one given to
 * ts_cli_guard_signal when >= 0). last may be NULL. Returns 0 or
 * -errno. */
int ts_cli_guard_start(int ms, int status, void (*last)(void *));
void ts_cli_guard_set_arg(void *arg);
void ts_cli_guard_signal(int status);
void ts_cli_guard_done(void);

/* Print rendered diagnostics to stderr, coloured when ts_cli_color(). */
void ts_cli_print_diags(const struct ts_diags *d);

/* Print "tsrun CMD: message" to stderr. */
void ts_cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Read, parse and check path, lowering `pipeline` (NULL: the served or
 * only one). Diagnostics go to stderr. Returns TS_EXIT_OK with *out set
 * (the caller frees it with ts_plan_destroy), TS_EXIT_INVALID, or
 * TS_EXIT_USAGE when the file cannot be read. */
int ts_cli_compile(const char *cmd, const char *path, const char *pipeline,
		   struct ts_plan **out);
/* The same with the file bounded as ts_cli_read_file's max (0: the
 * file may be of any type, a FIFO or standard input too, but no more
 * than TS_CLI_MAX_SOURCE bytes are read). */
/* The largest pipeline file a reload takes: the running tsrun checks it
 * on its main thread, in well under a second at this size (the checker
 * is linear in the file's size), so the status line, the status file and
 * the answer to SIGINT are not held up longer (tsrun(1), RELOAD). */
#define TS_CLI_RELOAD_MAX_SOURCE (4u << 20)
/* The largest pipeline file check, graph, bench, preview and run read:
 * far past any real pipeline, and a bound on what /dev/zero or a runaway
 * generator piped in can make us hold (tsrun(1), FILES). */
#define TS_CLI_MAX_SOURCE (64u << 20)
int ts_cli_compile_max(const char *cmd, const char *path, const char *pipeline,
		       size_t max, struct ts_plan **out);
/* What ts_cli_compile_sources does with a valid plan's source: nothing;
 * open and list it as `tsrun run` does, a missing or empty folder, list
 * or shard an error at the path (check --sources); or only see that the
 * folder or list is there, a warning when not (graph). */
enum ts_cli_sources { TS_CLI_SOURCES_NONE, TS_CLI_SOURCES_OPEN, TS_CLI_SOURCES_PROBE };
int ts_cli_compile_sources(const char *cmd, const char *path, const char *pipeline,
			   size_t max, enum ts_cli_sources sources, struct ts_plan **out);

/* Where `tsrun reload` leaves the new pipeline's path for the `tsrun run`
 * serving socket_path: "<socket>.reload". Malloc'd; NULL on no memory. */
char *ts_cmd_run_reload_path(const char *socket_path);

/* Monotonic wall-clock seconds, and this process's CPU seconds (user +
 * system), for throughput figures. */
/* A getopt_long error ('?' or ':' with opterr = 0 and a ":..." optstring)
 * worded as "tsrun CMD: ..."; returns TS_EXIT_USAGE. */
struct option;
int ts_cli_bad_option(const char *cmd, int c, char **argv, const struct option *opts);

double ts_cli_cpu_seconds(void);

/* Parse a whole decimal number >= min into *out; false when s is not one. */
bool ts_cli_parse_long(const char *s, long min, long *out);

/* An option's whole-number argument >= min: on a bad one, print
 * "tsrun CMD: OPT wants a whole number >= MIN, got 'ARG'" and return
 * false (the caller exits TS_EXIT_USAGE). */
bool ts_cli_opt_long(const char *cmd, const char *opt, const char *arg,
		     long min, long *out);

/* The same for --start EPOCH:INDEX. */
bool ts_cli_opt_start(const char *cmd, const char *arg,
		      unsigned long long *epoch, unsigned long long *index);

/* Parse a resume position "EPOCH:INDEX". */
bool ts_cli_parse_start(const char *s, unsigned long long *epoch,
			unsigned long long *index);

#endif
