/*
 * cmd_preview.c - `tsrun preview FILE -o grid.png`: a picture of a few
 * samples of a pipeline, made in this process (runtime/preview.h), and a
 * listing of what each cell shows.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "preview.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: tsrun preview FILE -o PICTURE.png [--pipeline NAME] [--samples N]\n"
		   "                    [--epoch E | --start EPOCH:INDEX] [--seed S]\n"
		   "                    [--stages] [--no-labels] [--threads N]\n"
		   "Run a pipeline in this process and write a PNG grid of its samples,\n"
		   "as a trainer would read them, normalize undone.\n"
		   "  -o, --output FILE    the PNG to write (required)\n"
		   "  --pipeline NAME      the pipeline (default: the served or first one)\n"
		   "  --samples N          samples to show (default 16; with --stages 4)\n"
		   "  --epoch E            start at index 0 of epoch E (default 0)\n"
		   "  --start EPOCH:INDEX  start at this stream position\n"
		   "  --seed S             use seed S instead of the pipeline's shuffle seed\n"
		   "  --stages             one row per sample, one column per stage of the plan\n"
		   "  --no-labels          pixels only: no caption, no text under the cells\n"
		   "  --threads N          worker threads (the picture is the same for any)\n");
}

static bool parse_seed(const char *s, uint64_t *out)
{
	char *end;
	if (!s[0] || s[0] == '-')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static void list_cells(const struct ts_preview *pv)
{
	const struct ts_preview_cell *cells;
	const char *const *names;
	size_t n = ts_preview_cells(pv, &cells);
	size_t n_stages = ts_preview_stages(pv, &names);
	for (size_t i = 0; i < n; i++) {
		const struct ts_preview_cell *c = &cells[i];
		printf("cell %zu at %d,%d %dx%d", i, c->x, c->y, c->width, c->height);
		if (c->stage >= 0 && (size_t)c->stage < n_stages)
			printf(" stage %d %s (made %dx%d)", c->stage, names[c->stage],
			       c->src_width, c->src_height);
		printf(": %" PRIu64 ":%" PRIu64 " label %" PRId32, c->epoch, c->index, c->label);
		if (c->view >= 0)
			printf(" view %d", c->view);
		if (c->class_name)
			printf(" class %s", c->class_name);
		if (c->path)
			printf(" file %s", c->path);
		printf("\n");
	}
}

int ts_cmd_preview(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"pipeline", required_argument, NULL, 'p'},
		{"samples", required_argument, NULL, 'n'},
		{"epoch", required_argument, NULL, 'e'},
		{"start", required_argument, NULL, 's'},
		{"seed", required_argument, NULL, 'S'},
		{"stages", no_argument, NULL, 'g'},
		{"no-labels", no_argument, NULL, 'L'},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *pipeline = NULL, *output = NULL;
	long samples = 0, epoch = -1, threads = 0;
	unsigned long long start_epoch = 0, start_index = 0;
	bool have_start = false, have_seed = false;
	uint64_t seed = 0;
	struct ts_preview_opts po = {.labels = true};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:p:n:e:s:S:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'p': pipeline = optarg; break;
		case 'n':
			if (!ts_cli_opt_long("preview", "--samples", optarg, 1, &samples))
				return TS_EXIT_USAGE;
			if (samples > TS_PREVIEW_MAX_SAMPLES) {
				ts_cli_error("preview", "--samples %ld is more than one picture "
					     "shows; ask for at most %d", samples,
					     TS_PREVIEW_MAX_SAMPLES);
				return TS_EXIT_USAGE;
			}
			break;
		case 'e':
			if (!ts_cli_opt_long("preview", "--epoch", optarg, 0, &epoch))
				return TS_EXIT_USAGE;
			break;
		case 's':
			if (!ts_cli_opt_start("preview", optarg, &start_epoch, &start_index))
				return TS_EXIT_USAGE;
			have_start = true;
			break;
		case 'S':
			if (!parse_seed(optarg, &seed)) {
				ts_cli_error("preview", "--seed wants a whole number >= 0, got '%s'",
					     optarg);
				return TS_EXIT_USAGE;
			}
			have_seed = true;
			break;
		case 'g': po.stages = true; break;
		case 'L': po.labels = false; break;
		case 't':
			if (!ts_cli_opt_long("preview", "--threads", optarg, 1, &threads))
				return TS_EXIT_USAGE;
			break;
		case 'h': usage(stdout); return TS_EXIT_OK;
		default:
			ts_cli_bad_option("preview", c, argv, opts);
			usage(stderr);
			return TS_EXIT_USAGE;
		}
	}
	if (optind >= argc || optind < argc - 1) {
		if (optind >= argc)
			ts_cli_error("preview", "no FILE given");
		else
			ts_cli_error("preview", "unexpected argument '%s'", argv[optind + 1]);
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	if (!output) {
		ts_cli_error("preview", "no picture to write: give -o FILE.png");
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	if (have_start && epoch >= 0) {
		ts_cli_error("preview", "--epoch and --start both say where to start; give one");
		return TS_EXIT_USAGE;
	}
	if (epoch >= 0) {
		start_epoch = (unsigned long long)epoch;
		start_index = 0;
	}
	const char *file = argv[optind];
	struct ts_plan *plan = NULL;
	int st = ts_cli_compile("preview", file, pipeline, &plan);
	if (st != TS_EXIT_OK)
		return st;
	if (have_seed)
		plan->source.seed = seed;
	po.start_epoch = start_epoch;
	po.start_index = start_index;
	po.samples = samples ? (int)samples : po.stages ? 4 : 16;
	po.threads = (int)threads;
	struct ts_preview *pv = NULL;
	struct ts_error err = {0};
	int rc = ts_preview_make(plan, &po, &pv, &err);
	if (rc == 0)
		rc = ts_preview_write_png(pv, output, &err);
	if (rc) {
		ts_cli_error("preview", "%s", err.msg);
		ts_preview_destroy(pv);
		ts_plan_destroy(plan);
		return err.code == TS_E_ARG ? TS_EXIT_USAGE : TS_EXIT_INVALID;
	}
	const struct ts_image *img = ts_preview_image(pv);
	const struct ts_preview_cell *cells;
	size_t n = ts_preview_cells(pv, &cells);
	printf("%s: %dx%d pixels, %zu cells\n", output, img->width, img->height, n);
	fputs(ts_preview_caption(pv), stdout);
	list_cells(pv);
	ts_preview_destroy(pv);
	ts_plan_destroy(plan);
	return TS_EXIT_OK;
}
