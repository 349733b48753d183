/* cmd_graph.c - tsrun graph FILE: the plan as text or Graphviz. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lower.h"
#include "memory.h"
#include "share.h"

static const char usage[] =
	"usage: tsrun graph [--pipeline NAME] [--dot] [--cores N] FILE\n"
	"Print the plan of a pipeline: each stage with its parameters, what was\n"
	"fused, the shape after every stage, the sample size and the memory\n"
	"estimate.\n"
	"  --pipeline NAME  the pipeline to show (default: the served or first one)\n"
	"  --dot            print Graphviz dot instead of text\n"
	"  --cores N        estimate memory for a machine with N cores (when\n"
	"                   threads is auto; default: this machine's)\n";

int ts_cmd_graph(int argc, char **argv)
{
	const char *pipeline = NULL, *file = NULL;
	bool dot = false;
	int cores = 0, rc;
	struct ts_plan *plan = NULL;
	char *text;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return TS_EXIT_OK;
		} else if (strcmp(a, "--dot") == 0) {
			dot = true;
		} else if (strcmp(a, "--pipeline") == 0 && i + 1 < argc) {
			pipeline = argv[++i];
		} else if (strncmp(a, "--pipeline=", 11) == 0) {
			pipeline = a + 11;
		} else if (strcmp(a, "--cores") == 0 && i + 1 < argc) {
			char *end;
			long v;
			errno = 0;
			v = strtol(argv[++i], &end, 10);
			if (errno || *end || v < 1 || v > 4096) {
				ts_cli_error("graph", "--cores expects a number from 1 to 4096, got '%s'",
					     argv[i]);
				return TS_EXIT_USAGE;
			}
			cores = (int)v;
		} else if (a[0] == '-' && a[1]) {
			ts_cli_error("graph", "unknown option '%s'", a);
			fputs(usage, stderr);
			return TS_EXIT_USAGE;
		} else if (file) {
			ts_cli_error("graph", "one FILE only (got '%s' and '%s')", file, a);
			return TS_EXIT_USAGE;
		} else {
			file = a;
		}
	}
	if (!file) {
		ts_cli_error("graph", "no FILE given");
		fputs(usage, stderr);
		return TS_EXIT_USAGE;
	}
	rc = ts_cli_compile_sources("graph", file, pipeline, 0, TS_CLI_SOURCES_PROBE, &plan);
	if (rc != TS_EXIT_OK)
		return rc;
	if (cores)
		ts_plan_estimate(plan, cores);
	if (plan->source.shard_count == -1) {
		/* Show the node this process would be, as tsrun run takes it. */
		struct ts_error e = {0};
		struct ts_source *s = &plan->source;
		static char from[96];
		const char *vars = NULL;
		if (ts_share_node_resolve(-1, -1, &s->shard_index, &s->shard_count,
					  &vars, &e) < 0) {
			ts_cli_error("graph", "%s", e.msg);
			ts_plan_destroy(plan);
			return TS_EXIT_INVALID;
		}
		if (vars)
			snprintf(from, sizeof(from), "from %s", vars);
		else
			snprintf(from, sizeof(from), "one node: GROUP_RANK and SLURM_NODEID are not set");
		s->shard_env = from;
	}
	text = ts_plan_format(plan, dot);
	ts_plan_destroy(plan);
	if (!text) {
		ts_cli_error("graph", "out of memory");
		return TS_EXIT_INVALID;
	}
	fputs(text, stdout);
	free(text);
	return TS_EXIT_OK;
}
