/*
 * tool-dsl.h - for the numeric tools the torch-*.py tests drive
 * (augmix-tool, color-tool, policy-tool): compile a pipeline source, named
 * name in its diagnostics, which go to stderr when it does not compile.
 */
#ifndef TS_TEST_TOOL_DSL_H
#define TS_TEST_TOOL_DSL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "dsl.h"
#include "plan.h"

/* The plan (ts_plan_destroy by the caller), or NULL, reported. */
static inline struct ts_plan *tool_compile(const char *name, const char *src)
{
	struct ts_diags d;
	struct ts_plan *plan = NULL;
	ts_diags_init(&d, name, src, strlen(src));
	if (ts_dsl_compile(src, strlen(src), name, NULL, &d, &plan)) {
		char *text = ts_diags_render(&d);
		fprintf(stderr, "%s", text ? text : "compile failed\n");
		free(text);
		plan = NULL;
	}
	ts_diags_fini(&d);
	return plan;
}

#endif
