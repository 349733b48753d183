/*
 * status.c - live status, JSON stats, the status file and the summary of
 * `tsrun run`.
 */
#include "status.h"
#include "util.h"
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEEN 256

/* A rate over the last 0.5 to 1 s: the open window and the one before it,
 * each 0.5 s or more (not one 0.1 s look's noise), both starting where
 * the count began until they have filled, so that a count that has grown
 * since then never reads 0.0 while its first window fills. */
struct window {
	uint64_t n_prev, n_open; /* the count where each window starts */
	double t_prev, t_open;
};

static void window_start(struct window *w, uint64_t n, double t)
{
	w->n_prev = w->n_open = n;
	w->t_prev = w->t_open = t;
}

/* The rate at t of a count that is n then (0.0 when it has not grown or
 * went back, as a consumer's control page may). */
static double window_rate(struct window *w, uint64_t n, double t)
{
	if (t - w->t_open >= 0.5) {
		w->n_prev = w->n_open;
		w->t_prev = w->t_open;
		w->n_open = n;
		w->t_open = t;
	}
	return t > w->t_prev && n > w->n_prev
		       ? (double)(n - w->n_prev) / (t - w->t_prev) : 0.0;
}

struct seen {
	int pid;
	uint32_t batch;
	uint64_t start;
	bool gone;          /* detached: last_release is final */
	uint64_t first_release;
	uint64_t last_release;
	uint64_t skipped;       /* released without being read */
	double first_t, last_t;
	/* Its rate from vouched releases (the ring's own figure is from the
	 * raw control page), from where it started: its release when it
	 * attached, at the look before the one that first saw it. */
	struct window rate_w;
	double rate;
};

struct ts_status {
	const struct ts_plan *plan;
	char *file;
	char *socket;
	char *status_path;
	uint64_t epochs;
	uint64_t start_epoch;
	bool quiet;
	bool tty;
	bool line_drawn;
	double t0, last_plain, last_emit;
	double last_track;      /* the previous look at the ring */
	bool emitted_final;     /* the end-of-stream snapshot is out */
	bool status_failed;     /* the last status write failed (said once) */
	bool json_failed;       /* a --stats-json write failed (said once) */
	struct window rate_w;   /* of the samples, from 0 at t0 */
	double rate;
	struct seen seen[MAX_SEEN];
	size_t n_seen;
};


char *ts_status_path(const char *socket_path)
{
	char *p = NULL;
	if (asprintf(&p, "%s.status.json", socket_path) < 0)
		return NULL;
	return p;
}

int ts_status_create(const struct ts_plan *plan, const char *file,
		     const char *socket_path, uint64_t epochs,
		     uint64_t start_epoch, bool quiet, struct ts_status **out)
{
	struct ts_status *s = calloc(1, sizeof(*s));
	if (!s)
		return TS_E_NOMEM;
	s->plan = plan;
	s->file = strdup(file);
	s->socket = strdup(socket_path);
	s->status_path = ts_status_path(socket_path);
	if (!s->file || !s->socket || !s->status_path) {
		ts_status_destroy(s);
		return TS_E_NOMEM;
	}
	s->epochs = epochs;
	s->start_epoch = start_epoch;
	s->quiet = quiet;
	s->tty = isatty(STDERR_FILENO) && getenv("TERM") && strcmp(getenv("TERM"), "dumb") != 0;
	s->t0 = s->last_track = s->last_plain = ts_cli_now();
	window_start(&s->rate_w, 0, s->t0);
	*out = s;
	return 0;
}

/* A consumer's figures as far as the producer can vouch for them: its
 * release and skipped count are what it wrote in its control page, which
 * it may write anything into (18446744073709551615 images were printed
 * once). A release is at least its start and at most the head (nothing
 * past the head was ever published), skipped at most what it released. */
static struct ts_ring_consumer_stat vouched(const struct ts_ring_consumer_stat *c,
					    uint64_t head)
{
	struct ts_ring_consumer_stat v = *c;
	uint64_t lo = c->start < head ? c->start : head;
	if (v.release < lo)
		v.release = lo;
	if (v.release > head)
		v.release = head;
	if (v.skipped > v.release - lo)
		v.skipped = v.release - lo;
	v.lag = head - v.release;
	return v;
}

static void track_one(struct ts_status *s, const struct ts_ring_consumer_stat *raw,
		      uint64_t head, double t, bool departed)
{
	if (raw->local)
		return;
	struct ts_ring_consumer_stat cv = vouched(raw, head);
	const struct ts_ring_consumer_stat *c = &cv;
	struct seen *e = NULL;
	for (size_t j = 0; j < s->n_seen; j++)
		if (s->seen[j].pid == c->pid && s->seen[j].start == c->start) {
			e = &s->seen[j];
			break;
		}
	if (!e) {
		if (s->n_seen == MAX_SEEN)
			return;
		e = &s->seen[s->n_seen++];
		e->pid = c->pid;
		e->batch = c->batch;
		e->start = c->start;
		e->first_release = c->start < c->release ? c->start : c->release;
		e->first_t = t;
		e->last_t = t;
		/* It attached after the previous look, at its start: its
		 * rate counts what it released since then (too low by at
		 * most the 0.1 s between two looks; not 0.0 in its first
		 * half second once it has released a sample). */
		window_start(&e->rate_w, e->first_release, s->last_track);
	}
	if (e->gone)
		return;
	e->rate = window_rate(&e->rate_w, c->release, t);
	e->last_release = c->release;
	e->skipped = c->skipped;
	e->last_t = t;
	e->gone = departed;
}

/* Follow every consumer, live and departed, so the summary can say what
 * each one got even when it left between two snapshots. */
static void track(struct ts_status *s, const struct ts_ring_stat *rs, double t)
{
	for (size_t i = 0; i < rs->n_consumers; i++)
		track_one(s, &rs->consumers[i], rs->head, t, false);
	for (size_t i = 0; i < rs->n_departed; i++)
		track_one(s, &rs->departed[i], rs->head, t, true);
	s->last_track = t;
}

/* The consumer with the largest lag: the one holding the ring back. */
static const struct ts_ring_consumer_stat *slowest(const struct ts_ring_stat *rs)
{
	const struct ts_ring_consumer_stat *w = NULL;
	for (size_t i = 0; i < rs->n_consumers; i++)
		if (!w || rs->consumers[i].lag > w->lag)
			w = &rs->consumers[i];
	return w;
}

/* A JSON string literal of s (quotes, backslashes, control bytes). */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* What a trainer still needs (epochs count per trainer, tensorsocket(7)):
 * whole epochs left, at most the stream's epochs (a "now" joiner's partial
 * first one does not count), null when endless; and whether it waits for
 * its job's other ranks. Closes the trainer's object. */
static void write_epochs_left(FILE *f, const struct ts_ring_consumer_stat *c,
			      int epochs)
{
	if (!c->end_epoch) {
		fprintf(f, ",\"epochs_left\":null,\"job_waiting\":%s}",
			c->job_wait ? "true" : "false");
		return;
	}
	uint32_t left = c->done || c->epoch >= c->end_epoch ? 0 : c->end_epoch - c->epoch;
	if (epochs > 0 && left > (uint32_t)epochs)
		left = (uint32_t)epochs;
	fprintf(f, ",\"epochs_left\":%u,\"end_epoch\":%u,\"job_waiting\":%s}", left,
		c->end_epoch, c->job_wait ? "true" : "false");
}

static void write_json(struct ts_status *s, const struct ts_engine_stats *es,
		       const struct ts_ring_stat *rs, FILE *f, double t)
{
	const struct ts_ring_consumer_stat *w = slowest(rs);
	bool full = w && w->lag >= rs->capacity;
	fprintf(f, "{\"time\":%.3f,\"pipeline\":", t - s->t0);
	json_str(f, s->plan->name);
	fprintf(f, ",\"file\":");
	json_str(f, s->file);
	fprintf(f, ",\"socket\":");
	json_str(f, s->socket);
	fprintf(f, ",\"pid\":%d,\"state\":\"%s\",\"epoch\":%" PRIu64 ",\"epochs\":%" PRIu64 ","
		"\"index\":%" PRIu64 ",\"epoch_size\":%" PRIu64 ",\"samples\":%" PRIu64 ","
		"\"images_per_s\":%.1f,\"ring_fill\":%" PRIu64 ",\"capacity\":%" PRIu64 ","
		"\"skipped\":%" PRIu64 ",\"threads\":%d,\"batch\":%d,",
		(int)getpid(),
		rs->state == TS_RING_RUNNING ? "running" : rs->state == TS_RING_EOS ? "done" : "error",
		es->epoch, s->epochs, es->index, es->epoch_size, es->samples, s->rate,
		w ? (w->lag < rs->capacity ? w->lag : rs->capacity) : 0, rs->capacity,
		es->skipped, es->threads, s->plan->batch);
	fprintf(f, "\"holding_back\":");
	if (w && full && !w->local)
		fprintf(f, "%d,", (int)w->pid);
	else
		fprintf(f, "null,");
	fprintf(f, "\"consumers\":[");
	bool first = true;
	for (size_t i = 0; i < rs->n_consumers; i++) {
		struct ts_ring_consumer_stat cv = vouched(&rs->consumers[i], rs->head);
		const struct ts_ring_consumer_stat *c = &cv;
		if (c->local)
			continue;
		/* the rate from vouched releases, not the raw page's */
		cv.rate = 0;
		for (size_t j = 0; j < s->n_seen; j++)
			if (s->seen[j].pid == c->pid && s->seen[j].start == c->start)
				cv.rate = s->seen[j].rate;
		fprintf(f, "%s{\"pid\":%d,\"batch\":%u,\"position\":%" PRIu64 ",\"lag\":%" PRIu64
			",\"images_per_s\":%.1f", first ? "" : ",", (int)c->pid, c->batch,
			c->release, c->lag, c->rate);
		write_epochs_left(f, c, s->plan->epochs);
		first = false;
	}
	fprintf(f, "]}\n");
}

static void write_status_file(struct ts_status *s, const struct ts_engine_stats *es,
			      const struct ts_ring_stat *rs, double t)
{
	/* A new file of a random name, created exclusively (a symlink or
	 * FIFO planted at a fixed name is neither followed nor waited on),
	 * renamed onto the status file. */
	char *tmp = NULL;
	FILE *f = ts_cli_side_create(s->status_path, &tmp);
	int e = f ? 0 : -errno;
	if (f) {
		write_json(s, es, rs, f, t);
		e = ts_cli_side_commit(f, tmp, s->status_path);
	}
	if (e && !s->status_failed)
		fprintf(stderr, "tsrun: cannot write the status file %s: %s (tsrun stat and "
			"reload will not see this run; reported once)\n", s->status_path,
			ts_error_name(e));
	s->status_failed = e != 0;
}

void ts_status_update(struct ts_status *s, const struct ts_engine_stats *es,
		      const struct ts_ring_stat *rs, FILE *tty, FILE *json)
{
	double t = ts_cli_now();
	s->rate = window_rate(&s->rate_w, es->samples, t);
	track(s, rs, t);
	/* Track every call; show and write at most once a second, and always
	 * at the end of the stream. */
	bool final = rs->state != TS_RING_RUNNING;
	if (final && s->emitted_final) {
		/* Draining: trainers still read; `tsrun stat` keeps seeing a
		 * fresh file, once a second, until tsrun exits. */
		if (t - s->last_emit >= 1.0) {
			s->last_emit = t;
			write_status_file(s, es, rs, t);
		}
		return;
	}
	if (!final && t - s->last_emit < 1.0)
		return;
	s->emitted_final = final;
	s->last_emit = t;
	if (json) {
		write_json(s, es, rs, json, t);
		if ((fflush(json) != 0 || ferror(json)) && !s->json_failed) {
			fprintf(stderr, "tsrun: cannot write --stats-json: %s (reported once)\n",
				strerror(errno ? errno : EIO));
			s->json_failed = true;
		}
	}
	write_status_file(s, es, rs, t);
	if (s->quiet)
		return;
	char line[512];
	int n = 0;
	double frac = es->epoch_size ? (double)es->index / (double)es->epoch_size : 0.0;
	/* Past the last epoch the head sits at the next one's index 0: the
	 * last one is whole. */
	if (s->epochs && es->epoch >= s->epochs)
		frac = 1.0;
	char bar[21];
	int fill = (int)(frac * 20.0);
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[20] = 0;
	const struct ts_ring_consumer_stat *w = slowest(rs);
	uint64_t fill_n = w ? (w->lag < rs->capacity ? w->lag : rs->capacity) : 0;
	if (s->epochs)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "epoch %" PRIu64 "/%" PRIu64,
			      es->epoch + 1 > s->epochs ? s->epochs : es->epoch + 1, s->epochs);
	else
		n += snprintf(line + n, sizeof(line) - (size_t)n, "epoch %" PRIu64, es->epoch + 1);
	n += snprintf(line + n, sizeof(line) - (size_t)n,
		      " [%s] %3.0f%% | %.0f img/s | ring %" PRIu64 "/%" PRIu64 " | %zu consumer%s",
		      bar, frac * 100.0, s->rate, fill_n, rs->capacity, rs->n_consumers,
		      rs->n_consumers == 1 ? "" : "s");
	for (size_t i = 0; i < rs->n_consumers && i < 4 && n < (int)sizeof(line) - 40; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%d lag %" PRIu64,
			      i ? ", " : " (", (int)rs->consumers[i].pid, rs->consumers[i].lag);
	if (rs->n_consumers > 0 && n < (int)sizeof(line) - 4)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s)", rs->n_consumers > 4 ? ", ..." : "");
	if (w && fill_n >= rs->capacity && n < (int)sizeof(line) - 40)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " | held by %d", (int)w->pid);
	if (n < (int)sizeof(line) - 30)
		snprintf(line + n, sizeof(line) - (size_t)n, " | skipped %" PRIu64, es->skipped);
	if (s->tty) {
		fprintf(tty, "\r\033[K%s", line);
		fflush(tty);
		s->line_drawn = true;
	} else if (t - s->last_plain >= 10.0 || final) {
		fprintf(tty, "tsrun: %s\n", line);
		s->last_plain = t;
	}
}

void ts_status_set_plan(struct ts_status *s, const struct ts_plan *plan,
			const char *file)
{
	char *f = strdup(file);
	if (f) {
		free(s->file);
		s->file = f;
	}
	s->plan = plan;
}

void ts_status_clear(struct ts_status *s, FILE *tty)
{
	if (s && s->line_drawn) {
		fprintf(tty, "\r\033[K");
		s->line_drawn = false;
	}
}

void ts_status_summary(struct ts_status *s, const struct ts_engine_stats *es,
		       const struct ts_ring_stat *rs, const char *const *skipped,
		       size_t n_skipped, FILE *out)
{
	double t = ts_cli_now();
	track(s, rs, t);
	ts_status_clear(s, out);
	if (s->quiet && n_skipped == 0)
		return;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	double wall = t - s->t0;
	fprintf(out, "tsrun: summary: %" PRIu64 " images served in %.1f s (%.0f img/s), "
		"cpu %.1f s, peak memory %.1f MiB, skipped %" PRIu64 "\n", es->samples, wall,
		wall > 0 ? (double)es->samples / wall : 0.0, cpu, (double)ru.ru_maxrss / 1024.0,
		es->skipped);
	for (size_t i = 0; i < s->n_seen; i++) {
		const struct seen *e = &s->seen[i];
		double dt = e->last_t - e->first_t;
		/* A control page may also go backwards: no negative count. */
		uint64_t n = e->last_release > e->first_release
				     ? e->last_release - e->first_release : 0;
		n = n > e->skipped ? n - e->skipped : 0;
		/* Seen in one snapshot only (it came and went between two,
		 * 0.1 s apart): one position is no rate, and "0 img/s" would
		 * say it read nothing. */
		fprintf(out, "tsrun: summary: consumer %d (batch %u): %" PRIu64 " images, ",
			e->pid, e->batch, n);
		if (dt > 0)
			fprintf(out, "%.0f img/s\n", (double)n / dt);
		else
			fprintf(out, "img/s n/a (seen in one status snapshot)\n");
	}
	for (size_t i = 0; i < n_skipped; i++)
		fprintf(out, "tsrun: skipped %s\n", skipped[i]);
}

bool ts_status_json_failed(const struct ts_status *s)
{
	return s->json_failed;
}

void ts_status_destroy(struct ts_status *s)
{
	if (!s)
		return;
	if (s->status_path)
		unlink(s->status_path);
	free(s->status_path);
	free(s->socket);
	free(s->file);
	free(s);
}
