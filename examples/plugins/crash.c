/*
 * crash.c - a deliberately misbehaving plugin operator, for the tests of
 * plugin isolation (tests/plugins.sh). It fails on the samples whose
 * first pixel is odd (when = odd, the default) or on every sample
 * (when = always), in the way mode says:
 *
 *   mode = segv    write through a wild pointer: SIGSEGV (the default)
 *   mode = abort   abort(): SIGABRT
 *   mode = hang    loop forever (until tsrun's timeout_ms kills it)
 *   mode = error   return -7
 *   mode = exit    exit(3) in the middle of a sample
 *
 * Every other sample it inverts (x -> max - x), so a test can also see
 * that the plugin's output reaches the ring.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrun_plugin.h"

int tsrun_plugin_process(const struct tsrun_plugin_image *in,
			 struct tsrun_plugin_image *out,
			 const struct tsrun_plugin_param *params, int n_params)
{
	const char *mode = "segv", *when = "odd";
	for (int i = 0; i < n_params; i++) {
		if (strcmp(params[i].name, "mode") == 0)
			mode = params[i].value;
		else if (strcmp(params[i].name, "when") == 0)
			when = params[i].value;
	}
	unsigned first = in->depth == 16 ? *(const uint16_t *)in->data
					 : *(const uint8_t *)in->data;
	if (strcmp(when, "always") == 0 || (first & 1)) {
		if (strcmp(mode, "segv") == 0) {
			/* not NULL, so that no sanitizer intercepts it first */
			volatile uintptr_t wild = 16;
			*(volatile int *)wild = 1;
		} else if (strcmp(mode, "abort") == 0) {
			abort();
		} else if (strcmp(mode, "hang") == 0) {
			for (;;)
				pause();
		} else if (strcmp(mode, "exit") == 0) {
			exit(3);
		}
		return -7;
	}
	const uint64_t n = (uint64_t)in->height * in->stride;
	if (in->depth == 16) {
		uint16_t *p = out->data;
		for (uint64_t i = 0; i < n / 2; i++)
			p[i] = (uint16_t)(65535u - p[i]);
	} else {
		uint8_t *p = out->data;
		for (uint64_t i = 0; i < n; i++)
			p[i] = (uint8_t)(255u - p[i]);
	}
	return TSRUN_PLUGIN_KEEP;
}
