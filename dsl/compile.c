/*
 * compile.c - ts_dsl_compile: parse and check a source text in one call,
 * relative paths resolved against the file's folder.
 */
#include "dsl.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

TS_EXPORT int ts_dsl_compile(const char *src, size_t len, const char *file,
			     const char *pipeline, struct ts_diags *d,
			     struct ts_plan **out)
{
	struct ts_ast_program prog = {0};
	char *base = NULL;
	const char *slash = file ? strrchr(file, '/') : NULL;
	int rc;

	if (slash) {
		base = strndup(file, slash == file ? 1 : (size_t)(slash - file));
		if (!base)
			return TS_E_NOMEM;
	}
	rc = ts_dsl_parse(src, len, d, &prog);
	if (rc == 0)
		rc = ts_dsl_check(&prog, pipeline, file, base ? base : ".", d, out);
	ts_ast_program_destroy(&prog);
	free(base);
	return rc;
}
