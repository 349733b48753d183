/* fuzz-hello.c - libFuzzer target: any bytes as a message arriving at the
 * server (runtime/proto.c). The server must never trust a client, so the
 * header and hello decoders run on everything; the client's welcome and
 * refuse decoders run on the same bytes too. What decodes must encode
 * back to the same bytes (a hello or welcome has one wire form), and the
 * whole buffer also goes through ts_proto_recv over a socketpair, the
 * path the server's peers actually take. Nothing may crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a finding: stop here so libFuzzer keeps the input. */
#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* Decode body[0..len) as each message type; whatever decodes must encode
 * back to the same bytes and stay within its documented bounds. */
static void decode_bodies(const uint8_t *body, size_t len)
{
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	struct ts_error e = { 0 };
	struct ts_proto_hello h;
	struct ts_proto_welcome w;
	struct ts_proto_refuse r;

	if (ts_proto_get_hello(body, len, &h, &e) == 0) {
		CHECK(len >= 4);
		if (h.version == TS_PROTO_VERSION) {
			size_t want = TS_PROTO_HELLO_LEN + (h.resume ? TS_PROTO_RESUME_LEN : 0);
			CHECK(len == want);
			CHECK(h.join <= 1 && h.drop_last <= 1);
			CHECK(!h.resume || h.world == 0);
			CHECK(ts_proto_put_hello(buf, &h) == TS_PROTO_HDR_LEN + want);
			CHECK(memcmp(buf + TS_PROTO_HDR_LEN, body, len) == 0);
		}
	} else {
		CHECK(e.code == TS_E_PROTOCOL && e.msg[0]);
	}
	memset(&e, 0, sizeof(e));
	if (ts_proto_get_welcome(body, len, &w, &e) == 0) {
		/* with or without the device ring's tail, or the fallback's */
		CHECK(len == TS_PROTO_WELCOME_LEN ||
		      len == TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN ||
		      len == TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN);
		CHECK(w.has_device == (len == TS_PROTO_WELCOME_LEN + TS_PROTO_DEVICE_LEN));
		CHECK(w.has_fallback == (len == TS_PROTO_WELCOME_LEN + TS_PROTO_FALLBACK_LEN));
		CHECK(ts_proto_put_welcome(buf, &w) == TS_PROTO_HDR_LEN + len);
		CHECK(memcmp(buf + TS_PROTO_HDR_LEN, body, len) == 0);
	} else {
		CHECK(e.code == TS_E_PROTOCOL && e.msg[0]);
	}
	memset(&e, 0, sizeof(e));
	if (ts_proto_get_refuse(body, len, &r, &e) == 0) {
		size_t n = strlen(r.text);
		CHECK(n <= TS_PROTO_REFUSE_MAX);
		for (size_t i = 0; i < n; i++)
			CHECK((unsigned char)r.text[i] >= 0x20);
		size_t m = ts_proto_put_refuse(buf, &r);
		CHECK(m <= TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY);
	}
}

/* The bytes through ts_proto_recv: a stream socket, written whole, the
 * writer closed, so recv sees them and then end of stream. */
static void through_recv(const uint8_t *data, size_t size)
{
	int sv[2];
	uint8_t body[TS_PROTO_MAX_BODY];
	uint16_t type = 0, len = 0;
	int fds[2], nfds = 0;
	struct ts_error e = { 0 };

	/* A socketpair's buffer holds far more than the largest message. */
	if (size > 4096 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	if (write(sv[0], data, size) == (ssize_t)size) {
		close(sv[0]);
		sv[0] = -1;
		int rc = ts_proto_recv(sv[1], 1000, &type, body, &len, fds,
				       &nfds, &e);
		CHECK(nfds == 0);
		if (rc == 0) {
			CHECK(type >= TS_MSG_HELLO && type <= TS_MSG_REFUSE);
			CHECK(len <= TS_PROTO_MAX_BODY);
			CHECK(size >= (size_t)TS_PROTO_HDR_LEN + len);
			CHECK(memcmp(body, data + TS_PROTO_HDR_LEN, len) == 0);
		} else {
			/* Short input: the peer hung up, never a timeout. */
			CHECK(rc == TS_E_PROTOCOL || rc == TS_E_PRODUCER);
		}
	}
	if (sv[0] >= 0)
		close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t type, len;
	struct ts_error e = { 0 };

	/* As the server reads it: a header, then the body it announces. */
	if (size >= TS_PROTO_HDR_LEN) {
		if (ts_proto_get_header(data, &type, &len, &e) == 0) {
			CHECK(len <= TS_PROTO_MAX_BODY);
			if (size - TS_PROTO_HDR_LEN >= len)
				decode_bodies(data + TS_PROTO_HDR_LEN, len);
		} else {
			CHECK(e.code == TS_E_PROTOCOL && e.msg[0]);
		}
	}
	/* Any body length, header or not: the decoders get len from the
	 * header, but they must not depend on it being sane. */
	decode_bodies(data, size < TS_PROTO_MAX_BODY ? size : TS_PROTO_MAX_BODY);
	through_recv(data, size);
	return 0;
}
