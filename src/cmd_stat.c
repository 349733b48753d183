/*
 * cmd_stat.c - `tsrun stat SOCKET [--json]`: show a running tsrun's state
 * from the status file it rewrites once a second next to its socket
 * ("<socket>.status.json", see status.h). Read-only: it never connects to
 * the socket, so looking does not make a consumer appear.
 *
 * The file is one flat JSON object of a known shape with one array of
 * flat objects ("consumers"). A small bounded parser reads it; a
 * truncated or garbage file is an error message, never a crash.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "status.h"

/* A status file older than this, while its pid lives, is stale: the
 * producer writes it every second (a SIGSTOPped tsrun, for one). */
#define STALE_S 5.0
#define MAX_CONSUMERS 1024
#define MAX_DEPTH 16

struct stat_consumer {
	long pid;
	double batch, position, lag, rate;
};

struct stat_info {
	char pipeline[256], file[1024], socket[1024], state[32];
	double pid, epoch, epochs, index, epoch_size, samples, rate;
	double ring_fill, capacity, skipped, threads, batch;
	long holding_back; /* -1: null */
	bool has_pid, has_consumers;
	struct stat_consumer *consumers;
	size_t n_consumers;
};

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
static bool parse_consumer(struct jp *p, struct stat_consumer *c)
{
	char key[32];
	double pid = -1;
	*c = (struct stat_consumer){0};
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
			if (dst ? !parse_number(p, dst, NULL) : !skip_value(p))
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
static bool parse_consumers(struct jp *p, struct stat_info *st)
{
	if (!expect(p, '['))
		return false;
	if (expect(p, ']'))
		return true;
	do {
		struct stat_consumer c;
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
static bool parse_status(const char *text, size_t len, struct stat_info *st)
{
	struct jp p = {.s = text, .end = text + len};
	char key[64];
	st->holding_back = -1;
	if (!expect(&p, '{'))
		return false;
	if (!expect(&p, '}')) {
		do {
			if (!parse_string(&p, key, sizeof(key)) || !expect(&p, ':'))
				return false;
			static const struct { const char *k; size_t off; } nums[] = {
				{"pid", offsetof(struct stat_info, pid)},
				{"epoch", offsetof(struct stat_info, epoch)},
				{"epochs", offsetof(struct stat_info, epochs)},
				{"index", offsetof(struct stat_info, index)},
				{"epoch_size", offsetof(struct stat_info, epoch_size)},
				{"samples", offsetof(struct stat_info, samples)},
				{"images_per_s", offsetof(struct stat_info, rate)},
				{"ring_fill", offsetof(struct stat_info, ring_fill)},
				{"capacity", offsetof(struct stat_info, capacity)},
				{"skipped", offsetof(struct stat_info, skipped)},
				{"threads", offsetof(struct stat_info, threads)},
				{"batch", offsetof(struct stat_info, batch)},
			};
			bool ok = false, done = false;
			for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]) && !done; i++) {
				if (strcmp(key, nums[i].k))
					continue;
				ok = parse_number(&p, (double *)((char *)st + nums[i].off), NULL);
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

/* --- the report --- */

static void print_report(const struct stat_info *st, const char *path, double age)
{
	printf("pipeline:  %s (%s), pid %ld, %s, updated %.1f s ago\n",
	       st->pipeline[0] ? st->pipeline : "?", st->file[0] ? st->file : "?",
	       (long)st->pid, st->state[0] ? st->state : "?", age);
	printf("socket:    %s\n", path);
	printf("position:  epoch %.0f", st->epoch + 1);
	if (st->epochs > 0)
		printf("/%.0f", st->epochs);
	else
		printf(" (forever)");
	printf(", index %.0f", st->index);
	if (st->epoch_size > 0)
		printf("/%.0f (%.0f%%)", st->epoch_size, 100.0 * st->index / st->epoch_size);
	printf(", %.0f samples produced\n", st->samples);
	printf("rate:      %.0f img/s, %.0f thread%s, batch %.0f\n", st->rate, st->threads,
	       st->threads == 1 ? "" : "s", st->batch);
	printf("ring:      %.0f/%.0f samples filled", st->ring_fill, st->capacity);
	if (st->capacity > 0)
		printf(" (%.0f%%)", 100.0 * st->ring_fill / st->capacity);
	printf("\nskipped:   %.0f\n", st->skipped);
	printf("consumers: %zu\n", st->n_consumers);
	if (!st->n_consumers)
		return;
	/* The one with the largest lag is the slowest; it holds the ring back
	 * when the ring is full (holding_back). */
	size_t slow = 0;
	for (size_t i = 1; i < st->n_consumers; i++)
		if (st->consumers[i].lag > st->consumers[slow].lag)
			slow = i;
	printf("  %8s %6s %12s %8s %9s\n", "pid", "batch", "position", "lag", "img/s");
	for (size_t i = 0; i < st->n_consumers; i++) {
		const struct stat_consumer *c = &st->consumers[i];
		printf("  %8ld %6.0f %12.0f %8.0f %9.1f", c->pid, c->batch, c->position, c->lag,
		       c->rate);
		if (st->holding_back == c->pid)
			printf("  holding the ring back");
		else if (st->holding_back < 0 && i == slow && st->n_consumers > 1)
			printf("  slowest");
		putchar('\n');
	}
	if (st->holding_back > 0)
		printf("held back by: pid %ld (the ring is full until it reads on)\n",
		       st->holding_back);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tsrun stat SOCKET [--json]\n"
		   "Show a running tsrun's pipeline, position, rate, ring fill and\n"
		   "consumers (pid, batch size, lag, rate), from SOCKET.status.json.\n"
		   "  --json   print the status file's JSON object as is\n");
}

int ts_cmd_stat(int argc, char **argv)
{
	const char *path = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return TS_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (a[0] == '-' && a[1]) {
			ts_cli_error("stat", "unknown option '%s'", a);
			usage(stderr);
			return TS_EXIT_USAGE;
		} else if (path) {
			ts_cli_error("stat", "one SOCKET only (got '%s' and '%s')", path, a);
			return TS_EXIT_USAGE;
		} else {
			path = a;
		}
	}
	if (!path) {
		ts_cli_error("stat", "no SOCKET given");
		usage(stderr);
		return TS_EXIT_USAGE;
	}

	struct stat sb;
	if (stat(path, &sb) < 0) {
		if (errno == ENOENT)
			ts_cli_error("stat", "no such socket: %s (is 'tsrun run' serving there? "
				     "the path is the serve block's socket or --socket)", path);
		else
			ts_cli_error("stat", "%s: %s", path, strerror(errno));
		return TS_EXIT_USAGE;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		ts_cli_error("stat", "%s is not a socket", path);
		return TS_EXIT_USAGE;
	}
	char *spath = ts_status_path(path);
	if (!spath) {
		ts_cli_error("stat", "out of memory");
		return TS_EXIT_INVALID;
	}
	int status = TS_EXIT_INVALID;
	char *text = NULL;
	size_t len = 0;
	struct stat_info st = {0};
	struct stat fsb;
	int rc = ts_cli_read_file(spath, &text, &len);
	if (rc == -ENOENT) {
		ts_cli_error("stat", "no tsrun serving %s: no status file %s (a stale socket "
			     "of a run that was killed?)", path, spath);
		goto out;
	}
	if (rc < 0 || stat(spath, &fsb) < 0) {
		ts_cli_error("stat", "cannot read %s: %s", spath, strerror(rc < 0 ? -rc : errno));
		goto out;
	}
	if (!parse_status(text, len, &st)) {
		ts_cli_error("stat", "%s is not a tsrun status file (truncated or garbage)", spath);
		goto out;
	}
	long pid = (long)st.pid;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
		ts_cli_error("stat", "no tsrun serving %s: stale status file %s names pid %ld, "
			     "which is gone (the run was killed; remove both files)", path, spath, pid);
		goto out;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double age = (double)(now.tv_sec - fsb.st_mtim.tv_sec) +
		     (double)(now.tv_nsec - fsb.st_mtim.tv_nsec) * 1e-9;
	if (age > STALE_S) {
		ts_cli_error("stat", "stale status file %s: last written %.0f s ago by pid %ld, "
			     "which still exists (stopped? see 'ps -o stat= -p %ld')", spath, age,
			     pid, pid);
		goto out;
	}
	if (age < 0)
		age = 0;
	if (json)
		fwrite(text, 1, len, stdout);
	else
		print_report(&st, path, age);
	status = TS_EXIT_OK;
out:
	free(st.consumers);
	free(text);
	free(spath);
	return status;
}
