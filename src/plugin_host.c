/*
 * plugin_host.c - tsrun-plugin-host, the child process that runs one
 * plugin operator for tsrun (runtime/plugin.c starts it; see plugin.h
 * for the protocol). Not meant to be run by hand.
 *
 *   tsrun-plugin-host PLUGIN.so PARENT_PID [NAME=VALUE ...]
 *   descriptor 3: a SOCK_SEQPACKET socket to tsrun
 *   descriptor 4: the pixel memfd
 *
 * It dies with the tsrun thread that started it (PR_SET_PDEATHSIG),
 * loads the plugin, says hello (or why it cannot), then answers one
 * request per image until the socket closes. A plugin that crashes takes
 * only this process down; tsrun sees the socket close and reaps it.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugin.h"
#include "tsrun_plugin.h"

typedef int (*process_fn)(const struct tsrun_plugin_image *,
			  struct tsrun_plugin_image *,
			  const struct tsrun_plugin_param *, int);
typedef int (*abi_fn)(void);

/* In a sanitizer build, a plugin's crash must stay a crash (the signal
 * tsrun reports), not a sanitizer report that ends in abort(). */
const char *__asan_default_options(void);
__attribute__((visibility("default"), used))
const char *__asan_default_options(void)
{
	return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:"
	       "handle_abort=0:detect_leaks=0";
}

/* One message to tsrun: the hello, or a reply. */
static void say(int status, const char *what, const char *detail)
{
	struct ts_plugin_msg m = {.magic = TS_PLUGIN_MAGIC, .status = status};
	if (what)
		snprintf(m.msg, sizeof(m.msg), "%s%s", what, detail ? detail : "");
	send(TS_PLUGIN_FD_SOCK, &m, sizeof(m), MSG_NOSIGNAL);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != (pid_t)atol(argv[2]))
		_exit(1); /* tsrun went away before the line above */

	int n_params = argc - 3;
	struct tsrun_plugin_param *params = calloc((size_t)n_params + 1, sizeof(*params));
	if (!params) {
		say(-1, "out of memory", NULL);
		_exit(1);
	}
	for (int i = 0; i < n_params; i++) {
		char *eq = strchr(argv[3 + i], '=');
		if (!eq)
			_exit(2);
		*eq = '\0';
		params[i].name = argv[3 + i];
		params[i].value = eq + 1;
	}

	void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		say(-1, "cannot load: ", dlerror());
		_exit(1);
	}
	process_fn process = (process_fn)(uintptr_t)dlsym(so, "tsrun_plugin_process");
	if (!process) {
		say(-1, "missing symbol tsrun_plugin_process", NULL);
		_exit(1);
	}
	abi_fn abi = (abi_fn)(uintptr_t)dlsym(so, "tsrun_plugin_abi");
	if (abi && abi() != TSRUN_PLUGIN_ABI) {
		char v[64];
		snprintf(v, sizeof(v), "%d, tsrun speaks %d", abi(), TSRUN_PLUGIN_ABI);
		say(-1, "built for plugin ABI ", v);
		_exit(1);
	}
	say(0, NULL, NULL);

	uint8_t *map = NULL;
	size_t map_bytes = 0;
	for (;;) {
		struct ts_plugin_req req;
		ssize_t n = recv(TS_PLUGIN_FD_SOCK, &req, sizeof(req), 0);
		if (n == 0)
			_exit(0); /* tsrun closed: done */
		if (n != (ssize_t)sizeof(req) || req.magic != TS_PLUGIN_MAGIC)
			_exit(3);
		if (req.map_bytes != map_bytes) {
			if (map)
				munmap(map, map_bytes);
			map = mmap(NULL, req.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
				   TS_PLUGIN_FD_PIXELS, 0);
			if (map == MAP_FAILED)
				_exit(4);
			map_bytes = req.map_bytes;
		}
		size_t bytes = req.stride * (size_t)req.height;
		if (req.out_offset < bytes || req.out_offset + bytes > map_bytes)
			_exit(5);
		struct tsrun_plugin_image in = {
			.width = req.width, .height = req.height, .channels = req.channels,
			.depth = req.depth, .stride = req.stride, .data = map,
		};
		struct tsrun_plugin_image out = in;
		out.data = map + req.out_offset;
		memcpy(out.data, in.data, bytes);
		int st = process(&in, &out, params, n_params);
		say(st, NULL, NULL);
	}
}
