/*
 * cmd_dataset.c - `tsrun make-dataset DIR [--images N] [--png]
 * [--classes K] [--seed S] [--val N] [--threads N] [--quiet]`: the thin
 * CLI over src/dataset.h. It parses, shows progress on a terminal
 * and prints the summary; the library does the work.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "util.h"

#include "cli.h"

static const char usage[] =
	"usage: tsrun make-dataset DIR [--images N] [--png] [--classes K] [--seed S]\n"
	"                          [--val N] [--threads N] [--quiet]\n"
	"Make an ImageNet-like folder DIR/train/<class>/<n>.jpg of random crops of\n"
	"real photos (mate-backgrounds; TSRUN_PHOTOS=DIR to use others).\n"
	"  --images N   train images (default 2000)\n"
	"  --val N      also make DIR/val with N images (default 0)\n"
	"  --classes K  classes, one photo each (default 10)\n"
	"  --seed S     random seed (default 0); same options, same bytes\n"
	"  --png        PNG files instead of JPEG quality 90\n"
	"  --threads N  worker threads (default: the online cores)\n"
	"  --quiet      no progress, summary only\n";

struct progress {
	bool tty;
	int last_pct;
};

static void show_progress(void *ctx, int done, int total)
{
	struct progress *p = ctx;
	int pct = total ? (int)(100LL * done / total) : 100;
	if (pct == p->last_pct)
		return;
	p->last_pct = pct;
	fprintf(stderr, "\rmaking data set: %d/%d images (%d%%)", done, total, pct);
	if (done == total)
		fputc('\n', stderr);
}

/* The numeric options and the ranges ts_dataset_make accepts. */
static const struct num_opt {
	const char *name;
	uint64_t min, max;
} num_opts[] = {
	{ "--images", 1, 10000000 },
	{ "--classes", 1, 1000 },
	{ "--seed", 0, UINT64_MAX },
	{ "--val", 0, 10000000 },
	{ "--threads", 0, 4096 },
};

static const struct num_opt *find_num_opt(const char *name)
{
	for (size_t i = 0; i < sizeof(num_opts) / sizeof(num_opts[0]); i++)
		if (!strcmp(num_opts[i].name, name))
			return &num_opts[i];
	return NULL;
}

/*
 * An option's whole-number value in its range, into *out. On a bad one,
 * say whether it is no number at all ("lots") or one out of range ("-5",
 * "0") and return false: both are usage errors.
 */
static bool parse_num(const struct num_opt *o, const char *s, uint64_t *out)
{
	const char *digits = s && (*s == '-' || *s == '+') ? s + 1 : s;
	char *end;
	bool neg = s && *s == '-';

	if (!digits || *digits < '0' || *digits > '9') {
		ts_cli_error("make-dataset", "%s needs a number, got '%s'", o->name,
			     s ? s : "nothing");
		return false;
	}
	errno = 0;
	unsigned long long v = strtoull(digits, &end, 10);
	if (*end) {
		ts_cli_error("make-dataset", "%s needs a number, got '%s'", o->name, s);
		return false;
	}
	if (errno || (neg && v) || v < o->min || v > o->max) {
		if (o->min == 1)
			ts_cli_error("make-dataset", "%s must be a positive number (at most %" PRIu64
				     "), got '%s'", o->name, o->max, s);
		else
			ts_cli_error("make-dataset", "%s must be a number from 0 to %" PRIu64
				     ", got '%s'", o->name, o->max, s);
		return false;
	}
	*out = v;
	return true;
}

int ts_cmd_make_dataset(int argc, char **argv)
{
	struct ts_dataset_opts o;
	struct ts_dataset_result res;
	struct ts_error err = {0};
	struct progress prog = {.tty = isatty(STDERR_FILENO), .last_pct = -1};
	bool quiet = false;

	ts_dataset_defaults(&o);
	/* argv[0] is the subcommand's name. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
		uint64_t v;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return TS_EXIT_OK;
		}
		if (!strcmp(a, "--png")) {
			o.png = true;
			continue;
		}
		if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			quiet = true;
			continue;
		}
		if (a[0] != '-' || !a[1]) {
			if (o.dir) {
				ts_cli_error("make-dataset", "one DIR only (got '%s' and '%s')", o.dir, a);
				return TS_EXIT_USAGE;
			}
			o.dir = a;
			continue;
		}
		/* --opt N or --opt=N */
		char name[32];
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		if (nl >= sizeof(name))
			nl = sizeof(name) - 1;
		memcpy(name, a, nl);
		name[nl] = '\0';
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		const struct num_opt *no = find_num_opt(name);
		if (!no) {
			ts_cli_error("make-dataset", "unknown option '%s'", a);
			fputs(usage, stderr);
			return TS_EXIT_USAGE;
		}
		if (!parse_num(no, val, &v))
			return TS_EXIT_USAGE;
		if (!strcmp(name, "--images"))
			o.images = (int)v;
		else if (!strcmp(name, "--classes"))
			o.classes = (int)v;
		else if (!strcmp(name, "--seed"))
			o.seed = v;
		else if (!strcmp(name, "--val"))
			o.val_images = (int)v;
		else
			o.threads = (int)v;
	}
	if (!o.dir) {
		ts_cli_error("make-dataset", "no DIR given");
		fputs(usage, stderr);
		return TS_EXIT_USAGE;
	}
	if (!quiet && prog.tty) {
		o.progress = show_progress;
		o.progress_ctx = &prog;
	}

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = ts_dataset_make(&o, &res, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc < 0) {
		if (prog.last_pct >= 0 && prog.last_pct < 100)
			fputc('\n', stderr);
		ts_cli_error("make-dataset", "error: %s", err.msg[0] ? err.msg : ts_error_name(rc));
		/* options that do not fit together (--images below --classes)
		 * are usage errors like any other bad option */
		return rc == TS_E_ARG ? TS_EXIT_USAGE : TS_EXIT_INVALID;
	}
	const char *fmt = o.png ? "png" : "jpg";
	if (res.reused) {
		printf("data set already present: %s (%d train + %d val images, %d classes, %s)\n",
		       o.dir, res.images, res.val_images, res.classes, fmt);
		return 0;
	}
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("data set made: %s: %d train + %d val images, %d classes, %s, "
	       "mean %.0fx%.0f px, %.1f MiB, %.1f s (photos: %s)\n",
	       o.dir, res.images, res.val_images, res.classes, fmt,
	       res.mean_width, res.mean_height, (double)res.bytes / (1024.0 * 1024.0),
	       secs, res.photos);
	return 0;
}
