/* tsclient.c - libtsclient: connect, hello/welcome, and batches cut from
 * the mapped ring by the shared reader (runtime/ring.c). */
#include "tsclient_private.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "util.h"

/* Linux 5.14's madvise advice values, for older headers. */
#ifdef MADV_POPULATE_READ
#define TS_MADV_POPULATE_READ MADV_POPULATE_READ
#define TS_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define TS_MADV_POPULATE_READ 22
#define TS_MADV_POPULATE_WRITE 23
#endif

struct ts_client {
	int sock;
	int ring_fd;       /* kept for ts_client_span_map */
	bool held;         /* ts_client_next_held's hold mode is on */
	int pidfd;          /* the producer process, or -1 */
	struct ts_ring_reader *rd;
	struct ts_client_info info;
	int timeout_ms;
	bool dead;
	bool has_device;
	struct ts_client_device_info dev;
	unsigned char dev_uuid[16];   /* the producer's GPU (tsclient_cuda.c) */
	bool has_fallback;            /* device(cuda) promised, host ring served */
	struct ts_client_fallback fallback;
	struct ts_ring_info ring;      /* tensor shapes, from the ring header */
	const void *label_data;        /* of the last batch, or NULL */
	uint64_t label_seq;            /* its first seq */
	size_t label_n;                /* and its samples */
	/* ts_client_stats' window: two buckets of WINDOW_S, each where the
	 * reader's accounting stood when it opened. */
	struct { double t, waited; uint64_t handed; } win_prev, win_open;
};

#define WINDOW_S 5.0

static void opts_defaults(struct ts_client_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	/* Whole epochs: trainers of a sweep start seconds apart (importing
	 * torch alone takes that), and each should train on whole epochs. */
	o->join = TS_CLIENT_JOIN_NEXT_EPOCH;
	o->timeout_ms = -1;
	o->connect_timeout_ms = 5000;
}

/* size is the caller's sizeof (ts_client_opts_init passes it): no byte
 * past it is written. */
TS_EXPORT void ts_client_opts_init_size(struct ts_client_opts *o, size_t size)
{
	struct ts_client_opts d;
	opts_defaults(&d);
	ts_sized_init(o, size, &d, sizeof(d));
}

static int env_uint(const char *name, uint32_t *out, struct ts_error *err)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return ts_error_set(err, TS_E_ARG,
				    "%s is not set: start the trainer with torchrun, or give "
				    "the rank and world size yourself", name);
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || *end || *v == '-' || x > 0xffffffffUL)
		return ts_error_set(err, TS_E_ARG, "%s='%s' is not a non-negative integer",
				    name, v);
	*out = (uint32_t)x;
	return 0;
}

TS_EXPORT int ts_client_opts_torchrun(struct ts_client_opts *o, const char *job,
				      struct ts_error *err)
{
	uint32_t rank = 0, world = 0;
	int rc = env_uint("LOCAL_RANK", &rank, err);
	if (rc == 0)
		rc = env_uint("LOCAL_WORLD_SIZE", &world, err);
	if (rc)
		return rc;
	o->job = job;
	o->rank = rank;
	o->world_size = world;
	return 0;
}

/* A job's name, rank and world size as the producer will take them. */
static int check_job(const struct ts_client_opts *o, struct ts_error *err)
{
	if (o->job && o->resume)
		return ts_error_set(err, TS_E_ARG,
				    "resume is for a lone trainer: a job's ranks resume "
				    "exactly from a producer restarted with tsrun run --start");
	if (!o->job)
		return o->world_size || o->rank
			       ? ts_error_set(err, TS_E_ARG,
					      "rank and world_size are for a job: name it too")
			       : 0;
	size_t n = strlen(o->job);
	bool ok = n >= 1 && n <= TS_PROTO_JOB_MAX;
	for (size_t i = 0; ok && i < n; i++)
		ok = (unsigned char)o->job[i] > 0x20 && (unsigned char)o->job[i] < 0x7f;
	if (!ok)
		return ts_error_set(err, TS_E_ARG,
				    "job name '%.80s' must be 1 to %d printable characters "
				    "without spaces", o->job, TS_PROTO_JOB_MAX);
	if (o->world_size < 1 || o->world_size > TS_RING_MAX_CONSUMERS ||
	    o->rank >= o->world_size)
		return ts_error_set(err, TS_E_ARG,
				    "rank %u of world size %u: a job has 1 to %d ranks, "
				    "numbered 0 to world_size - 1",
				    o->rank, o->world_size, TS_RING_MAX_CONSUMERS);
	return 0;
}

/* Liveness between futex slices: the kernel hangs up the socket when the
 * producer dies, so a zero-timeout poll is the whole check. */
static int client_alive(void *arg)
{
	struct ts_client *c = arg;
	struct pollfd p[2] = { { c->sock, POLLIN | POLLRDHUP, 0 }, { c->pidfd, POLLIN, 0 } };
	if (poll(p, c->pidfd >= 0 ? 2 : 1, 0) > 0 &&
	    ((p[0].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLIN)) ||
	     (c->pidfd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))))) {
		c->dead = true;
		return TS_E_PRODUCER;
	}
	return 0;
}

/* A pidfd of the process serving the socket (SO_PEERCRED names it in our
 * pid namespace), or -1. The socket alone is not enough: a child the
 * producer forked after we connected (a DataLoader worker under
 * tsrun.serve) holds our connection open after its parent died, so the
 * hang-up would come only when the children go too. A pidfd reads ready
 * once that very process has exited, and is never another process that
 * reused the pid. -1 on kernels without pidfd_open (the socket remains). */
static int producer_pidfd(int sock)
{
#ifdef SYS_pidfd_open
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0)
		return -1;
	/* pidfd_open's descriptor is close-on-exec. */
	return (int)syscall(SYS_pidfd_open, cr.pid, 0);
#else
	(void)sock;
	return -1;
#endif
}

/* The producer must run as this user, as root, or as a uid named in
 * TSRUN_PRODUCER_UID (comma-separated): in a folder others can write
 * (/tmp), another user could bind the socket first and serve batches of
 * their choosing. 0, or TS_E_REFUSED saying who it is and what to do. */
static int check_producer(int sock, const char *socket_path, struct ts_error *err)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return ts_error_set(err, -errno, "cannot learn who serves %s: %s", socket_path,
				    strerror(errno));
	if (cr.uid == geteuid() || cr.uid == 0)
		return 0;
	const char *env = getenv("TSRUN_PRODUCER_UID");
	while (env && *env) {
		char *end = NULL;
		unsigned long u = strtoul(env, &end, 10);
		if (end != env && u == (unsigned long)cr.uid)
			return 0;
		env = end && *end == ',' ? end + 1 : NULL;
	}
	return ts_error_set(err, TS_E_REFUSED,
			    "refusing the producer on %s: it runs as uid %u, not as you "
			    "(uid %u); another user may have bound this socket first. If "
			    "that user's tsrun is meant, set TSRUN_PRODUCER_UID=%u",
			    socket_path, (unsigned)cr.uid, (unsigned)geteuid(), (unsigned)cr.uid);
}

/* connect(2) to the producer's socket, saying what a path that is no
 * socket is. */
static int connect_socket(struct ts_client *c, const char *socket_path, struct ts_error *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0)
		return ts_error_set(err, -errno, "socket: %s", strerror(errno));
	memcpy(a.sun_path, socket_path, strlen(socket_path) + 1);
	if (connect(c->sock, (struct sockaddr *)&a, sizeof(a)) == 0)
		return 0;
	struct stat st;
	if (errno == ECONNREFUSED && stat(socket_path, &st) == 0 && !S_ISSOCK(st.st_mode))
		/* connect(2) on a regular file is "refused": say what it is */
		return ts_error_set(err, -ENOTSOCK,
				    "cannot connect to %s: it is not a socket (a pipeline "
				    "file? start `tsrun run %s` and point the trainer at "
				    "the socket its serve block names, socket = ...)",
				    socket_path, socket_path);
	return ts_error_set(err, -errno, "cannot connect to %s: %s%s", socket_path,
			    strerror(errno),
			    errno == ENOENT || errno == ECONNREFUSED ? " (is tsrun serving there?)"
								     : "");
}

/* Our hello, and the producer's answer: 0 with its welcome in *w and the
 * two descriptors it carries in fds (*nfds of them, to close on failure
 * too), or the refusal or protocol error. */
static int exchange_hello(struct ts_client *c, const struct ts_client_opts *o,
			  const struct ts_proto_hello *h, struct ts_proto_welcome *w,
			  int fds[2], int *nfds, struct ts_error *err)
{
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	uint16_t type, len;
	int sent = ts_proto_send(c->sock, buf, ts_proto_put_hello(buf, h), NULL, 0);
	/* A producer that refuses us at once (permission) may have closed
	 * before our hello arrived: its refusal is still there to read. */
	struct ts_error rerr = {0};
	int rc = ts_proto_recv(c->sock, o->connect_timeout_ms, &type, buf, &len, fds, nfds,
			       &rerr);
	if (rc < 0 && sent < 0)
		return ts_error_set(err, sent, "cannot send hello: %s", strerror(-sent));
	if (rc < 0) {
		if (err)
			*err = rerr;
		return rc;
	}
	if (type == TS_MSG_REFUSE) {
		struct ts_proto_refuse r;
		rc = ts_proto_get_refuse(buf, len, &r, err);
		return rc < 0 ? rc : ts_error_set(err, TS_E_REFUSED, "refused: %s", r.text);
	}
	if (type != TS_MSG_WELCOME)
		return ts_error_set(err, TS_E_PROTOCOL, "expected a welcome");
	rc = ts_proto_get_welcome(buf, len, w, err);
	if (rc < 0)
		return rc;
	if (*nfds != 2)
		return ts_error_set(err, TS_E_PROTOCOL, "welcome carried %d descriptors, expected 2",
				    *nfds);
	return 0;
}

/* What the welcome says of the stream, its device ring and a fallback,
 * into c. */
static void take_welcome(struct ts_client *c, const struct ts_proto_welcome *w)
{
	c->info = (struct ts_client_info){
		.height = (int)w->height, .width = (int)w->width,
		.channels = (int)w->channels, .dtype = (int)w->dtype,
		.layout = (int)w->layout, .sample_bytes = w->sample_bytes,
		.batch_size = w->batch, .capacity = w->capacity,
		.samples_per_epoch = w->samples_per_epoch, .epochs = w->epochs,
		.start = w->start, .start_epoch = w->min_epoch,
		.producer_pid = (int)w->producer_pid,
		.sample_stride = c->ring.sample_stride,
	};
	if (w->has_device) {
		const struct ts_proto_device *d = &w->device;
		c->has_device = true;
		c->dev = (struct ts_client_device_info){
			.height = (int)w->height, .width = (int)w->width,
			.channels = (int)w->channels, .dtype = (int)d->dtype,
			.layout = (int)d->layout, .sample_bytes = d->sample_bytes,
			.capacity = d->capacity, .mirror = d->mirror,
			.producer_device = d->device, .producer_pid = d->pid,
			.sample_stride = d->sample_stride,
		};
		memcpy(c->dev.pci_bus_id, d->pci_bus_id, sizeof(c->dev.pci_bus_id));
		_Static_assert(sizeof(c->dev.ipc) == sizeof(d->ipc), "IPC handle sizes");
		memcpy(c->dev.ipc, d->ipc, sizeof(d->ipc));
		memcpy(c->dev_uuid, d->uuid, sizeof(c->dev_uuid));
	}
	if (w->has_fallback) {
		const struct ts_proto_fallback *f = &w->fallback;
		c->has_fallback = true;
		c->fallback.dtype = (int)f->dtype;
		c->fallback.normalize = (int)f->normalize;
		memcpy(c->fallback.mean, f->mean, sizeof(f->mean));
		memcpy(c->fallback.std, f->std, sizeof(f->std));
		_Static_assert(sizeof(c->fallback.why) == sizeof(f->why), "fallback reason");
		memcpy(c->fallback.why, f->why, sizeof(f->why));
	}
}

/*
 * The seals the protocol promises (tensorsocket(7), Access): the ring's
 * and the control page's memfds cannot shrink or grow, so a producer (one
 * trusted through TSRUN_PRODUCER_UID, say) cannot truncate them under this
 * trainer's mappings (SIGBUS). F_SEAL_FUTURE_WRITE is not asked: kernels
 * before 5.1 lack it, and the ring descriptor is read-only anyway.
 */
static int check_seals(int ring_fd, int ctl_fd, struct ts_error *err)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW;
	int fds[2] = { ring_fd, ctl_fd };
	static const char *const what[2] = { "ring", "control page" };
	for (int i = 0; i < 2; i++) {
		int seals = fcntl(fds[i], F_GET_SEALS);
		char got[64];
		if (seals < 0)
			snprintf(got, sizeof(got), "F_GET_SEALS: %s", strerror(errno));
		else
			snprintf(got, sizeof(got), "F_GET_SEALS %#x", (unsigned)seals);
		if (seals < 0 || (seals & want) != want)
			return ts_error_set(err, TS_E_PROTOCOL,
					    "refusing the producer's %s descriptor: it is not sealed "
					    "against shrinking and growing (%s), as the protocol "
					    "promises, so the producer could truncate it under this "
					    "trainer; is this a tsrun producer?", what[i], got);
	}
	return 0;
}

TS_EXPORT int ts_client_connect(const char *socket_path,
				const struct ts_client_opts *opts,
				struct ts_client **out, struct ts_error *err)
{
	struct ts_client_opts o;
	struct ts_client *c = NULL;
	int fds[2] = { -1, -1 }, nfds = 0;
	int rc;

	if (!socket_path || !out)
		return ts_error_set(err, TS_E_ARG, "no socket path");
	if (strlen(socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return ts_error_set(err, TS_E_ARG, "socket path too long: %s",
				    socket_path);
	/* the fields the caller's header has; defaults for the rest */
	opts_defaults(&o);
	if (opts) {
		rc = ts_sized_in(&o, sizeof(o), opts, "struct ts_client_opts",
				 "ts_client_opts_init sets it", err);
		if (rc)
			return rc;
	}
	/* the hello carries an epoch in 32 bits */
	if (o.resume && o.resume_epoch > UINT32_MAX)
		return ts_error_set(err, TS_E_ARG,
				    "ts_client_connect: resume_epoch %llu is past the last epoch "
				    "a stream can count (%u: the ring holds epochs in 32 bits)",
				    (unsigned long long)o.resume_epoch, UINT32_MAX);
	rc = check_job(&o, err);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	c->timeout_ms = o.timeout_ms;
	c->ring_fd = -1;
	c->pidfd = -1;
	if ((rc = connect_socket(c, socket_path, err)) < 0 ||
	    (rc = check_producer(c->sock, socket_path, err)) < 0)
		goto fail;
	struct ts_proto_hello h = {
		.version = TS_PROTO_VERSION,
		.batch = o.batch_size,
		.join = o.join == TS_CLIENT_JOIN_NEXT_EPOCH,
		.drop_last = o.drop_last != 0,
		.pid = (uint32_t)getpid(),
		.rank = o.job ? o.rank : 0,
		.world = o.job ? o.world_size : 0,
		.job_drop = o.job && o.job_drop_last,
	};
	if (o.job)
		snprintf(h.job, sizeof(h.job), "%s", o.job);
	if (o.resume) {
		h.resume = true;
		h.has_resume_epochs = o.has_resume_epochs != 0;
		h.resume_epoch = (uint32_t)o.resume_epoch; /* checked at connect */
		h.resume_index = o.resume_index;
		h.resume_epochs = o.resume_epochs;
	}
	struct ts_proto_welcome w;
	if ((rc = exchange_hello(c, &o, &h, &w, fds, &nfds, err)) < 0 ||
	    (rc = check_seals(fds[0], fds[1], err)) < 0)
		goto fail;
	struct ts_ring_reader_opts ro = {
		.batch = w.batch, .drop_last = o.drop_last != 0, .start = w.start,
		.min_epoch = w.min_epoch,
		/* a resume begins at its index of the welcome's epoch */
		.min_index = o.resume ? o.resume_index : 0,
		.align = !o.resume && o.join != TS_CLIENT_JOIN_NEXT_EPOCH && w.start > 0,
		.align_epoch = !o.resume && o.join == TS_CLIENT_JOIN_NEXT_EPOCH,
		.rank = h.rank, .world = h.world, .job_drop = h.job_drop != 0,
	};
	rc = ts_ring_reader_open(fds[0], fds[1], &ro, &c->rd, err);
	if (rc < 0)
		goto fail;
	ts_ring_reader_get_info(c->rd, &c->ring);
	struct ts_ring_reader_acct acct;
	ts_ring_reader_acct(c->rd, &acct);
	c->win_prev.t = c->win_open.t = acct.opened;
	take_welcome(c, &w);
	c->pidfd = producer_pidfd(c->sock);
	/* The mappings keep the memory; the ring's descriptor stays for
	 * the private mappings of ts_client_span_map. */
	c->ring_fd = fds[0];
	close(fds[1]);
	*out = c;
	return 0;
fail:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	ts_client_close(c);
	return rc;
}

TS_EXPORT void ts_client_info(const struct ts_client *c,
			      struct ts_client_info *out)
{
	*out = c->info;
}

TS_EXPORT uint64_t ts_client_end_epoch(const struct ts_client *c)
{
	return c && c->rd ? ts_ring_reader_end_epoch(c->rd) : 0;
}

TS_EXPORT void ts_client_node(const struct ts_client *c, uint32_t *index,
			      uint32_t *count)
{
	*index = c->ring.node_index;
	*count = c->ring.node_count;
}

TS_EXPORT int ts_client_device_info(const struct ts_client *c,
				    struct ts_client_device_info *out,
				    struct ts_error *err)
{
	if (!c->has_device)
		return ts_error_set(err, TS_E_NODEV,
				    "the producer serves no device ring (its pipeline has no "
				    "device(cuda) stage, or it found no GPU); batches are the "
				    "host ring's %s samples",
				    c->info.dtype == TS_DTYPE_U8 ? "uint8" : "CPU");
	*out = c->dev;
	return 0;
}

TS_EXPORT int ts_client_device_uuid(const struct ts_client *c, unsigned char uuid[16],
				    struct ts_error *err)
{
	if (!c->has_device)
		return ts_error_set(err, TS_E_NODEV, "the producer serves no device ring");
	memcpy(uuid, c->dev_uuid, sizeof(c->dev_uuid));
	return 0;
}

/* Open a new bucket of the stats window once the open one is WINDOW_S
 * old: a compare per batch, on the time the reader took as its call
 * returned. */
static void window_roll(struct ts_client *c)
{
	struct ts_ring_reader_acct a;
	ts_ring_reader_acct(c->rd, &a);
	double t = a.last > 0 ? a.last : ts_clock_now();
	if (t - c->win_open.t < WINDOW_S)
		return;
	c->win_prev = c->win_open;
	c->win_open.t = t;
	c->win_open.waited = a.waited;
	c->win_open.handed = a.handed;
}

TS_EXPORT void ts_client_stats(const struct ts_client *c, struct ts_client_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	struct ts_ring_reader_acct a;
	ts_ring_reader_acct(c->rd, &a);
	double t = ts_clock_now();
	out->connected_s = t > a.opened ? t - a.opened : 0.0;
	out->wait_s = a.waited < out->connected_s ? a.waited : out->connected_s;
	out->wait_fraction = out->connected_s > 0 ? out->wait_s / out->connected_s : 0.0;
	out->samples = a.handed;
	out->batches = a.batches;
	double span = t - c->win_prev.t;
	if (span > 0) {
		double w = a.waited - c->win_prev.waited;
		out->window_s = span;
		out->window_wait_fraction = w <= 0 ? 0.0 : w >= span ? 1.0 : w / span;
		out->window_samples_per_s = a.handed > c->win_prev.handed
			? (double)(a.handed - c->win_prev.handed) / span : 0.0;
	}
}

TS_EXPORT void ts_client_unused(struct ts_client *c, size_t n)
{
	if (c && c->rd)
		ts_ring_reader_unused(c->rd, n);
}

TS_EXPORT int ts_client_device_fallback(const struct ts_client *c,
					struct ts_client_fallback *out)
{
	if (!c || !c->has_fallback)
		return 0;
	if (out)
		*out = c->fallback;
	return 1;
}

static int client_next(struct ts_client *c, struct ts_batch *b,
		       struct ts_error *err)
{
	struct ts_ring_batch rb;
	int rc;

	/* A detach (stall_timeout) hangs up too: say which it was. */
	if (c->dead)
		return ts_ring_reader_detached(c->rd, err) < 0
			       ? TS_E_DETACHED
			       : ts_error_set(err, TS_E_PRODUCER, "the producer is gone");
	rc = ts_ring_reader_next(c->rd, &rb, c->timeout_ms, client_alive, c, err);
	window_roll(c);
	if (rc == TS_E_PRODUCER && c->dead)
		return ts_ring_reader_detached(c->rd, err) < 0
			       ? TS_E_DETACHED
			       : ts_error_set(err, rc, "the producer hung up (died or "
					      "stopped) before the end of the stream");
	if (rc < 0)
		return rc;
	c->label_data = rb.label_data;
	c->label_seq = rb.seq;
	c->label_n = rb.n;
	memset(b, 0, sizeof(*b)); /* the reserved words too */
	b->data = rb.data;
	b->n = rb.n;
	b->labels = rb.labels;
	b->height = c->info.height;
	b->width = c->info.width;
	b->channels = c->info.channels;
	b->dtype = c->info.dtype;
	b->layout = c->info.layout;
	b->sample_bytes = c->info.sample_bytes;
	b->sample_stride = c->info.sample_stride;
	b->epoch = rb.epoch;
	b->index = rb.index;
	b->seq = rb.seq;
	return 0;
}

TS_EXPORT int ts_client_next(struct ts_client *c, struct ts_batch *b,
			     struct ts_error *err)
{
	if (!c || !b)
		return ts_error_set(err, TS_E_ARG, "NULL client or batch");
	if (c->held) {
		ts_ring_reader_set_hold(c->rd, false);
		c->held = false;
	}
	return client_next(c, b, err);
}

TS_EXPORT void ts_client_sample_tensor(const struct ts_client *c,
				       struct ts_client_tensor *out)
{
	const struct ts_ring_info *r = &c->ring;
	memset(out, 0, sizeof(*out));
	out->dtype = c->info.dtype;
	out->bytes = c->info.sample_bytes;
	if (r->ndim > 0) {
		out->ndim = r->ndim;
		for (int i = 0; i < r->ndim; i++)
			out->dims[i] = (int64_t)r->dims[i];
		return;
	}
	out->ndim = 3;
	bool nchw = c->info.layout == TS_LAYOUT_NCHW;
	out->dims[0] = nchw ? c->info.channels : c->info.height;
	out->dims[1] = nchw ? c->info.height : c->info.width;
	out->dims[2] = nchw ? c->info.width : c->info.channels;
}

TS_EXPORT int ts_client_views(const struct ts_client *c)
{
	return c ? c->ring.n_views : 0;
}

TS_EXPORT int ts_client_view_info(const struct ts_client *c, int i,
				  struct ts_client_view *out, struct ts_error *err)
{
	if (!c || i < 0 || i >= c->ring.n_views)
		return ts_error_set(err, TS_E_ARG, "no view %d: the producer's samples have %d "
				    "view%s", i, c ? c->ring.n_views : 0,
				    c && c->ring.n_views == 1 ? "" : "s");
	const struct ts_ring_view *v = &c->ring.views[i];
	*out = (struct ts_client_view){
		.height = (int)v->height, .width = (int)v->width, .channels = (int)v->channels,
		.dtype = (int)v->dtype, .layout = (int)v->layout, .group = (int)v->group,
		.offset = (size_t)v->offset, .bytes = (size_t)v->bytes,
	};
	return 0;
}

TS_EXPORT int ts_client_label_tensor(const struct ts_client *c,
				     struct ts_client_tensor *out,
				     struct ts_error *err)
{
	const struct ts_ring_info *r = &c->ring;
	if (!r->label_bytes)
		return ts_error_set(err, TS_E_STATE, "the producer's labels are integer "
				    "classes (ts_batch.labels), not tensors");
	memset(out, 0, sizeof(*out));
	out->ndim = r->label_ndim;
	out->dtype = (int)r->label_dtype;
	for (int i = 0; i < r->label_ndim; i++)
		out->dims[i] = (int64_t)r->label_dims[i];
	out->bytes = r->label_bytes;
	return 0;
}

TS_EXPORT const void *ts_client_batch_label_data(const struct ts_client *c,
						 const struct ts_batch *b)
{
	/* b may be the tail of the last batch (a caller that resumes inside
	 * it drops its first samples). */
	if (!c || !b || !c->label_data || b->seq < c->label_seq ||
	    b->seq + b->n > c->label_seq + c->label_n)
		return NULL;
	return (const uint8_t *)c->label_data + (b->seq - c->label_seq) * c->ring.label_bytes;
}

TS_EXPORT void ts_client_release(struct ts_client *c, const struct ts_batch *b)
{
	if (!c || !b)
		return;
	struct ts_ring_batch rb = { .n = b->n, .seq = b->seq };
	ts_ring_reader_release(c->rd, &rb);
}

/* Not exported (tsclient_cuda.c): the trainer is done with the stream
 * and with the producer's device ring (it ended, and the IPC mapping is
 * closed), so it says so the only way a welcomed consumer speaks: it
 * shuts its sending side, which the producer sees as its hang-up. The
 * producer's teardown then waits for the mappings still open, not for
 * the sockets that idle trainers keep. */
void ts_client_hang_up(struct ts_client *c);

void ts_client_hang_up(struct ts_client *c)
{
	if (c && c->sock >= 0)
		shutdown(c->sock, SHUT_WR);
}

TS_EXPORT void ts_client_close(struct ts_client *c)
{
	if (!c)
		return;
	ts_ring_reader_destroy(c->rd);
	if (c->sock >= 0)
		close(c->sock);
	if (c->ring_fd >= 0)
		close(c->ring_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}

TS_EXPORT int ts_client_next_held(struct ts_client *c, struct ts_batch *b,
				  struct ts_error *err)
{
	if (!c || !b)
		return ts_error_set(err, TS_E_ARG, "NULL client or batch");
	if (!c->held) {
		ts_ring_reader_set_hold(c->rd, true);
		c->held = true;
	}
	return client_next(c, b, err);
}

TS_EXPORT void ts_client_release_below(struct ts_client *c, uint64_t seq)
{
	if (c && c->held)
		ts_ring_reader_release_below(c->rd, seq);
}

/*
 * MAP_PRIVATE with PROT_WRITE needs no write access to the file (a
 * read-only descriptor of a write-sealed memfd allows it): pages are the
 * ring's until written, then this process's own. The data region is a
 * page multiple, so a batch that wraps is two mappings back to back, as
 * the reader's double mapping is.
 */
TS_EXPORT int ts_client_span_map(struct ts_client *c, const struct ts_batch *b,
				 struct ts_client_span *out, struct ts_error *err)
{
	uint64_t off, bytes;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!c || !b || !out || b->n == 0)
		return ts_error_set(err, TS_E_ARG, "NULL client, batch or span");
	ts_ring_reader_data_region(c->rd, &off, &bytes);
	uint64_t start = (b->seq % c->info.capacity) * c->info.sample_stride;
	uint64_t end = start + (uint64_t)(b->n - 1) * c->info.sample_stride +
		       c->info.sample_bytes;
	uint64_t lo = start / page * page;
	uint64_t hi = ts_round_up(end, page);
	if (end > 2 * bytes)
		return ts_error_set(err, TS_E_ARG, "batch larger than the ring");
	uint8_t *base = mmap(NULL, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return ts_error_set(err, -errno, "span: mmap: %s", strerror(errno));
	uint64_t first = (hi < bytes ? hi : bytes) - lo;
	int prot = PROT_READ | PROT_WRITE;
	if (mmap(base, first, prot, MAP_PRIVATE | MAP_FIXED, c->ring_fd,
		 (off_t)(off + lo)) == MAP_FAILED ||
	    (hi > bytes && mmap(base + first, hi - bytes, prot, MAP_PRIVATE | MAP_FIXED,
				c->ring_fd, (off_t)off) == MAP_FAILED)) {
		int rc = -errno;
		munmap(base, hi - lo);
		return ts_error_set(err, rc, "span: private mapping of the ring: %s",
				    strerror(-rc));
	}
	/* Page tables filled now, in one call, rather than by a fault per
	 * 64 KiB on first read; a kernel before 5.14 faults lazily. */
	madvise(base, hi - lo, TS_MADV_POPULATE_READ);
	out->base = base;
	out->len = hi - lo;
	out->data = base + (start - lo);
	return 0;
}

TS_EXPORT int ts_client_span_own(const struct ts_client_span *s, struct ts_error *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!s || !s->base)
		return 0;
	/* A write fault on every page copies what was not copied yet and
	 * changes no byte, also under concurrent writers. */
	if (madvise(s->base, s->len, TS_MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return ts_error_set(err, -errno, "span: copying its pages: %s",
				    strerror(errno));
	/* Before Linux 5.14: an atomic add of 0 is such a write too. */
	for (size_t i = 0; i < s->len; i += page)
		__atomic_fetch_add((uint8_t *)s->base + i, 0, __ATOMIC_RELAXED);
	return 0;
}

/*
 * /proc/self/pagemap, 8 bytes per page: bit 63 present, 62 swapped, 61
 * a file page (or shared anonymous). A page written through a private
 * mapping is present (or swapped) and anonymous: the span is no longer
 * all the ring's.
 */
TS_EXPORT int ts_client_span_clean(const struct ts_client_span *s)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t buf[512];
	int rc = 1;

	if (!s || !s->base)
		return 1;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t first = (uintptr_t)s->base / page, n = s->len / page;
	for (size_t i = 0; i < n && rc == 1;) {
		size_t k = n - i < 512 ? n - i : 512;
		ssize_t got = pread(fd, buf, k * 8, (off_t)((first + i) * 8));
		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		for (size_t j = 0; j < (size_t)got / 8; j++) {
			uint64_t e = buf[j];
			if ((e >> 62 & 1) || ((e >> 63 & 1) && !(e >> 61 & 1))) {
				rc = 0;
				break;
			}
		}
		i += (size_t)got / 8;
	}
	close(fd);
	return rc;
}

TS_EXPORT void ts_client_span_unmap(struct ts_client_span *s)
{
	if (!s || !s->base)
		return;
	munmap(s->base, s->len);
	s->base = NULL;
	s->len = 0;
	s->data = NULL;
}

TS_EXPORT const char *ts_client_strerror(int code)
{
	return ts_error_name(code);
}
