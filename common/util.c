/* util.c - error filling and the read-to-EOF loop, shared by every
 * library module. */
#include "util.h"

#include <errno.h>
#include <time.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fill(struct ts_error *err, int code, struct ts_loc loc,
		 const char *fmt, va_list ap)
{
	err->code = code;
	err->loc = loc;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int ts_error_set(struct ts_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		fill(err, code, (struct ts_loc){0, 0, 0, 0}, fmt, ap);
		va_end(ap);
	}
	return code;
}

int ts_error_set_at(struct ts_error *err, int code, struct ts_loc loc,
		    const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		fill(err, code, loc, fmt, ap);
		va_end(ap);
	}
	return code;
}

_Static_assert(TS_E_NOMEM == -ENOMEM, "TS_E_NOMEM is -ENOMEM (error.h)");

TS_EXPORT const char *ts_error_name(int code)
{
	switch (code) {
	case TS_OK: return "success";
	case TS_E_SYNTAX: return "syntax error";
	case TS_E_CHECK: return "invalid pipeline";
	case TS_E_BUDGET: return "over the memory budget";
	case TS_E_SOURCE: return "data source error";
	case TS_E_DECODE: return "decode error";
	case TS_E_PROTOCOL: return "protocol error";
	case TS_E_REFUSED: return "refused by the producer";
	case TS_E_PRODUCER: return "producer gone";
	case TS_E_EOS: return "end of stream";
	case TS_E_NOMEM: return "out of memory";
	case TS_E_ARG: return "invalid argument";
	case TS_E_STATE: return "invalid state";
	case TS_E_PLUGIN: return "plugin failed";
	case TS_E_NODEV: return "no GPU device";
	case TS_E_STOPPED: return "stopped before the end of the stream";
	case TS_E_JOB: return "a rank of the job left";
	case TS_E_DETACHED: return "detached for holding the ring (stall_timeout)";
	default:
		if (code < 0 && code > -4096)
			return strerror(-code);
		return "unknown error";
	}
}

int ts_read_fd_all(int fd, size_t hint, uint64_t max, void **out, size_t *len)
{
	/* hint bytes, the read that sees the end, and the NUL */
	size_t cap = hint && hint < SIZE_MAX - 2 ? hint + 2 : 16384, got = 0;
	uint8_t *buf = malloc(cap);
	int rc = 0;
	*len = 0;
	if (!buf)
		return TS_E_NOMEM;
	for (;;) {
		if (max && got > max) {  /* larger, or it grew while we read */
			rc = -EFBIG;
			break;
		}
		if (cap - got < 2) {  /* room to read, and for the NUL */
			uint8_t *p = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!p) {
				rc = TS_E_NOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + got, cap - got - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*len = got;
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[got] = '\0';
	*out = buf;
	return 0;
}

char *ts_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

double ts_clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t ts_clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Past this a size is taken for uninitialised memory, not a struct. */
#define TS_SIZED_MAX 4096

int ts_sized_in(void *dst, size_t dst_size, const void *src, const char *type,
		const char *init, struct ts_error *err)
{
	size_t size;
	memcpy(&size, src, sizeof(size));
	if (size < sizeof(size_t))
		return ts_error_set(err, TS_E_ARG,
				    "%s: its size field is %zu: set it to sizeof(%s) "
				    "(%s), so that the library knows which fields "
				    "the caller's header has", type, size, type, init);
	if (size > TS_SIZED_MAX)
		return ts_error_set(err, TS_E_ARG,
				    "%s: its size field is %zu, more than any version of "
				    "it (uninitialised?): set it to sizeof(%s) (%s)",
				    type, size, type, init);
	for (size_t i = dst_size; i < size; i++)
		if (((const unsigned char *)src)[i])
			return ts_error_set(err, TS_E_ARG,
					    "%s is %zu bytes, from a newer header than this "
					    "library's (%zu bytes), and sets a field past "
					    "byte %zu that this library does not know: use "
					    "the library of that header, or leave the newer "
					    "fields zero", type, size, dst_size, i);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}

void ts_sized_init(void *o, size_t size, const void *def, size_t def_size)
{
	if (size > def_size)
		memset((char *)o + def_size, 0, size - def_size);
	memcpy(o, def, size < def_size ? size : def_size);
	if (size >= sizeof(size_t))
		memcpy(o, &size, sizeof(size));
}
