/* test-proto.c - tensorsocket wire messages: round trips, byte layout,
 * garbage rejection, descriptor passing. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

/* A hello's resume fields, none (the tail is not sent). */
#define NO_RESUME false, false, 0, 0, 0

START_TEST(test_hello_roundtrip)
{
	static const struct ts_proto_hello t[] = {
		{ TS_PROTO_VERSION, 64, 0, 0, 1234, 0, 0, 0, "", NO_RESUME },
		{ TS_PROTO_VERSION, 1, 1, 1, 0, 0, 0, 0, "", NO_RESUME },
		{ TS_PROTO_VERSION, 0xffffffffu, 1, 0, 0x7fffffff, 0, 0, 0, "", NO_RESUME },
		{ TS_PROTO_VERSION, 32, 1, 0, 99, 1, 2, 0, "sweep-a", NO_RESUME },
		{ TS_PROTO_VERSION, 32, 0, 1, 99, 63, 64, 1,
		  "a-name-of-sixty-three-bytes-the-longest-a-job-may-have-0123456", NO_RESUME },
		/* a resume: the tail */
		{ TS_PROTO_VERSION, 8, 1, 0, 7, 0, 0, 0, "", true, true, 3, 640, 2 },
		{ TS_PROTO_VERSION, 8, 0, 1, 7, 0, 0, 0, "", true, false, 0xffffffffu,
		  0x123456789abcull, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
		size_t n = ts_proto_put_hello(buf, &t[i]);
		size_t body = TS_PROTO_HELLO_LEN + (t[i].resume ? TS_PROTO_RESUME_LEN : 0);
		ck_assert_uint_eq(n, TS_PROTO_HDR_LEN + body);
		uint16_t type, len;
		ck_assert_int_eq(ts_proto_get_header(buf, &type, &len, NULL), 0);
		ck_assert_uint_eq(type, TS_MSG_HELLO);
		ck_assert_uint_eq(len, body);
		struct ts_proto_hello h;
		ck_assert_int_eq(ts_proto_get_hello(buf + 8, len, &h, NULL), 0);
		ck_assert_uint_eq(h.batch, t[i].batch);
		ck_assert_uint_eq(h.join, t[i].join);
		ck_assert_uint_eq(h.drop_last, t[i].drop_last);
		ck_assert_uint_eq(h.pid, t[i].pid);
		ck_assert_uint_eq(h.rank, t[i].rank);
		ck_assert_uint_eq(h.world, t[i].world);
		ck_assert_uint_eq(h.job_drop, t[i].job_drop);
		ck_assert_str_eq(h.job, t[i].job);
		ck_assert_int_eq(h.resume, t[i].resume);
		ck_assert_int_eq(h.has_resume_epochs, t[i].has_resume_epochs);
		ck_assert_uint_eq(h.resume_epoch, t[i].resume_epoch);
		ck_assert_uint_eq(h.resume_index, t[i].resume_index);
		ck_assert_uint_eq(h.resume_epochs, t[i].resume_epochs);
	}
}
END_TEST

/* The resume tail's bytes (tensorsocket(7)), and the tails refused: other
 * flags, a nonzero pad, a resume with a job, a tail of another length. */
START_TEST(test_hello_resume)
{
	struct ts_proto_hello h = { TS_PROTO_VERSION, 8, 1, 0, 7, 0, 0, 0, "", true, true,
				    3, 0x0102030405ull, 2 };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	ck_assert_uint_eq(ts_proto_put_hello(buf, &h), 8 + 92 + 24);
	ck_assert_uint_eq(buf[6], 116);
	static const uint8_t want[24] = {
		3, 0, 0, 0, 5, 4, 3, 2, 1, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
	};
	ck_assert_mem_eq(buf + 8 + 92, want, 24);
	struct ts_proto_hello g;
	struct ts_error err = { 0 };
	uint8_t *b = buf + 8;
	ck_assert_int_eq(ts_proto_get_hello(b, 116, &g, &err), 0);
	ck_assert(g.resume && g.has_resume_epochs);
	b[92] = 0;  /* a tail without its flag */
	ck_assert_int_eq(ts_proto_get_hello(b, 116, &g, &err), TS_E_PROTOCOL);
	b[92] = 5;  /* an unknown flag */
	ck_assert_int_eq(ts_proto_get_hello(b, 116, &g, &err), TS_E_PROTOCOL);
	b[92] = 1;
	b[112] = 1; /* the pad */
	ck_assert_int_eq(ts_proto_get_hello(b, 116, &g, &err), TS_E_PROTOCOL);
	b[112] = 0;
	ck_assert_int_eq(ts_proto_get_hello(b, 116, &g, &err), 0);
	ck_assert(g.resume && !g.has_resume_epochs);
	ck_assert_int_eq(ts_proto_get_hello(b, 100, &g, &err), TS_E_PROTOCOL);
	/* a job's rank cannot resume */
	struct ts_proto_hello j = { TS_PROTO_VERSION, 8, 1, 0, 7, 0, 2, 0, "job", true, false,
				    0, 8, 0 };
	ts_proto_put_hello(buf, &j);
	ck_assert_int_eq(ts_proto_get_hello(buf + 8, 116, &g, &err), TS_E_PROTOCOL);
}
END_TEST

/* The byte layout documented in tensorsocket(7). */
START_TEST(test_hello_bytes)
{
	struct ts_proto_hello h = { 2, 0x102, 1, 0, 0x0a0b0c0d, 1, 3, 1, "job", NO_RESUME };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	static const uint8_t want[40] = {
		'T', 'S', 'S', 'K', 1, 0, 92, 0,
		2, 0, 0, 0, 2, 1, 0, 0, 1, 0, 0, 0, 0x0d, 0x0c, 0x0b, 0x0a,
		1, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 'j', 'o', 'b', 0,
	};
	ck_assert_uint_eq(ts_proto_put_hello(buf, &h), 8 + 92);
	ck_assert_mem_eq(buf, want, 40);
	for (size_t i = 40; i < 8 + 92; i++)
		ck_assert_uint_eq(buf[i], 0);
}
END_TEST

START_TEST(test_welcome_roundtrip)
{
	/* static: padding is zero, as in the decoder's result */
	static struct ts_proto_welcome w = {
		.version = TS_PROTO_VERSION, .producer_pid = 77, .height = 224, .width = 224,
		.channels = 3, .dtype = 3, .layout = 1, .epochs = 90,
		.sample_bytes = 602112, .capacity = 2048,
		.samples_per_epoch = 1281167, .start = 1ull << 40,
		.min_epoch = 5, .batch = 256, .head = (1ull << 40) + 3,
	};
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	size_t n = ts_proto_put_welcome(buf, &w);
	ck_assert_uint_eq(n, TS_PROTO_HDR_LEN + TS_PROTO_WELCOME_LEN);
	struct ts_proto_welcome g;
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 8, &g, NULL), 0);
	ck_assert_mem_eq(&g, &w, sizeof(w));
	buf[8 + 20] = 9;  /* dtype out of range */
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 8, &g, NULL),
			 TS_E_PROTOCOL);
}
END_TEST

START_TEST(test_welcome_device)
{
	static struct ts_proto_welcome w = {
		.version = TS_PROTO_VERSION, .producer_pid = 77, .height = 224, .width = 224,
		.channels = 3, .dtype = 0, .layout = 0, .epochs = 1,
		.sample_bytes = 150528, .capacity = 1024, .samples_per_epoch = 5000,
		.batch = 64, .has_device = true,
		.device = { .dtype = 2, .layout = 1, .sample_bytes = 301056, .sample_stride = 301056,
			    .capacity = 1024, .mirror = 512, .device = 3, .pid = 77,
			    .pci_bus_id = "0000:3b:00.0" },
	};
	for (int i = 0; i < 64; i++)
		w.device.ipc[i] = (uint8_t)(i * 7 + 1);
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	size_t n = ts_proto_put_welcome(buf, &w);
	ck_assert_uint_eq(n, TS_PROTO_HDR_LEN + TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN);
	ck_assert_uint_le(n - 8, TS_PROTO_MAX_BODY);
	struct ts_proto_welcome g;
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 8, &g, NULL), 0);
	ck_assert(g.has_device);
	ck_assert_uint_eq(g.device.sample_bytes, 301056);
	ck_assert_uint_eq(g.device.mirror, 512);
	ck_assert_int_eq(g.device.device, 3);
	ck_assert_str_eq(g.device.pci_bus_id, "0000:3b:00.0");
	ck_assert_mem_eq(g.device.ipc, w.device.ipc, 64);
	ck_assert_mem_eq(&g, &w, sizeof(w));
	/* a cut tail, and a device ring that disagrees with the host ring */
	struct ts_error err;
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 9, &g, &err), TS_E_PROTOCOL);
	buf[8 + TS_PROTO_WELCOME_LEN + 16] = 7;   /* capacity */
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 8, &g, &err), TS_E_PROTOCOL);
	ck_assert_ptr_nonnull(strstr(err.msg, "device ring"));
}
END_TEST

/* The device fallback tail (version 3): what device(cuda) promised and
 * why the host ring serves instead; a decoder refuses a tail that does
 * not describe uint8 NHWC host samples, a bad promise or a bad reason. */
START_TEST(test_welcome_fallback)
{
	static struct ts_proto_welcome w = {
		.version = TS_PROTO_VERSION, .producer_pid = 77, .height = 8, .width = 8,
		.channels = 3, .dtype = 0, .layout = 0, .epochs = 1,
		.sample_bytes = 192, .capacity = 64, .samples_per_epoch = 100,
		.batch = 8, .has_fallback = true,
		.fallback = { .dtype = 2, .normalize = 1, .mean = { 0.485f, 0.456f, 0.406f, 0 },
			      .std = { 0.229f, 0.224f, 0.225f, 1 },
			      .why = "no CUDA device (cudaGetDeviceCount: no CUDA-capable device)" },
	};
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	size_t n = ts_proto_put_welcome(buf, &w);
	ck_assert_uint_eq(n, TS_PROTO_HDR_LEN + TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN);
	ck_assert_uint_le(n - 8, TS_PROTO_MAX_BODY);
	struct ts_proto_welcome g;
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 8, &g, NULL), 0);
	ck_assert(g.has_fallback && !g.has_device);
	ck_assert_uint_eq(g.fallback.dtype, 2);
	ck_assert(g.fallback.mean[1] == 0.456f && g.fallback.std[2] == 0.225f);
	ck_assert_str_eq(g.fallback.why, w.fallback.why);
	ck_assert_mem_eq(&g, &w, sizeof(w));
	struct ts_error err;
	static const struct { size_t off; uint8_t v; } bad[] = {
		{ 0, 0 },                               /* promised uint8: not a device dtype */
		{ 4, 2 },                               /* normalize 2 */
		{ 24, 0 },                              /* std[0] 0 (all four bytes) */
		{ 40 + 5, 0x07 },                       /* a control byte in the reason */
		{ 40 + TS_PROTO_FALLBACK_WHY - 1, 'x' }, /* the reason not terminated */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t b2[sizeof(buf)];
		memcpy(b2, buf, sizeof(buf));
		b2[8 + TS_PROTO_WELCOME_LEN + bad[i].off] = bad[i].v;
		if (bad[i].off == 24)
			memset(b2 + 8 + TS_PROTO_WELCOME_LEN + 24, 0, 4);
		ck_assert_msg(ts_proto_get_welcome(b2 + 8, n - 8, &g, &err) == TS_E_PROTOCOL,
			      "bad tail %zu accepted", i);
		ck_assert_ptr_nonnull(strstr(err.msg, "fallback"));
	}
	/* a fallback beside a host ring that is not uint8 NHWC */
	w.dtype = 3;
	n = ts_proto_put_welcome(buf, &w);
	ck_assert_int_eq(ts_proto_get_welcome(buf + 8, n - 8, &g, &err), TS_E_PROTOCOL);
	w.dtype = 0;
}
END_TEST

START_TEST(test_refuse_roundtrip)
{
	struct ts_proto_refuse r = { TS_REFUSE_BATCH, "batch too\x01 large" };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	size_t n = ts_proto_put_refuse(buf, &r);
	struct ts_proto_refuse g;
	ck_assert_int_eq(ts_proto_get_refuse(buf + 8, n - 8, &g, NULL), 0);
	ck_assert_uint_eq(g.reason, TS_REFUSE_BATCH);
	ck_assert_str_eq(g.text, "batch too? large");
	ck_assert_int_eq(ts_proto_get_refuse(buf + 8, n - 9, &g, NULL),
			 TS_E_PROTOCOL);
}
END_TEST

START_TEST(test_garbage)
{
	static const struct { uint8_t b[8]; } hdrs[] = {
		{ { 'G', 'E', 'T', ' ', '/', ' ', 'H', 'T' } },  /* magic */
		{ { 'T', 'S', 'S', 'K', 9, 0, 16, 0 } },          /* type */
		{ { 'T', 'S', 'S', 'K', 1, 0, 0xff, 0xff } },     /* length */
	};
	struct ts_error err;
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		uint16_t type = 0, len = 0;
		ck_assert_int_eq(ts_proto_get_header(hdrs[i].b, &type, &len, &err),
				 TS_E_PROTOCOL);
	}
	struct ts_proto_hello h;
	uint8_t body[TS_PROTO_HELLO_LEN] = { TS_PROTO_VERSION, 0, 0, 0, 8, 0, 0, 0, 2 /* join */ };
	ck_assert_int_eq(ts_proto_get_hello(body, TS_PROTO_HELLO_LEN, &h, &err), TS_E_PROTOCOL);
	ck_assert_int_eq(ts_proto_get_hello(body, 16, &h, &err), TS_E_PROTOCOL);
	ck_assert_int_eq(ts_proto_get_hello(body, 3, &h, &err), TS_E_PROTOCOL);
	/* Job fields that do not hang together. */
	static const struct { uint32_t rank, world; uint8_t drop; const char *name; } bad[] = {
		{ 0, 2, 0, "" },        /* a world without a name */
		{ 0, 0, 0, "x" },       /* a name without a world */
		{ 2, 2, 0, "x" },       /* rank past the world */
		{ 1, 0, 0, "" },        /* a rank without a job */
		{ 0, 2, 2, "x" },       /* drop not 0/1 */
		{ 0, 2, 0, "a b" },     /* not printable without spaces */
		{ 0, 2, 0, "a\n" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t ok[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
		struct ts_proto_hello g = { TS_PROTO_VERSION, 8, 0, 0, 1, bad[i].rank,
					    bad[i].world, bad[i].drop, "", NO_RESUME };
		snprintf(g.job, sizeof(g.job), "%s", bad[i].name);
		ts_proto_put_hello(ok, &g);
		if (bad[i].drop > 1)
			ok[8 + 24] = bad[i].drop;
		ck_assert_int_eq(ts_proto_get_hello(ok + 8, TS_PROTO_HELLO_LEN, &h, &err),
				 TS_E_PROTOCOL);
	}
	/* Garbage after the name's NUL. */
	uint8_t tail[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	struct ts_proto_hello g = { TS_PROTO_VERSION, 8, 0, 0, 1, 0, 2, 0, "ab", NO_RESUME };
	ts_proto_put_hello(tail, &g);
	ck_assert_int_eq(ts_proto_get_hello(tail + 8, TS_PROTO_HELLO_LEN, &h, &err), 0);
	tail[8 + TS_PROTO_HELLO_JOB_OFF + 5] = 'z';
	ck_assert_int_eq(ts_proto_get_hello(tail + 8, TS_PROTO_HELLO_LEN, &h, &err),
			 TS_E_PROTOCOL);
	/* Another version decodes its version only (the server refuses). */
	uint8_t v1[16] = { 1 };
	ck_assert_int_eq(ts_proto_get_hello(v1, 16, &h, &err), 0);
	ck_assert_uint_eq(h.version, 1);
	uint8_t v4[40] = { TS_PROTO_VERSION + 1 };
	ck_assert_int_eq(ts_proto_get_hello(v4, 40, &h, &err), 0);
	ck_assert_uint_eq(h.version, TS_PROTO_VERSION + 1);
}
END_TEST

START_TEST(test_send_recv_fds)
{
	int sp[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	int pipefd[2];
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	struct ts_proto_welcome w = { .version = 1, .batch = 32, .capacity = 64 };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	ck_assert_int_eq(ts_proto_send(sp[0], buf, ts_proto_put_welcome(buf, &w),
				       pipefd, 2), 0);
	uint16_t type, len;
	int fds[2], nfds;
	ck_assert_int_eq(ts_proto_recv(sp[1], 1000, &type, buf, &len, fds, &nfds,
				       NULL), 0);
	ck_assert_uint_eq(type, TS_MSG_WELCOME);
	ck_assert_int_eq(nfds, 2);
	ck_assert_int_ne(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_int_eq(write(fds[1], "k", 1), 1);
	char c = 0;
	ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
	ck_assert_int_eq(c, 'k');
	/* Nothing more: a timeout; then the peer hangs up. */
	ck_assert_int_eq(ts_proto_recv(sp[1], 50, &type, buf, &len, fds + 0,
				       &nfds, NULL), -ETIMEDOUT);
	close(sp[0]);
	ck_assert_int_eq(ts_proto_recv(sp[1], 1000, &type, buf, &len, fds, &nfds,
				       NULL), TS_E_PRODUCER);
	close(sp[1]);
	close(pipefd[0]);
	close(pipefd[1]);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("messages");
	tcase_add_test(tc, test_hello_roundtrip);
	tcase_add_test(tc, test_hello_bytes);
	tcase_add_test(tc, test_hello_resume);
	tcase_add_test(tc, test_welcome_roundtrip);
	tcase_add_test(tc, test_welcome_device);
	tcase_add_test(tc, test_welcome_fallback);
	tcase_add_test(tc, test_refuse_roundtrip);
	tcase_add_test(tc, test_garbage);
	suite_add_tcase(s, tc);
	tc = tcase_create("transport");
	tcase_add_test(tc, test_send_recv_fds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
