/*
 * trace.c - the per-thread draw record (trace.h). Prefix ts_trace_.
 */
#include "trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__thread struct ts_trace *ts_trace_cur;

void ts_trace_reset(struct ts_trace *t)
{
	t->len = 0;
	t->n = 0;
	t->failed = false;
	t->view = -1;
	t->depth = 0;
	if (t->buf)
		t->buf[0] = '\0';
}

void ts_trace_fini(struct ts_trace *t)
{
	if (!t)
		return;
	free(t->buf);
	*t = (struct ts_trace){0};
}

/* Room for need more bytes (and the NUL); false when it cannot grow. */
static bool room(struct ts_trace *t, size_t need)
{
	if (t->len + need + 1 <= t->cap)
		return true;
	size_t cap = t->cap ? t->cap : 256;
	while (cap < t->len + need + 1)
		cap *= 2;
	char *b = realloc(t->buf, cap);
	if (!b) {
		t->failed = true;
		return false;
	}
	t->buf = b;
	t->cap = cap;
	return true;
}

static void vraw(struct ts_trace *t, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || !room(t, (size_t)n))
		return;
	vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
	t->len += (size_t)n;
}

void ts_trace_raw(struct ts_trace *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vraw(t, fmt, ap);
	va_end(ap);
}

void ts_trace_str(struct ts_trace *t, const char *s)
{
	ts_trace_raw(t, "\"");
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			ts_trace_raw(t, "\\%c", *p);
		else if (*p < 0x20)
			ts_trace_raw(t, "\\u%04x", *p);
		else
			ts_trace_raw(t, "%c", *p);
	}
	ts_trace_raw(t, "\"");
}

void ts_trace_note(const char *op, int stage, const char *fields, ...)
{
	struct ts_trace *t = ts_trace_cur;
	if (!t)
		return;
	ts_trace_raw(t, "%s{\"op\": \"%s\", \"stage\": %d", t->n ? ", " : "", op, stage);
	if (t->view >= 0)
		ts_trace_raw(t, ", \"view\": %d", t->view);
	if (t->depth > 0) {
		ts_trace_raw(t, ", \"in\": [");
		for (int i = 0; i < t->depth && i < TS_TRACE_MAX_DEPTH; i++)
			ts_trace_raw(t, "%s%d", i ? ", " : "", t->in[i]);
		ts_trace_raw(t, "]");
	}
	if (fields && fields[0]) {
		ts_trace_raw(t, ", ");
		va_list ap;
		va_start(ap, fields);
		vraw(t, fields, ap);
		va_end(ap);
	}
	ts_trace_raw(t, "}");
	t->n++;
}

void ts_trace_enter(int stage)
{
	struct ts_trace *t = ts_trace_cur;
	if (!t)
		return;
	if (t->depth < TS_TRACE_MAX_DEPTH)
		t->in[t->depth] = stage;
	t->depth++;
}

void ts_trace_leave(void)
{
	struct ts_trace *t = ts_trace_cur;
	if (t && t->depth > 0)
		t->depth--;
}

struct ts_trace *ts_trace_pause(void)
{
	struct ts_trace *t = ts_trace_cur;
	ts_trace_cur = NULL;
	return t;
}

void ts_trace_resume(struct ts_trace *t)
{
	ts_trace_cur = t;
}
