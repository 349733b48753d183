/*
 * cmd_run.c - `tsrun run FILE` (and plain `tsrun FILE`): serve a pipeline
 * to trainers over its Unix socket, with a live status line, a JSON stats
 * stream, a status file for `tsrun stat`, and a summary at exit.
 */
#include <errno.h>
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
#include "engine.h"
#include "lower.h"
#include "ring.h"
#include "server.h"
#include "status.h"
#include "util.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}



static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsrun run FILE [--pipeline NAME] [--socket PATH] [--epochs N]\n"
		"                 [--threads N] [--start EPOCH:INDEX] [--wait N]\n"
		"                 [--quiet] [--stats-json FILE]\n");
}

int ts_cmd_run(int argc, char **argv)
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
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *pipeline = NULL, *socket_path = NULL, *stats_json = NULL;
	long epochs = -1, threads = 0, wait_n = 1;
	unsigned long long start_epoch = 0, start_index = 0;
	bool quiet = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:S:e:t:s:w:qj:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': pipeline = optarg; break;
		case 'S': socket_path = optarg; break;
		case 'e':
			if (!ts_cli_parse_long(optarg, 0, &epochs)) {
				ts_cli_error("run", "--epochs wants a whole number >= 0 (0: forever), got '%s'", optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 't':
			if (!ts_cli_parse_long(optarg, 1, &threads)) {
				ts_cli_error("run", "--threads wants a whole number >= 1, got '%s'", optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 's':
			if (!ts_cli_parse_start(optarg, &start_epoch, &start_index)) {
				ts_cli_error("run", "--start wants EPOCH:INDEX such as 2:1000, got '%s'", optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 'w':
			if (!ts_cli_parse_long(optarg, 0, &wait_n) || wait_n > TS_RING_MAX_CONSUMERS) {
				ts_cli_error("run", "--wait wants 0..%d trainers, got '%s'",
					     TS_RING_MAX_CONSUMERS, optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 'q': quiet = true; break;
		case 'j': stats_json = optarg; break;
		case 'h': usage(stdout); return TS_EXIT_OK;
		default: usage(stderr); return TS_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	const char *file = argv[optind];
	struct ts_plan *plan = NULL;
	int st = ts_cli_compile("run", file, pipeline, &plan);
	if (st != TS_EXIT_OK)
		return st;
	if (plan->sample_bytes == 0) {
		ts_cli_error("run", "pipeline '%s' has no fixed sample size; end it with a "
			     "crop or resize and batch(n) to serve it", plan->name);
		ts_plan_destroy(plan);
		return TS_EXIT_INVALID;
	}
	if (!socket_path)
		socket_path = plan->socket;
	int n_epochs = epochs >= 0 ? (int)epochs : plan->epochs;

	struct ts_error err = {0};
	struct ts_ring *ring = NULL;
	struct ts_server *srv = NULL;
	struct ts_engine *eng = NULL;
	struct ts_status *status = NULL;
	FILE *json = NULL;
	int rc, exit_status = TS_EXIT_INVALID;

	char need[32], ringsz[32], scratch[32], io[32], budget[32];
	ts_plan_format_size(plan->mem_total, need, sizeof(need));
	ts_plan_format_size(plan->mem_ring, ringsz, sizeof(ringsz));
	ts_plan_format_size(plan->mem_scratch, scratch, sizeof(scratch));
	ts_plan_format_size(plan->mem_io, io, sizeof(io));
	if (plan->memory_budget)
		ts_plan_format_size(plan->memory_budget, budget, sizeof(budget));
	else
		snprintf(budget, sizeof(budget), "none");
	if (!quiet)
		fprintf(stderr, "tsrun: %s: pipeline '%s', %dx%dx%d %s %s samples, memory %s "
			"(ring %s, scratch %s, io %s; budget %s)\n", file, plan->name,
			plan->channels, plan->height, plan->width, ts_dtype_name(plan->dtype),
			ts_layout_name(plan->layout), need, ringsz, scratch, io, budget);

	struct ts_ring_params rp = {
		.height = plan->height, .width = plan->width, .channels = plan->channels,
		.dtype = plan->dtype, .layout = plan->layout,
		.sample_bytes = plan->sample_bytes,
		.capacity = (uint64_t)plan->ring_samples,
		.epochs = (uint32_t)n_epochs,
		.min_consumers = (unsigned)wait_n,
		.default_batch = (uint32_t)plan->batch,
	};
	struct ts_engine_opts eo = {
		.threads = (int)threads, .epochs = n_epochs,
		.start_epoch = start_epoch, .start_index = start_index,
	};
	rc = ts_ring_create(&rp, &ring, &err);
	if (rc)
		goto fail;
	rc = ts_engine_create(plan, &eo, ring, &eng, &err);
	if (rc)
		goto fail;
	rc = ts_server_create(ring, socket_path, plan->group, &srv, &err);
	if (rc)
		goto fail;
	if (ts_engine_reader_note(eng))
		fprintf(stderr, "tsrun: note: %s; reading files with plain reads in the workers\n",
			ts_engine_reader_note(eng));
	if (stats_json) {
		json = fopen(stats_json, "we");
		if (!json) {
			ts_cli_error("run", "cannot write --stats-json file '%s': %s", stats_json,
				     strerror(errno));
			exit_status = TS_EXIT_USAGE;
			goto out;
		}
	}
	rc = ts_status_create(plan, file, socket_path, (uint64_t)n_epochs, start_epoch,
			      quiet, &status);
	if (rc) {
		ts_cli_error("run", "out of memory");
		goto out;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!quiet)
		fprintf(stderr, "tsrun: serving on %s (epochs: %d%s); waiting for %ld trainer%s\n",
			ts_server_path(srv), n_epochs, n_epochs == 0 ? ", forever" : "",
			wait_n, wait_n == 1 ? "" : "s");
	rc = ts_engine_start(eng, &err);
	if (rc)
		goto fail;

	/* The main thread only watches: status every 250 ms, a signal, or the
	 * end of the stream. */
	for (;;) {
		struct ts_engine_stats es;
		ts_engine_stats(eng, &es);
		struct ts_ring_stat rs;
		ts_server_stat(srv, &rs);
		bool ended = rs.state != TS_RING_RUNNING;
		ts_status_update(status, &es, &rs, stderr, json);
		if (got_signal || ended)
			break;
		usleep(100 * 1000);
	}
	if (got_signal) {
		ts_status_clear(status, stderr);
		fprintf(stderr, "tsrun: %s: stopping\n", strsignal(got_signal));
		ts_engine_stop(eng);
	}
	rc = ts_engine_join(eng, &err);
	if (rc && !got_signal) {
		ts_status_clear(status, stderr);
		ts_cli_error("run", "%s", err.msg);
	} else {
		exit_status = TS_EXIT_OK;
	}
	/* Let trainers drain what is published before the socket goes: they
	 * already map the ring, so this only keeps `tsrun stat` answering. */
	if (!got_signal) {
		double t_end = ts_cli_now() + 30.0;
		while (!got_signal && ts_server_consumers(srv) > 0 && ts_cli_now() < t_end) {
			struct ts_engine_stats es;
			ts_engine_stats(eng, &es);
			struct ts_ring_stat rs;
			ts_server_stat(srv, &rs);
			ts_status_update(status, &es, &rs, stderr, json);
			usleep(100 * 1000);
		}
	}
	{
		struct ts_engine_stats es;
		ts_engine_stats(eng, &es);
		struct ts_ring_stat rs;
		ts_server_stat(srv, &rs);
		const char *const *skipped = NULL;
		size_t n_skipped = ts_engine_skipped(eng, &skipped);
		ts_status_summary(status, &es, &rs, skipped, n_skipped, stderr);
	}
	goto out;
fail:
	ts_cli_error("run", "%s", err.msg[0] ? err.msg : ts_error_name(rc));
	exit_status = TS_EXIT_INVALID;
out:
	ts_server_destroy(srv);
	ts_engine_destroy(eng);
	ts_ring_destroy(ring);
	ts_status_destroy(status);
	if (json)
		fclose(json);
	ts_plan_destroy(plan);
	return exit_status;
}
