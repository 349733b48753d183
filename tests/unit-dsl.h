/*
 * unit-dsl.h - for the operator families' Check suites (test-color.c,
 * test-filter.c, test-geometry.c, test-policy.c): compile a pipeline
 * source named t.ts, its diagnostics in *d (ts_diags_fini by the caller).
 */
#ifndef TS_TEST_UNIT_DSL_H
#define TS_TEST_UNIT_DSL_H

#include <string.h>

#include "diag.h"
#include "dsl.h"
#include "plan.h"

static inline struct ts_plan *compile(const char *src, struct ts_diags *d, int *rc)
{
	struct ts_plan *plan = NULL;
	ts_diags_init(d, "t.ts", src, strlen(src));
	*rc = ts_dsl_compile(src, strlen(src), "t.ts", NULL, d, &plan);
	return plan;
}

#endif
