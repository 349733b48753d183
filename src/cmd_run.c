/*
 * cmd_run.c - `tsrun run FILE` (and plain `tsrun FILE`): serve a pipeline
 * to trainers over its Unix socket, with a live status line, a JSON stats
 * stream, a status file for `tsrun stat`, and a summary at exit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lower.h"
#include "reload_req.h"
#include "session.h"
#include "status.h"
#include "util.h"

/* From SIGINT or SIGTERM to the end of the process, at most (tsrun(1)):
 * the orderly stop usually takes milliseconds; the rest of the second is
 * for the exit itself (unmapping a large ring). */
#define TS_RUN_STOP_MS 400

static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t got_hup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else {
		got_signal = sig;
		ts_cli_guard_signal(-1);  /* the watchdog: gone within a second */
	}
}

/* The stop took too long (cli_guard.c): tell the trainers it was a stop,
 * not a crash, before the process goes. */
static void abort_serve(void *srv)
{
	ts_session_abort(srv);
}

/* The files of `tsrun reload SOCKET FILE` with pid P: it writes the
 * request "<socket>.reload.P.req" (the pipeline's path) and sends SIGHUP;
 * run answers in "<socket>.reload.P". This returns "<socket>.reload";
 * malloc'd. */
char *ts_cmd_run_reload_path(const char *socket_path)
{
	char *p = NULL;
	if (asprintf(&p, "%s.reload", socket_path) < 0)
		return NULL;
	return p;
}

#define MAX_REQUESTS 64

struct reload_req {
	long pid;
	double mtime;
	char path[TS_RELOAD_REQ_PATH_MAX];
};

static int req_cmp(const void *a, const void *b)
{
	const struct reload_req *x = a, *y = b;
	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * The pending `tsrun reload` requests for socket_path, oldest first, each
 * file read and removed. Only regular files of this user count (with
 * sockets in /tmp another user could plant one); a request whose asker is
 * gone is dropped. Returns how many.
 */
static size_t take_requests(const char *socket_path, struct reload_req *out, size_t max)
{
	/* "<dir>/<name>.reload.PID.req": read dir, match "<name>.reload." */
	char dir[4096], prefix[1024];
	size_t n = 0;
	if (ts_reload_req_where(socket_path, dir, sizeof(dir), prefix, sizeof(prefix)) < 0)
		return 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && n < max && (de = readdir(d)) != NULL) {
		long pid = ts_reload_req_pid(de->d_name, prefix);
		if (pid <= 0)
			continue;
		char full[8192];
		snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
		/* O_NOFOLLOW | O_NONBLOCK: a symlink or FIFO planted here
		 * neither redirects nor blocks us */
		struct stat st;
		char *text = NULL;
		size_t got = 0;
		struct reload_req *r = &out[n];
		int e = ts_cli_read_side_file(full, sizeof(r->path) - 1, (unsigned)-1, &text,
					      &got, &st);
		if (e == -ELOOP || e == -EINVAL || e == -EPERM || e == -EFBIG) {
			fprintf(stderr, "tsrun: reload: ignoring %s: %s\n", full,
				e == -EFBIG ? "too long for a reload request"
					    : "not a regular file of this user");
			continue;
		}
		if (e)
			continue;
		unlink(full);
		e = ts_reload_req_path(text, got, r->path, sizeof(r->path));
		free(text);
		if (e) {
			fprintf(stderr, "tsrun: reload: ignoring %s: not a reload request (one "
				"absolute path and a newline)\n", full);
			continue;
		}
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			continue;
		r->pid = pid;
		r->mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
		n++;
	}
	if (d)
		closedir(d);
	qsort(out, n, sizeof(*out), req_cmp);
	return n;
}

/*
 * SIGHUP: compile the pipeline named in the reload file (or the running
 * file again); ts_session_reload checks it against the running one and
 * opens its source. `tsrun reload` writes "PATH\nPID\n" and waits for our
 * answer in "<socket>.reload.PID". Returns the plan, or NULL with why[].
 */
static struct ts_plan *reload_compile(const char *path, const char *pipeline,
				      char *why, size_t why_n)
{
	fprintf(stderr, "tsrun: reload: checking %s\n", path);
	struct ts_plan *next = NULL;
	int st = ts_cli_compile_max("reload", path, pipeline, TS_CLI_RELOAD_MAX_SOURCE, &next);
	if (st == TS_EXIT_USAGE) {
		snprintf(why, why_n, "%s cannot be read as a pipeline file of at most %u MiB "
			 "(tsrun's log says why)", path, TS_CLI_RELOAD_MAX_SOURCE >> 20);
		return NULL;
	}
	if (st != TS_EXIT_OK) {
		snprintf(why, why_n, "%s does not check (diagnostics in tsrun's log)", path);
		return NULL;
	}
	if (!pipeline && next->n_served > 1) {
		snprintf(why, why_n, "%s serves %d pipelines (%s) and this tsrun was started "
			 "without --pipeline: which one is meant is not clear", path,
			 next->n_served, next->served_names);
		ts_plan_destroy(next);
		return NULL;
	}
	return next;
}

/* Answer `tsrun reload` (pid asker): "ok ..." or "rejected: ...". */
__attribute__((format(printf, 3, 4)))
static void reload_answer(const char *socket_path, long asker, const char *fmt, ...)
{
	if (asker <= 0)
		return;
	char *rpath = ts_cmd_run_reload_path(socket_path);
	char *ans = NULL, *tmp = NULL;
	if (rpath && asprintf(&ans, "%s.%ld", rpath, asker) >= 0) {
		/* exclusively created, renamed: nothing planted is followed */
		FILE *f = ts_cli_side_create(ans, &tmp);
		int e = f ? 0 : -errno;
		if (f) {
			va_list ap;
			va_start(ap, fmt);
			vfprintf(f, fmt, ap);
			va_end(ap);
			fputc('\n', f);
			e = ts_cli_side_commit(f, tmp, ans);
		}
		if (e)
			fprintf(stderr, "tsrun: reload: cannot write the answer %s: %s\n", ans,
				ts_error_name(e));
	}
	free(ans);
	free(rpath);
}

/* One request (asker 0: a bare SIGHUP): the new plan is offered to s; the
 * outcome goes to the log and to the asking `tsrun reload`. *pending_file
 * names the accepted one. */
static void reload(struct ts_session *s, const char *socket_path, const char *pipeline,
		   const char *path, long asker, char **pending_file)
{
	char why[512] = "";
	struct ts_plan *next = reload_compile(path, pipeline, why, sizeof(why));
	struct ts_error err = {0};
	uint64_t epoch = 0;
	bool replaced = false;
	if (next && ts_session_reload(s, next, &epoch, &replaced, &err) != 0)
		snprintf(why, sizeof(why), "%s", err.msg);
	else if (next) {
		if (replaced)
			fprintf(stderr, "tsrun: reload: %s replaces %s, which had not taken "
				"over yet\n", path, *pending_file);
		free(*pending_file);
		*pending_file = strdup(path);
		fprintf(stderr, "tsrun: reload: %s accepted: takes over at epoch %llu (counted "
			"from 0)\n", path, (unsigned long long)epoch);
		reload_answer(socket_path, asker, "ok: takes over at epoch %llu (counted from 0)",
			      (unsigned long long)epoch);
		return;
	}
	fprintf(stderr, "tsrun: reload: %s rejected: %s; the running pipeline carries on\n",
		path, why);
	reload_answer(socket_path, asker, "rejected: %s", why);
}

/* SIGHUP: every pending request in arrival order (the last valid one
 * wins, each asker told), or, with none, the running file again. Once the
 * stream has ended (draining), each is refused. */
static void on_hup(struct ts_session *s, const char *socket_path, const char *pipeline,
		   const char *cur_file, char **pending_file, bool ended)
{
	static struct reload_req reqs[MAX_REQUESTS];
	size_t n = take_requests(socket_path, reqs, MAX_REQUESTS);
	for (size_t i = 0; i < n; i++) {
		if (ended) {
			fprintf(stderr, "tsrun: reload: %s rejected: the stream has ended\n",
				reqs[i].path);
			reload_answer(socket_path, reqs[i].pid, "rejected: the stream has ended; "
				      "there is no next epoch to take over");
		} else {
			reload(s, socket_path, pipeline, reqs[i].path, reqs[i].pid, pending_file);
		}
	}
	if (n == 0 && !ended)
		reload(s, socket_path, pipeline, cur_file, 0, pending_file);
}

/* The plan's one-line description, memory included. */
static void print_plan(const char *file, const struct ts_plan *plan)
{
	char need[32], ringsz[32], scratch[32], io[32], base[32], budget[32];
	ts_plan_format_size(plan->mem_total, need, sizeof(need));
	ts_plan_format_size(plan->mem_ring, ringsz, sizeof(ringsz));
	ts_plan_format_size(plan->mem_scratch, scratch, sizeof(scratch));
	ts_plan_format_size(plan->mem_io, io, sizeof(io));
	ts_plan_format_size(plan->mem_process, base, sizeof(base));
	if (plan->memory_budget)
		ts_plan_format_size(plan->memory_budget, budget, sizeof(budget));
	else
		snprintf(budget, sizeof(budget), "none");
	char cache[48] = "";
	if (plan->mem_cache) { /* the decoded cache, when there is one */
		memcpy(cache, ", cache ", 9);
		ts_plan_format_size(plan->mem_cache, cache + 8, sizeof(cache) - 8);
	}
	char views[32] = "";
	if (plan->n_views) /* views(): view 0's shape, then how many */
		snprintf(views, sizeof(views), " (view 0 of %d)", plan->n_views);
	fprintf(stderr, "tsrun: %s: pipeline '%s', %dx%dx%d %s %s samples%s, memory %s "
		"(ring %s, scratch %s, io %s, process %s%s; budget %s)\n", file, plan->name,
		plan->channels, plan->height, plan->width, ts_dtype_name(plan->dtype),
		ts_layout_name(plan->layout), views, need, ringsz, scratch, io, base, cache,
		budget);
}

/* What serving set up: the device ring (or why not) and the reader. */
static void print_info(const struct ts_session_info *si, const struct ts_plan *plan, bool quiet)
{
	if (si->device_fallback)
		fprintf(stderr, "tsrun run: device(cuda): %s; serving uint8 NHWC batches from "
			"the CPU ring instead\n", si->device_note);
	if (si->device && !quiet)
		fprintf(stderr, "tsrun: device(cuda): finishing on GPU %d (%s, %s) into a "
			"%dx%dx%d %s nchw device ring shared over CUDA IPC\n", si->dev.device,
			si->dev.name, si->dev.pci_bus_id, plan->channels, plan->height,
			plan->width, ts_dtype_name(plan->device.dtype));
	if (si->device && si->device_note[0])
		fprintf(stderr, "tsrun: note: %s\n", si->device_note);
	if (si->reader_note)
		fprintf(stderr, "tsrun: note: %s; reading files with plain reads in the workers\n",
			si->reader_note);
}

static void print_summary(struct ts_session *srv, struct ts_status *status)
{
	struct ts_engine_stats es;
	struct ts_ring_stat rs;
	ts_session_stats(srv, &es, &rs);
	const char *const *skipped = NULL;
	size_t n_skipped = ts_session_skipped(srv, &skipped);
	ts_status_summary(status, &es, &rs, skipped, n_skipped, stderr);
	struct ts_devserve_stats ds;
	if (ts_session_device_stats(srv, &ds))
		fprintf(stderr, "device: %llu samples finished on GPU %d in %.2f s of copies "
			"and kernels (host ring %s)\n", (unsigned long long)ds.samples, ds.device,
			ds.fill_s, ds.pinned ? "page-locked" : "pageable");
	if (ts_session_device_stats(srv, &ds) && ds.pin_note[0])
		fprintf(stderr, "tsrun: note: %s\n", ds.pin_note);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsrun run FILE [--pipeline NAME] [--socket PATH] [--epochs N]\n"
		"                 [--threads N] [--start EPOCH:INDEX] [--wait N]\n"
		"                 [--device N] [--quiet] [--stats-json FILE]\n");
}

/* What the command line asked. */
struct run_args {
	const char *file, *pipeline, *socket_path, *stats_json;
	long epochs, threads, wait_n, device_ord;
	unsigned long long start_epoch, start_index;
	bool quiet;
};

/* The options into *a: TS_EXIT_OK, or the exit status to end with
 * (usage errors said; --help printed: *done). */
static int parse_args(int argc, char **argv, struct run_args *a, bool *done)
{
	static const struct option opts[] = {
		{"pipeline", required_argument, NULL, 'p'},
		{"socket", required_argument, NULL, 'S'},
		{"epochs", required_argument, NULL, 'e'},
		{"threads", required_argument, NULL, 't'},
		{"start", required_argument, NULL, 's'},
		{"wait", required_argument, NULL, 'w'},
		{"quiet", no_argument, NULL, 'q'},
		{"stats-json", required_argument, NULL, 'j'},
		{"device", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*a = (struct run_args){ .epochs = -1, .wait_n = 1 };
	*done = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:S:e:t:s:w:qj:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': a->pipeline = optarg; break;
		case 'S': a->socket_path = optarg; break;
		case 'e':
			if (!ts_cli_opt_long("run", "--epochs", optarg, 0, &a->epochs))
				return TS_EXIT_USAGE;
			break;
		case 't':
			if (!ts_cli_opt_long("run", "--threads", optarg, 1, &a->threads))
				return TS_EXIT_USAGE;
			break;
		case 's':
			if (!ts_cli_opt_start("run", optarg, &a->start_epoch, &a->start_index))
				return TS_EXIT_USAGE;
			break;
		case 'w':
			if (!ts_cli_parse_long(optarg, 0, &a->wait_n) ||
			    a->wait_n > TS_RING_MAX_CONSUMERS) {
				ts_cli_error("run", "--wait wants 0..%d trainers, got '%s'",
					     TS_RING_MAX_CONSUMERS, optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 'd':
			if (!ts_cli_opt_long("run", "--device", optarg, 0, &a->device_ord))
				return TS_EXIT_USAGE;
			break;
		case 'q': a->quiet = true; break;
		case 'j': a->stats_json = optarg; break;
		case 'h': usage(stdout); *done = true; return TS_EXIT_OK;
		default:
			ts_cli_bad_option("run", c, argv, opts);
			usage(stderr);
			return TS_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		if (optind >= argc)
			ts_cli_error("run", "no FILE given");
		else
			ts_cli_error("run", "unexpected argument '%s'", argv[optind + 1]);
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	a->file = argv[optind];
	return TS_EXIT_OK;
}

/* What only the command can judge of a compiled plan: one served
 * pipeline chosen, a fixed sample size, --start inside the epochs.
 * TS_EXIT_OK, or the exit status (said). */
static int check_plan(const struct run_args *a, const struct ts_plan *plan, int n_epochs)
{
	if (!a->pipeline && plan->n_served > 1) {
		ts_cli_error("run", "%s serves %d pipelines (%s); choose one with --pipeline NAME",
			     a->file, plan->n_served, plan->served_names);
		return TS_EXIT_USAGE;
	}
	if (plan->sample_bytes == 0) {
		ts_cli_error("run", "pipeline '%s' has no fixed sample size; end it with a "
			     "crop or resize and batch(n) to serve it", plan->name);
		return TS_EXIT_INVALID;
	}
	if (n_epochs > 0 && a->start_epoch >= (unsigned long long)n_epochs) {
		ts_cli_error("run", "--start epoch %llu is at or past the last epoch: the stream "
			     "has %d epoch%s (0..%d); start earlier or raise --epochs",
			     a->start_epoch, n_epochs, n_epochs == 1 ? "" : "s", n_epochs - 1);
		return TS_EXIT_USAGE;
	}
	return TS_EXIT_OK;
}

/* SIGINT and SIGTERM end the run within a second from here on, even
 * while the start lists a large source: the main thread stops the run in
 * order, and the watchdog ends it if that takes longer. */
static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* A served run as the main thread watches it. */
struct run {
	const struct run_args *a;
	struct ts_session *srv;
	struct ts_status *status;
	FILE *json;
	const char *socket_path;  /* the server's */
	char *cur_file, *pending_file;
};

/* A reload's outcome, and the server's notes, on stderr. */
static void watch_events(struct run *r, enum ts_session_event ev, const struct ts_error *err)
{
	if (ev == TS_SESSION_FELL_BACK) {
		fprintf(stderr, "tsrun: reload: %s could not start at its epoch: %s; the "
			"running pipeline carries on\n", r->pending_file, err->msg);
		free(r->pending_file);
		r->pending_file = NULL;
	} else if (ev == TS_SESSION_TOOK_OVER) {
		ts_status_clear(r->status, stderr);
		fprintf(stderr, "tsrun: reload: %s took over\n", r->pending_file);
		free(r->cur_file);
		r->cur_file = r->pending_file;
		r->pending_file = NULL;
		ts_status_set_plan(r->status, ts_session_plan(r->srv), r->cur_file);
	}
	char line[256];
	while (ts_session_take_note(r->srv, line, sizeof(line))) {
		ts_status_clear(r->status, stderr);
		fprintf(stderr, "tsrun: %s\n", line);
	}
}

/* The main thread only watches: status every 100 ms, a signal, a reload,
 * or the end of the stream. Returns 0 or the error that ended it. */
static int watch(struct run *r, struct ts_error *err)
{
	for (;;) {
		struct ts_engine_stats es;
		struct ts_ring_stat rs;
		if (got_hup) {
			got_hup = 0;
			ts_status_clear(r->status, stderr);
			on_hup(r->srv, r->socket_path, r->a->pipeline, r->cur_file, &r->pending_file,
			       false);
		}
		enum ts_session_event ev;
		int rc = ts_session_poll(r->srv, &ev, err);
		if (rc)
			return rc;
		watch_events(r, ev, err);
		ts_session_stats(r->srv, &es, &rs);
		ts_status_update(r->status, &es, &rs, stderr, r->json);
		if (got_signal || rs.state != TS_RING_RUNNING)
			return 0;
		usleep(100 * 1000);
	}
}

/* Let trainers drain what is published before the socket goes: they
 * already map the ring, so this only keeps `tsrun stat` answering. */
static void drain(struct run *r)
{
	double t_end = ts_clock_now() + 30.0;
	while (!got_signal && ts_session_consumers(r->srv) > 0 && ts_clock_now() < t_end) {
		struct ts_engine_stats es;
		struct ts_ring_stat rs;
		if (got_hup) {
			got_hup = 0;
			on_hup(r->srv, r->socket_path, r->a->pipeline, r->cur_file, &r->pending_file,
			       true);
		}
		ts_session_stats(r->srv, &es, &rs);
		ts_status_update(r->status, &es, &rs, stderr, r->json);
		usleep(100 * 1000);
	}
}

/* From a created server to the end of its stream: the status, the
 * watching, the stop, the drain and the summary. Returns the exit status. */
static int serve(struct run *r, int n_epochs, struct ts_error *err)
{
	const struct run_args *a = r->a;
	struct ts_session_info si;
	int rc;
	ts_session_get_info(r->srv, &si);
	r->socket_path = si.socket_path;
	print_info(&si, ts_session_plan(r->srv), a->quiet);
	if (a->stats_json && !(r->json = fopen(a->stats_json, "ae"))) {
		ts_cli_error("run", "cannot write --stats-json file '%s': %s", a->stats_json,
			     strerror(errno));
		return TS_EXIT_USAGE;
	}
	if (ts_status_create(ts_session_plan(r->srv), a->file, si.socket_path,
			     (uint64_t)n_epochs, a->start_epoch, a->quiet, &r->status)) {
		ts_cli_error("run", "out of memory");
		return TS_EXIT_INVALID;
	}
	if (!a->quiet)
		fprintf(stderr, "tsrun: serving on %s (epochs: %d%s); waiting for %ld trainer%s\n",
			si.socket_path, n_epochs, n_epochs == 0 ? ", forever" : "", a->wait_n,
			a->wait_n == 1 ? "" : "s");
	if ((rc = ts_session_start(r->srv, err)) || (rc = watch(r, err))) {
		ts_cli_error("run", "%s", err->msg[0] ? err->msg : ts_error_name(rc));
		return TS_EXIT_INVALID;
	}
	if (got_signal) {
		ts_status_clear(r->status, stderr);
		fprintf(stderr, "tsrun: %s: stopping\n", strsignal(got_signal));
		ts_session_stop(r->srv);
	}
	int exit_status = TS_EXIT_OK;
	rc = ts_session_join(r->srv, err);
	if (rc && !got_signal) {
		ts_status_clear(r->status, stderr);
		ts_cli_error("run", "%s", err->msg);
		exit_status = TS_EXIT_INVALID;
	}
	drain(r);
	print_summary(r->srv, r->status);
	return exit_status;
}

int ts_cmd_run(int argc, char **argv)
{
	struct run_args a;
	bool done;
	int st = parse_args(argc, argv, &a, &done);
	if (st != TS_EXIT_OK || done)
		return st;
	struct ts_plan *plan = NULL;
	if ((st = ts_cli_compile("run", a.file, a.pipeline, &plan)) != TS_EXIT_OK)
		return st;
	int n_epochs = a.epochs >= 0 ? (int)a.epochs : plan->epochs;
	if ((st = check_plan(&a, plan, n_epochs)) != TS_EXIT_OK) {
		ts_plan_destroy(plan);
		return st;
	}
	struct ts_error err = {0};
	struct run r = { .a = &a, .cur_file = strdup(a.file) };
	int exit_status = TS_EXIT_INVALID;
	if (!a.quiet)
		print_plan(a.file, plan);
	struct ts_session_opts so = {
		.socket_path = a.socket_path, .epochs = n_epochs, .threads = (int)a.threads,
		.start_epoch = a.start_epoch, .start_index = a.start_index,
		.wait = (unsigned)a.wait_n, .device = (int)a.device_ord,
	};
	catch_signals();
	if (ts_cli_guard_start(TS_RUN_STOP_MS, TS_EXIT_OK, abort_serve) < 0) {
		ts_cli_error("run", "cannot start the stop watchdog: %s", strerror(errno));
		ts_plan_destroy(plan);
		free(r.cur_file);
		return TS_EXIT_INVALID;
	}
	int rc = ts_session_create(plan, &so, &r.srv, &err); /* takes the plan */
	if (rc == 0)
		ts_cli_guard_set_arg(r.srv);
	if (got_signal && rc == 0) {
		fprintf(stderr, "tsrun: %s: stopping\n", strsignal(got_signal));
	} else if (rc == TS_E_NODEV || rc == TS_E_ARG) {
		/* --device past the GPUs, --start past the epoch */
		ts_cli_error("run", "%s%s", rc == TS_E_NODEV ? "--" : "", err.msg);
		exit_status = TS_EXIT_USAGE;
	} else if (rc) {
		ts_cli_error("run", "%s", err.msg[0] ? err.msg : ts_error_name(rc));
	} else {
		exit_status = serve(&r, n_epochs, &err);
	}
	ts_cli_guard_set_arg(NULL);  /* srv goes now */
	struct ts_error derr = {0};
	if (ts_session_destroy(r.srv, &derr) < 0) {
		ts_cli_error("run", "device(cuda): %s", derr.msg);
		exit_status = TS_EXIT_INVALID;
	}
	/* The last lines' flush: said once, unless a write already failed
	 * (and was said). */
	if (r.json && fclose(r.json) != 0 && !(r.status && ts_status_json_failed(r.status)))
		fprintf(stderr, "tsrun: cannot write --stats-json: %s (reported once)\n",
			strerror(errno));
	ts_status_destroy(r.status);
	free(r.cur_file);
	free(r.pending_file);
	ts_cli_guard_done();
	return exit_status;
}
