/* tsclient.c - libtsclient: connect, hello/welcome, and batches cut from
 * the mapped ring by the shared reader (runtime/ring.c). */
#include "tsclient.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "util.h"

struct ts_client {
	int sock;
	struct ts_ring_reader *rd;
	struct ts_client_info info;
	int timeout_ms;
	bool dead;
	bool has_device;
	struct ts_client_device_info dev;
	unsigned char dev_uuid[16];   /* the producer's GPU (tsclient_cuda.c) */
};

TS_EXPORT void ts_client_opts_init(struct ts_client_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms = -1;
	o->connect_timeout_ms = 5000;
}

/* Liveness between futex slices: the kernel hangs up the socket when the
 * producer dies, so a zero-timeout poll is the whole check. */
static int client_alive(void *arg)
{
	struct ts_client *c = arg;
	struct pollfd p = { c->sock, POLLIN | POLLRDHUP, 0 };
	if (poll(&p, 1, 0) > 0 &&
	    (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLIN))) {
		c->dead = true;
		return TS_E_PRODUCER;
	}
	return 0;
}

TS_EXPORT int ts_client_connect(const char *socket_path,
				const struct ts_client_opts *opts,
				struct ts_client **out, struct ts_error *err)
{
	struct ts_client_opts o;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ts_client *c = NULL;
	int fds[2] = { -1, -1 }, nfds = 0;
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	uint16_t type, len;
	int rc;

	if (!socket_path || !out)
		return ts_error_set(err, TS_E_ARG, "no socket path");
	if (strlen(socket_path) >= sizeof(a.sun_path))
		return ts_error_set(err, TS_E_ARG, "socket path too long: %s",
				    socket_path);
	if (opts)
		o = *opts;
	else
		ts_client_opts_init(&o);
	c = calloc(1, sizeof(*c));
	if (!c)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	c->timeout_ms = o.timeout_ms;
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0) {
		rc = ts_error_set(err, -errno, "socket: %s", strerror(errno));
		goto fail;
	}
	memcpy(a.sun_path, socket_path, strlen(socket_path) + 1);
	if (connect(c->sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = ts_error_set(err, -errno, "cannot connect to %s: %s%s",
				  socket_path, strerror(errno),
				  errno == ENOENT || errno == ECONNREFUSED
					  ? " (is tsrun serving there?)" : "");
		goto fail;
	}
	struct ts_proto_hello h = {
		.version = TS_PROTO_VERSION,
		.batch = o.batch_size,
		.join = o.join == TS_CLIENT_JOIN_NEXT_EPOCH,
		.drop_last = o.drop_last != 0,
		.pid = (uint32_t)getpid(),
	};
	int sent = ts_proto_send(c->sock, buf, ts_proto_put_hello(buf, &h), NULL, 0);
	/* A producer that refuses us at once (permission) may have closed
	 * before our hello arrived: its refusal is still there to read. */
	struct ts_error rerr = {0};
	rc = ts_proto_recv(c->sock, o.connect_timeout_ms, &type,
			   buf, &len, fds, &nfds, &rerr);
	if (rc < 0 && sent < 0) {
		rc = ts_error_set(err, sent, "cannot send hello: %s", strerror(-sent));
		goto fail;
	}
	if (rc < 0) {
		if (err)
			*err = rerr;
		goto fail;
	}
	if (type == TS_MSG_REFUSE) {
		struct ts_proto_refuse r;
		rc = ts_proto_get_refuse(buf, len, &r, err);
		if (rc == 0)
			rc = ts_error_set(err, TS_E_REFUSED, "refused: %s", r.text);
		goto fail;
	}
	struct ts_proto_welcome w;
	if (type != TS_MSG_WELCOME) {
		rc = ts_error_set(err, TS_E_PROTOCOL, "expected a welcome");
		goto fail;
	}
	rc = ts_proto_get_welcome(buf, len, &w, err);
	if (rc < 0)
		goto fail;
	if (nfds != 2) {
		rc = ts_error_set(err, TS_E_PROTOCOL,
				  "welcome carried %d descriptors, expected 2",
				  nfds);
		goto fail;
	}
	struct ts_ring_reader_opts ro = { w.batch, o.drop_last != 0, w.start,
					  w.min_epoch,
					  o.join != TS_CLIENT_JOIN_NEXT_EPOCH && w.start > 0,
					  o.join == TS_CLIENT_JOIN_NEXT_EPOCH };
	rc = ts_ring_reader_open(fds[0], fds[1], &ro, &c->rd, err);
	if (rc < 0)
		goto fail;
	c->info = (struct ts_client_info){
		.height = (int)w.height, .width = (int)w.width,
		.channels = (int)w.channels, .dtype = (int)w.dtype,
		.layout = (int)w.layout, .sample_bytes = w.sample_bytes,
		.batch_size = w.batch, .capacity = w.capacity,
		.samples_per_epoch = w.samples_per_epoch, .epochs = w.epochs,
		.start = w.start, .start_epoch = w.min_epoch,
		.producer_pid = (int)w.producer_pid,
	};
	if (w.has_device) {
		const struct ts_proto_device *d = &w.device;
		c->has_device = true;
		c->dev = (struct ts_client_device_info){
			.height = (int)w.height, .width = (int)w.width,
			.channels = (int)w.channels, .dtype = (int)d->dtype,
			.layout = (int)d->layout, .sample_bytes = d->sample_bytes,
			.capacity = d->capacity, .mirror = d->mirror,
			.producer_device = d->device, .producer_pid = d->pid,
		};
		memcpy(c->dev.pci_bus_id, d->pci_bus_id, sizeof(c->dev.pci_bus_id));
		_Static_assert(sizeof(c->dev.ipc) == sizeof(d->ipc), "IPC handle sizes");
		memcpy(c->dev.ipc, d->ipc, sizeof(d->ipc));
		memcpy(c->dev_uuid, d->uuid, sizeof(c->dev_uuid));
	}
	/* The mappings keep the memory; the descriptors are not needed. */
	close(fds[0]);
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

TS_EXPORT int ts_client_device_info(const struct ts_client *c,
				    struct ts_client_device_info *out,
				    struct ts_error *err)
{
	if (!c->has_device)
		return ts_error_set(err, TS_E_NODEV,
				    "the producer serves no device ring (its pipeline has no "
				    "device(cuda) stage, or it found no GPU); batches are the "
				    "host ring's %s samples",
				    c->info.dtype == TS_CLIENT_UINT8 ? "uint8" : "CPU");
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

TS_EXPORT int ts_client_next(struct ts_client *c, struct ts_batch *b,
			     struct ts_error *err)
{
	struct ts_ring_batch rb;
	int rc;

	if (!c || !b)
		return ts_error_set(err, TS_E_ARG, "NULL client or batch");
	if (c->dead)
		return ts_error_set(err, TS_E_PRODUCER, "the producer is gone");
	rc = ts_ring_reader_next(c->rd, &rb, c->timeout_ms, client_alive, c, err);
	if (rc == TS_E_PRODUCER && c->dead)
		return ts_error_set(err, rc, "the producer hung up (died or "
				    "stopped) before the end of the stream");
	if (rc < 0)
		return rc;
	b->data = rb.data;
	b->n = rb.n;
	b->labels = rb.labels;
	b->height = c->info.height;
	b->width = c->info.width;
	b->channels = c->info.channels;
	b->dtype = c->info.dtype;
	b->layout = c->info.layout;
	b->sample_bytes = c->info.sample_bytes;
	b->epoch = rb.epoch;
	b->index = rb.index;
	b->seq = rb.seq;
	return 0;
}

TS_EXPORT void ts_client_release(struct ts_client *c, const struct ts_batch *b)
{
	if (!c || !b)
		return;
	struct ts_ring_batch rb = { .n = b->n, .seq = b->seq };
	ts_ring_reader_release(c->rd, &rb);
}

TS_EXPORT void ts_client_close(struct ts_client *c)
{
	if (!c)
		return;
	ts_ring_reader_destroy(c->rd);
	if (c->sock >= 0)
		close(c->sock);
	free(c);
}

TS_EXPORT const char *ts_client_strerror(int code)
{
	return ts_error_name(code);
}
