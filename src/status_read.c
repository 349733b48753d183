/*
 * status_read.c - the reader of the status file that `tsrun run` writes
 * next to its socket (status.c): one flat JSON object of a known shape
 * with one array of flat objects ("consumers"). A small bounded parser;
 * a truncated or garbage file is false, never a crash.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "status.h"

#define MAX_CONSUMERS 1024
#define MAX_DEPTH 16

/* --- a bounded JSON reader for the status file's shape --- */

struct jp {
	const char *s, *end;
	int depth;
};

static void skip_ws(struct jp *p)
{
	while (p->s < p->end && isspace((unsigned char)*p->s))
		p->s++;
}

static bool expect(struct jp *p, char c)
{
	skip_ws(p);
	if (p->s < p->end && *p->s == c) {
		p->s++;
		return true;
	}
	return false;
}

/* string: '"' chars '"'. Copies into out (truncated to size, which may
 * be 0 to skip); \uXXXX escapes become '?'. */
static bool parse_string(struct jp *p, char *out, size_t size)
{
	size_t n = 0;
	if (!expect(p, '"'))
		return false;
	while (p->s < p->end && *p->s != '"') {
		char c = *p->s++;
		if ((unsigned char)c < 0x20)
			return false;
		if (c == '\\') {
			if (p->s >= p->end)
				return false;
			c = *p->s++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u':
				for (int i = 0; i < 4; i++)
					if (p->s >= p->end || !isxdigit((unsigned char)*p->s++))
						return false;
				c = '?';
				break;
			case '"': case '\\': case '/': break;
			default: return false;
			}
		}
		if (n + 1 < size)
			out[n++] = c;
	}
	if (size)
		out[n] = '\0';
	return expect(p, '"');
}

/* number, or null (*is_null set, *v untouched). */
static bool parse_number(struct jp *p, double *v, bool *is_null)
{
	char buf[64];
	size_t n = 0;
	skip_ws(p);
	if (is_null)
		*is_null = false;
	if (p->end - p->s >= 4 && memcmp(p->s, "null", 4) == 0) {
		p->s += 4;
		if (!is_null)
			return false;
		*is_null = true;
		return true;
	}
	while (p->s < p->end && n + 1 < sizeof(buf) && strchr("+-0123456789.eE", *p->s))
		buf[n++] = *p->s++;
	buf[n] = '\0';
	if (!n)
		return false;
	char *e;
	double d = strtod(buf, &e);
	if (*e || !isfinite(d))
		return false;
	*v = d;
	return true;
}

static bool skip_value(struct jp *p);

/* Skip '[' ... ']' or '{' ... '}' with depth bounded by MAX_DEPTH. */
static bool skip_compound(struct jp *p, char open, char close)
{
	if (!expect(p, open) || ++p->depth > MAX_DEPTH)
		return false;
	if (expect(p, close)) {
		p->depth--;
		return true;
	}
	do {
		if (open == '{' && (!parse_string(p, NULL, 0) || !expect(p, ':')))
			return false;
		if (!skip_value(p))
			return false;
	} while (expect(p, ','));
	p->depth--;
	return expect(p, close);
}

static bool skip_value(struct jp *p)
{
	skip_ws(p);
	if (p->s >= p->end)
		return false;
	switch (*p->s) {
	case '"': return parse_string(p, NULL, 0);
	case '{': return skip_compound(p, '{', '}');
	case '[': return skip_compound(p, '[', ']');
	case 't':
		if (p->end - p->s >= 4 && memcmp(p->s, "true", 4) == 0) {
			p->s += 4;
			return true;
		}
		return false;
	case 'f':
		if (p->end - p->s >= 5 && memcmp(p->s, "false", 5) == 0) {
			p->s += 5;
			return true;
		}
		return false;
	default: {
		double d;
		bool null;
		return parse_number(p, &d, &null);
	}
	}
}

/* consumer: '{' ("pid" | "batch" | ... ':' number) ... '}' */
static bool parse_consumer(struct jp *p, struct ts_status_consumer *c)
{
	char key[32];
	double pid = -1;
	*c = (struct ts_status_consumer){0};
	c->images = c->connected_s = c->wait = c->wait_total = -1.0;
	if (!expect(p, '{'))
		return false;
	if (!expect(p, '}')) {
		do {
			double *dst = NULL;
			if (!parse_string(p, key, sizeof(key)) || !expect(p, ':'))
				return false;
			if (!strcmp(key, "pid")) dst = &pid;
			else if (!strcmp(key, "batch")) dst = &c->batch;
			else if (!strcmp(key, "position")) dst = &c->position;
			else if (!strcmp(key, "lag")) dst = &c->lag;
			else if (!strcmp(key, "images_per_s")) dst = &c->rate;
			else if (!strcmp(key, "images")) dst = &c->images;
			else if (!strcmp(key, "connected_s")) dst = &c->connected_s;
			else if (!strcmp(key, "wait")) dst = &c->wait;
			else if (!strcmp(key, "wait_total")) dst = &c->wait_total;
			bool null = false;
			if (!strcmp(key, "job")) {
				skip_ws(p);
				if (p->end - p->s >= 4 && memcmp(p->s, "null", 4) == 0)
					p->s += 4;
				else if (!parse_string(p, c->job, sizeof(c->job)))
					return false;
				continue;
			}
			/* the accounting's figures may be null (unknown) */
			if (dst ? !parse_number(p, dst, dst == &c->wait || dst == &c->wait_total
						? &null : NULL) : !skip_value(p))
				return false;
		} while (expect(p, ','));
		if (!expect(p, '}'))
			return false;
	}
	if (pid < 1 || pid > 4194304)
		return false;
	c->pid = (long)pid;
	return true;
}

/* consumers: '[' (consumer (',' consumer)*)? ']' */
static bool parse_consumers(struct jp *p, struct ts_status_info *st)
{
	if (!expect(p, '['))
		return false;
	if (expect(p, ']'))
		return true;
	do {
		struct ts_status_consumer c;
		if (!parse_consumer(p, &c))
			return false;
		if (st->n_consumers < MAX_CONSUMERS) {
			if (!st->consumers) {
				st->consumers = calloc(MAX_CONSUMERS, sizeof(*st->consumers));
				if (!st->consumers)
					return false;
			}
			st->consumers[st->n_consumers++] = c;
		}
	} while (expect(p, ','));
	return expect(p, ']');
}

/* status: '{' (key ':' value (',' key ':' value)*)? '}' followed by
 * nothing but white space. Unknown keys are skipped. */
bool ts_status_parse(const char *text, size_t len, struct ts_status_info *st)
{
	struct jp p = {.s = text, .end = text + len};
	char key[64];
	st->holding_back = -1;
	st->prod_work = st->prod_slot = st->prod_idle = -1.0;
	st->prod_work_total = st->prod_slot_total = st->prod_idle_total = -1.0;
	if (!expect(&p, '{'))
		return false;
	if (!expect(&p, '}')) {
		do {
			if (!parse_string(&p, key, sizeof(key)) || !expect(&p, ':'))
				return false;
			static const struct { const char *k; size_t off; } nums[] = {
				{"pid", offsetof(struct ts_status_info, pid)},
				{"epoch", offsetof(struct ts_status_info, epoch)},
				{"epochs", offsetof(struct ts_status_info, epochs)},
				{"index", offsetof(struct ts_status_info, index)},
				{"epoch_size", offsetof(struct ts_status_info, epoch_size)},
				{"samples", offsetof(struct ts_status_info, samples)},
				{"images_per_s", offsetof(struct ts_status_info, rate)},
				{"ring_fill", offsetof(struct ts_status_info, ring_fill)},
				{"capacity", offsetof(struct ts_status_info, capacity)},
				{"skipped", offsetof(struct ts_status_info, skipped)},
				{"threads", offsetof(struct ts_status_info, threads)},
				{"batch", offsetof(struct ts_status_info, batch)},
				{"window_s", offsetof(struct ts_status_info, window_s)},
				{"producer_working", offsetof(struct ts_status_info, prod_work)},
				{"producer_slot_wait", offsetof(struct ts_status_info, prod_slot)},
				{"producer_idle", offsetof(struct ts_status_info, prod_idle)},
				{"producer_working_total",
				 offsetof(struct ts_status_info, prod_work_total)},
				{"producer_slot_wait_total",
				 offsetof(struct ts_status_info, prod_slot_total)},
				{"producer_idle_total", offsetof(struct ts_status_info, prod_idle_total)},
				{"cache_bytes", offsetof(struct ts_status_info, cache_bytes)},
				{"cache_used", offsetof(struct ts_status_info, cache_used)},
				{"cache_items", offsetof(struct ts_status_info, cache_items)},
				{"cache_lookups", offsetof(struct ts_status_info, cache_lookups)},
				{"cache_hits", offsetof(struct ts_status_info, cache_hits)},
				{"cache_locked", offsetof(struct ts_status_info, cache_locked)},
			};
			bool ok = false, done = false;
			for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]) && !done; i++) {
				if (strcmp(key, nums[i].k))
					continue;
				/* the producer's fractions may be null (unknown) */
				bool null = false;
				ok = parse_number(&p, (double *)((char *)st + nums[i].off),
						  !strncmp(key, "producer_", 9) ? &null : NULL);
				if (!strcmp(key, "pid"))
					st->has_pid = ok;
				done = true;
			}
			if (done)
				;
			else if (!strcmp(key, "pipeline"))
				ok = parse_string(&p, st->pipeline, sizeof(st->pipeline));
			else if (!strcmp(key, "file"))
				ok = parse_string(&p, st->file, sizeof(st->file));
			else if (!strcmp(key, "socket"))
				ok = parse_string(&p, st->socket, sizeof(st->socket));
			else if (!strcmp(key, "state"))
				ok = parse_string(&p, st->state, sizeof(st->state));
			else if (!strcmp(key, "who_waits"))
				ok = parse_string(&p, st->who_waits, sizeof(st->who_waits));
			else if (!strcmp(key, "holding_back")) {
				double v = -1;
				bool null;
				ok = parse_number(&p, &v, &null);
				st->holding_back = ok && !null && v >= 1 ? (long)v : -1;
			} else if (!strcmp(key, "consumers")) {
				ok = parse_consumers(&p, st);
				st->has_consumers = ok;
			} else {
				ok = skip_value(&p);
			}
			if (!ok)
				return false;
		} while (expect(&p, ','));
		if (!expect(&p, '}'))
			return false;
	}
	skip_ws(&p);
	return p.s == p.end && st->has_pid && st->has_consumers && st->pid >= 1 &&
	       st->pid <= 4194304;
}

void ts_status_info_free(struct ts_status_info *st)
{
	free(st->consumers);
	st->consumers = NULL;
	st->n_consumers = 0;
}

int ts_status_load(const char *socket_path, char **text, size_t *len,
		   struct ts_status_info *st, double *age)
{
	char *spath = ts_status_path(socket_path);
	struct stat sb, sock;
	*text = NULL;
	*len = 0;
	*age = 0;
	if (!spath)
		return TS_E_NOMEM;
	/* Only a regular file (not a symlink or FIFO another user planted)
	 * of this user or of the socket's owner (a group-shared tsrun). */
	unsigned owner = lstat(socket_path, &sock) == 0 ? (unsigned)sock.st_uid : (unsigned)-1;
	int rc = ts_cli_read_side_file(spath, TS_STATUS_MAX_BYTES, owner, text, len, &sb);
	free(spath);
	if (rc < 0)
		return rc;
	if (!ts_status_parse(*text, *len, st))
		return TS_E_PROTOCOL;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	*age = (double)(now.tv_sec - sb.st_mtim.tv_sec) +
	       (double)(now.tv_nsec - sb.st_mtim.tv_nsec) * 1e-9;
	if (*age < 0)
		*age = 0;
	return 0;
}
