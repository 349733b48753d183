/* proto.c - tensorsocket wire messages: little-endian encode/decode and
 * one-message send/receive with SCM_RIGHTS. */
#include "proto.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static size_t put_header(uint8_t *buf, uint16_t type, uint16_t len)
{
	put32(buf, TS_PROTO_MAGIC);
	put16(buf + 4, type);
	put16(buf + 6, len);
	return TS_PROTO_HDR_LEN;
}

size_t ts_proto_put_hello(uint8_t *buf, const struct ts_proto_hello *m)
{
	size_t len = TS_PROTO_HELLO_LEN + (m->resume ? TS_PROTO_RESUME_LEN : 0);
	uint8_t *b = buf + put_header(buf, TS_MSG_HELLO, (uint16_t)len);
	put32(b, m->version);
	put32(b + 4, m->batch);
	b[8] = m->join;
	b[9] = m->drop_last;
	put16(b + 10, 0);
	put32(b + 12, m->pid);
	put32(b + 16, m->rank);
	put32(b + 20, m->world);
	b[24] = m->job_drop;
	memset(b + 25, 0, 3 + TS_PROTO_JOB_MAX + 1);
	memcpy(b + TS_PROTO_HELLO_JOB_OFF, m->job, strnlen(m->job, TS_PROTO_JOB_MAX));
	if (m->resume) {
		uint8_t *t = b + TS_PROTO_HELLO_LEN;
		put32(t, 1u | (m->has_resume_epochs ? 2u : 0u));
		put64(t + 4, m->resume_index);
		put32(t + 12, m->resume_epoch);
		put32(t + 16, m->resume_epochs);
		put32(t + 20, 0);
	}
	return TS_PROTO_HDR_LEN + len;
}

size_t ts_proto_put_welcome(uint8_t *buf, const struct ts_proto_welcome *m)
{
	size_t len = TS_PROTO_WELCOME_LEN + (m->has_device ? TS_PROTO_DEVICE_LEN :
					     m->has_fallback ? TS_PROTO_FALLBACK_LEN : 0);
	uint8_t *b = buf + put_header(buf, TS_MSG_WELCOME, (uint16_t)len);
	put32(b + 0, m->version);
	put32(b + 4, m->producer_pid);
	put32(b + 8, m->height);
	put32(b + 12, m->width);
	put32(b + 16, m->channels);
	put32(b + 20, m->dtype);
	put32(b + 24, m->layout);
	put32(b + 28, m->epochs);
	put64(b + 32, m->sample_bytes);
	put64(b + 40, m->capacity);
	put64(b + 48, m->samples_per_epoch);
	put64(b + 56, m->start);
	put32(b + 64, m->min_epoch);
	put32(b + 68, m->batch);
	put64(b + 72, m->head);
	if (!m->has_device && m->has_fallback) {
		const struct ts_proto_fallback *f = &m->fallback;
		uint8_t *t = b + TS_PROTO_WELCOME_LEN;
		put32(t + 0, f->dtype);
		put32(t + 4, f->normalize);
		for (int i = 0; i < 4; i++) {
			uint32_t u, v;
			memcpy(&u, &f->mean[i], 4);
			memcpy(&v, &f->std[i], 4);
			put32(t + 8 + 4 * i, u);
			put32(t + 24 + 4 * i, v);
		}
		memset(t + 40, 0, TS_PROTO_FALLBACK_WHY);
		memcpy(t + 40, f->why, strnlen(f->why, TS_PROTO_FALLBACK_WHY - 1));
	}
	if (m->has_device) {
		const struct ts_proto_device *d = &m->device;
		uint8_t *t = b + TS_PROTO_WELCOME_LEN;
		put32(t + 0, d->dtype);
		put32(t + 4, d->layout);
		put64(t + 8, d->sample_bytes);
		put64(t + 16, d->capacity);
		put64(t + 24, d->mirror);
		put32(t + 32, (uint32_t)d->device);
		put32(t + 36, (uint32_t)d->pid);
		memset(t + 40, 0, 16);
		memcpy(t + 40, d->pci_bus_id, strnlen(d->pci_bus_id, 15));
		memcpy(t + 56, d->ipc, 64);
		memcpy(t + 120, d->uuid, 16);
		put64(t + 136, d->sample_stride);
	}
	return TS_PROTO_HDR_LEN + len;
}

size_t ts_proto_put_refuse(uint8_t *buf, const struct ts_proto_refuse *m)
{
	size_t n = strnlen(m->text, TS_PROTO_REFUSE_MAX);
	uint8_t *b = buf + put_header(buf, TS_MSG_REFUSE, (uint16_t)(8 + n));
	put32(b, m->reason);
	put16(b + 4, (uint16_t)n);
	put16(b + 6, 0);
	memcpy(b + 8, m->text, n);
	return TS_PROTO_HDR_LEN + 8 + n;
}

int ts_proto_get_header(const uint8_t *buf, uint16_t *type,
			uint16_t *body_len, struct ts_error *err)
{
	uint32_t magic = get32(buf);
	uint16_t t = get16(buf + 4), len = get16(buf + 6);
	if (magic != TS_PROTO_MAGIC)
		return ts_error_set(err, TS_E_PROTOCOL,
				    "bad magic 0x%08x (not a tensorsocket peer)",
				    magic);
	if (t < TS_MSG_HELLO || t > TS_MSG_REFUSE)
		return ts_error_set(err, TS_E_PROTOCOL, "unknown message type %u", t);
	if (len > TS_PROTO_MAX_BODY)
		return ts_error_set(err, TS_E_PROTOCOL,
				    "message body of %u bytes is too long", len);
	*type = t;
	*body_len = len;
	return 0;
}

int ts_proto_get_hello(const uint8_t *body, size_t len,
		       struct ts_proto_hello *m, struct ts_error *err)
{
	struct ts_proto_hello h;
	if (len < 4)
		return ts_error_set(err, TS_E_PROTOCOL, "hello too short");
	h.version = get32(body);
	if (h.version != TS_PROTO_VERSION) {
		memset(&h.batch, 0, sizeof(h) - sizeof(h.version));
		*m = h;  /* the caller refuses on version */
		return 0;
	}
	if (len != TS_PROTO_HELLO_LEN && len != TS_PROTO_HELLO_LEN + TS_PROTO_RESUME_LEN)
		return ts_error_set(err, TS_E_PROTOCOL,
				    "hello of %zu bytes, expected %d (or %d with a resume)", len,
				    TS_PROTO_HELLO_LEN, TS_PROTO_HELLO_LEN + TS_PROTO_RESUME_LEN);
	h.resume = false;
	h.has_resume_epochs = false;
	h.resume_epoch = 0;
	h.resume_index = 0;
	h.resume_epochs = 0;
	if (len > TS_PROTO_HELLO_LEN) {
		const uint8_t *t = body + TS_PROTO_HELLO_LEN;
		uint32_t flags = get32(t);
		if ((flags & ~3u) || !(flags & 1u) || get32(t + 20) != 0)
			return ts_error_set(err, TS_E_PROTOCOL,
					    "hello with an invalid resume tail (flags %#x)",
					    (unsigned)flags);
		h.resume = true;
		h.has_resume_epochs = (flags & 2u) != 0;
		h.resume_index = get64(t + 4);
		h.resume_epoch = get32(t + 12);
		h.resume_epochs = get32(t + 16);
	}
	h.batch = get32(body + 4);
	h.join = body[8];
	h.drop_last = body[9];
	h.pid = get32(body + 12);
	if (h.join > 1 || h.drop_last > 1 || get16(body + 10) != 0)
		return ts_error_set(err, TS_E_PROTOCOL,
				    "hello with invalid join/drop_last fields");
	h.rank = get32(body + 16);
	h.world = get32(body + 20);
	h.job_drop = body[24];
	memcpy(h.job, body + TS_PROTO_HELLO_JOB_OFF, TS_PROTO_JOB_MAX + 1);
	size_t jl = strnlen(h.job, TS_PROTO_JOB_MAX + 1);
	bool pad_ok = body[25] == 0 && body[26] == 0 && body[27] == 0 &&
		      jl <= TS_PROTO_JOB_MAX;
	for (size_t i = jl; pad_ok && i <= TS_PROTO_JOB_MAX; i++)
		pad_ok = h.job[i] == 0;
	for (size_t i = 0; pad_ok && i < jl; i++)
		pad_ok = (unsigned char)h.job[i] > 0x20 && (unsigned char)h.job[i] < 0x7f;
	if (!pad_ok || h.job_drop > 1 || (h.world == 0) != (jl == 0) ||
	    (h.world == 0 && (h.rank || h.job_drop)) || (h.world && h.rank >= h.world) ||
	    (h.world && h.resume))
		return ts_error_set(err, TS_E_PROTOCOL,
				    "hello with invalid job fields (name, rank %u of %u)",
				    h.rank, h.world);
	*m = h;
	return 0;
}

int ts_proto_get_welcome(const uint8_t *body, size_t len,
			 struct ts_proto_welcome *m, struct ts_error *err)
{
	struct ts_proto_welcome w;
	memset(&w, 0, sizeof(w));
	if (len != TS_PROTO_WELCOME_LEN &&
	    len != TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN &&
	    len != TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN)
		return ts_error_set(err, TS_E_PROTOCOL,
				    "welcome of %zu bytes, expected %d, %d or %d", len,
				    TS_PROTO_WELCOME_LEN,
				    TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN,
				    TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN);
	w.version = get32(body + 0);
	w.producer_pid = get32(body + 4);
	w.height = get32(body + 8);
	w.width = get32(body + 12);
	w.channels = get32(body + 16);
	w.dtype = get32(body + 20);
	w.layout = get32(body + 24);
	w.epochs = get32(body + 28);
	w.sample_bytes = get64(body + 32);
	w.capacity = get64(body + 40);
	w.samples_per_epoch = get64(body + 48);
	w.start = get64(body + 56);
	w.min_epoch = get32(body + 64);
	w.batch = get32(body + 68);
	w.head = get64(body + 72);
	if (w.version != TS_PROTO_VERSION || w.dtype > 3 || w.layout > 1)
		return ts_error_set(err, TS_E_PROTOCOL,
				    "welcome with unknown version/dtype/layout");
	if (len == TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN) {
		struct ts_proto_fallback *f = &w.fallback;
		const uint8_t *t = body + TS_PROTO_WELCOME_LEN;
		w.has_fallback = true;
		f->dtype = get32(t + 0);
		f->normalize = get32(t + 4);
		bool ok = (f->dtype == 2 || f->dtype == 3) && f->normalize <= 1;
		for (int i = 0; i < 4; i++) {
			uint32_t u = get32(t + 8 + 4 * i), v = get32(t + 24 + 4 * i);
			memcpy(&f->mean[i], &u, 4);
			memcpy(&f->std[i], &v, 4);
			/* a std of 0 or a NaN would make every value inf or NaN */
			ok = ok && f->mean[i] == f->mean[i] && f->std[i] == f->std[i] &&
			     (!f->normalize || f->std[i] != 0.0f);
		}
		memcpy(f->why, t + 40, TS_PROTO_FALLBACK_WHY);
		size_t wl = strnlen(f->why, TS_PROTO_FALLBACK_WHY);
		ok = ok && wl < TS_PROTO_FALLBACK_WHY;
		for (size_t i = 0; i < TS_PROTO_FALLBACK_WHY && ok; i++)
			ok = i < wl ? (f->why[i] >= 0x20 && f->why[i] < 0x7f) : f->why[i] == 0;
		if (!ok || w.dtype != 0 || w.layout != 0)
			return ts_error_set(err, TS_E_PROTOCOL,
					    "welcome with an inconsistent device fallback");
	} else if (len > TS_PROTO_WELCOME_LEN) {
		struct ts_proto_device *d = &w.device;
		const uint8_t *t = body + TS_PROTO_WELCOME_LEN;
		w.has_device = true;
		d->dtype = get32(t + 0);
		d->layout = get32(t + 4);
		d->sample_bytes = get64(t + 8);
		d->capacity = get64(t + 16);
		d->mirror = get64(t + 24);
		d->device = (int32_t)get32(t + 32);
		d->pid = (int32_t)get32(t + 36);
		memcpy(d->pci_bus_id, t + 40, 16);
		memcpy(d->ipc, t + 56, 64);
		memcpy(d->uuid, t + 120, 16);
		d->sample_stride = get64(t + 136);
		/* the bus id: printable, then NUL padding to the end */
		size_t idlen = strnlen(d->pci_bus_id, 16);
		bool id_ok = idlen > 0 && idlen < 16;
		for (size_t i = 0; i < 16 && id_ok; i++)
			id_ok = i < idlen ? (d->pci_bus_id[i] > 0x20 && d->pci_bus_id[i] < 0x7f)
					  : d->pci_bus_id[i] == 0;
		if (d->dtype > 3 || d->layout > 1 || d->sample_bytes == 0 ||
		    d->sample_stride < d->sample_bytes || d->sample_stride % 16 ||
		    d->capacity != w.capacity || d->mirror > d->capacity || !id_ok)
			return ts_error_set(err, TS_E_PROTOCOL,
					    "welcome with an inconsistent device ring");
	}
	*m = w;
	return 0;
}

int ts_proto_get_refuse(const uint8_t *body, size_t len,
			struct ts_proto_refuse *m, struct ts_error *err)
{
	if (len < 8)
		return ts_error_set(err, TS_E_PROTOCOL, "refusal too short");
	size_t n = get16(body + 4);
	if (n > TS_PROTO_REFUSE_MAX || 8 + n != len)
		return ts_error_set(err, TS_E_PROTOCOL, "refusal text length wrong");
	m->reason = get32(body);
	memcpy(m->text, body + 8, n);
	m->text[n] = '\0';
	/* The text is for humans: no control characters. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)m->text[i] < 0x20)
			m->text[i] = '?';
	return 0;
}

int ts_proto_send(int sock, const uint8_t *buf, size_t len, const int *fds,
		  int nfds)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds < 0 || nfds > 2)
		return -EINVAL;
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if ((size_t)n != len)
			return -EMSGSIZE;  /* unix stream: small messages go whole */
		return 0;
	}
}

static int elapsed_ms(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int)((t.tv_sec - t0->tv_sec) * 1000 +
		     (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Read exactly len bytes (collecting descriptors from any part). */
static int recv_exact(int sock, uint8_t *buf, size_t len, int timeout_ms,
		      const struct timespec *t0, int *fds, int *nfds,
		      struct ts_error *err)
{
	size_t got = 0;
	while (got < len) {
		int left = -1;
		if (timeout_ms >= 0) {
			left = timeout_ms - elapsed_ms(t0);
			if (left <= 0)
				return ts_error_set(err, -ETIMEDOUT,
						    "no answer from the producer "
						    "within %d ms", timeout_ms);
		}
		struct pollfd pfd = { sock, POLLIN, 0 };
		int pr = poll(&pfd, 1, left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return ts_error_set(err, -errno, "poll: %s", strerror(errno));
		if (pr == 0)
			continue;
		union {
			char b[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = { buf + got, len - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = u.b,
				     .msg_controllen = sizeof(u.b) };
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return ts_error_set(err, -errno, "recv: %s", strerror(errno));
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int tmp[4];
			memcpy(tmp, CMSG_DATA(cm), k * sizeof(int));
			for (size_t i = 0; i < k; i++) {
				if (*nfds < 2)
					fds[(*nfds)++] = tmp[i];
				else
					close(tmp[i]);
			}
		}
		if (n == 0)
			return ts_error_set(err, TS_E_PRODUCER,
					    "the producer closed the connection");
		got += (size_t)n;
	}
	return 0;
}

int ts_proto_recv(int sock, int timeout_ms, uint16_t *type, uint8_t *body,
		  uint16_t *len, int *fds, int *nfds, struct ts_error *err)
{
	struct timespec t0;
	uint8_t hdr[TS_PROTO_HDR_LEN];
	uint16_t t, n;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	*nfds = 0;
	rc = recv_exact(sock, hdr, sizeof(hdr), timeout_ms, &t0, fds, nfds, err);
	if (rc == 0)
		rc = ts_proto_get_header(hdr, &t, &n, err);
	if (rc == 0)
		rc = recv_exact(sock, body, n, timeout_ms, &t0, fds, nfds, err);
	if (rc < 0) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return rc;
	}
	*type = t;
	*len = n;
	return 0;
}
