/* test-client.c - libtsclient against an in-process ring and server:
 * batches, refusals, stale and live sockets, peer credentials and
 * groups, garbage, hang-up. */
#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "server.h"
#include "tsclient_private.h"
#include "tsclient_cuda.h"

static char dir[64], sock_path[128];
static struct ts_ring *ring;
static struct ts_server *server;
static pthread_t prod;
static uint64_t total;

static void *produce(void *arg)
{
	(void)arg;
	for (uint64_t s = 0; s < total; s++) {
		if (ts_ring_wait_writable(ring, s, 10000) < 0)
			return NULL;
		memset(ts_ring_slot(ring, s), (int)(s * 7 & 0xff), 192);
		ts_ring_set_meta(ring, s, (int32_t)(s % 10), (uint32_t)(s / 500),
				 s % 500);
		ts_ring_publish(ring, s + 1);
	}
	ts_ring_finish(ring, 0);
	return NULL;
}

static void setup(void)
{
	strcpy(dir, "/tmp/ts-client-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock_path, sizeof(sock_path), "%s/s.sock", dir);
	struct ts_ring_params p = { .height = 8, .width = 8, .channels = 3,
				    .dtype = TS_DTYPE_U8, .capacity = 256,
				    .epochs = 2, .samples_per_epoch = 500,
				    .min_consumers = 1, .default_batch = 50 };
	struct ts_error err;
	ck_assert_int_eq(ts_ring_create(&p, &ring, &err), 0);
	ck_assert_int_eq(ts_server_create(ring, sock_path, NULL, &server, &err), 0);
	total = 1000;
	pthread_create(&prod, NULL, produce, NULL);
}

static void teardown(void)
{
	ts_ring_finish(ring, TS_E_STATE);
	pthread_join(prod, NULL);
	ts_server_destroy(server);
	ts_ring_destroy(ring);
	struct stat st;
	ck_assert_int_ne(stat(sock_path, &st), 0);  /* unlinked */
	rmdir(dir);
}

START_TEST(test_stream)
{
	static const uint32_t batches[] = { 0 /* default 50 */, 32, 100 };
	for (size_t k = 0; k < 3; k++) {
		struct ts_client_opts o;
		struct ts_client *c;
		struct ts_error err;
		ts_client_opts_init(&o);
		o.batch_size = batches[k];
		o.timeout_ms = 10000;
		o.join = TS_CLIENT_JOIN_NEXT_EPOCH;
		ck_assert_int_eq(ts_client_connect(sock_path, &o, &c, &err), 0);
		struct ts_client_info in;
		ts_client_info(c, &in);
		ck_assert_uint_eq(in.batch_size, batches[k] ? batches[k] : 50);
		ck_assert_int_eq(in.height, 8);
		ck_assert_uint_eq(in.sample_bytes, 192);
		struct ts_batch b;
		uint64_t next = in.start;
		bool first = true;
		int rc;
		while ((rc = ts_client_next(c, &b, &err)) == 0) {
			/* next_epoch: when the current epoch's start has left
			 * the ring, the welcome's start is the head and the
			 * reader skips to the next epoch's first sample. */
			if (first && b.seq != next) {
				ck_assert_uint_gt(b.seq, next);
				ck_assert_uint_eq(b.index, 0);
				next = b.seq;
			}
			first = false;
			ck_assert_uint_eq(b.seq, next);
			ck_assert_uint_le(b.n, in.batch_size);
			ck_assert_uint_eq(b.index, b.seq % 500);
			ck_assert_uint_eq(b.epoch, b.seq / 500);
			const uint8_t *d = b.data;
			for (size_t i = 0; i < b.n; i++) {
				ck_assert_uint_eq(d[i * 192 + 191],
						  (b.seq + i) * 7 & 0xff);
				ck_assert_int_eq(b.labels[i], (b.seq + i) % 10);
			}
			next += b.n;
			if (k == 0 && next >= 400)
				break;  /* leave early: the others go on */
		}
		if (k > 0) {
			ck_assert_int_eq(rc, TS_E_EOS);
			ck_assert_uint_eq(next, 1000);
		}
		ts_client_close(c);
		/* The server notices the hang-up promptly. */
		for (int i = 0; i < 200 && ts_server_consumers(server); i++)
			usleep(5000);
		ck_assert_uint_eq(ts_server_consumers(server), 0);
		if (k == 1) {
			/* Stream ended: a later consumer is refused. */
			ck_assert_int_eq(ts_client_connect(sock_path, &o, &c, &err),
					 TS_E_REFUSED);
			ck_assert_ptr_nonnull(strstr(err.msg, "ended"));
			break;
		}
	}
}
END_TEST

START_TEST(test_refusals)
{
	struct ts_client_opts o;
	struct ts_client *c = NULL;
	struct ts_error err;
	ts_client_opts_init(&o);
	o.batch_size = 129;
	ck_assert_int_eq(ts_client_connect(sock_path, &o, &c, &err), TS_E_REFUSED);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "half the ring"));
	/* names the setting to change, with the room two batches need */
	ck_assert_ptr_nonnull(strstr(err.msg, "serve setting ring = "));
	ck_assert_ptr_nonnull(strstr(err.msg, "ring = 258 samples"));
	/* a path that is a file, not a socket (a pipeline file), says so */
	char plain[160];
	snprintf(plain, sizeof(plain), "%s/p.ts", dir);
	FILE *pf = fopen(plain, "w");
	ck_assert_ptr_nonnull(pf);
	fputs("pipeline p = synthetic(8) | batch(4)\n", pf);
	fclose(pf);
	ck_assert_int_eq(ts_client_connect(plain, NULL, &c, &err), -ENOTSOCK);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "is not a socket (a pipeline file? start `tsrun run"));
	unlink(plain);
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/none.sock", dir);
	ck_assert_int_eq(ts_client_connect(missing, NULL, &c, &err), -ENOENT);
	ck_assert_str_eq(ts_client_strerror(TS_E_EOS), "end of stream");
}
END_TEST

static int raw_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(a.sun_path, sock_path, strlen(sock_path) + 1);
	ck_assert_int_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

/* Version mismatch and garbage get a refusal and a hang-up; the server
 * keeps serving. */
START_TEST(test_bad_peers)
{
	static const char *garbage[] = { "GET / HTTP/1.1\r\n\r\n",
					 "TSSK\x02\x00\x10\x00" "0123456789abcdef" };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	uint16_t type, len;
	int fds[2], nfds;
	for (size_t i = 0; i < 2; i++) {
		int s = raw_connect();
		ck_assert_int_gt(write(s, garbage[i], strlen(garbage[i]) + (i ? 8 : 0)), 0);
		ck_assert_int_eq(ts_proto_recv(s, 2000, &type, buf, &len, fds,
					       &nfds, NULL), 0);
		ck_assert_uint_eq(type, TS_MSG_REFUSE);
		ck_assert_int_eq(nfds, 0);
		struct ts_proto_refuse r;
		ck_assert_int_eq(ts_proto_get_refuse(buf, len, &r, NULL), 0);
		ck_assert_uint_eq(r.reason, TS_REFUSE_PROTOCOL);
		char x;
		ck_assert_int_le(read(s, &x, 1), 0);  /* hung up (EOF or reset) */
		close(s);
	}
	struct ts_proto_hello h = { .version = 7, .batch = 32, .pid = 1 };
	int s = raw_connect();
	ts_proto_send(s, buf, ts_proto_put_hello(buf, &h), NULL, 0);
	ck_assert_int_eq(ts_proto_recv(s, 2000, &type, buf, &len, fds, &nfds,
				       NULL), 0);
	struct ts_proto_refuse r;
	ck_assert_int_eq(ts_proto_get_refuse(buf, len, &r, NULL), 0);
	ck_assert_uint_eq(r.reason, TS_REFUSE_VERSION);
	ck_assert_ptr_nonnull(strstr(r.text, "version"));
	close(s);
	/* Still serving. */
	struct ts_client *c;
	ck_assert_int_eq(ts_client_connect(sock_path, NULL, &c, NULL), 0);
	struct ts_batch b;
	ck_assert_int_eq(ts_client_next(c, &b, NULL), 0);
	ts_client_close(c);
}
END_TEST

START_TEST(test_socket_files)
{
	struct ts_server *s2 = NULL;
	struct ts_error err;
	/* live: refused, naming it */
	ck_assert_int_eq(ts_server_create(ring, sock_path, NULL, &s2, &err),
			 TS_E_STATE);
	ck_assert_ptr_nonnull(strstr(err.msg, sock_path));
	/* not a socket: left alone */
	char file[160];
	snprintf(file, sizeof(file), "%s/file", dir);
	FILE *f = fopen(file, "w");
	fclose(f);
	ck_assert_int_eq(ts_server_create(ring, file, NULL, &s2, &err), TS_E_STATE);
	ck_assert_int_eq(access(file, F_OK), 0);
	unlink(file);
	/* stale: a bound socket nobody listens on is replaced */
	char stale[160];
	snprintf(stale, sizeof(stale), "%s/stale.sock", dir);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	memcpy(a.sun_path, stale, strlen(stale) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	ck_assert_int_eq(ts_server_create(ring, stale, NULL, &s2, &err), 0);
	struct stat st;
	ck_assert_int_eq(stat(stale, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ts_server_destroy(s2);
	ck_assert_int_ne(stat(stale, &st), 0);
	ck_assert_int_eq(ts_server_create(ring, "", NULL, &s2, &err), TS_E_ARG);
	ck_assert_int_eq(ts_server_create(ring, stale, "no-such-group-xyz", &s2,
					  &err), TS_E_ARG);
}
END_TEST

/* In a child, become uid 65534 with primary group gid, connect to path
 * and exit 0 when the outcome is want (0: welcomed, else that code, with
 * "permission denied" in the message). */
static int connect_as(const char *path, gid_t gid, int want)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(65534) != 0)
			_exit(3);
		struct ts_client_opts o;
		struct ts_client *c = NULL;
		struct ts_error err = {0};
		ts_client_opts_init(&o);
		o.timeout_ms = 5000;
		int rc = ts_client_connect(path, &o, &c, &err);
		if (rc == 0)
			ts_client_close(c);
		if (rc != want) {
			fprintf(stderr, "connect_as(gid %d): got %d (%s), want %d\n", (int)gid, rc,
				err.msg, want);
			_exit(1);
		}
		_exit(want && !strstr(err.msg, "permission denied") ? 2 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/* The producer's own check of the peer's credentials (SO_PEERCRED), below
 * the socket file's mode: another user is refused; with group = G a member
 * of G is welcomed, a non-member refused. Needs root to switch users. */
START_TEST(test_peer_credentials)
{
	if (geteuid() != 0) {
		fprintf(stderr, "test_peer_credentials: not root, cannot switch users; "
			"skipped\n");
		return;
	}
	struct group *g = getgrnam("nogroup");
	ck_assert_msg(g != NULL, "no group 'nogroup'");
	gid_t member = g->gr_gid, other = member == 1 ? 2 : 1;
	ck_assert_int_eq(chmod(dir, 0755), 0);
	/* No group: the file lets anyone connect, the producer does not. */
	ck_assert_int_eq(chmod(sock_path, 0666), 0);
	ck_assert_int_eq(connect_as(sock_path, member, TS_E_REFUSED), 0);
	/* group = nogroup: members are welcome, others refused. */
	char gpath[160];
	snprintf(gpath, sizeof(gpath), "%s/g.sock", dir);
	struct ts_server *gs = NULL;
	struct ts_error err;
	ck_assert_int_eq(ts_server_create(ring, gpath, "nogroup", &gs, &err), 0);
	struct stat st;
	ck_assert_int_eq(stat(gpath, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0660);
	ck_assert_uint_eq(st.st_gid, member);
	ck_assert_int_eq(connect_as(gpath, member, 0), 0);
	ck_assert_int_eq(chmod(gpath, 0666), 0);
	ck_assert_int_eq(connect_as(gpath, other, TS_E_REFUSED), 0);
	ts_server_destroy(gs);
}
END_TEST

START_TEST(test_device_section)
{
	/* without a device ring: the client says so */
	struct ts_client *c = NULL;
	struct ts_error err;
	struct ts_client_device_info di;
	ck_assert_int_eq(ts_client_connect(sock_path, NULL, &c, &err), 0);
	ck_assert_int_eq(ts_client_device_info(c, &di, &err), TS_E_NODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, "serves no device ring"));
	struct ts_client_device *d = NULL;
	ck_assert_int_eq(ts_client_device_open(c, -1, &d, &err), TS_E_NODEV);
	ck_assert_ptr_null(d);
	ts_client_close(c);

	/* a server that announces one: every field reaches the client */
	struct ts_proto_device pd = {
		.dtype = TS_DTYPE_F16, .layout = TS_LAYOUT_NCHW,
		.sample_bytes = 8 * 8 * 3 * 2, .sample_stride = 400, .capacity = 256,
		.mirror = 128, .device = 1, .pid = 4242, .pci_bus_id = "0000:c1:00.0",
	};
	for (int i = 0; i < 64; i++)
		pd.ipc[i] = (uint8_t)(255 - i);
	char dsock[160];
	snprintf(dsock, sizeof(dsock), "%s/dev.sock", dir);
	struct ts_server *s2 = NULL;
	ck_assert_int_eq(ts_server_create_device(ring, dsock, NULL, &pd, &s2, &err), 0);
	ck_assert_int_eq(ts_client_connect(dsock, NULL, &c, &err), 0);
	ck_assert_int_eq(ts_client_device_info(c, &di, &err), 0);
	ck_assert_int_eq(di.dtype, TS_DTYPE_F16);
	ck_assert_int_eq(di.layout, TS_LAYOUT_NCHW);
	ck_assert_int_eq(di.height, 8);
	ck_assert_int_eq(di.channels, 3);
	ck_assert_uint_eq(di.sample_bytes, 384);
	ck_assert_uint_eq(di.sample_stride, 400);   /* version 4's field */
	ck_assert_uint_eq(di.capacity, 256);
	ck_assert_uint_eq(di.mirror, 128);
	ck_assert_int_eq(di.producer_device, 1);
	ck_assert_int_eq(di.producer_pid, 4242);
	ck_assert_str_eq(di.pci_bus_id, "0000:c1:00.0");
	ck_assert_mem_eq(di.ipc, pd.ipc, 64);
	/* the handle is made up: opening it fails with a reason (no CUDA
	 * here; an unknown handle on a GPU host), never a crash */
	err.msg[0] = 0;
	ck_assert_int_eq(ts_client_device_open(c, -1, &d, &err), TS_E_NODEV);
	ck_assert_ptr_null(d);
	ck_assert(err.msg[0] != 0);
	/* the host batches still flow */
	struct ts_batch b;
	ck_assert_int_eq(ts_client_next(c, &b, &err), 0);
	ts_client_close(c);
	ts_server_destroy(s2);
}
END_TEST

/* Held batches (ts_client_next_held) and their private spans: writes to
 * a span never reach the ring; the held slots stop the producer exactly
 * at a ring's length (-EAGAIN, not a hang); an owned span keeps its
 * bytes after its slots are reused and after the client is gone. */
START_TEST(test_held_spans)
{
	struct ts_client_opts o;
	struct ts_client *c;
	struct ts_error err;
	struct ts_batch b[6];
	struct ts_client_span sp[6] = {{0}};
	ts_client_opts_init(&o);
	o.batch_size = 50;
	o.timeout_ms = 10000;
	o.join = TS_CLIENT_JOIN_NEXT_EPOCH;
	ck_assert_int_eq(ts_client_connect(sock_path, &o, &c, &err), 0);
	for (int k = 0; k < 5; k++) {
		ck_assert_int_eq(ts_client_next_held(c, &b[k], &err), 0);
		ck_assert_uint_eq(b[k].seq, 50u * k);
		ck_assert_int_eq(ts_client_span_map(c, &b[k], &sp[k], &err), 0);
		ck_assert_int_eq(memcmp(sp[k].data, b[k].data, 50 * 192), 0);
	}
	/* In place on the span: the ring (b[0].data) is untouched. */
	uint8_t *d0 = sp[0].data;
	memset(d0, 0xaa, 192);
	ck_assert_uint_eq(((const uint8_t *)b[0].data)[0], 0);
	ck_assert_uint_eq(d0[0], 0xaa);
	/* [0, 250) held in a ring of 256: the next batch cannot come. */
	ck_assert_int_eq(ts_client_next_held(c, &b[5], &err), -EAGAIN);
	ck_assert_int_eq(ts_client_span_own(&sp[0], &err), 0);
	ts_client_release_below(c, b[1].seq);
	ck_assert_int_eq(ts_client_next_held(c, &b[5], &err), 0);
	ck_assert_uint_eq(b[5].seq, 250);
	/* Slots of seq 0..43 now hold seq 256..299: the owned span does not
	 * follow them. */
	const uint8_t *ring0 = b[0].data;
	ck_assert_uint_eq(ring0[192 + 191], (257 * 7) & 0xff);
	ck_assert_uint_eq(d0[0], 0xaa);
	ck_assert_uint_eq(d0[192 + 191], 7);
	/* Back to plain next: everything handed out goes back. */
	int rc, n = 0;
	while ((rc = ts_client_next(c, &b[5], &err)) == 0)
		n++;
	ck_assert_int_eq(rc, TS_E_EOS);
	ck_assert_int_eq(n, 14);
	ts_client_close(c);
	ck_assert_uint_eq(d0[0], 0xaa);
	ck_assert_uint_eq(d0[49 * 192 + 191], (49 * 7) & 0xff);
	for (int k = 0; k < 6; k++)
		ts_client_span_unmap(&sp[k]);
	ts_client_span_unmap(&sp[0]);  /* twice: a no-op */
}
END_TEST

/* Sized structs (libtsrun(3)): ts_client_connect checks the options'
 * size before it connects. A shorter (older) struct, without the job
 * fields, passes the check (and meets no producer: -ENOENT); an unset
 * size and a newer struct that sets a field this library does not know
 * are refused by name. ts_client_opts_init writes no byte past the size. */
START_TEST(test_sized_opts)
{
	union { struct ts_client_opts o; unsigned char b[sizeof(struct ts_client_opts) + 16]; } u;
	size_t old = offsetof(struct ts_client_opts, job);
	struct ts_client *c = NULL;
	struct ts_error err = {0};
	const char *nowhere = "/nonexistent-tsrun-dir/x.sock";
	memset(&u, 0xaa, sizeof(u));
	ts_client_opts_init_size(&u.o, old);
	ck_assert_uint_eq(u.o.size, old);
	ck_assert_int_eq(u.o.connect_timeout_ms, 5000);
	for (size_t i = old; i < sizeof(u.b); i++)
		ck_assert_msg(u.b[i] == 0xaa, "byte %zu past the caller's size written", i);
	/* the job pointer (0xaa...) past the size is not read */
	ck_assert_int_eq(ts_client_connect(nowhere, &u.o, &c, &err), -ENOENT);
	struct ts_client_opts zero = {0};
	ck_assert_int_eq(ts_client_connect(nowhere, &zero, &c, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "struct ts_client_opts: its size field is 0") &&
		      strstr(err.msg, "ts_client_opts_init"), "%s", err.msg);
	struct { struct ts_client_opts o; uint64_t newer; } big;
	ts_client_opts_init(&big.o);
	big.o.size = sizeof(big);
	big.newer = 3;
	ck_assert_int_eq(ts_client_connect(nowhere, &big.o, &c, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "from a newer header"), "%s", err.msg);
	big.newer = 0;
	ck_assert_int_eq(ts_client_connect(nowhere, &big.o, &c, &err), -ENOENT);
	/* one width for epoch: 64 bits here, 32 in the hello */
	struct ts_client_opts far;
	ts_client_opts_init(&far);
	far.resume = 1;
	far.resume_epoch = (uint64_t)UINT32_MAX + 1;
	ck_assert_int_eq(ts_client_connect(nowhere, &far, &c, &err), TS_E_ARG);
	ck_assert_msg(strstr(err.msg, "resume_epoch 4294967296"), "%s", err.msg);
	ck_assert_ptr_null(c);
}
END_TEST

static Suite *client_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc = tcase_create("stream");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stream);
	tcase_add_test(tc, test_held_spans);
	suite_add_tcase(s, tc);
	tc = tcase_create("handshake");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_bad_peers);
	tcase_add_test(tc, test_socket_files);
	tcase_add_test(tc, test_peer_credentials);
	tcase_add_test(tc, test_device_section);
	tcase_add_test(tc, test_sized_opts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(client_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
