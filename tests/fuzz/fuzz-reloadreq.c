/* fuzz-reloadreq.c - libFuzzer target: the request files of `tsrun
 * reload` as the running tsrun parses them (src/reload_req.c). Anyone who
 * may write the socket's folder can plant a file there, so its name and
 * its text are attacker's bytes. The input is three parts separated by
 * NUL bytes: a socket path, a file name in its folder, the file's text
 * (which may hold more NULs). Nothing may crash, and what parses must be
 * what the format says: a pid that prints back to the same name, an
 * absolute path of printable bytes that is the text's first line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reload_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a finding: stop here so libFuzzer keeps the input. */
#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* The next NUL-terminated part of data[*at..size) as a string (copied). */
static char *part(const uint8_t *data, size_t size, size_t *at)
{
	const uint8_t *p = data + *at;
	const uint8_t *nul = memchr(p, 0, size - *at);
	size_t n = nul ? (size_t)(nul - p) : size - *at;
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	*at += n + (nul != NULL);
	return s;
}

static void check_where(const char *sock, char *prefix, size_t pn)
{
	char dir[256];
	int rc = ts_reload_req_where(sock, dir, sizeof(dir), prefix, pn);

	if (rc) {
		CHECK(rc == -ENAMETOOLONG);
		snprintf(prefix, pn, "s.sock.reload");
		return;
	}
	const char *slash = strrchr(sock, '/');
	const char *base = slash ? slash + 1 : sock;
	CHECK(strlen(prefix) == strlen(base) + strlen(".reload"));
	CHECK(strncmp(prefix, base, strlen(base)) == 0);
	CHECK(strcmp(prefix + strlen(base), ".reload") == 0);
	if (!slash)
		CHECK(strcmp(dir, ".") == 0);
	else if (slash == sock)
		CHECK(strcmp(dir, "/") == 0);
	else
		CHECK(strlen(dir) == (size_t)(slash - sock) && strncmp(dir, sock, strlen(dir)) == 0);
}

static void check_pid(const char *name, const char *prefix)
{
	long pid = ts_reload_req_pid(name, prefix);
	char back[1400];

	CHECK(pid >= 0 && pid <= 0x7fffffff);
	if (pid == 0)
		return;
	int n = snprintf(back, sizeof(back), "%s.%ld.req", prefix, pid);
	CHECK(n > 0 && (size_t)n < sizeof(back));
	CHECK(strcmp(back, name) == 0);
}

static void check_path(const char *text, size_t len)
{
	char path[TS_RELOAD_REQ_PATH_MAX], small[32];
	int rc = ts_reload_req_path(text, len, path, sizeof(path));

	if (rc == 0) {
		size_t n = strlen(path);
		CHECK(n > 0 && path[0] == '/');
		CHECK(n <= len && memcmp(path, text, n) == 0);
		CHECK(n == len || text[n] == '\n');
		for (size_t i = 0; i < n; i++)
			CHECK((unsigned char)path[i] >= 0x20 && path[i] != 0x7f);
	} else {
		CHECK(rc == -EINVAL || rc == -ENAMETOOLONG);
	}
	/* A smaller buffer: the same answer, or too long for it. */
	int r2 = ts_reload_req_path(text, len, small, sizeof(small));
	if (rc == 0 && strlen(path) < sizeof(small))
		CHECK(r2 == 0 && strcmp(small, path) == 0);
	else if (rc == 0)
		CHECK(r2 == -ENAMETOOLONG);
	else if (rc == -EINVAL)
		CHECK(r2 == -EINVAL);
	else
		CHECK(r2 == -ENAMETOOLONG);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t at = 0;
	char prefix[1100];
	char *sock = part(data, size, &at);
	char *name = sock ? part(data, size, &at) : NULL;

	if (sock && name) {
		check_where(sock, prefix, sizeof(prefix));
		check_pid(name, prefix);
		check_path((const char *)data + at, size - at);
	}
	/* The whole input as a request's text too. */
	check_path((const char *)data, size);
	free(name);
	free(sock);
	return 0;
}
