/*
 * plugin_host.c - tsrun-plugin-host, the child process that runs one
 * plugin operator for tsrun (runtime/plugin.c starts it; see plugin.h
 * for the protocol). Not meant to be run by hand.
 *
 *   tsrun-plugin-host PLUGIN.so PARENT_PID MEMORY_BYTES [NAME=VALUE ...]
 *   descriptor 3: a SOCK_SEQPACKET socket to tsrun
 *   descriptor 4: the pixel memfd (sealed: it cannot shrink or grow)
 *
 * Two processes. This one, the guard, never runs plugin code: it is a
 * child subreaper (PR_SET_CHILD_SUBREAPER) that forks the worker and
 * waits. The worker limits its address space (RLIMIT_AS: what it has now
 * plus MEMORY_BYTES plus the pixel buffer; 0 = no limit), loads the
 * plugin, says hello (or why it cannot), then answers one request per
 * image until the socket closes. Whatever the plugin starts (even with
 * setsid, which leaves the process group) is reparented to the guard
 * once its parent dies, so when the worker ends, or tsrun asks with
 * SIGTERM, or tsrun goes away (PR_SET_PDEATHSIG gives the guard a
 * SIGTERM), the guard SIGKILLs every descendant, reaps them, and ends
 * the way the worker did (its exit status, or its signal raised again),
 * which is what tsrun reports. A plugin that crashes takes only these
 * processes down; tsrun sees the socket close and reaps the guard.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	       "handle_abort=0:detect_leaks=0:allocator_may_return_null=1";
}

/* One message to tsrun: the hello, or a reply. */
static void say(int status, const char *what, const char *detail)
{
	struct ts_plugin_msg m = {.magic = TS_PLUGIN_MAGIC, .status = status};
	if (what)
		snprintf(m.msg, sizeof(m.msg), "%s%s", what, detail ? detail : "");
	send(TS_PLUGIN_FD_SOCK, &m, sizeof(m), MSG_NOSIGNAL);
}

/* The worker's handler for the signals a plugin dies of: when the last
 * failure was an allocation (errno ENOMEM, or no megabyte can be mapped
 * any more), tell tsrun the memory limit was the cause, then die of the
 * signal as before. Only async-signal-safe calls. */
static void on_fatal(int sig)
{
	int e = errno;
	bool nomem = e == ENOMEM;
	if (!nomem) {
		void *p = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			nomem = true;
		else
			munmap(p, 1u << 20);
	}
	if (nomem) {
		struct ts_plugin_msg m = {.magic = TS_PLUGIN_MAGIC,
					  .status = TS_PLUGIN_ST_NOMEM};
		send(TS_PLUGIN_FD_SOCK, &m, sizeof(m), MSG_NOSIGNAL);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Limit the worker's address space to what it has now plus memory plus
 * the pixel buffer (the plugin's libraries, heap and stacks count). */
static int limit_memory(unsigned long long memory)
{
	if (memory == 0)
		return 0;
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%llu", &pages) != 1)
		pages = 0;
	if (f)
		fclose(f);
	struct stat st;
	unsigned long long pixels = fstat(TS_PLUGIN_FD_PIXELS, &st) == 0 ? (unsigned long long)st.st_size : 0;
	unsigned long long lim = pages * (unsigned long long)sysconf(_SC_PAGESIZE) + memory + pixels;
	struct rlimit rl = {.rlim_cur = lim, .rlim_max = lim};
	return setrlimit(RLIMIT_AS, &rl);
}

static int worker(int argc, char **argv, unsigned long long memory)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* the guard is gone: so are we */
	int n_params = argc - 4;
	struct tsrun_plugin_param *params = calloc((size_t)n_params + 1, sizeof(*params));
	if (!params) {
		say(-1, "out of memory", NULL);
		_exit(1);
	}
	for (int i = 0; i < n_params; i++) {
		char *eq = strchr(argv[4 + i], '=');
		if (!eq)
			_exit(2);
		*eq = '\0';
		params[i].name = argv[4 + i];
		params[i].value = eq + 1;
	}
	if (limit_memory(memory) < 0) {
		say(-1, "cannot set its memory limit: ", strerror(errno));
		_exit(1);
	}
	struct sigaction sa = {.sa_handler = on_fatal};
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, NULL);

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
			if (map == MAP_FAILED) {
				say(-1, "cannot map the pixel buffer: ", strerror(errno));
				_exit(4);
			}
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

/* The guard's children, from /proc (every process whose parent is us):
 * SIGKILL each. Returns how many were signalled. */
static int kill_children(void)
{
	pid_t self = getpid();
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = '\0';
		/* "pid (comm) state ppid ...": comm may hold ')', so the last */
		char *rp = strrchr(buf, ')');
		char state;
		long ppid;
		if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2 || ppid != self)
			continue;
		if (kill((pid_t)atol(e->d_name), SIGKILL) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* SIGKILL and reap every descendant: orphans come to us (subreaper), so
 * repeat until there is no child left. A child seen alive but not yet
 * signalled (reparented after the scan) is found by the next scan. */
static void kill_all(pid_t worker_pid)
{
	kill(-worker_pid, SIGKILL); /* the worker's process group, at once */
	for (;;) {
		int n = kill_children();
		pid_t r = waitpid(-1, NULL, n ? 0 : WNOHANG);
		if (r < 0 && errno == ECHILD)
			return;
		if (r == 0)
			usleep(1000);
	}
}

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
	if (sig == SIGTERM)
		stop_asked = 1;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	/* SIGTERM (from tsrun, or from PR_SET_PDEATHSIG when tsrun's thread
	 * is gone) and SIGCHLD are taken only in sigsuspend below, so none
	 * is missed between a check and the wait. */
	sigset_t both, orig;
	sigemptyset(&both);
	sigaddset(&both, SIGTERM);
	sigaddset(&both, SIGCHLD);
	sigprocmask(SIG_BLOCK, &both, &orig);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != (pid_t)atol(argv[2]))
		_exit(1); /* tsrun went away before the line above */
	unsigned long long memory = strtoull(argv[3], NULL, 10);
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	pid_t w = fork();
	if (w < 0) {
		say(-1, "cannot fork its worker: ", strerror(errno));
		_exit(1);
	}
	if (w == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, &orig, NULL);
		setpgid(0, 0);
		_exit(worker(argc, argv, memory));
	}
	setpgid(w, w);
	/* The socket and the pixels are the worker's: tsrun sees EOF once it
	 * and whatever it started are gone. */
	close(TS_PLUGIN_FD_SOCK);
	close(TS_PLUGIN_FD_PIXELS);

	int st = 0;
	bool ended = false;
	while (!ended) {
		pid_t r;
		while ((r = waitpid(-1, &st, WNOHANG)) > 0)
			if (r == w) {
				ended = true;  /* others: orphans of the plugin's, reaped */
				break;
			}
		if (r < 0 && errno == ECHILD)
			_exit(0);
		if (ended)
			break;
		if (stop_asked) {
			kill_all(w);
			_exit(0);
		}
		sigsuspend(&orig);
	}
	kill_all(w);
	if (WIFSIGNALED(st)) {
		/* end as the worker did, so tsrun names its signal (no core) */
		struct rlimit none = {0, 0};
		setrlimit(RLIMIT_CORE, &none);
		signal(WTERMSIG(st), SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, WTERMSIG(st));
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(WTERMSIG(st));
		_exit(128 + WTERMSIG(st));
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}
