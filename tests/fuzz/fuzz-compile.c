/* fuzz-compile.c - libFuzzer target: any bytes through the whole compiler
 * (parse, check, lower, format). Nothing may crash, hang or leak; errors
 * are fine. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dsl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *src = (const char *)data;
	struct ts_plan *plan = NULL;
	struct ts_diags d;
	char *text;

	ts_diags_init(&d, "fuzz.ts", src, size);
	if (ts_dsl_compile(src, size, "fuzz.ts", NULL, &d, &plan) == 0 && plan) {
		free(ts_plan_format(plan, false));
		free(ts_plan_format(plan, true));
		ts_plan_destroy(plan);
	}
	text = ts_diags_render(&d);
	free(text);
	ts_diags_fini(&d);
	return 0;
}
