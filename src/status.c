/*
 * status.c - live status, JSON stats, the status file and the summary of
 * `tsrun run`.
 */
#include "status.h"
#include "util.h"
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* A fraction of time over the last 5 to 10 s: the growth of a count of
 * seconds (waited, blocked) over the growth of the clock, in two buckets
 * of WAIT_WINDOW_S as struct window's, from where the count began. */
#define WAIT_WINDOW_S 5.0
struct fwin {
	double v_prev, v_open, t_prev, t_open;
};

static void fwin_start(struct fwin *w, double v, double t)
{
	w->v_prev = w->v_open = v;
	w->t_prev = w->t_open = t;
}

/* The fraction at t of a count that is v then, 0 .. 1 (-1: no time yet);
 * span is the window's length. */
static double fwin_frac(struct fwin *w, double v, double t, double span_of, double *span)
{
	if (t - w->t_open >= WAIT_WINDOW_S) {
		w->v_prev = w->v_open;
		w->t_prev = w->t_open;
		w->v_open = v;
		w->t_open = t;
	}
	double dt = (t - w->t_prev) * span_of;
	if (span)
		*span = t - w->t_prev;
	if (dt <= 0)
		return -1.0;
	double dv = v - w->v_prev;
	return dv <= 0 ? 0.0 : dv >= dt ? 1.0 : dv / dt;
}

/* A trainer's rate spans at least RATE_BATCHES batches: a trainer at
 * 2.5 s a step reads its batch size over a window of about 10 s, not 0
 * over the last second. */
#define RATE_BATCHES 4

/* A rate over the last 0.5 to 1 s (struct window) when that holds
 * RATE_BATCHES batches, else over the last RATE_BATCHES moves of the
 * count (the looks at which it grew; the first: where it began) and the
 * time since the last, so that it falls while the count stops. */
struct pace {
	struct window w;
	double t[RATE_BATCHES + 1];
	uint64_t n[RATE_BATCHES + 1];
	unsigned k;             /* moves recorded */
	uint64_t last;          /* the count at the last look */
};

static void pace_start(struct pace *p, uint64_t n, double t)
{
	window_start(&p->w, n, t);
	p->t[0] = t;
	p->n[0] = n;
	p->k = 1;
	p->last = n;
}

static double pace_rate(struct pace *p, uint64_t n, uint64_t batch, double t)
{
	double r = window_rate(&p->w, n, t);
	if (n > p->last) {
		unsigned i = p->k++ % (RATE_BATCHES + 1);
		p->t[i] = t;
		p->n[i] = n;
	}
	p->last = n;
	if (n > p->w.n_prev && n - p->w.n_prev >= (uint64_t)RATE_BATCHES * (batch ? batch : 1))
		return r;
	unsigned old = p->k > RATE_BATCHES + 1 ? p->k % (RATE_BATCHES + 1) : 0;
	double dt = t - p->t[old];
	if (dt <= 0 || n <= p->n[old])
		return r;
	return (double)(n - p->n[old]) / dt;
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
	struct pace pace;
	double rate;
	/* Its own accounting, bounded by ours (acct_vouched). */
	char job[TS_RING_JOB_MAX + 1];
	bool has_acct;
	double joined, waited, at;   /* when it connected; waited by at */
	uint64_t handed;
	struct fwin wait_w;
	double wait, wait_total;     /* fractions; -1: unknown */
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
	struct pace rate_p;     /* of the samples, from 0 at t0 */
	double rate;
	struct seen seen[MAX_SEEN];
	size_t n_seen;
	/* The producer's time: its writers' blocked seconds (ts_ring_stat)
	 * over threads x the clock, in the window and since the ring was
	 * created. */
	struct fwin slot_w, idle_w, self_w;
	double prod_window_s;
	double prod_slot, prod_idle, prod_work;            /* window; -1: none */
	double prod_slot_total, prod_idle_total, prod_work_total;
	char *metrics_path;     /* serve { metrics = } or NULL */
	bool metrics_failed;
	bool metrics_written;   /* once: ours to remove at the end */
	bool prod_started;
	int threads;            /* the engine's writers (0: one, tsrun.serve) */
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
	s->t0 = s->last_track = s->last_plain = ts_clock_now();
	pace_start(&s->rate_p, 0, s->t0);
	s->prod_slot = s->prod_idle = s->prod_work = -1.0;
	s->prod_slot_total = s->prod_idle_total = s->prod_work_total = -1.0;
	if (plan->metrics && !(s->metrics_path = strdup(plan->metrics))) {
		ts_status_destroy(s);
		return TS_E_NOMEM;
	}
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

/* A trainer's own accounting as far as we can vouch for it: it connected
 * after it attached and before now, waited no longer than it has been
 * connected, and was handed no more than it released (once gone: its
 * reader releases what it handed out) or than we published. */
static void acct_track(struct seen *e, const struct ts_ring_consumer_stat *c,
		       uint64_t head, double t, bool departed)
{
	if (!c->has_acct)
		return;
	double at = c->at > 0 && c->at <= t ? c->at : t;
	double joined = c->joined;
	if (!(joined >= c->attached - 1.0 && joined <= at))
		joined = c->attached <= at ? c->attached : at;
	double waited = c->waited;
	if (!(waited >= 0))
		waited = 0;
	if (waited > at - joined)
		waited = at - joined;
	uint64_t top = departed ? c->release : head;
	uint64_t most = top > e->first_release ? top - e->first_release : 0;
	if (!e->has_acct)
		fwin_start(&e->wait_w, waited, at);
	e->has_acct = true;
	e->joined = joined;
	e->waited = waited;
	e->at = at;
	e->handed = c->handed < most ? c->handed : most;
	e->wait = fwin_frac(&e->wait_w, waited, at, 1.0, NULL);
	e->wait_total = at > joined ? waited / (at - joined) : -1.0;
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
		e->last_release = e->first_release;
		e->first_t = t;
		e->last_t = t;
		/* It attached after the previous look, at its start: its
		 * rate counts what it released since then (too low by at
		 * most the 0.1 s between two looks; not 0.0 in its first
		 * half second once it has released a sample). */
		pace_start(&e->pace, e->first_release, s->last_track);
		memcpy(e->job, c->job, sizeof(e->job));
		e->job[sizeof(e->job) - 1] = '\0';
		e->wait = e->wait_total = -1.0;
	}
	if (e->gone)
		return;
	e->rate = pace_rate(&e->pace, c->release, e->batch, t);
	acct_track(e, c, head, t, departed);
	e->last_release = c->release;
	e->skipped = c->skipped;
	e->last_t = t;
	e->gone = departed;
}

/* The producer's split: its writers' blocked time (for a free slot,
 * idle) over threads x the clock; the rest, behind its own head
 * included, is work. */
static void track_producer(struct ts_status *s, const struct ts_ring_stat *rs, double t)
{
	double threads = s->threads > 0 ? s->threads : 1;
	double work_s = (t - rs->created) * threads - rs->wait_slot_s - rs->wait_idle_s;
	if (rs->created <= 0 || t <= rs->created)
		return;
	if (!s->prod_started) {
		fwin_start(&s->slot_w, rs->wait_slot_s, t);
		fwin_start(&s->idle_w, rs->wait_idle_s, t);
		fwin_start(&s->self_w, work_s, t);
		s->prod_started = true;
		return;
	}
	s->prod_slot = fwin_frac(&s->slot_w, rs->wait_slot_s, t, threads, &s->prod_window_s);
	s->prod_idle = fwin_frac(&s->idle_w, rs->wait_idle_s, t, threads, NULL);
	s->prod_work = fwin_frac(&s->self_w, work_s, t, threads, NULL);
	double all = (t - rs->created) * threads;
	s->prod_slot_total = rs->wait_slot_s < all ? rs->wait_slot_s / all : 1.0;
	s->prod_idle_total = rs->wait_idle_s < all ? rs->wait_idle_s / all : 1.0;
	s->prod_work_total = work_s > 0 ? work_s / all : 0.0;
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
	track_producer(s, rs, t);
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

/* A trainer's figure for who_waits. */
struct fig {
	int pid;
	uint32_t batch;
	double wait;   /* fraction of its time waiting for batches */
};

/*
 * Who waits on whom, in words, from the trainers' waits and the
 * producer's time (fractions; < 0 unknown): a trainer that gates the
 * others (the producer waits for a free slot, it barely waits, others
 * do), a pipeline that cannot keep up (the producer works all the time,
 * trainers wait), or nobody waiting. "" when there is nothing to say.
 * The producer's shares are of its time serving: idle time (waiting for
 * trainers to come) left out.
 */
static void who_waits(char *buf, size_t n, const struct fig *f, size_t nf, double slot,
		      double work, double idle)
{
	buf[0] = '\0';
	if (idle >= 0 && idle < 0.999 && slot >= 0 && work >= 0) {
		slot /= 1.0 - idle;
		work /= 1.0 - idle;
	}
	const struct fig *gate = NULL;
	size_t known = 0, n_wait = 0;
	double most = 0.0, sum_wait = 0.0;
	for (size_t i = 0; i < nf; i++) {
		if (f[i].wait < 0)
			continue;
		known++;
		if (!gate || f[i].wait < gate->wait)
			gate = &f[i];
		if (f[i].wait > most)
			most = f[i].wait;
	}
	if (!known)
		return;
	for (size_t i = 0; i < nf; i++)
		if (&f[i] != gate && f[i].wait >= 0.3) {
			n_wait++;
			sum_wait += f[i].wait;
		}
	if (slot >= 0.3 && gate->wait < 0.2 && n_wait > 0) {
		snprintf(buf, n, "trainer %d (batch %u) holds the ring: the producer waits for a "
			 "free slot %.0f %% of its time serving and %zu other trainer%s wait%s %.0f %% of "
			 "%s for batches (%s at its pace; a larger ring only lets %s run further "
			 "ahead before %s wait%s)", gate->pid, gate->batch, slot * 100.0, n_wait,
			 n_wait == 1 ? "" : "s", n_wait == 1 ? "s" : "", 100.0 * sum_wait / (double)n_wait,
			 n_wait == 1 ? "its time" : "their time", n_wait == 1 ? "it runs" : "they run",
			 n_wait == 1 ? "it" : "them", n_wait == 1 ? "it" : "they",
			 n_wait == 1 ? "s" : "");
	} else if (slot >= 0.3 && gate->wait < 0.2) {
		snprintf(buf, n, "the trainers set the pace: none waits more than %.0f %% of its "
			 "time for batches, and the producer waits for a free slot %.0f %% of its "
			 "time serving (the pipeline has room to spare)", most * 100.0, slot * 100.0);
	} else if (work >= 0.8 && most >= 0.3) {
		size_t k = 0;
		double sum = 0.0;
		for (size_t i = 0; i < nf; i++)
			if (f[i].wait >= 0.3) {
				k++;
				sum += f[i].wait;
			}
		snprintf(buf, n, "the pipeline holds the trainers: %zu trainer%s wait%s %.0f %% "
			 "of %s time for batches while the producer works %.0f %% of its time "
			 "serving (more threads, or a lighter pipeline, would feed them)", k,
			 k == 1 ? "" : "s", k == 1 ? "s" : "", 100.0 * sum / (double)k,
			 k == 1 ? "its" : "their", work * 100.0);
	} else if (most < 0.1) {
		snprintf(buf, n, "no trainer waits for input: the most any waits is %.0f %% of "
			 "its time", most * 100.0);
	} else {
		snprintf(buf, n, "trainers wait up to %.0f %% of their time for batches; the "
			 "producer waits for a free slot %.0f %% of its time serving", most * 100.0,
			 slot >= 0 ? slot * 100.0 : 0.0);
	}
}

static const struct seen *seen_of(const struct ts_status *s, int pid, uint64_t start)
{
	for (size_t j = 0; j < s->n_seen; j++)
		if (s->seen[j].pid == pid && s->seen[j].start == start)
			return &s->seen[j];
	return NULL;
}

/* A fraction as JSON: a number, or null when unknown. */
static void json_frac(FILE *f, const char *key, double v)
{
	if (v < 0)
		fprintf(f, ",\"%s\":null", key);
	else
		fprintf(f, ",\"%s\":%.3f", key, v);
}

/* The decoded cache's figures, flat numbers (tsrun stat reads them; all 0
 * without a cache): size and pixel bytes used, items held, lookups, hits
 * (the rest were read and decoded), whether its pages are locked. */
static void write_json_cache(FILE *f, const struct ts_engine_stats *es)
{
	fprintf(f, "\"cache_bytes\":%" PRIu64 ",\"cache_used\":%" PRIu64 ",\"cache_items\":%"
		PRIu64 ",\"cache_lookups\":%" PRIu64 ",\"cache_hits\":%" PRIu64
		",\"cache_locked\":%d,", es->cache_bytes, es->cache_used, es->cache_items,
		es->cache_hits + es->cache_misses + es->cache_bypass, es->cache_hits,
		es->cache_locked ? 1 : 0);
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
	write_json_cache(f, es);
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
		const struct seen *e = seen_of(s, c->pid, c->start);
		fprintf(f, ",\"job\":");
		if (c->job[0])
			json_str(f, c->job);
		else
			fprintf(f, "null");
		if (e && e->has_acct)
			fprintf(f, ",\"images\":%" PRIu64 ",\"connected_s\":%.1f", e->handed,
				e->at - e->joined);
		json_frac(f, "wait", e && e->has_acct ? e->wait : -1.0);
		json_frac(f, "wait_total", e && e->has_acct ? e->wait_total : -1.0);
		write_epochs_left(f, c, s->plan->epochs);
		first = false;
	}
	fprintf(f, "]");
	fprintf(f, ",\"window_s\":%.1f", s->prod_window_s);
	json_frac(f, "producer_working", s->prod_work);
	json_frac(f, "producer_slot_wait", s->prod_slot);
	json_frac(f, "producer_idle", s->prod_idle);
	json_frac(f, "producer_working_total", s->prod_work_total);
	json_frac(f, "producer_slot_wait_total", s->prod_slot_total);
	json_frac(f, "producer_idle_total", s->prod_idle_total);
	struct fig figs[TS_RING_MAX_CONSUMERS];
	size_t nf = 0;
	for (size_t i = 0; i < rs->n_consumers && nf < TS_RING_MAX_CONSUMERS; i++) {
		const struct ts_ring_consumer_stat *c = &rs->consumers[i];
		const struct seen *e = c->local ? NULL : seen_of(s, c->pid, c->start);
		if (e)
			figs[nf++] = (struct fig){ e->pid, e->batch, e->has_acct ? e->wait : -1.0 };
	}
	char words[512];
	who_waits(words, sizeof(words), figs, nf, s->prod_slot, s->prod_work, s->prod_idle);
	fprintf(f, ",\"who_waits\":");
	json_str(f, words);
	fprintf(f, "}\n");
}

/* serve { metrics = "PATH" }: the status as Prometheus text, from the
 * very JSON of the status file (parsed back: one source of figures), put
 * in place as the status file is (a new file renamed onto PATH, so a
 * scraper never reads half of one). */
static void write_metrics_file(struct ts_status *s, const struct ts_engine_stats *es,
			       const struct ts_ring_stat *rs, double t)
{
	char *text = NULL, *tmp = NULL;
	size_t len = 0;
	int e = 0;
	struct ts_status_info st = {0};
	FILE *m = open_memstream(&text, &len);
	if (!m) {
		e = -errno;
		goto out;
	}
	write_json(s, es, rs, m, t);
	if (fclose(m) != 0 || !text) {
		e = TS_E_NOMEM;
		goto out;
	}
	if (!ts_status_parse(text, len, &st)) {
		e = TS_E_PROTOCOL;  /* cannot be: it is our own JSON */
		goto out;
	}
	FILE *f = ts_cli_side_create(s->metrics_path, &tmp);
	if (!f) {
		e = -errno;
		goto out;
	}
	ts_status_metrics(&st, f);
	e = ts_cli_side_commit(f, tmp, s->metrics_path);
	s->metrics_written = s->metrics_written || e == 0;
out:
	if (e && !s->metrics_failed)
		fprintf(stderr, "tsrun: cannot write the metrics file %s: %s (serve setting "
			"metrics; reported once)\n", s->metrics_path, ts_error_name(e));
	s->metrics_failed = e != 0;
	ts_status_info_free(&st);
	free(text);
}

/* A failure is told once on note (the status line's stream), if any:
 * libtsrun's producer has none unless its caller gave one, and a library
 * never prints on its own. */
static void write_status_file(FILE *note, struct ts_status *s, const struct ts_engine_stats *es,
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
	if (e && !s->status_failed && note)
		fprintf(note, "tsrun: cannot write the status file %s: %s (tsrun stat and "
			"reload will not see this run; reported once)\n", s->status_path,
			ts_error_name(e));
	s->status_failed = e != 0;
	if (s->metrics_path)
		write_metrics_file(s, es, rs, t);
}

void ts_status_update(struct ts_status *s, const struct ts_engine_stats *es,
		      const struct ts_ring_stat *rs, FILE *tty, FILE *json)
{
	double t = ts_clock_now();
	s->rate = pace_rate(&s->rate_p, es->samples, (uint64_t)(s->plan->batch > 0 ? s->plan->batch : 1), t);
	s->threads = es->threads;
	track(s, rs, t);
	/* Track every call; show and write at most once a second, and always
	 * at the end of the stream. */
	bool final = rs->state != TS_RING_RUNNING;
	if (final && s->emitted_final) {
		/* Draining: trainers still read; `tsrun stat` keeps seeing a
		 * fresh file, once a second, until tsrun exits. */
		if (t - s->last_emit >= 1.0) {
			s->last_emit = t;
			write_status_file(tty, s, es, rs, t);
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
			if (tty)
				fprintf(tty, "tsrun: cannot write --stats-json: %s (reported once)\n",
					strerror(errno ? errno : EIO));
			s->json_failed = true;
		}
	}
	write_status_file(tty, s, es, rs, t);
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
	/* Epochs counted from 0, as loader.epoch, --start and the status file
	 * count them: "epoch E/N" is epoch E of 0..N-1, E epochs done; N/N
	 * once the last is produced. */
	if (s->epochs)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "epoch %" PRIu64 "/%" PRIu64,
			      es->epoch > s->epochs ? s->epochs : es->epoch, s->epochs);
	else
		n += snprintf(line + n, sizeof(line) - (size_t)n, "epoch %" PRIu64, es->epoch);
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
		n += snprintf(line + n, sizeof(line) - (size_t)n, " | skipped %" PRIu64, es->skipped);
	uint64_t looks = es->cache_hits + es->cache_misses + es->cache_bypass;
	if (es->cache_bytes && n < (int)sizeof(line) - 50)
		snprintf(line + n, sizeof(line) - (size_t)n, " | cache %" PRIu64 " items, %.0f%% hits",
			 es->cache_items, looks ? 100.0 * (double)es->cache_hits / (double)looks : 0.0);
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

/* CPU seconds of this process's children: those it has waited for
 * (RUSAGE_CHILDREN) and those alive now, from /proc/PID/stat (utime and
 * stime, fields 14 and 15). They are the pipeline's too: tsrun.serve's
 * DataLoader workers (persistent ones are alive at the summary), plugin
 * hosts. */
static double children_cpu(void)
{
	struct rusage ru;
	double cpu = 0;
	long tick = sysconf(_SC_CLK_TCK);
	char path[300], buf[1024];
	DIR *d;
	struct dirent *de;

	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	if (tick <= 0 || !(d = opendir("/proc")))
		return cpu;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* after "pid (comm) ": the comm may hold spaces and ')' */
		char *p = strrchr(buf, ')');
		int ppid;
		unsigned long long ut, st;
		if (p && sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&ppid, &ut, &st) == 3 && ppid == getpid()) {
			cpu += (double)(ut + st) / (double)tick;
		}
	}
	closedir(d);
	return cpu;
}

void ts_status_summary(struct ts_status *s, const struct ts_engine_stats *es,
		       const struct ts_ring_stat *rs, const char *const *skipped,
		       size_t n_skipped, FILE *out)
{
	double t = ts_clock_now();
	s->threads = es->threads;
	track(s, rs, t);
	ts_status_clear(s, out);
	if (s->quiet && n_skipped == 0)
		return;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	double wall = t - s->t0;
	double child = children_cpu();
	char of[96] = "";
	if (child >= 0.05)
		snprintf(of, sizeof(of), " (%.1f s of it in child processes: loader workers, "
			 "plugin hosts)", child);
	fprintf(out, "tsrun: summary: %" PRIu64 " images served in %.1f s (%.0f img/s), "
		"cpu %.1f s%s, peak memory %.1f MiB, skipped %" PRIu64 "\n", es->samples, wall,
		wall > 0 ? (double)es->samples / wall : 0.0, cpu + child, of,
		(double)ru.ru_maxrss / 1024.0, es->skipped);
	/* The producer's time and who waited on whom first: the lines per
	 * consumer stay the summary's last (scripts read them there). */
	struct fig figs[MAX_SEEN];
	size_t nf = 0;
	for (size_t i = 0; i < s->n_seen; i++) {
		const struct seen *e = &s->seen[i];
		figs[nf++] = (struct fig){ e->pid, e->batch, e->has_acct ? e->wait_total : -1.0 };
	}
	if (s->prod_work_total >= 0) {
		int th = s->threads > 0 ? s->threads : 1;
		fprintf(out, "tsrun: summary: producer: working %.0f %%, waiting for a free slot "
			"%.0f %%, idle %.0f %% of %.1f s x %d thread%s\n", s->prod_work_total * 100.0,
			s->prod_slot_total * 100.0, s->prod_idle_total * 100.0, t - rs->created, th,
			th == 1 ? "" : "s");
		char words[512];
		who_waits(words, sizeof(words), figs, nf, s->prod_slot_total, s->prod_work_total,
			  s->prod_idle_total);
		if (words[0])
			fprintf(out, "tsrun: summary: %s\n", words);
	}
	if (es->cache_bytes) {
		uint64_t looks = es->cache_hits + es->cache_misses + es->cache_bypass;
		fprintf(out, "tsrun: cache: %" PRIu64 " items in %.1f of %.1f MiB (%s), %" PRIu64
			" of %" PRIu64 " lookups hit (%.1f%%)\n", es->cache_items,
			(double)es->cache_used / 1048576.0, (double)es->cache_bytes / 1048576.0,
			es->cache_locked ? "locked" : "not locked", es->cache_hits, looks,
			looks ? 100.0 * (double)es->cache_hits / (double)looks : 0.0);
	}
	for (size_t i = 0; i < s->n_seen; i++) {
		const struct seen *e = &s->seen[i];
		double dt = e->last_t - e->first_t;
		/* A control page may also go backwards: no negative count. */
		uint64_t n = e->last_release > e->first_release
				     ? e->last_release - e->first_release : 0;
		n = n > e->skipped ? n - e->skipped : 0;
		/* What it was handed, as it counts (bounded by what it
		 * released): not what it passed over or read ahead unused. */
		if (e->has_acct)
			n = e->handed;
		/* Seen in one snapshot only (it came and went between two,
		 * 0.1 s apart): one position is no rate, and "0 img/s" would
		 * say it read nothing. */
		fprintf(out, "tsrun: summary: consumer %d (batch %u): %" PRIu64 " images, ",
			e->pid, e->batch, n);
		if (dt > 0)
			fprintf(out, "%.0f img/s", (double)n / dt);
		else
			fprintf(out, "img/s n/a (seen in one status snapshot)");
		if (e->has_acct && e->wait_total >= 0)
			fprintf(out, ", waited %.0f %% of its %.1f s for batches",
				e->wait_total * 100.0, e->at - e->joined);
		fputc('\n', out);
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
	/* A scraper must not keep reading a finished run's figures. */
	if (s->metrics_path && s->metrics_written)
		unlink(s->metrics_path);
	free(s->metrics_path);
	free(s->socket);
	free(s->file);
	free(s);
}
