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
 *   mode = hog     allocate 20 GiB and touch it (a failed malloc is not
 *                  checked: the plugin dies of SIGSEGV at its limit)
 *   mode = garbage write 5 bytes of garbage to tsrun's socket (fd 3)
 *   mode = spawn   start a process that calls setsid and sleeps (a
 *                  daemon tsrun must still clean up), then go on
 *   mode = escape  start a process that calls setsid, forks one that sleeps,
 *                  then SIGKILLs the guard (its parent's parent: the
 *                  worker's parent) and sleeps: an attempt to outlive tsrun
 *   mode = attack  try to ftruncate, grow, fallocate, reseal and write
 *                  past the end of the pixel memfd (fd 4), and mprotect
 *                  its mapping; return -9 if any of the memfd attacks
 *                  worked, else go on
 *
 * Every other sample it inverts (x -> max - x), so a test can also see
 * that the plugin's output reaches the ring.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
		} else if (strcmp(mode, "hog") == 0) {
			/* volatile: so that no compiler elides the pair */
			static char *volatile hog;
			size_t n = (size_t)20 << 30;
			hog = malloc(n);
			memset(hog, 1, n);
			free(hog);
		} else if (strcmp(mode, "garbage") == 0) {
			if (write(3, "junk!", 5) != 5)
				return -8;
			for (;;)
				pause();
		} else if (strcmp(mode, "spawn") == 0) {
			if (fork() == 0) {
				setsid();
				if (fork() == 0)
					for (;;)
						pause();
				_exit(0);
			}
			goto keep;
		} else if (strcmp(mode, "escape") == 0) {
			pid_t guard = getppid();
			if (fork() == 0) {
				setsid();
				if (fork() == 0)
					for (;;)
						pause();
				kill(guard, SIGKILL);
				for (;;)
					pause();
			}
			for (;;)
				pause();
		} else if (strcmp(mode, "attack") == 0) {
			struct stat st;
			int worked = 0;
			if (fstat(4, &st) < 0)
				return -10;
			worked += ftruncate(4, 0) == 0;
			worked += ftruncate(4, st.st_size * 2) == 0;
			worked += fallocate(4, 0, 0, st.st_size * 2) == 0;
			worked += fcntl(4, F_ADD_SEALS, F_SEAL_WRITE) == 0;
			worked += fcntl(4, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0;
			worked += pwrite(4, "x", 1, st.st_size) == 1;
			/* our own mapping only: tsrun's is not ours to change */
			mprotect(in->data, 4096, PROT_NONE);
			mprotect(in->data, 4096, PROT_READ | PROT_WRITE);
			if (worked)
				return -9;
			goto keep;
		}
		return -7;
	}
keep:;
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
