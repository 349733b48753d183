/*
 * plugin.c - the tsrun side of plugin operators: one child process per
 * host, started with posix_spawn, fed one image at a time through a
 * shared memfd, watched with poll() and a time limit. See plugin.h for
 * why and src/plugin_host.c for the child.
 */
#include "plugin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#ifndef TS_PLUGIN_HOST_DEFAULT
#define TS_PLUGIN_HOST_DEFAULT "/usr/local/libexec/tsrun-plugin-host"
#endif
#define HOST_EXE "tsrun-plugin-host"
#define START_TIMEOUT_MS 10000  /* spawn + dlopen + the plugin's constructors */
#define STOP_TIMEOUT_MS 2000    /* the guard kills and reaps the plugin's processes */
#define PAGE 4096u
#define BACKOFF_MIN_MS 10       /* a host that failed restarts after this, */
#define BACKOFF_MAX_MS 200      /* doubling per failure in a row, up to this
				   (within tsrun run's 400 ms to stop) */
#define MAX_GUARDS 1024

extern char **environ;

struct ts_plugin_host {
	const struct ts_op *op;
	char *name;             /* base name of the plugin path */
	char *exe;              /* the helper */
	char **argv;            /* NULL-ended; strings owned */
	int argc;
	int memfd;
	uint8_t *map;
	size_t map_bytes;
	pid_t pid;              /* 0: no child */
	int sock;               /* -1: no child */
	unsigned fails;         /* hosts in a row that ended in a failure */
	int64_t failed_at;      /* when the last one did (ms, monotonic) */
};

/* The live guards of this process (ts_plugin_reap_orphans): a child not
 * among them is a plugin's orphan. Spawning holds the lock, so a guard is
 * listed before any sweep can see it. */
static pthread_mutex_t guards_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t guards[MAX_GUARDS];
static size_t n_guards;
static bool reaper;

void ts_plugin_reap_orphans(bool on)
{
	reaper = on;
}

static bool is_guard(pid_t pid)
{
	for (size_t i = 0; i < n_guards; i++)
		if (guards[i] == pid)
			return true;
	return false;
}

/* The children of every thread of this process (reparented orphans go to
 * one of them), at most max, from /proc/self/task/T/children. */
static size_t list_children(pid_t *out, size_t max)
{
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");  /* O_CLOEXEC in glibc */
	if (!d)
		return 0;
	struct dirent *t;
	while (n < max && (t = readdir(d))) {
		if (t->d_name[0] == '.')
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/children", t->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		long v;
		while (n < max && fscanf(f, "%ld", &v) == 1)
			out[n++] = (pid_t)v;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* SIGKILL and reap every child that is no live guard, until none is left
 * (an orphan's own children come to us once it dies). Called with
 * guards_lock held, only where ts_plugin_reap_orphans is on. */
static void sweep_orphans(void)
{
	pid_t kids[256];
	for (int round = 0; round < 64; round++) {
		size_t n = list_children(kids, TS_ARRAY_LEN(kids)), killed = 0;
		for (size_t i = 0; i < n; i++) {
			if (is_guard(kids[i]))
				continue;
			kill(kids[i], SIGKILL);
			pid_t r;
			do
				r = waitpid(kids[i], NULL, 0);
			while (r < 0 && errno == EINTR);
			killed++;
		}
		if (!killed)
			return;
	}
}

/* A host ended: forget its guard, and sweep what its plugin left. */
static void guard_gone(pid_t pid)
{
	pthread_mutex_lock(&guards_lock);
	for (size_t i = 0; i < n_guards; i++) {
		if (guards[i] == pid) {
			guards[i] = guards[--n_guards];
			break;
		}
	}
	if (reaper)
		sweep_orphans();
	pthread_mutex_unlock(&guards_lock);
}

static int grow(struct ts_plugin_host *h, size_t need, struct ts_error *err);
static void stop_child(struct ts_plugin_host *h);

static char *join_path(const char *dir, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* The helper executable, per plugin.h's search order. */
static char *find_helper(void)
{
	const char *env = getenv("TSRUN_PLUGIN_HOST");
	if (env && *env)
		return ts_strdup(env);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			char *p = join_path(self, HOST_EXE);
			if (!p || access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	return ts_strdup(TS_PLUGIN_HOST_DEFAULT);
}

int ts_plugin_host_create(const struct ts_op *op, const char *base_dir,
			  struct ts_plugin_host **out, struct ts_error *err)
{
	const struct ts_op_plugin *pl = op->plugin;
	if (!pl || !pl->path[0])
		return ts_error_set(err, TS_E_ARG, "plugin: no path");
	struct ts_plugin_host *h = calloc(1, sizeof(*h));
	if (!h)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	int rc = TS_E_NOMEM;
	h->op = op;
	h->sock = -1;
	h->memfd = -1;
	const char *base = strrchr(pl->path, '/');
	h->name = ts_strdup(base ? base + 1 : pl->path);
	h->exe = find_helper();
	h->argc = pl->n_params + 4;
	h->argv = calloc((size_t)h->argc + 1, sizeof(char *));
	if (!h->name || !h->exe || !h->argv)
		goto fail;
	h->argv[0] = ts_strdup(HOST_EXE);
	h->argv[1] = pl->path[0] == '/' ? ts_strdup(pl->path)
		   : join_path(base_dir ? base_dir : ".", pl->path);
	if (asprintf(&h->argv[2], "%d", (int)getpid()) < 0)
		h->argv[2] = NULL;
	if (asprintf(&h->argv[3], "%llu", (unsigned long long)pl->memory) < 0)
		h->argv[3] = NULL;
	if (!h->argv[0] || !h->argv[1] || !h->argv[2] || !h->argv[3])
		goto fail;
	for (int i = 0; i < pl->n_params; i++)
		if (asprintf(&h->argv[4 + i], "%s=%s", pl->names[i], pl->values[i]) < 0) {
			h->argv[4 + i] = NULL;
			goto fail;
		}
	if (access(h->exe, X_OK) != 0) {
		rc = ts_error_set(err, TS_E_PLUGIN,
				  "plugin '%s': cannot run the plugin host %s: %s "
				  "(set TSRUN_PLUGIN_HOST to its path)",
				  h->name, h->exe, strerror(errno));
		goto out;
	}
	rc = grow(h, 1, err);  /* the first pixel buffer: 1 MiB */
	if (rc)
		goto out;
	*out = h;
	return 0;
fail:
	ts_error_set(err, TS_E_NOMEM, "out of memory");
out:
	ts_plugin_host_destroy(h);
	return rc;
}

/* Wait up to ms for the child to end; then SIGKILL its process group
 * and it (the guard is ours and ends at once; this is the fallback) and
 * wait for good. Returns waitpid's result, *st filled. */
static pid_t wait_child(pid_t pid, int *st, int ms)
{
	pid_t r;
	for (int waited = 0;; waited++) {
		do
			r = waitpid(pid, st, waited < ms ? WNOHANG : 0);
		while (r < 0 && errno == EINTR);
		if (r != 0)
			return r;
		if (waited == ms) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		struct timespec ms1 = {0, 1000000};
		nanosleep(&ms1, NULL);
	}
}

/* Reap the child (it has exited, or was just asked to stop) and say how
 * it ended into why: "crashed with SIGSEGV", "exited with status 3". */
static void reap(struct ts_plugin_host *h, char *why, size_t n)
{
	int st = 0;
	pid_t r;
	if (h->sock >= 0)
		close(h->sock);
	h->sock = -1;
	if (h->pid <= 0)
		return;
	r = wait_child(h->pid, &st, STOP_TIMEOUT_MS);
	guard_gone(h->pid);
	h->pid = 0;
	if (!why)
		return;
	if (r < 0) {
		snprintf(why, n, "died");  /* SIGCHLD ignored: reaped already */
	} else if (WIFSIGNALED(st)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(st));
		if (abbrev)
			snprintf(why, n, "crashed with SIG%s", abbrev);
		else
			snprintf(why, n, "crashed with signal %d", WTERMSIG(st));
	} else if (WIFEXITED(st)) {
		snprintf(why, n, "exited with status %d", WEXITSTATUS(st));
	} else {
		snprintf(why, n, "died");
	}
}

/* SIGTERM to the guard: it SIGKILLs the plugin and whatever it started
 * (setsid included), reaps them and exits; reap() waits for that. */
static void stop_child(struct ts_plugin_host *h)
{
	if (h->pid > 0)
		kill(h->pid, SIGTERM);
	reap(h, NULL, 0);
}

/* Wait up to ms for one message from the child. Returns 0 with *m
 * filled, -ETIMEDOUT, -EPIPE when the child is gone (closed its end:
 * exited or crashed), or -EPROTO when it sent something that is not a
 * message (*got: its length). */
static int recv_msg(struct ts_plugin_host *h, struct ts_plugin_msg *m, int ms,
		    ssize_t *got)
{
	int64_t deadline = ts_clock_ms() + ms;
	for (;;) {
		int64_t left = deadline - ts_clock_ms();
		if (left < 0)
			left = 0;
		struct pollfd p = {.fd = h->sock, .events = POLLIN};
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		/* MSG_TRUNC: the real length of a longer datagram */
		*got = recv(h->sock, m, sizeof(*m), MSG_TRUNC);
		if (*got < 0 && errno == EINTR)
			continue;
		if (*got == (ssize_t)sizeof(*m) && m->magic == TS_PLUGIN_MAGIC) {
			m->msg[sizeof(m->msg) - 1] = '\0';
			return 0;
		}
		if (*got > 0)
			return -EPROTO;
		return -EPIPE; /* EOF or a reset: the child is gone */
	}
}

/* The reason for a reply that was not one, or for a death reported as
 * out of memory, into why. */
static void protocol_why(ssize_t got, char *why, size_t n)
{
	snprintf(why, n, "broke the plugin protocol (sent %zd bytes that are not a "
		 "tsrun-plugin-host message; a plugin must not use descriptor %d)",
		 got, TS_PLUGIN_FD_SOCK);
}

static void nomem_why(struct ts_plugin_host *h, char *why, size_t n)
{
	char died[64], lim[32];
	reap(h, died, sizeof(died));
	ts_plan_format_size(h->op->plugin->memory, lim, sizeof(lim));
	snprintf(why, n, "ran out of memory (its limit: memory = %s) and %s", lim, died);
}

/* Start a child and wait for its hello. */
static int start_child(struct ts_plugin_host *h, struct ts_error *err)
{
	int sv[2] = {-1, -1}, s_child = -1, m_child = -1, rc;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid = 0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s': socketpair: %s", h->name,
				    strerror(errno));
	/* Move the child's ends above the fixed numbers they get there, so
	 * each dup2 below copies (clearing O_CLOEXEC) rather than being a
	 * no-op on a descriptor that is already 3 or 4. */
	s_child = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
	m_child = fcntl(h->memfd, F_DUPFD_CLOEXEC, 10);
	close(sv[1]);
	if (s_child < 0 || m_child < 0) {
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s': dup: %s", h->name,
				  strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);  /* plugin chatter -> stderr */
	posix_spawn_file_actions_adddup2(&fa, s_child, TS_PLUGIN_FD_SOCK);
	posix_spawn_file_actions_adddup2(&fa, m_child, TS_PLUGIN_FD_PIXELS);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	/* its own process group: a ^C at the terminal is tsrun's to handle */
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				 POSIX_SPAWN_SETPGROUP);
	pthread_mutex_lock(&guards_lock);
	int e = n_guards < MAX_GUARDS ? posix_spawn(&pid, h->exe, &fa, &attr, h->argv, environ)
				      : EAGAIN;
	if (e == 0)
		guards[n_guards++] = pid;
	pthread_mutex_unlock(&guards_lock);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (e != 0) {
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s': cannot start %s: %s", h->name,
				  h->exe, strerror(e));
		goto out;
	}
	h->pid = pid;
	h->sock = sv[0];
	sv[0] = -1;

	struct ts_plugin_msg hello;
	char why[160];
	ssize_t got = 0;
	rc = recv_msg(h, &hello, START_TIMEOUT_MS, &got);
	if (rc == -ETIMEDOUT) {
		stop_child(h);
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s': did not load within %d ms",
				  h->name, START_TIMEOUT_MS);
	} else if (rc == -EPROTO) {
		stop_child(h);
		protocol_why(got, why, sizeof(why));
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s' %s while loading", h->name, why);
	} else if (rc == 0 && hello.status == TS_PLUGIN_ST_NOMEM) {
		nomem_why(h, why, sizeof(why));
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s' %s while loading", h->name, why);
	} else if (rc) {
		reap(h, why, sizeof(why));
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s': %s while loading", h->name, why);
	} else if (hello.status != 0) {
		stop_child(h);
		rc = ts_error_set(err, TS_E_PLUGIN, "plugin '%s': %s", h->name, hello.msg);
	}
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (s_child >= 0)
		close(s_child);
	if (m_child >= 0)
		close(m_child);
	return rc;
}

int ts_plugin_host_probe(struct ts_plugin_host *h, struct ts_error *err)
{
	int rc = start_child(h, err);
	stop_child(h);
	return rc;
}

/* Make the pixel memfd (and our mapping of it) hold need bytes. A
 * sealed memfd cannot grow, so a bigger one replaces it, sealed in its
 * turn, and a running child (which holds the old one) is stopped: the
 * next request starts one with the new memfd. Sizes double from 1 MiB,
 * so this happens a few times per run at most. */
static int grow(struct ts_plugin_host *h, size_t need, struct ts_error *err)
{
	if (need <= h->map_bytes)
		return 0;
	size_t size = h->map_bytes ? h->map_bytes : 1u << 20;
	while (size < need)
		size *= 2;
	stop_child(h);
	if (h->map)
		munmap(h->map, h->map_bytes);
	if (h->memfd >= 0)
		close(h->memfd);
	h->map = NULL;
	h->map_bytes = 0;
	h->memfd = memfd_create("tsrun-plugin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (h->memfd < 0)
		return ts_error_set(err, -errno, "plugin '%s': memfd_create: %s", h->name,
				    strerror(errno));
	if (ftruncate(h->memfd, (off_t)size) < 0)
		return ts_error_set(err, -errno, "plugin '%s': cannot size its pixel buffer "
				    "to %zu bytes: %s", h->name, size, strerror(errno));
	if (fcntl(h->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return ts_error_set(err, -errno, "plugin '%s': cannot seal its pixel buffer: %s",
				    h->name, strerror(errno));
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, h->memfd, 0);
	if (p == MAP_FAILED)
		return ts_error_set(err, -errno, "plugin '%s': mmap: %s", h->name,
				    strerror(errno));
	h->map = p;
	h->map_bytes = size;
	return 0;
}

/* The host ended in a failure (crash, timeout, garbage, a failed start):
 * the next one starts after a backoff. */
static void host_failed(struct ts_plugin_host *h)
{
	h->fails++;
	h->failed_at = ts_clock_ms();
}

/* Before a host restarts after failures in a row: wait out the backoff
 * (BACKOFF_MIN_MS doubling to BACKOFF_MAX_MS), so a plugin that dies on
 * every sample costs a bounded rate of restarts, not one per sample. */
static void backoff(const struct ts_plugin_host *h)
{
	if (!h->fails)
		return;
	int64_t ms = BACKOFF_MIN_MS;
	for (unsigned i = 1; i < h->fails && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	int64_t left = h->failed_at + ms - ts_clock_ms();
	if (left > 0) {
		struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000 };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
}

static int run_one(struct ts_plugin_host *h, struct ts_image *img, struct ts_error *err);

int ts_plugin_host_run(struct ts_plugin_host *h, struct ts_image *img,
		       struct ts_error *err)
{
	if (h->pid <= 0)
		backoff(h);
	int rc = run_one(h, img, err);
	if (h->pid <= 0 && rc < 0)
		host_failed(h);  /* it ended (or never started) failing */
	else if (h->pid > 0)
		h->fails = 0;    /* a host that answers is good again */
	return rc;
}

static int run_one(struct ts_plugin_host *h, struct ts_image *img, struct ts_error *err)
{
	if (img->dtype != TS_DTYPE_U8 && img->dtype != TS_DTYPE_U16)
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s' takes uint8 or uint16 "
				    "pixels, got %s", h->name, ts_dtype_name(img->dtype));
	size_t bytes = img->stride * (size_t)img->height;
	size_t off = (bytes + PAGE - 1) / PAGE * PAGE;
	int rc = grow(h, off + (bytes ? bytes : 1), err);
	if (rc)
		return rc;
	if (h->pid <= 0) {
		rc = start_child(h, err);
		if (rc)
			return rc;
	}
	memcpy(h->map, img->data, bytes);
	struct ts_plugin_req req = {
		.magic = TS_PLUGIN_MAGIC,
		.width = img->width, .height = img->height, .channels = img->channels,
		.depth = img->dtype == TS_DTYPE_U16 ? 16 : 8,
		.stride = img->stride, .out_offset = off, .map_bytes = h->map_bytes,
	};
	struct ts_plugin_msg rep;
	char why[160];
	ssize_t sent, got = 0;
	do
		sent = send(h->sock, &req, sizeof(req), MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	rc = sent == (ssize_t)sizeof(req) ? recv_msg(h, &rep, h->op->plugin->timeout_ms, &got)
					   : -EPIPE;
	if (rc == -ETIMEDOUT) {
		stop_child(h);
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s' timed out after %d ms",
				    h->name, h->op->plugin->timeout_ms);
	}
	if (rc == -EPROTO) {
		stop_child(h);
		protocol_why(got, why, sizeof(why));
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s' %s", h->name, why);
	}
	if (rc == 0 && rep.status == TS_PLUGIN_ST_NOMEM) {
		nomem_why(h, why, sizeof(why));
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s' %s", h->name, why);
	}
	if (rc) {
		reap(h, why, sizeof(why));
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s' %s", h->name, why);
	}
	if (rep.status < 0 || rep.status > 1) {
		/* The plugin said no; its process is still good. */
		return ts_error_set(err, TS_E_PLUGIN, "plugin '%s' returned error %d%s%s",
				    h->name, (int)rep.status, rep.msg[0] ? ": " : "", rep.msg);
	}
	if (rep.status == 1)
		return 1;
	memcpy(img->data, h->map + off, bytes);
	return 0;
}

void ts_plugin_host_stop(struct ts_plugin_host *h)
{
	if (h)
		stop_child(h);
}

void ts_plugin_host_destroy(struct ts_plugin_host *h)
{
	if (!h)
		return;
	stop_child(h);
	if (h->map)
		munmap(h->map, h->map_bytes);
	if (h->memfd >= 0)
		close(h->memfd);
	for (int i = 0; h->argv && i < h->argc; i++)
		free(h->argv[i]);
	free(h->argv);
	free(h->exe);
	free(h->name);
	free(h);
}
