/* util.c - error filling shared by every library module. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

char *ts_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}
