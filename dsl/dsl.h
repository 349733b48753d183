/*
 * dsl.h - the pipeline compiler's entry points: text -> AST -> checked,
 * lowered plan. Pure functions of their inputs; safe to call from any
 * thread on distinct arguments.
 */
#ifndef TS_DSL_H
#define TS_DSL_H

#include <stdbool.h>
#include <stddef.h>
#include "ast.h"
#include "diag.h"
#include "plan.h"

/* Parse src into prog (zeroed by the caller). Reports every syntax error
 * into d (the parser recovers per statement). Returns 0, TS_E_SYNTAX when
 * d holds errors, or TS_E_NOMEM. prog holds what parsed even on error;
 * the caller destroys it with ts_ast_program_destroy. */
int ts_dsl_parse(const char *src, size_t len, struct ts_diags *d,
		 struct ts_ast_program *prog);

/* Check the whole program (every pipeline, let and serve) and lower one
 * pipeline: `pipeline`, or when NULL the one named by the first serve
 * block, or else the only pipeline. base_dir resolves relative paths.
 * Returns 0 with *out set, or TS_E_CHECK with every error in d. */
int ts_dsl_check(const struct ts_ast_program *prog, const char *pipeline,
		 const char *file, const char *base_dir, struct ts_diags *d,
		 struct ts_plan **out);

/* Parse and check in one call. */
int ts_dsl_compile(const char *src, size_t len, const char *file,
		   const char *pipeline, struct ts_diags *d,
		   struct ts_plan **out);

/* The plan as text (`tsrun graph`) or as Graphviz dot. Malloc'd. */
char *ts_plan_format(const struct ts_plan *plan, bool dot);

#endif
