/*
 * main.c - the tsrun dispatcher: a table of subcommands, --help and
 * --version. Every subcommand lives in its own cmd_*.c file; adding one
 * is a row below plus that file (see cli.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "cli.h"
#include "diag.h"
#include "plugin.h"

#ifndef TS_VERSION
#define TS_VERSION "unknown"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

/* In the order --help lists them. */
static const struct command commands[] = {
	{ "run", ts_cmd_run, "run a pipeline and serve its batches to trainers" },
	{ "check", ts_cmd_check, "check pipeline files and report every error" },
	{ "graph", ts_cmd_graph, "print a pipeline's plan: stages, shapes, memory" },
	{ "bench", ts_cmd_bench, "measure a pipeline's throughput" },
	{ "preview", ts_cmd_preview, "write a PNG grid of a pipeline's samples" },
	{ "consume", ts_cmd_consume, "connect to a running pipeline and read batches" },
	{ "stat", ts_cmd_stat, "show a running pipeline's consumers and rates" },
	{ "reload", ts_cmd_reload, "ask a running pipeline to load a new plan" },
	{ "make-dataset", ts_cmd_make_dataset, "make an ImageNet-like folder of JPEGs" },
};

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].fn && strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* The built-in command closest to a mistyped one ("chek": "check"), or
 * NULL when none is close enough to be the one meant. */
static const char *suggest(const char *word)
{
	const char *names[sizeof(commands) / sizeof(commands[0])];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].fn)
			names[n++] = commands[i].name;
	return ts_diag_suggest(word, names, n);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsrun [--color=auto|always|never] COMMAND [ARGS...]\n"
		"       tsrun FILE.ts [ARGS...]     (same as tsrun run FILE.ts)\n"
		"       tsrun --help | --version\n\n"
		"Shared data loading for deep-learning training.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].fn)
			fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'tsrun COMMAND --help' describes a command; see tsrun(1) and "
		   "tsrun-pipeline(5).\n");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return TS_EXIT_OK;
		}
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			printf("tsrun %s\n", TS_VERSION);
			return TS_EXIT_OK;
		}
		if (strncmp(a, "--color=", 8) == 0) {
			if (ts_cli_set_color(a + 8))
				continue;
			ts_cli_error(NULL, "invalid value '%s' for --color (use auto, always or never)",
				     a + 8);
			return TS_EXIT_USAGE;
		}
		if (strcmp(a, "--color") == 0) {
			ts_cli_error(NULL, "--color needs a value: --color=auto, always or never");
			return TS_EXIT_USAGE;
		}
		if (strcmp(a, "-") == 0)
			break;
		ts_cli_error(NULL, "unknown option '%s'", a);
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	if (i >= argc) {
		usage(stderr);
		return TS_EXIT_USAGE;
	}
	/* Whatever a plugin starts and leaves behind, even after killing
	 * its guard, comes to us and is killed when its host ends: nothing
	 * a plugin starts outlives the pipeline (tsrun-pipeline(5)). */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0)
		ts_plugin_reap_orphans(true);
	cmd = find(argv[i]);
	if (cmd)
		return cmd->fn(argc - i, argv + i);
	if (ends_with(argv[i], ".ts")) {
		/* tsrun FILE.ts ... is tsrun run FILE.ts ...: argv[i - 1]
		 * becomes the subcommand's argv[0]. */
		cmd = find("run");
		if (!cmd) {
			ts_cli_error(NULL, "'run' is not built into this tsrun; try 'tsrun check %s'",
				     argv[i]);
			return TS_EXIT_USAGE;
		}
		argv[i - 1] = (char *)"run";
		return cmd->fn(argc - i + 1, argv + i - 1);
	}
	ts_cli_error(NULL, "unknown command '%s'", argv[i]);
	const char *hint = suggest(argv[i]);
	if (hint)
		fprintf(stderr, "hint: did you mean '%s'?\n", hint);
	else
		usage(stderr);
	return TS_EXIT_USAGE;
}
