/* server.c - the handoff server: Unix socket, hello/welcome, SCM_RIGHTS,
 * SO_PEERCRED, and hang-up detection, in one poll-loop thread. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "barrier.h"
#include "job.h"
#include "proto.h"
#include "util.h"

#define HELLO_TIMEOUT_S 5.0
#define MAX_CONNS 256
/* Connections still saying hello, per peer: a real client sends its
 * hello in the same call that connects, so a few suffice; more from one
 * process (or user) are someone holding slots open. */
#define PENDING_PER_PID 8
#define PENDING_PER_UID 32
#define MAX_NOTES 16

struct conn {
	int fd;
	bool welcomed;
	pid_t pid;             /* the peer (SO_PEERCRED) */
	uid_t uid;
	double since;          /* accepted at */
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	size_t got;
	double deadline;       /* for the hello */
	struct ts_ring_consumer *c;
	struct ts_job_ticket job;  /* slot -1: a lone trainer */
};

struct ts_server {
	struct ts_ring *ring;
	char *path;
	ino_t ino;             /* of our socket file, to unlink only ours */
	int lfd;
	int evfd;
	int ro_fd;             /* the ring reopened read-only */
	bool use_group;
	gid_t gid;
	pthread_t thread;
	bool started;
	bool has_device;
	struct ts_proto_device device;
	bool has_fallback;            /* ts_server_set_fallback */
	struct ts_proto_fallback fallback;
	struct conn conns[MAX_CONNS];
	struct ts_job_table *jobs;
	bool closing;          /* destroy: conns close, no rank "left early" */
	size_t n_conns;
	unsigned n_welcomed;   /* atomic */
	/* Limits (ts_server_set_limits): read by the server thread. */
	uint32_t stall_ms;     /* 0: never detach */
	uint32_t job_ms;       /* a job's wait for its ranks; 0: forever;
				  UINT32_MAX: stall_ms */
	uint32_t max_consumers;
	/* Log lines for the host (ts_server_take_note), oldest first. */
	pthread_mutex_t note_lock;
	char notes[MAX_NOTES][256];
	size_t note_head, n_notes;
};

/* Queue a line for the producer's log (the oldest goes when full). */
__attribute__((format(printf, 2, 3)))
static void note(struct ts_server *s, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&s->note_lock);
	if (s->n_notes == MAX_NOTES) {
		s->note_head = (s->note_head + 1) % MAX_NOTES;
		s->n_notes--;
	}
	char *line = s->notes[(s->note_head + s->n_notes++) % MAX_NOTES];
	va_start(ap, fmt);
	vsnprintf(line, sizeof(s->notes[0]), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&s->note_lock);
}

static void conn_close(struct ts_server *s, size_t i)
{
	struct conn *c = &s->conns[i];
	if (c->c) {
		/* A rank that leaves while the stream runs fails its job:
		 * the others are told before this one stops holding. */
		ts_job_leave(s->jobs, s->ring, &c->job,
			      !s->closing && ts_ring_running(s->ring));
		/* Detach first: from here on the consumer no longer holds
		 * the ring back, and a producer waiting on it is woken. */
		ts_ring_detach(s->ring, c->c);
		ATOMIC_SUB(&s->n_welcomed, 1); /* a count other threads read */
	}
	close(c->fd);
	s->conns[i] = s->conns[--s->n_conns];
}

static void refuse(int fd, uint32_t reason, const char *text)
{
	struct ts_proto_refuse m = { .reason = reason };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	snprintf(m.text, sizeof(m.text), "%.*s", (int)sizeof(m.text) - 1, text);
	(void)ts_proto_send(fd, buf, ts_proto_put_refuse(buf, &m), NULL, 0);
}

/* Is the peer allowed in? Same uid always; with a group, any member
 * (primary gid from SO_PEERCRED or a supplementary one). */
static bool peer_allowed(struct ts_server *s, int fd, struct ucred *out)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	*out = cr;
	if (cr.uid == geteuid())
		return true;
	if (!s->use_group)
		return false;
	if (cr.gid == s->gid)
		return true;
#ifdef SO_PEERGROUPS
	gid_t groups[256];
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		for (size_t i = 0; i < len / sizeof(gid_t); i++)
			if (groups[i] == s->gid)
				return true;
#endif
	return false;
}

static bool on_conn(struct ts_server *s, struct conn *c, short revents);

/* Connections of this peer still saying hello: same pid, and same uid. */
static void pending_of(const struct ts_server *s, const struct ucred *cr,
		       unsigned *by_pid, unsigned *by_uid)
{
	*by_pid = *by_uid = 0;
	for (size_t i = 0; i < s->n_conns; i++) {
		const struct conn *c = &s->conns[i];
		if (c->welcomed)
			continue;
		*by_pid += c->pid == cr->pid;
		*by_uid += c->uid == cr->uid;
	}
}

/* The table is full, or this user has PENDING_PER_UID connections
 * still saying hello (uid: that user's; (uid_t)-1: anyone's): the oldest
 * of them goes, so half-open connections can delay a new trainer but never
 * lock it out (it sends its hello as it connects and is answered before
 * it is the oldest). Returns false when there is none to evict. */
static bool evict_oldest_pending(struct ts_server *s, uid_t uid)
{
	size_t old = MAX_CONNS;
	for (size_t i = 0; i < s->n_conns; i++)
		if (!s->conns[i].welcomed && (uid == (uid_t)-1 || s->conns[i].uid == uid) &&
		    (old == MAX_CONNS || s->conns[i].since < s->conns[old].since))
			old = i;
	if (old == MAX_CONNS)
		return false;
	refuse(s->conns[old].fd, TS_REFUSE_FULL,
	       "no hello in time while the producer was full of connections");
	conn_close(s, old);
	return true;
}

static void on_accept(struct ts_server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ucred cr = { 0 };
		char text[TS_PROTO_REFUSE_MAX + 1];
		unsigned by_pid, by_uid;
		if (fd < 0)
			return;
		if (!peer_allowed(s, fd, &cr)) {
			refuse(fd, TS_REFUSE_PERMISSION,
			       "permission denied: the producer serves its own "
			       "user (or group) only");
			close(fd);
			continue;
		}
		/* One process with this many unanswered connections is not a
		 * trainer: refuse its next. A user with too many (maybe from
		 * many processes) loses its oldest one instead, so its own
		 * new trainer still gets in. */
		pending_of(s, &cr, &by_pid, &by_uid);
		if (by_pid >= PENDING_PER_PID) {
			snprintf(text, sizeof(text),
				 "too many connections from pid %u still saying hello (at most "
				 "%d): send each hello as the connection opens",
				 (unsigned)cr.pid, PENDING_PER_PID);
			refuse(fd, TS_REFUSE_FULL, text);
			close(fd);
			continue;
		}
		if (by_uid >= PENDING_PER_UID)
			evict_oldest_pending(s, cr.uid);
		if (s->n_conns >= MAX_CONNS && !evict_oldest_pending(s, (uid_t)-1)) {
			refuse(fd, TS_REFUSE_FULL, "too many connections");
			close(fd);
			continue;
		}
		size_t i = s->n_conns++;
		struct conn *c = &s->conns[i];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->pid = cr.pid;
		c->uid = cr.uid;
		c->job.slot = -1;
		c->since = ts_clock_now();
		c->deadline = c->since + HELLO_TIMEOUT_S;
		/* A trainer's hello is usually there already: answer it now,
		 * before a flood of connections behind it can evict it. */
		if (!on_conn(s, c, POLLIN))
			conn_close(s, i);
	}
}

/* A whole hello arrived: answer it. Returns false to drop the conn. */
static bool answer_hello(struct ts_server *s, struct conn *c,
			 const uint8_t *body, uint16_t len)
{
	struct ts_proto_hello h;
	struct ts_error e = { 0 };
	char text[TS_PROTO_REFUSE_MAX + 1];

	if (ts_proto_get_hello(body, len, &h, &e) < 0) {
		refuse(c->fd, TS_REFUSE_PROTOCOL, e.msg);
		return false;
	}
	if (h.version != TS_PROTO_VERSION) {
		snprintf(text, sizeof(text),
			 "version mismatch: the producer speaks tensorsocket "
			 "%u, the client %u", TS_PROTO_VERSION, h.version);
		refuse(c->fd, TS_REFUSE_VERSION, text);
		return false;
	}
	struct ts_ring_info info;
	ts_ring_get_info(s->ring, &info);
	if (h.batch == 0)
		h.batch = info.default_batch;
	uint32_t maxc = READ_ONCE(s->max_consumers); /* a setting; orders nothing */
	if (READ_ONCE(s->n_welcomed) >= maxc) {
		snprintf(text, sizeof(text),
			 "too many trainers: the producer serves at most %u at once (serve "
			 "setting consumers); wait for one to end, or raise the setting",
			 maxc);
		refuse(c->fd, TS_REFUSE_FULL, text);
		return false;
	}
	if (h.batch == 0 || h.batch > info.capacity / 2) {
		/* the setting to change, in the pipeline's batches when it has
		 * a batch size: ring must hold two of the trainer's batches */
		uint64_t need = 2 * (uint64_t)(h.batch ? h.batch : 1);
		uint32_t per = info.default_batch ? info.default_batch : 1;
		snprintf(text, sizeof(text),
			 "batch size %u is larger than half the ring (%llu "
			 "samples); ask for 1..%llu, or give the ring room for %llu: "
			 "serve setting ring = %llu batches (of %u) or ring = %llu samples "
			 "(tsrun.serve: ring=)",
			 h.batch, (unsigned long long)info.capacity,
			 (unsigned long long)(info.capacity / 2), (unsigned long long)need,
			 (unsigned long long)((need + per - 1) / per), per,
			 (unsigned long long)need);
		refuse(c->fd, TS_REFUSE_BATCH, text);
		return false;
	}
	/* The pid is the kernel's (SO_PEERCRED), never the hello's: another
	 * process could claim any. 0 (a peer in another pid namespace) is
	 * -1 here, never mistaken for an in-process consumer. */
	struct ts_ring_join_req req = { .batch = h.batch,
					.join = (enum ts_ring_join)h.join,
					.pid = c->pid > 0 ? c->pid : -1 };
	req.job = h.world ? h.job : NULL;  /* a label of its figures */
	/* A resume (never a job's: the decoder refuses one): its start
	 * and epochs follow the saved position, not the join policy. */
	req.resume = h.resume;
	req.has_resume_epochs = h.has_resume_epochs;
	req.resume_epoch = h.resume_epoch;
	req.resume_index = h.resume_index;
	req.resume_epochs = h.resume_epochs;
	struct ts_ring_join_pos pos = { 0 };
	struct ts_ring_consumer *rc = NULL;
	int arc;
	if (h.world) {
		/* A rank of a job: its share needs the epoch's size. */
		if (info.samples_per_epoch == 0) {
			refuse(c->fd, TS_REFUSE_JOB,
			       "a job needs a known epoch size, and this pipeline's varies "
			       "(tile, filter or a plugin that drops samples): connect "
			       "without a job");
			return false;
		}
		/* A rank's start is its job's, in its control page once
		 * every rank came; the welcome's is not read. */
		struct ts_job_req jr = { h.job, c->uid, h.rank, h.world, h.job_drop != 0 };
		arc = ts_job_attach(s->jobs, s->ring, &jr, &req, h.drop_last != 0,
				     ts_clock_now(), &rc, &c->job, &e);
	} else {
		arc = ts_ring_attach(s->ring, &req, &rc, &pos, &e);
	}
	if (arc < 0) {
		refuse(c->fd, strstr(e.msg, "ended") ? TS_REFUSE_FINISHED
			      : h.world ? TS_REFUSE_JOB : TS_REFUSE_FULL, e.msg);
		return false;
	}
	struct ts_proto_welcome w = {
		.version = TS_PROTO_VERSION,
		.producer_pid = (uint32_t)getpid(),
		.height = (uint32_t)info.height,
		.width = (uint32_t)info.width,
		.channels = (uint32_t)info.channels,
		.dtype = (uint32_t)info.dtype,
		.layout = (uint32_t)info.layout,
		.epochs = info.epochs,
		.sample_bytes = info.sample_bytes,
		.capacity = info.capacity,
		.samples_per_epoch = info.samples_per_epoch,
		.start = pos.start,
		.min_epoch = pos.min_epoch,
		.batch = h.batch,
		.head = ts_ring_head(s->ring),
		.has_device = s->has_device,
		.device = s->device,
		.has_fallback = s->has_fallback,
		.fallback = s->fallback,
	};
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	int fds[2] = { s->ro_fd, ts_ring_consumer_ctl_fd(rc) };
	if (ts_proto_send(c->fd, buf, ts_proto_put_welcome(buf, &w), fds, 2) < 0) {
		/* A started job's rank that never got its welcome fails it. */
		ts_job_leave(s->jobs, s->ring, &c->job, ts_ring_running(s->ring));
		c->job.slot = -1;
		ts_ring_detach(s->ring, rc);
		return false;
	}
	c->c = rc;
	c->welcomed = true;
	ATOMIC_ADD(&s->n_welcomed, 1); /* a count other threads read */
	return true;
}

/* Readable connection. Returns false to drop it. */
static bool on_conn(struct ts_server *s, struct conn *c, short revents)
{
	if (c->welcomed)
		/* After the welcome a consumer sends nothing: any event is a
		 * hang-up (or garbage), and either way it leaves. */
		return false;
	if (revents & (POLLERR | POLLNVAL))
		return false;
	size_t want = TS_PROTO_HDR_LEN;
	uint16_t type = 0, len = 0;
	struct ts_error e = { 0 };
	if (c->got >= TS_PROTO_HDR_LEN) {
		ts_proto_get_header(c->buf, &type, &len, NULL);
		want = TS_PROTO_HDR_LEN + len;
	}
	ssize_t n = recv(c->fd, c->buf + c->got, want - c->got, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	c->got += (size_t)n;
	if (c->got == TS_PROTO_HDR_LEN) {
		if (ts_proto_get_header(c->buf, &type, &len, &e) < 0) {
			refuse(c->fd, TS_REFUSE_PROTOCOL, e.msg);
			return false;
		}
		if (type != TS_MSG_HELLO) {
			refuse(c->fd, TS_REFUSE_PROTOCOL, "expected a hello");
			return false;
		}
	}
	if (c->got >= TS_PROTO_HDR_LEN) {
		ts_proto_get_header(c->buf, &type, &len, NULL);
		if (c->got == (size_t)TS_PROTO_HDR_LEN + len)
			return answer_hello(s, c, c->buf + TS_PROTO_HDR_LEN, len);
	}
	return true;
}

/* Has trainer c held the ring past stall_ms while another waits on it?
 * Then it is told (its control page) and the caller hangs up on it. */
static bool stalled(struct ts_server *s, struct conn *c, uint32_t stall_ms)
{
	double held = ts_ring_consumer_held(s->ring, c->c);
	if (held * 1e3 < stall_ms)
		return false;
	uint32_t held_ms = held * 1e3 > 4e9 ? 4000000000u : (uint32_t)(held * 1e3);
	ts_ring_consumer_mark_stalled(s->ring, c->c, held_ms, stall_ms);
	note(s, "detached trainer pid %d: it held the ring %.1f s without releasing a "
	     "batch while others waited (serve setting stall_timeout = %g); it gets an "
	     "error and may reconnect", (int)c->pid, held, stall_ms / 1e3);
	return true;
}

static void *server_main(void *arg)
{
	struct ts_server *s = arg;
	struct pollfd pfd[MAX_CONNS + 2];

	for (;;) {
		size_t n = s->n_conns;
		pfd[0] = (struct pollfd){ s->evfd, POLLIN, 0 };
		pfd[1] = (struct pollfd){ s->lfd, POLLIN, 0 };
		for (size_t i = 0; i < n; i++)
			pfd[i + 2] = (struct pollfd){ s->conns[i].fd,
						      POLLIN | POLLRDHUP, 0 };
		int pr = poll(pfd, n + 2, 250);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0 && pfd[0].revents)
			break;
		double t = ts_clock_now();
		uint32_t stall_ms = READ_ONCE(s->stall_ms); /* a setting; orders nothing */
		/* Walk backwards: conn_close moves the last entry into i. */
		for (size_t i = n; i-- > 0;) {
			struct conn *c = &s->conns[i];
			bool keep = true;
			if (pr > 0 && pfd[i + 2].revents)
				keep = on_conn(s, c, pfd[i + 2].revents);
			if (keep && !c->welcomed && t > c->deadline)
				keep = false;
			if (keep && c->welcomed && stall_ms)
				keep = !stalled(s, c, stall_ms);
			if (!keep)
				conn_close(s, i);
		}
		if (pr > 0 && pfd[1].revents)
			on_accept(s);
		/* Jobs that waited too long for their ranks end. */
		uint32_t job_ms = READ_ONCE(s->job_ms); /* a setting; orders nothing */
		if (job_ms == UINT32_MAX)
			job_ms = stall_ms;
		char line[256];
		while (job_ms && ts_job_expire(s->jobs, s->ring, ts_clock_now(), job_ms, line,
						sizeof(line)))
			note(s, "%s", line);
	}
	return NULL;
}

/* Is someone listening on path? Decides stale (replace) or live (refuse). */
static bool socket_live(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;
	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ||
	       errno == EAGAIN;
	close(fd);
	return live;
}

int ts_server_create(struct ts_ring *ring, const char *socket_path,
		     const char *group, struct ts_server **out,
		     struct ts_error *err)
{
	return ts_server_create_device(ring, socket_path, group, NULL, out, err);
}

int ts_server_private_dir(const char *socket_path, const char *group,
			  struct ts_error *err)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	const char *slash = strrchr(socket_path, '/');
	if (!slash || slash == socket_path || (size_t)(slash - socket_path) >= sizeof(dir))
		return ts_error_set(err, TS_E_ARG, "socket path %s has no folder", socket_path);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - socket_path), socket_path);
	gid_t gid = (gid_t)-1;
	if (group) {
		struct group gr, *res = NULL;
		char buf[4096];
		if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) != 0 || !res)
			return ts_error_set(err, TS_E_ARG, "unknown group '%s'", group);
		gid = gr.gr_gid;
	}
	mode_t want = group ? 0710 : 0700;
	if (mkdir(dir, want) < 0 && errno != EEXIST)
		return ts_error_set(err, TS_E_STATE, "cannot make the socket folder %s: %s; "
				    "set the serve block's socket (or --socket) elsewhere",
				    dir, strerror(errno));
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		int e = errno;
		bool other = fd >= 0;
		if (fd >= 0)
			close(fd);
		if (other)
			return ts_error_set(err, TS_E_STATE, "the socket folder %s belongs to uid "
					    "%u, not to you: another user made it; remove it, or "
					    "set XDG_RUNTIME_DIR or the serve block's socket",
					    dir, (unsigned)st.st_uid);
		return ts_error_set(err, TS_E_STATE, "the socket folder %s is %s; remove it, "
				    "or set XDG_RUNTIME_DIR or the serve block's socket", dir,
				    e == ELOOP || e == ENOTDIR ? "not a folder (a symlink?)"
							       : strerror(e));
	}
	/* ours: make its mode and group what this run needs */
	int rc = 0;
	if ((group && fchown(fd, (uid_t)-1, gid) < 0) || fchmod(fd, want) < 0)
		rc = ts_error_set(err, TS_E_STATE, "cannot set the mode of the socket folder "
				  "%s: %s", dir, strerror(errno));
	close(fd);
	return rc;
}

int ts_server_set_fallback(struct ts_server *s, const struct ts_proto_fallback *fb,
			   struct ts_error *err)
{
	if (!s || !fb || s->has_device)
		return ts_error_set(err, TS_E_ARG,
				    "server: a device fallback needs a server without a device ring");
	s->fallback = *fb;
	s->fallback.why[sizeof(s->fallback.why) - 1] = 0;
	/* printable only, as the decoder requires */
	for (char *c = s->fallback.why; *c; c++)
		if (*c < 0x20 || *c >= 0x7f)
			*c = ' ';
	s->has_fallback = true;
	return 0;
}

int ts_server_create_device(struct ts_ring *ring, const char *socket_path,
			    const char *group, const struct ts_proto_device *dev,
			    struct ts_server **out, struct ts_error *err)
{
	struct ts_server *s = NULL;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	char proc[64];
	int rc;

	if (!ring || !socket_path || !out || !*socket_path)
		return ts_error_set(err, TS_E_ARG, "server: no socket path");
	if (strlen(socket_path) >= sizeof(a.sun_path))
		return ts_error_set(err, TS_E_ARG,
				    "socket path %s is longer than %zu bytes",
				    socket_path, sizeof(a.sun_path) - 1);
	s = calloc(1, sizeof(*s));
	if (!s)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	s->lfd = s->evfd = s->ro_fd = -1;
	s->ring = ring;
	s->stall_ms = (uint32_t)(TS_SERVER_STALL_TIMEOUT_S * 1000);
	s->job_ms = UINT32_MAX;
	s->max_consumers = TS_RING_MAX_CONSUMERS;
	pthread_mutex_init(&s->note_lock, NULL);
	rc = ts_job_create(&s->jobs, err);
	if (rc < 0) {
		free(s);
		return rc;
	}
	if (dev) {
		s->has_device = true;
		s->device = *dev;
	}
	s->path = strdup(socket_path);
	if (!s->path) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto fail;
	}
	if (group) {
		struct group gr, *res = NULL;
		char buf[4096];
		if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) != 0 || !res) {
			rc = ts_error_set(err, TS_E_ARG, "unknown group '%s'", group);
			goto fail;
		}
		s->use_group = true;
		s->gid = gr.gr_gid;
	}
	if (lstat(socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			rc = ts_error_set(err, TS_E_STATE,
					  "%s exists and is not a socket; "
					  "not replacing it", socket_path);
			goto fail;
		}
		if (socket_live(socket_path)) {
			rc = ts_error_set(err, TS_E_STATE,
					  "socket %s is in use by a running "
					  "producer", socket_path);
			goto fail;
		}
		unlink(socket_path);  /* stale: nobody listens */
	}
	/* Consumers get this read-only descriptor of the ring, never the
	 * producer's read-write one. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ts_ring_fd(ring));
	s->ro_fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (s->ro_fd < 0) {
		rc = ts_error_set(err, -errno, "cannot reopen the ring read-only: %s",
				  strerror(errno));
		goto fail;
	}
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->evfd < 0 || s->lfd < 0) {
		rc = ts_error_set(err, -errno, "socket: %s", strerror(errno));
		goto fail;
	}
	/* Bind and listen under a temporary name in the same folder, then
	 * rename it into place: the socket appears only once it listens, so
	 * a trainer that waits for the file and connects is never refused
	 * in between (with the path itself bound, bind-chmod-listen was a
	 * window of ECONNREFUSED). A path too long for the temporary name is
	 * bound directly. */
	char tmp[sizeof(a.sun_path)];
	int tn = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", socket_path, (int)getpid());
	const char *bound = tn > 0 && (size_t)tn < sizeof(tmp) ? tmp : socket_path;
	if (bound == tmp)
		unlink(tmp);  /* ours, left by a crash of this very pid */
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", bound);
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		rc = ts_error_set(err, -e, "cannot bind %s: %s; %s", socket_path, strerror(e),
				  e == EACCES || e == EPERM || e == EROFS
				  ? "choose a socket path in a folder you can write (the serve block's socket, or --socket)"
				  : e == ENOENT ? "its folder does not exist: create it or choose another socket path"
				  : "choose another socket path (the serve block's socket, or --socket)");
		goto fail;
	}
	/* The uid check (SO_PEERCRED) guards the short window before the
	 * mode is narrowed. */
	if ((s->use_group && (chown(bound, (uid_t)-1, s->gid) < 0 ||
			      chmod(bound, 0660) < 0)) ||
	    (!s->use_group && chmod(bound, 0600) < 0) ||
	    lstat(bound, &st) < 0) {
		rc = ts_error_set(err, -errno, "cannot set the mode of %s: %s",
				  socket_path, strerror(errno));
		unlink(bound);
		goto fail;
	}
	s->ino = st.st_ino;
	if (listen(s->lfd, 64) < 0) {
		rc = ts_error_set(err, -errno, "listen: %s", strerror(errno));
		unlink(bound);
		goto fail;
	}
	if (bound == tmp) {
		/* Never over a socket another producer bound meanwhile (a
		 * file system without RENAME_NOREPLACE: plain rename). */
		int r = renameat2(AT_FDCWD, tmp, AT_FDCWD, socket_path, RENAME_NOREPLACE);
		if (r < 0 && errno == EINVAL)
			r = rename(tmp, socket_path);
		if (r < 0) {
			int e = errno;
			unlink(tmp);
			rc = e == EEXIST
				? ts_error_set(err, TS_E_STATE, "socket %s is in use by a running "
					       "producer", socket_path)
				: ts_error_set(err, -e, "cannot put the socket at %s: %s",
					       socket_path, strerror(e));
			goto fail;
		}
	}
	rc = -pthread_create(&s->thread, NULL, server_main, s);
	if (rc < 0) {
		ts_error_set(err, rc, "cannot start the server thread");
		unlink(socket_path);
		goto fail;
	}
	s->started = true;
	*out = s;
	return 0;
fail:
	ts_server_destroy(s);
	return rc;
}

void ts_server_destroy(struct ts_server *s)
{
	struct stat st;
	if (!s)
		return;
	if (s->started) {
		uint64_t one = 1;
		ssize_t n = write(s->evfd, &one, sizeof(one));
		(void)n;
		pthread_join(s->thread, NULL);
		s->closing = true;
		while (s->n_conns)
			conn_close(s, s->n_conns - 1);
		if (lstat(s->path, &st) == 0 && st.st_ino == s->ino)
			unlink(s->path);
	}
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->evfd >= 0)
		close(s->evfd);
	if (s->ro_fd >= 0)
		close(s->ro_fd);
	ts_job_destroy(s->jobs);
	pthread_mutex_destroy(&s->note_lock);
	free(s->path);
	free(s);
}

void ts_server_unlink(struct ts_server *s)
{
	struct stat st;
	if (s && lstat(s->path, &st) == 0 && st.st_ino == s->ino)
		unlink(s->path);
}

int ts_server_set_limits(struct ts_server *s, double stall_timeout_s,
			 unsigned max_consumers, struct ts_error *err)
{
	if (!(stall_timeout_s >= 0 && stall_timeout_s <= TS_SERVER_STALL_TIMEOUT_MAX_S))
		return ts_error_set(err, TS_E_ARG, "stall timeout %g s: want 0 (never) .. %d s",
				    stall_timeout_s, TS_SERVER_STALL_TIMEOUT_MAX_S);
	if (max_consumers < 1 || max_consumers > TS_RING_MAX_CONSUMERS)
		return ts_error_set(err, TS_E_ARG, "consumers %u: want 1..%d", max_consumers,
				    TS_RING_MAX_CONSUMERS);
	/* Untorn words the server thread reads on its next poll. */
	/* A positive timeout stays positive (0 means never). */
	uint32_t ms = (uint32_t)(stall_timeout_s * 1000 + 0.5);
	WRITE_ONCE(s->stall_ms, stall_timeout_s > 0 && ms == 0 ? 1 : ms);
	WRITE_ONCE(s->max_consumers, max_consumers);
	return 0;
}

int ts_server_set_job_timeout(struct ts_server *s, double job_timeout_s,
			      struct ts_error *err)
{
	if (!(job_timeout_s <= TS_SERVER_STALL_TIMEOUT_MAX_S))
		return ts_error_set(err, TS_E_ARG, "job timeout %g s: want 0 (never) .. %d s",
				    job_timeout_s, TS_SERVER_STALL_TIMEOUT_MAX_S);
	uint32_t ms = UINT32_MAX;
	if (job_timeout_s >= 0) {
		/* A positive timeout stays positive (0 means never). */
		ms = (uint32_t)(job_timeout_s * 1000 + 0.5);
		if (job_timeout_s > 0 && ms == 0)
			ms = 1;
	}
	WRITE_ONCE(s->job_ms, ms); /* an untorn word the server thread reads */
	return 0;
}

bool ts_server_take_note(struct ts_server *s, char *buf, size_t n)
{
	bool got = false;
	pthread_mutex_lock(&s->note_lock);
	if (s->n_notes) {
		snprintf(buf, n, "%s", s->notes[s->note_head]);
		s->note_head = (s->note_head + 1) % MAX_NOTES;
		s->n_notes--;
		got = true;
	}
	pthread_mutex_unlock(&s->note_lock);
	return got;
}

void ts_server_forget_in_child(struct ts_server *s)
{
	if (!s)
		return;
	if (s->lfd >= 0)
		close(s->lfd);
	s->lfd = -1;
	for (size_t i = 0; i < s->n_conns && i < MAX_CONNS; i++)
		if (s->conns[i].fd >= 0)
			close(s->conns[i].fd);
}

const char *ts_server_path(const struct ts_server *s)
{
	return s->path;
}

unsigned ts_server_consumers(struct ts_server *s)
{
	return READ_ONCE(s->n_welcomed); /* untorn; a snapshot, orders nothing */
}

void ts_server_stat(struct ts_server *s, struct ts_ring_stat *out)
{
	ts_ring_stat(s->ring, out);
}
