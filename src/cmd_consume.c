/*
 * cmd_consume.c - `tsrun consume SOCKET`: a built-in trainer. Reads
 * batches through libtsclient as fast as it can and prints images/s and
 * the digest of the samples it saw (the same digest `tsrun bench` prints
 * for the same stream).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digest.h"
#include "tsclient.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: tsrun consume SOCKET [--batch N] [--max-batches N]\n"
		   "                     [--join now|next_epoch] [--drop-last] [--delay-ms N]\n"
		   "Connect to the tsrun serving SOCKET, read batches as a trainer would and\n"
		   "print images/s and the digest of the samples read.\n"
		   "  --batch N              samples per batch (default: the pipeline's batch(n))\n"
		   "  --max-batches N        stop after N batches (default: the end of the stream)\n"
		   "  --join now|next_epoch  start at the next batch, or at a whole epoch (default)\n"
		   "  --drop-last            drop each epoch's short last batch\n"
		   "  --delay-ms N           sleep N ms after each batch, like a slow trainer\n");
}

int ts_cmd_consume(int argc, char **argv)
{
	static const struct option opts[] = {
		{"batch", required_argument, NULL, 'b'},
		{"max-batches", required_argument, NULL, 'n'},
		{"join", required_argument, NULL, 'J'},
		{"drop-last", no_argument, NULL, 'd'},
		{"delay-ms", required_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct ts_client_opts co;
	ts_client_opts_init(&co);
	long batch = 0, max_batches = -1, delay_ms = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:n:J:dD:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (!ts_cli_opt_long("consume", "--batch", optarg, 1, &batch))
				return TS_EXIT_USAGE;
			break;
		case 'n':
			if (!ts_cli_opt_long("consume", "--max-batches", optarg, 1, &max_batches))
				return TS_EXIT_USAGE;
			break;
		case 'J':
			if (strcmp(optarg, "now") == 0)
				co.join = TS_CLIENT_JOIN_NOW;
			else if (strcmp(optarg, "next_epoch") == 0 || strcmp(optarg, "next-epoch") == 0)
				co.join = TS_CLIENT_JOIN_NEXT_EPOCH;
			else {
				ts_cli_error("consume", "--join wants 'now' or 'next_epoch', got '%s'", optarg);
				return TS_EXIT_USAGE;
			}
			break;
		case 'd': co.drop_last = 1; break;
		case 'D':
			if (!ts_cli_opt_long("consume", "--delay-ms", optarg, 0, &delay_ms))
				return TS_EXIT_USAGE;
			break;
		case 'h': usage(stdout); return TS_EXIT_OK;
		default:
			ts_cli_bad_option("consume", c, argv, opts);
			usage(stderr);
			return TS_EXIT_USAGE;
		}
	}
	if (optind >= argc || optind < argc - 1) {
		if (optind >= argc)
			ts_cli_error("consume", "no SOCKET given");
		else
			ts_cli_error("consume", "unexpected argument '%s'", argv[optind + 1]);
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	const char *path = argv[optind];
	co.batch_size = (uint32_t)batch;
	struct ts_client *cl = NULL;
	struct ts_error err = {0};
	int rc = ts_client_connect(path, &co, &cl, &err);
	if (rc) {
		ts_cli_error("consume", "%s", err.msg[0] ? err.msg : ts_client_strerror(rc));
		return TS_EXIT_INVALID;
	}
	struct ts_client_info info;
	ts_client_info(cl, &info);
	/* views(...): each view as the client lays it out, and the sum of
	 * its bytes over every sample read (tests compare it with a Python
	 * trainer's views of the same stream) */
	struct ts_client_view views[32];
	uint64_t view_sum[32] = {0};
	int n_views = ts_client_views(cl);
	if (n_views > 32)
		n_views = 32;
	for (int v = 0; v < n_views; v++)
		if (ts_client_view_info(cl, v, &views[v], &err) < 0) {
			ts_cli_error("consume", "%s", err.msg);
			ts_client_close(cl);
			return TS_EXIT_INVALID;
		}
	struct ts_digest dg;
	ts_digest_init(&dg);
	uint64_t images = 0, batches = 0, first_seq = UINT64_MAX;
	uint32_t first_epoch = 0, last_epoch = 0;
	double t0 = ts_clock_now();
	struct ts_batch b;
	while (max_batches < 0 || batches < (uint64_t)max_batches) {
		rc = ts_client_next(cl, &b, &err);
		if (rc)
			break;
		if (first_seq == UINT64_MAX) {
			first_seq = b.seq;
			first_epoch = b.epoch;
		}
		last_epoch = b.epoch;
		const unsigned char *d = b.data;
		for (size_t i = 0; i < b.n; i++)
			ts_digest_sample(&dg, d + i * b.sample_stride, b.sample_bytes, b.labels[i]);
		for (int v = 0; v < n_views; v++)
			for (size_t i = 0; i < b.n; i++) {
				const unsigned char *p = d + i * b.sample_stride + views[v].offset;
				for (size_t k = 0; k < views[v].bytes; k++)
					view_sum[v] += p[k];
			}
		images += b.n;
		batches++;
		if (delay_ms)
			usleep((useconds_t)delay_ms * 1000);
	}
	double wall = ts_clock_now() - t0;
	struct ts_client_stats cs;
	ts_client_stats(cl, &cs);
	int status = TS_EXIT_OK;
	if (rc && rc != TS_E_EOS) {
		ts_cli_error("consume", "%s", err.msg[0] ? err.msg : ts_client_strerror(rc));
		status = TS_EXIT_INVALID;
	}
	ts_client_close(cl);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	char hex[17];
	ts_digest_hex(&dg, hex);
	printf("socket: %s\n", path);
	printf("batch: %u\n", info.batch_size);
	printf("images: %" PRIu64 "\n", images);
	printf("batches: %" PRIu64 "\n", batches);
	printf("waited: %.3f of %.1f s\n", cs.wait_fraction, cs.connected_s);
	printf("first: seq %" PRIu64 " epoch %u\n", first_seq == UINT64_MAX ? 0 : first_seq, first_epoch);
	printf("last epoch: %u\n", last_epoch);
	printf("seconds: %.3f\n", wall);
	printf("images/s: %.1f\n", wall > 0 ? (double)images / wall : 0.0);
	printf("cpu: %.2f s\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
				 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
	printf("peak_rss: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
	printf("digest: %s\n", hex);
	if (n_views)
		printf("views: %d\n", n_views);
	static const char *const dtypes[] = {"uint8", "uint16", "float16", "float32"};
	for (int v = 0; v < n_views; v++) {
		const struct ts_client_view *w = &views[v];
		bool nchw = w->layout == TS_LAYOUT_NCHW;
		printf("view %d: %dx%dx%d %s %s, group %d, offset %zu, bytes %zu, byte sum %" PRIu64
		       "\n", v, nchw ? w->channels : w->height, nchw ? w->height : w->width,
		       nchw ? w->width : w->channels, dtypes[w->dtype & 3], nchw ? "nchw" : "nhwc",
		       w->group, w->offset, w->bytes, view_sum[v]);
	}
	return status;
}
