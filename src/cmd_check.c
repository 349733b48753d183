/* cmd_check.c - tsrun check FILE...: every error of every file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "registry.h"

static const char usage[] =
	"usage: tsrun check [--pipeline NAME] [--sources] FILE...\n"
	"Check pipeline files; print every error on stderr.\n"
	"Exit status: 0 when every file is valid, 1 when one is not,\n"
	"2 for a usage error or a file that cannot be read.\n"
	"  --pipeline NAME   lower this pipeline (default: the served or first one)\n"
	"  --sources         also open and list its source as tsrun run does: a\n"
	"                    missing folder, list or shard is an error at its path\n"
	"  --list-operators  print the registry's operator names and exit\n"
	"  --list-parameters print every operator's parameters (tab-separated:\n"
	"                    operator, parameter, default, other name) and exit\n";

static void list_operators(void)
{
	for (size_t i = 0; i < ts_registry_count(); i++)
		printf("%s\n", ts_registry_at(i)->name);
}

/* One line per parameter, tab-separated: operator, parameter, its default
 * as the docs write it ("-" when it has none: an optional one unset, or
 * "required"), the other name it is taken by ("-" when none). For tests
 * (tests/torch-names.py) and tools; tsrun(1) describes it. */
static void list_parameters(void)
{
	for (size_t i = 0; i < ts_registry_count(); i++) {
		const struct ts_opdef *d = ts_registry_at(i);
		for (size_t j = 0; j < d->n_params; j++) {
			const struct ts_param *p = &d->params[j];
			printf("%s\t%s\t%s\t%s\n", d->name, p->name,
			       p->required ? "required" : p->def ? p->def : "-",
			       p->alias ? p->alias : "-");
		}
	}
}

int ts_cmd_check(int argc, char **argv)
{
	const char *pipeline = NULL;
	int files = 0, status = TS_EXIT_OK;
	bool opts = true, sources = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (opts && a[0] == '-' && a[1]) {
			if (strcmp(a, "--") == 0) {
				opts = false;
			} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
				fputs(usage, stdout);
				return TS_EXIT_OK;
			} else if (strcmp(a, "--list-operators") == 0) {
				list_operators();
				return TS_EXIT_OK;
			} else if (strcmp(a, "--sources") == 0) {
				sources = true;
			} else if (strcmp(a, "--list-parameters") == 0) {
				list_parameters();
				return TS_EXIT_OK;
			} else if (strcmp(a, "--pipeline") == 0 && i + 1 < argc) {
				pipeline = argv[++i];
			} else if (strncmp(a, "--pipeline=", 11) == 0) {
				pipeline = a + 11;
			} else {
				ts_cli_error("check", "unknown option '%s'", a);
				fputs(usage, stderr);
				return TS_EXIT_USAGE;
			}
			continue;
		}
		files++;
	}
	if (!files) {
		ts_cli_error("check", "no FILE given");
		fputs(usage, stderr);
		return TS_EXIT_USAGE;
	}
	opts = true;
	for (int i = 1; i < argc; i++) {
		struct ts_plan *plan = NULL;
		int rc;
		if (opts && argv[i][0] == '-' && argv[i][1]) {
			if (strcmp(argv[i], "--") == 0)
				opts = false;
			else if (strcmp(argv[i], "--pipeline") == 0)
				i++;
			continue;
		}
		rc = ts_cli_compile_sources("check", argv[i], pipeline, 0,
					    sources ? TS_CLI_SOURCES_OPEN : TS_CLI_SOURCES_NONE,
					    &plan);
		ts_plan_destroy(plan);
		/* the worst status wins: unreadable (2) over invalid (1) */
		if (rc > status)
			status = rc;
	}
	return status;
}
