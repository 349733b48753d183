/*
 * headers.c - the public headers, as installed (tsrun/…), compile alone
 * and together in strict ISO C99 with -pedantic-errors: nothing of ours
 * (GNU extensions, internal headers) leaks into an embedder's build.
 */
#include "types.h"
#include "tsrun.h"
#include "tsclient.h"
#include "tsclient_cuda.h"
#include "tsrun_plugin.h"
#include "tsrun_producer.h"

int main(void)
{
	struct ts_error err = {0};
	return err.code;
}
