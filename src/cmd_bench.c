/*
 * cmd_bench.c - `tsrun bench FILE`: run a pipeline in-process through the
 * same engine and ring the server uses, consume it at full speed, and
 * print throughput, CPU time, peak memory and the stream digest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digest.h"
#include "engine.h"
#include "profile.h"
#include "tsrun.h"
#include "tsrun_internal.h"
#include "util.h"

/* SIGINT and SIGTERM end a bench within a second (tsrun(1)): the loop
 * stops at the next batch and prints what it measured, exiting 128 + the
 * signal; the watchdog (cli_guard.c) ends it if that takes longer (a
 * worker in the middle of a large decode). */
#define TS_BENCH_STOP_MS 400
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
	ts_cli_guard_signal(128 + sig);
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static double thread_cpu(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0.0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* `--profile`: where the CPU went, per image, from profile.h's counters
 * (every worker and the I/O thread) and this thread's own figures (setup:
 * opening the stream, indexing, the ring's allocation; consumer: reading
 * the ring; digest; close: ending the stream, which joins the threads and
 * unmaps and frees the ring's pages); "other" is what no row covers (the
 * kernel's I/O workers, thread start and end, the rest of the process),
 * so the rows add up to cpu/image. */
static void print_profile(uint64_t images, double cpu, double setup_cpu,
			  double consumer_cpu, double digest_cpu, double close_cpu)
{
	uint64_t ns[TS_PROF_N];
	ts_prof_get(ns);
	const double per = images ? 1e3 / (double)images : 0.0;
	double s[TS_PROF_N];
	for (int i = 0; i < TS_PROF_N; i++)
		s[i] = (double)ns[i] * 1e-9;
	const double read = s[TS_PROF_READ_IO] + s[TS_PROF_READ];
	double in_stages = s[TS_PROF_READ] + s[TS_PROF_DECODE] + s[TS_PROF_RESAMPLE] +
			   s[TS_PROF_OUTPUT] + s[TS_PROF_RING];
	double worker_other = s[TS_PROF_WORKER] > in_stages ? s[TS_PROF_WORKER] - in_stages : 0.0;
	double consumer = consumer_cpu > digest_cpu ? consumer_cpu - digest_cpu : 0.0;
	double known = read + s[TS_PROF_DECODE] + s[TS_PROF_RESAMPLE] + s[TS_PROF_OUTPUT] +
		       s[TS_PROF_RING] + worker_other + setup_cpu + consumer + digest_cpu +
		       close_cpu;
	double other = cpu > known ? cpu - known : 0.0;
	printf("profile: CPU ms/image over %" PRIu64 " images, all threads\n", images);
	printf("profile read: %.3f ms/image\n", read * per);
	printf("profile decode: %.3f ms/image\n", s[TS_PROF_DECODE] * per);
	printf("profile crop/resample: %.3f ms/image\n", s[TS_PROF_RESAMPLE] * per);
	printf("profile output: %.3f ms/image\n", s[TS_PROF_OUTPUT] * per);
	printf("profile ring: %.3f ms/image\n", s[TS_PROF_RING] * per);
	printf("profile worker other: %.3f ms/image\n", worker_other * per);
	printf("profile setup: %.3f ms/image\n", setup_cpu * per);
	printf("profile consumer: %.3f ms/image\n", consumer * per);
	printf("profile digest: %.3f ms/image\n", digest_cpu * per);
	printf("profile close: %.3f ms/image\n", close_cpu * per);
	printf("profile other: %.3f ms/image\n", other * per);
	printf("profile total: %.3f ms/image\n", cpu * per);
}

static void print_common(const struct ts_plan *pl, const char *file, uint64_t images,
			 double wall, double out_mb, uint64_t bytes_read, double cpu)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("pipeline: %s (%s)\n", pl->name, file);
	printf("images: %" PRIu64 "\n", images);
	printf("seconds: %.3f\n", wall);
	printf("images/s: %.1f\n", wall > 0 ? (double)images / wall : 0.0);
	printf("MB/s: %.1f\n", wall > 0 ? out_mb / wall : 0.0);
	printf("input MB/s: %.1f\n", wall > 0 ? (double)bytes_read / 1e6 / wall : 0.0);
	printf("cpu: %.2f s\n", cpu);
	printf("cpu/image: %.3f ms\n", images ? cpu * 1e3 / (double)images : 0.0);
	printf("peak_rss: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
}

/* Samples without a fixed size (a decode-only pipeline) cannot go into a
 * ring: run the engine in discard mode, where each sample is produced,
 * hashed and dropped, and print the same figures. limit: the source
 * items to run at most (0: as epochs says). */
/* --cache: bytes (with a unit), auto or off, as ts_stream_opts.cache. */
static bool parse_cache(const char *s, uint64_t *out)
{
	if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0) {
		*out = TS_STREAM_CACHE_OFF;
		return true;
	}
	if (strcmp(s, "auto") == 0) {
		*out = TS_STREAM_CACHE_AUTO;
		return true;
	}
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	static const struct { const char *u; unsigned shift; } units[] = {
		{"", 0}, {"B", 0}, {"K", 10}, {"KiB", 10}, {"M", 20}, {"MiB", 20},
		{"G", 30}, {"GiB", 30}, {"T", 40}, {"TiB", 40},
	};
	if (errno || end == s || n == 0)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].u) == 0) {
			if (n > (UINT64_MAX - 2) >> units[i].shift)
				return false;
			*out = (uint64_t)n << units[i].shift;
			return true;
		}
	return false;
}

/* The decoded cache's figures, when there is one; before them, the
 * workers' CPU of the first epoch and of the later ones, user and system
 * apart (the later epochs' cost in one run: the first epoch's admissions
 * and page faults stay out of it). */
static void print_cache(const struct ts_engine_stats *es)
{
	printf("worker_cpu: first epoch %.3f s user %.3f s sys, later epochs %.3f s user "
	       "%.3f s sys\n", es->cpu_first_user, es->cpu_first_sys, es->cpu_later_user,
	       es->cpu_later_sys);
	if (!es->cache_bytes)
		return;
	uint64_t looks = es->cache_hits + es->cache_misses + es->cache_bypass;
	printf("cache: %.1f MiB, %.1f MiB used, %" PRIu64 " items, %s\n",
	       (double)es->cache_bytes / 1048576.0, (double)es->cache_used / 1048576.0,
	       es->cache_items, es->cache_locked ? "locked" : "not locked");
	printf("cache_hits: %" PRIu64 " of %" PRIu64 " (%.1f%%), %" PRIu64 " bypassed "
	       "(reduced-scale decodes)\n", es->cache_hits, looks,
	       looks ? 100.0 * (double)es->cache_hits / (double)looks : 0.0, es->cache_bypass);
}

static int bench_discard(const char *file, const struct ts_plan *pl, int threads,
			 unsigned long long start_epoch, unsigned long long start_index,
			 int epochs, uint64_t limit, bool digest, bool profile, int trace_fd,
			 uint64_t cache)
{
	struct ts_engine_opts eo = {
		.threads = threads, .epochs = epochs,
		.start_epoch = start_epoch, .start_index = start_index,
		.limit = limit, .no_digest = !digest, .cache = cache,
		.trace = trace_fd >= 0, .trace_fd = trace_fd,
	};
	if (cache == TS_STREAM_CACHE_AUTO) {
		/* what the serve block's memory leaves, as the plan figured it */
		if (!pl->memory_budget) {
			ts_cli_error("bench", "--cache auto takes what the memory budget leaves, "
				     "but pipeline '%s' sets no memory", pl->name);
			return TS_EXIT_USAGE;
		}
		eo.cache = pl->memory_budget > pl->mem_total - pl->mem_cache
				   ? (pl->memory_budget - (pl->mem_total - pl->mem_cache)) >> 20 << 20
				   : UINT64_MAX;
	}
	struct ts_engine *e = NULL;
	struct ts_error err = {0};
	double cpu0 = ts_cli_cpu_seconds(), t0 = ts_clock_now();
	int rc = ts_engine_create(pl, &eo, NULL, &e, &err);
	if (rc == 0)
		rc = ts_engine_start(e, &err);
	if (rc == 0)
		rc = ts_engine_join(e, &err);
	double wall = ts_clock_now() - t0;
	if (rc) {
		ts_cli_error("bench", "%s", err.msg);
		ts_engine_destroy(e);
		return TS_EXIT_INVALID;
	}
	struct ts_engine_stats es;
	ts_engine_stats(e, &es);
	const char *const *skipped = NULL;
	size_t n_skipped = ts_engine_skipped(e, &skipped);
	for (size_t i = 0; i < n_skipped; i++)
		fprintf(stderr, "tsrun bench: skipped %s\n", skipped[i]);
	double cpu = ts_cli_cpu_seconds() - cpu0;
	print_common(pl, file, es.samples, wall, 0.0, es.bytes, cpu);
	printf("threads: %d\n", es.threads);
	printf("reader: %s\n", es.uring ? "io_uring" : "plain reads");
	printf("skipped: %" PRIu64 "\n", es.skipped);
	if (digest)
		printf("digest: %016llx (unordered: samples of varying size)\n",
		       (unsigned long long)ts_engine_unordered_digest(e));
	else
		printf("digest: off (--no-digest)\n");
	print_cache(&es);
	if (profile)
		print_profile(es.samples, cpu, 0.0, 0.0, 0.0, 0.0);
	ts_engine_destroy(e);
	return TS_EXIT_OK;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tsrun bench FILE [--pipeline NAME] [--epochs N] [--threads N]\n"
		   "                  [--batches N] [--batch N] [--start EPOCH:INDEX] [--no-digest]\n"
		   "                  [--profile] [--trace FILE] [--cache SIZE|auto|off]\n"
		   "Run a pipeline in this process, read its batches as fast as it makes\n"
		   "them and print images/s, MB/s, CPU time, peak memory and the digest.\n"
		   "  --pipeline NAME      the pipeline to run (default: the served or first one)\n"
		   "  --epochs N           epochs to run (default 1)\n"
		   "  --threads N          worker threads (default: the pipeline's setting)\n"
		   "  --batches N          stop after N batches (default: every batch; samples\n"
		   "                       of varying size: N x --batch samples, 1 by default)\n"
		   "  --batch N            samples per batch (default: the pipeline's batch(n))\n"
		   "  --start EPOCH:INDEX  start at this position, as a resumed run does\n"
		   "  --no-digest          do not hash the samples (the figures without that work)\n"
		   "  --cache SIZE         the decoded cache instead of the serve block's: 4GiB,\n"
		   "                       512MiB, auto (what memory leaves) or off\n"
		   "  --profile            also print the CPU per image of each stage\n"
		   "  --trace FILE         write each sample's random draws to FILE, one JSON\n"
		   "                       line per sample (tsrun(1) describes the form)\n");
}

/* --trace FILE's descriptor while a bench runs (-1: none); closed by
 * ts_cmd_bench on every way out, after the stream that writes it. */
static int trace_fd = -1;

/* What the command line asked. */
struct bench_args {
	const char *file, *pipeline, *trace;
	long epochs, threads, batches, batch;
	unsigned long long start_epoch, start_index;
	bool digest, profile;
	uint64_t cache;
};

/* The options into *a: TS_EXIT_OK, or the exit status to end with
 * (usage errors said; --help printed: *done). */
static int parse_args(int argc, char **argv, struct bench_args *a, bool *done)
{
	static const struct option opts[] = {
		{"pipeline", required_argument, NULL, 'p'},
		{"epochs", required_argument, NULL, 'e'},
		{"threads", required_argument, NULL, 't'},
		{"batches", required_argument, NULL, 'n'},
		{"batch", required_argument, NULL, 'b'},
		{"start", required_argument, NULL, 's'},
		{"no-digest", no_argument, NULL, 'D'},
		{"profile", no_argument, NULL, 'P'},
		{"trace", required_argument, NULL, 'T'},
		{"cache", required_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*a = (struct bench_args){ .epochs = 1, .batches = -1, .digest = true };
	*done = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:e:t:n:b:s:DPT:C:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': a->pipeline = optarg; break;
		case 'e':
			if (!ts_cli_opt_long("bench", "--epochs", optarg, 1, &a->epochs))
				return TS_EXIT_USAGE;
			break;
		case 't':
			if (!ts_cli_opt_long("bench", "--threads", optarg, 1, &a->threads))
				return TS_EXIT_USAGE;
			break;
		case 'n':
			if (!ts_cli_opt_long("bench", "--batches", optarg, 1, &a->batches))
				return TS_EXIT_USAGE;
			break;
		case 'b':
			if (!ts_cli_opt_long("bench", "--batch", optarg, 1, &a->batch))
				return TS_EXIT_USAGE;
			break;
		case 's':
			if (!ts_cli_opt_start("bench", optarg, &a->start_epoch, &a->start_index))
				return TS_EXIT_USAGE;
			break;
		case 'D': a->digest = false; break;
		case 'P': a->profile = true; break;
		case 'T': a->trace = optarg; break;
		case 'C':
			if (!parse_cache(optarg, &a->cache)) {
				ts_cli_error("bench", "--cache takes a size such as 4GiB or 512MiB, "
					     "auto or off, not '%s'", optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); *done = true; return TS_EXIT_OK;
		default:
			ts_cli_bad_option("bench", c, argv, opts);
			usage(stderr);
			return TS_EXIT_USAGE;
		}
	}
	if (optind >= argc || optind < argc - 1) {
		if (optind >= argc)
			ts_cli_error("bench", "no FILE given");
		else
			ts_cli_error("bench", "unexpected argument '%s'", argv[optind + 1]);
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	a->file = argv[optind];
	return TS_EXIT_OK;
}

/* Samples of varying size are not batched: --batches N still means N
 * batches of --batch samples (1 by default), as many source items as a
 * fixed-size pipeline would run, so that the same command line is a short
 * run on either (tsrun(1)). */
static int bench_varying(const struct bench_args *a, const struct ts_plan *pl)
{
	uint64_t limit = 0;
	if (a->batches > 0) {
		uint64_t m = a->batch > 0 ? (uint64_t)a->batch : 1;
		limit = (uint64_t)a->batches > UINT64_MAX / m ? UINT64_MAX
							      : (uint64_t)a->batches * m;
	} else if (a->batch > 0) {
		fprintf(stderr, "tsrun bench: note: pipeline '%s' makes samples of varying "
			"size, which are not batched: --batch only sets the samples "
			"--batches counts as one batch\n", pl->name);
	}
	return bench_discard(a->file, pl, (int)a->threads, a->start_epoch, a->start_index,
			     (int)(a->start_epoch + (uint64_t)a->epochs), limit, a->digest,
			     a->profile, trace_fd, a->cache);
}

/* What the consumer loop measured. */
struct bench_run {
	struct ts_digest dg;
	uint64_t images, nb;
	double digest_cpu;
};

/* Read batches until the stream ends, --batches or a signal: the last
 * ts_stream_next's code (TS_E_EOS at the end). */
static int consume(struct ts_stream *s, const struct bench_args *a, struct bench_run *r,
		   struct ts_error *err)
{
	struct ts_stream_batch b;
	int rc = 0;
	ts_digest_init(&r->dg);
	while ((a->batches < 0 || r->nb < (uint64_t)a->batches) && !got_signal) {
		rc = ts_stream_next(s, &b, err);
		if (rc)
			break;
		const unsigned char *d = b.data;
		if (a->digest) {
			/* The hashing is bench-only work, done in this thread:
			 * its CPU time is reported so the figures can leave it
			 * out. */
			double h0 = thread_cpu();
			for (size_t i = 0; i < b.n; i++)
				ts_digest_sample(&r->dg, d + i * b.sample_stride, b.sample_bytes,
						 b.labels[i]);
			r->digest_cpu += thread_cpu() - h0;
		}
		r->images += b.n;
		r->nb++;
	}
	return rc;
}

/* The stream of a fixed-size pipeline, consumed and reported. */
static int bench_stream(const struct bench_args *a, struct ts_pipeline *p,
			const struct ts_plan *pl, bool *opened)
{
	struct ts_stream_opts so = {
		.threads = (int)a->threads,
		.epochs = (int)(a->start_epoch + (uint64_t)a->epochs),
		.start_epoch = a->start_epoch,
		.start_index = a->start_index,
		.batch = (size_t)a->batch,
		.cache = a->cache,
	};
	struct ts_error err = {0};
	struct ts_stream *s = NULL;
	double cpu0 = ts_cli_cpu_seconds(), t0 = ts_clock_now(), me0 = thread_cpu();
	int rc = ts_pipeline_open(p, &so, &s, &err);
	*opened = rc == 0;
	if (rc) {
		ts_cli_error("bench", "%s", err.msg);
		return TS_EXIT_INVALID;
	}
	const double me1 = thread_cpu();
	if (ts_stream_note(s))
		fprintf(stderr, "tsrun bench: note: %s; using plain reads in the workers\n",
			ts_stream_note(s));
	struct bench_run r = {0};
	rc = consume(s, a, &r, &err);
	double wall = ts_clock_now() - t0;
	double setup_cpu = me1 - me0, consumer_cpu = thread_cpu() - me1;
	struct ts_stream_stats ss;
	ts_stream_stats(s, &ss);
	struct ts_engine_stats es;
	ts_stream_engine_stats(s, &es);
	const char *const *skipped = NULL;
	size_t n_skipped = ts_stream_skipped_paths(s, &skipped);
	int status = TS_EXIT_OK;
	if (got_signal) {
		ts_cli_error("bench", "%s: stopped after %" PRIu64 " batches", strsignal(got_signal),
			     r.nb);
		status = 128 + got_signal;
	} else if (rc && rc != TS_E_EOS) {
		ts_cli_error("bench", "%s", err.msg);
		status = TS_EXIT_INVALID;
	}
	for (size_t i = 0; i < n_skipped; i++)
		fprintf(stderr, "tsrun bench: skipped %s\n", skipped[i]);
	const double close0 = thread_cpu();
	ts_stream_close(s);
	const double close_cpu = thread_cpu() - close0;
	double cpu = ts_cli_cpu_seconds() - cpu0;
	char hex[17];
	ts_digest_hex(&r.dg, hex);
	double mb = (double)r.images * (double)pl->sample_bytes / 1e6;
	print_common(pl, a->file, r.images, wall, mb, ss.bytes_read, cpu);
	printf("batches: %" PRIu64 "\n", r.nb);
	printf("threads: %d\n", ss.threads);
	printf("reader: %s\n", ss.uring ? "io_uring" : !ts_source_kind_encoded(pl->source.kind) ? "none (synthetic)" : "plain reads");
	printf("skipped: %" PRIu64 "\n", ss.skipped);
	printf("digest_cpu: %.6f s\n", r.digest_cpu);
	printf("cpu/image_no_digest: %.3f ms\n",
	       r.images ? (cpu - r.digest_cpu) * 1e3 / (double)r.images : 0.0);
	printf("digest: %s\n", a->digest ? hex : "off (--no-digest)");
	print_cache(&es);
	if (a->profile)
		print_profile(r.images, cpu, setup_cpu, consumer_cpu, r.digest_cpu, close_cpu);
	return status;
}

static int bench(int argc, char **argv)
{
	struct bench_args a;
	bool done;
	int st = parse_args(argc, argv, &a, &done);
	if (st != TS_EXIT_OK || done)
		return st;
	struct ts_plan *plan = NULL;
	if (ts_cli_guard_start(TS_BENCH_STOP_MS, TS_EXIT_INVALID, NULL) < 0) {
		ts_cli_error("bench", "cannot start the stop watchdog: %s", strerror(errno));
		return TS_EXIT_INVALID;
	}
	catch_signals();
	st = ts_cli_compile("bench", a.file, a.pipeline, &plan);
	if (st != TS_EXIT_OK)
		return st;
	if (a.trace) {
		trace_fd = open(a.trace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (trace_fd < 0) {
			ts_cli_error("bench", "cannot write the trace '%s': %s", a.trace,
				     strerror(errno));
			ts_plan_destroy(plan);
			return TS_EXIT_INVALID;
		}
	}
	struct ts_pipeline *p = ts_pipeline_wrap(plan);
	if (!p) {
		ts_cli_error("bench", "out of memory");
		return TS_EXIT_INVALID;
	}
	ts_pipeline_set_trace(p, trace_fd);
	const struct ts_plan *pl = ts_pipeline_plan(p);
	if (a.profile) {
		ts_prof_reset();
		ts_prof_enable(true);
	}
	if (pl->sample_bytes == 0) {
		st = bench_varying(&a, pl);
		ts_pipeline_destroy(p);
		return st;
	}
	bool opened;
	st = bench_stream(&a, p, pl, &opened);
	ts_pipeline_destroy(p);
	if (opened)
		ts_cli_guard_done();
	return st;
}

int ts_cmd_bench(int argc, char **argv)
{
	int st = bench(argc, argv);
	if (trace_fd >= 0 && close(trace_fd) != 0 && st == TS_EXIT_OK) {
		ts_cli_error("bench", "writing the trace failed: %s", strerror(errno));
		st = TS_EXIT_INVALID;
	}
	trace_fd = -1;
	return st;
}
