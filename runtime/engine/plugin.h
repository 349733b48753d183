/*
 * plugin.h - plugin operators run in isolated host processes.
 *
 * A plugin (src/tsrun_plugin.h) is user code; tsrun never loads it into
 * its own address space. Each engine worker owns one ts_plugin_host per
 * plugin op: a child process, the helper executable tsrun-plugin-host
 * started with posix_spawn (safe in a multithreaded process, unlike a
 * fork without exec), that dlopens the .so and serves one request at a
 * time over a SOCK_SEQPACKET socketpair. Pixels travel through a shared
 * memfd the host grows as needed (input at 0, output after it), so a
 * request is one small message each way.
 *
 * The host waits for each reply with poll() and the op's timeout_ms. A
 * child that overruns is stopped (SIGTERM to its guard, which SIGKILLs
 * the plugin and everything it started; see src/plugin_host.c) and
 * reaped; one that dies (the socket reads EOF) is reaped and its signal
 * named; one that sends anything but a reply is stopped and named as
 * breaking the protocol. The plugin's address space is limited to the
 * op's memory (RLIMIT_AS), and a death just after a failed allocation is
 * reported as running out of it. Either way the sample fails
 * with TS_E_PLUGIN and a message ("plugin 'crash.so' crashed with
 * SIGSEGV"), and the next request starts a fresh child. Children are
 * started lazily by the thread that uses them and set PR_SET_PDEATHSIG,
 * which fires when that thread exits, so they never outlive their worker;
 * every descriptor is O_CLOEXEC and every child is reaped (no zombies).
 *
 * Where the helper is: $TSRUN_PLUGIN_HOST, else tsrun-plugin-host next to
 * the running executable (/proc/self/exe; the build tree and a normal
 * install), else the installed TS_PLUGIN_HOST_DEFAULT (libexecdir).
 *
 * A host is used by one thread at a time.
 */
#ifndef TS_PLUGIN_H
#define TS_PLUGIN_H

#include <stdint.h>
#include "error.h"
#include "image.h"
#include "plan.h"

/* The wire format between ts_plugin_host and tsrun-plugin-host. The
 * helper gets the socket as descriptor 3 and the pixel memfd as 4, and
 * argv: helper, plugin path, parent pid, the memory limit in bytes (0:
 * none), then "name=value" parameters. The memfd is sealed against
 * shrinking, growing and further seals (F_SEAL_SHRINK | F_SEAL_GROW |
 * F_SEAL_SEAL), so nothing the plugin does to it can make tsrun's
 * mapping fault; a bigger image gets a new memfd and a new child. */
#define TS_PLUGIN_MAGIC 0x74737031u /* "tsp1" */
#define TS_PLUGIN_FD_SOCK 3
#define TS_PLUGIN_FD_PIXELS 4
#define TS_PLUGIN_MSG 200

/* helper -> tsrun, once after loading; and after every request. status:
 * hello 0 or -1 (msg says why); reply 0 keep, 1 drop, < 0 the plugin's
 * error; TS_PLUGIN_ST_NOMEM: the plugin is dying of a signal just after
 * an allocation failed (its memory limit), the socket closes next. */
#define TS_PLUGIN_ST_NOMEM INT32_MIN
struct ts_plugin_msg {
	uint32_t magic;
	int32_t status;
	char msg[TS_PLUGIN_MSG];
};

/* tsrun -> helper: process the image at offset 0 of the pixel memfd into
 * the buffer at out_offset (both height * stride bytes); map_bytes is
 * the memfd's size now. */
struct ts_plugin_req {
	uint32_t magic;
	int32_t width, height, channels, depth;
	uint32_t reserved;
	uint64_t stride;
	uint64_t out_offset;
	uint64_t map_bytes;
};

struct ts_plugin_host;

/* A host for op (a plugin op, op->plugin set; borrowed, must outlive the host), with
 * the plugin's path resolved against base_dir. Starts no process yet.
 * Returns 0 or TS_E_NOMEM / TS_E_PLUGIN (no helper executable found). */
int ts_plugin_host_create(const struct ts_op *op, const char *base_dir,
			  struct ts_plugin_host **out, struct ts_error *err);

/* Start a child, wait for it to load the plugin, stop it: the check
 * that the .so exists, loads and has tsrun_plugin_process, done without
 * loading it into this process. 0, or TS_E_PLUGIN with "plugin 'x.so':
 * cannot load: <dlerror>" and the like. */
int ts_plugin_host_probe(struct ts_plugin_host *h, struct ts_error *err);

/* Run img (uint8 or uint16, HWC) through the plugin, in place. Returns 0
 * (keep; img holds the plugin's output), 1 (the plugin dropped it), or
 * TS_E_PLUGIN with err->msg naming the plugin and what happened
 * ("plugin 'crash.so' crashed with SIGSEGV", "... timed out after
 * 1000 ms", "... returned error -2"); the child is gone then and the next
 * call starts another. TS_E_NOMEM and the like for local failures. */
int ts_plugin_host_run(struct ts_plugin_host *h, struct ts_image *img,
		       struct ts_error *err);

/* Stop the child now, if there is one (SIGKILL, reaped); a later run
 * starts another. For a worker that is about to exit. NULL: no-op. */
void ts_plugin_host_stop(struct ts_plugin_host *h);

/* Stop the child (SIGKILL), reap it, free everything. NULL is a no-op. */
void ts_plugin_host_destroy(struct ts_plugin_host *h);

/*
 * For a process that is a child subreaper (PR_SET_CHILD_SUBREAPER) whose
 * only children are plugin hosts: the tsrun CLI. A plugin that kills its
 * guard leaves its processes to the nearest subreaper; with this on,
 * whenever a host ends every child of the process that is not a live
 * host's guard is such an orphan, and is SIGKILLed and reaped (and so are
 * its own, reparented in turn), so nothing a plugin starts outlives its
 * pipeline. Call once, before any host starts. Off by default: an
 * embedder's other children are its own.
 */
void ts_plugin_reap_orphans(bool on);

#endif
