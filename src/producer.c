/*
 * producer.c - tsrun_producer.h: a ring, its socket server and the status
 * of `tsrun run` (status line, status file, summary) around samples that
 * the caller makes, for tsrun.serve(). The engine's place is taken by the
 * caller's put(): one copy of each batch into its slots, then one publish.
 */
#include "tsrun_producer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "server.h"
#include "status.h"
#include "util.h"

#define STATUS_PERIOD_MS 100

struct ts_producer {
	struct ts_ring *ring;
	struct ts_server *srv;
	struct ts_status *status;
	struct ts_plan plan;          /* name and batch, for the status only */
	FILE *out;                    /* status line and summary, or NULL */
	char *name;

	uint64_t capacity, sample_bytes, label_bytes;
	uint64_t sample_stride;       /* the ring's slot to slot */
	bool label_tensor;
	uint32_t epochs;

	/* Position and counters: written by the putting thread under lock,
	 * read by the status thread. */
	pthread_mutex_t lock;
	uint64_t head;                /* samples published */
	uint64_t epoch, index;        /* of the next sample */
	uint64_t epoch_size;          /* as told, or what the first epoch had */
	bool finished;
	bool summarised;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stop;
};

static void opts_defaults(struct ts_producer_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->status_fd = -1;
	o->ring = 8;
	o->wait = 1;
	o->stall_timeout = TS_SERVER_STALL_TIMEOUT_S;
	o->consumers = TS_RING_MAX_CONSUMERS;
}

/* size is the caller's sizeof (ts_producer_opts_init passes it): no byte
 * past it is written. */
TS_EXPORT void ts_producer_opts_init_size(struct ts_producer_opts *o, size_t size)
{
	struct ts_producer_opts d;
	opts_defaults(&d);
	ts_sized_init(o, size, &d, sizeof(d));
}

static size_t elem_bytes(int dtype)
{
	switch (dtype) {
	case TS_DTYPE_U8: return 1;
	case TS_DTYPE_U16: return 2;
	case TS_DTYPE_F16: return 2;
	case TS_DTYPE_F32: return 4;
	default: return 0;
	}
}

/* A tensor's bytes, or 0 with err filled when its description is bad
 * (what names it: "sample", "label"). */
static uint64_t tensor_bytes(const struct ts_producer_tensor *t, const char *what,
			     struct ts_error *err)
{
	uint64_t n = elem_bytes(t->dtype);
	if (!n) {
		ts_error_set(err, TS_E_ARG, "%s dtype %d is not one the ring carries (0 uint8, "
			     "1 uint16, 2 float16, 3 float32)", what, t->dtype);
		return 0;
	}
	if (t->ndim < 0 || t->ndim > TS_PRODUCER_MAX_DIMS) {
		ts_error_set(err, TS_E_ARG, "%s has %d dimensions; the ring takes 0 to %d",
			     what, t->ndim, TS_PRODUCER_MAX_DIMS);
		return 0;
	}
	for (int i = 0; i < t->ndim; i++) {
		if (t->dims[i] < 1 || t->dims[i] > (1ll << 32)) {
			ts_error_set(err, TS_E_ARG, "%s dimension %d is %lld; each must be 1 "
				     "or more", what, i, (long long)t->dims[i]);
			return 0;
		}
		n *= (uint64_t)t->dims[i];
		if (n > (1ull << 36)) {
			ts_error_set(err, TS_E_ARG, "%s of more than 64 GiB", what);
			return 0;
		}
	}
	return n;
}

static void stats_now(struct ts_producer *p, struct ts_engine_stats *es,
		      struct ts_ring_stat *rs)
{
	memset(es, 0, sizeof(*es));
	pthread_mutex_lock(&p->lock);
	es->samples = p->head;
	es->epoch = p->epoch;
	es->index = p->index;
	es->epoch_size = p->epoch_size;
	es->done = p->finished;
	pthread_mutex_unlock(&p->lock);
	ts_server_stat(p->srv, rs);
}

/* The status thread: what the main loop of `tsrun run` does, for a
 * producer whose caller is busy loading (status line, status file). */
static void *status_main(void *arg)
{
	struct ts_producer *p = arg;
	pthread_mutex_lock(&p->stop_lock);
	while (!p->stop) {
		pthread_mutex_unlock(&p->stop_lock);
		struct ts_engine_stats es;
		struct ts_ring_stat rs;
		stats_now(p, &es, &rs);
		char line[256];
		/* notes go to the caller's status descriptor, or nowhere: a
		 * library never prints on its own */
		while (ts_server_take_note(p->srv, line, sizeof(line))) {
			if (!p->out)
				continue;
			ts_status_clear(p->status, p->out);
			fprintf(p->out, "tsrun: %s\n", line);
			fflush(p->out);
		}
		ts_status_update(p->status, &es, &rs, p->out, NULL);
		pthread_mutex_lock(&p->stop_lock);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += STATUS_PERIOD_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!p->stop)
			pthread_cond_timedwait(&p->stop_cond, &p->stop_lock, &ts);
	}
	pthread_mutex_unlock(&p->stop_lock);
	return NULL;
}

/* The ring's height/width/channels for a tensor of any rank: (C, H, W)
 * is NCHW exactly; any other rank is described by dims alone and the
 * three are a rough (1, prod, 1) that a pipeline client can still size. */
static int ring_shape(const struct ts_producer_tensor *t, struct ts_ring_params *rp,
		      struct ts_error *err)
{
	if (t->ndim == 3 && t->dims[0] <= 1 << 20 && t->dims[1] <= 1 << 30 &&
	    t->dims[2] <= 1 << 30) {
		rp->channels = (int)t->dims[0];
		rp->height = (int)t->dims[1];
		rp->width = (int)t->dims[2];
		rp->layout = TS_LAYOUT_NCHW;
		return 0;
	}
	uint64_t prod = 1;
	for (int i = 0; i < t->ndim; i++)
		prod *= (uint64_t)t->dims[i];
	if (prod > (1u << 30))
		return ts_error_set(err, TS_E_ARG, "a sample of %llu elements is too large",
				    (unsigned long long)prod);
	rp->channels = 1;
	rp->height = 1;
	rp->width = (int)prod;
	rp->layout = TS_LAYOUT_NHWC;
	return 0;
}

TS_EXPORT int ts_producer_create(const struct ts_producer_opts *opts, struct ts_producer **out,
		       struct ts_error *err)
{
	struct ts_producer_opts known;
	if (!opts || !out)
		return ts_error_set(err, TS_E_ARG, "ts_producer_create: opts and out are required");
	/* the fields the caller's header has; defaults for the rest */
	opts_defaults(&known);
	int src = ts_sized_in(&known, sizeof(known), opts, "struct ts_producer_opts",
			      "ts_producer_opts_init sets it", err);
	if (src)
		return src;
	const struct ts_producer_opts *o = &known;
	if (!o->socket_path || !o->socket_path[0])
		return ts_error_set(err, TS_E_ARG, "no socket path");
	uint64_t sb = tensor_bytes(&o->sample, "sample", err);
	if (!sb)
		return TS_E_ARG;
	uint64_t lb = 0;
	if (o->label_tensor) {
		lb = tensor_bytes(&o->label, "label", err);
		if (!lb)
			return TS_E_ARG;
		if (lb > (1u << 20))
			return ts_error_set(err, TS_E_ARG, "a label tensor of %llu bytes: the "
					    "ring takes labels up to 1 MiB per sample",
					    (unsigned long long)lb);
	}
	if (o->batch < 1 || o->ring < 2)
		return ts_error_set(err, TS_E_ARG, "batch must be 1 or more and ring 2 batches "
				    "or more (batch %u, ring %u)", o->batch, o->ring);
	if (o->wait > TS_RING_MAX_CONSUMERS)
		return ts_error_set(err, TS_E_ARG, "wait wants 0..%d trainers, got %u",
				    TS_RING_MAX_CONSUMERS, o->wait);
	struct ts_producer *p = calloc(1, sizeof(*p));
	if (!p)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->stop_lock, NULL);
	pthread_cond_init(&p->stop_cond, NULL);
	int rc = TS_E_NOMEM;
	p->name = ts_strdup(o->name ? o->name : "loader");
	if (!p->name) {
		ts_error_set(err, rc, "out of memory");
		goto fail;
	}
	p->plan.name = p->name;
	p->plan.batch = (int)o->batch;
	p->epochs = o->epochs;
	p->epoch_size = o->samples_per_epoch;
	p->label_tensor = o->label_tensor != 0;

	struct ts_ring_params rp = {
		.dtype = (enum ts_dtype)o->sample.dtype,
		.sample_bytes = sb,
		.capacity = (uint64_t)o->ring * o->batch,
		.epochs = o->epochs,
		.samples_per_epoch = o->samples_per_epoch,
		.min_consumers = o->wait,
		.default_batch = o->batch,
		.ndim = o->sample.ndim,
		.label_ndim = o->label_tensor ? o->label.ndim : 0,
		.label_dtype = (enum ts_dtype)(o->label_tensor ? o->label.dtype : 0),
		.label_bytes = lb,
	};
	for (int i = 0; i < o->sample.ndim; i++)
		rp.dims[i] = (uint64_t)o->sample.dims[i];
	for (int i = 0; o->label_tensor && i < o->label.ndim; i++)
		rp.label_dims[i] = (uint64_t)o->label.dims[i];
	rc = ring_shape(&o->sample, &rp, err);
	if (rc)
		goto fail;
	rc = ts_ring_create(&rp, &p->ring, err);
	if (rc)
		goto fail;
	struct ts_ring_info ri;
	ts_ring_get_info(p->ring, &ri);
	p->capacity = ri.capacity;
	p->sample_bytes = sb;
	p->sample_stride = ri.sample_stride;
	p->label_bytes = lb;
	rc = ts_server_create(p->ring, o->socket_path, NULL, &p->srv, err);
	if (rc == 0)
		rc = ts_server_set_limits(p->srv, o->stall_timeout, o->consumers, err);
	if (rc)
		goto fail;
	if (o->status_fd >= 0) {
		/* close-on-exec: this process forks DataLoader workers */
		int fd = fcntl(o->status_fd, F_DUPFD_CLOEXEC, 0);
		if (fd >= 0)
			p->out = fdopen(fd, "w");
		if (!p->out && fd >= 0)
			close(fd);
	}
	rc = ts_status_create(&p->plan, o->file ? o->file : p->name, ts_server_path(p->srv),
			      o->epochs, 0, o->quiet || !p->out, &p->status);
	if (rc) {
		ts_error_set(err, rc, "out of memory");
		goto fail;
	}
	rc = pthread_create(&p->thread, NULL, status_main, p);
	if (rc) {
		rc = ts_error_set(err, -rc, "cannot start the status thread: %s", strerror(rc));
		goto fail;
	}
	p->thread_started = true;
	*out = p;
	return 0;
fail:
	p->finished = true;
	p->summarised = true;
	ts_producer_destroy(p);
	return rc;
}

TS_EXPORT const char *ts_producer_socket(const struct ts_producer *p)
{
	return ts_server_path(p->srv);
}

TS_EXPORT uint64_t ts_producer_capacity(const struct ts_producer *p)
{
	return p->capacity;
}

TS_EXPORT unsigned ts_producer_consumers(struct ts_producer *p)
{
	return ts_server_consumers(p->srv);
}

TS_EXPORT int ts_producer_wait(struct ts_producer *p, size_t n, int timeout_ms, struct ts_error *err)
{
	if (n < 1 || n > p->capacity)
		return ts_error_set(err, TS_E_ARG, "%zu samples at once: the ring holds %llu; "
				    "put them in smaller pieces", n,
				    (unsigned long long)p->capacity);
	if (p->finished)
		return ts_error_set(err, TS_E_STATE, "the stream is finished");
	/* Releases are in order: the last slot free means all of them are. */
	int rc = ts_ring_wait_writable(p->ring, p->head + n - 1, timeout_ms);
	if (rc == -ETIMEDOUT)
		return ts_error_set(err, rc, "no room within %d ms", timeout_ms);
	if (rc == -ECANCELED)
		return ts_error_set(err, TS_E_STATE, "the stream is finished");
	return rc;
}

TS_EXPORT int ts_producer_put(struct ts_producer *p, const void *data, const int32_t *labels,
		    const void *label_data, size_t n, struct ts_error *err)
{
	if (p->finished)
		return ts_error_set(err, TS_E_STATE, "the stream is finished");
	if (n < 1 || n > p->capacity || !data || (p->label_tensor ? !label_data : !labels))
		return ts_error_set(err, TS_E_ARG, "put: %zu samples, data %s, %s %s", n,
				    data ? "given" : "NULL",
				    p->label_tensor ? "label tensors" : "labels",
				    (p->label_tensor ? label_data != NULL : labels != NULL)
					    ? "given" : "NULL");
	if (p->epochs && p->epoch >= p->epochs)
		return ts_error_set(err, TS_E_STATE, "put after the last of %u epochs",
				    p->epochs);
	uint64_t seq = p->head;
	/* Never blocks: the caller waited. A zero timeout tells us it did. */
	if (ts_ring_wait_writable(p->ring, seq + n - 1, 0) != 0)
		return ts_error_set(err, TS_E_STATE, "put of %zu samples without room: call "
				    "ts_producer_wait first", n);
	/* The data region is mapped twice back to back: n <= capacity
	 * samples from any slot are one span; one copy unless the ring pads
	 * its slots (an odd-sized sample), then one a sample. */
	if (p->sample_stride == p->sample_bytes) {
		memcpy(ts_ring_slot(p->ring, seq), data, n * p->sample_bytes);
	} else {
		uint8_t *dst = ts_ring_slot(p->ring, seq);
		for (size_t i = 0; i < n; i++)
			memcpy(dst + i * p->sample_stride,
			       (const uint8_t *)data + i * p->sample_bytes, p->sample_bytes);
	}
	if (p->label_tensor) {
		/* The label region is mapped once: two pieces across the wrap. */
		uint64_t first = seq % p->capacity;
		size_t a = n < p->capacity - first ? n : (size_t)(p->capacity - first);
		memcpy(ts_ring_label_slot(p->ring, seq), label_data, a * p->label_bytes);
		if (a < n)
			memcpy(ts_ring_label_slot(p->ring, seq + a),
			       (const uint8_t *)label_data + a * p->label_bytes,
			       (n - a) * p->label_bytes);
	}
	for (size_t i = 0; i < n; i++)
		ts_ring_set_meta(p->ring, seq + i, p->label_tensor ? 0 : labels[i],
				 (uint32_t)p->epoch, p->index + i);
	ts_ring_publish(p->ring, seq + n);
	pthread_mutex_lock(&p->lock);
	p->head = seq + n;
	p->index += n;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

TS_EXPORT int ts_producer_end_epoch(struct ts_producer *p, struct ts_error *err)
{
	if (p->finished)
		return ts_error_set(err, TS_E_STATE, "the stream is finished");
	if (p->index == 0)
		return 0;
	ts_ring_close_epoch(p->ring, p->head);
	pthread_mutex_lock(&p->lock);
	if (!p->epoch_size)
		p->epoch_size = p->index;
	p->epoch++;
	p->index = 0;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

TS_EXPORT void ts_producer_position(const struct ts_producer *p, uint64_t *epoch, uint64_t *index)
{
	if (epoch)
		*epoch = p->epoch;
	if (index)
		*index = p->index;
}

static void stop_status(struct ts_producer *p)
{
	if (!p->thread_started)
		return;
	pthread_mutex_lock(&p->stop_lock);
	p->stop = true;
	pthread_cond_signal(&p->stop_cond);
	pthread_mutex_unlock(&p->stop_lock);
	pthread_join(p->thread, NULL);
	p->thread_started = false;
}

TS_EXPORT void ts_producer_finish(struct ts_producer *p, int status, const char *reason,
				  int drain_ms)
{
	if (!p || p->summarised)
		return;
	if (!p->finished) {
		pthread_mutex_lock(&p->lock);
		p->finished = true;
		pthread_mutex_unlock(&p->lock);
		if (status < 0 && status != TS_E_STOPPED)
			ts_ring_fail(p->ring, status, reason);
		else
			ts_ring_finish(p->ring, status > 0 ? 0 : status);
	}
	/* Trainers drain what is published (they map the ring already); the
	 * socket stays so `tsrun stat` answers and none sees a hang-up
	 * before its end of stream, as `tsrun run` does. */
	for (int waited = 0; waited < drain_ms && ts_server_consumers(p->srv) > 0;
	     waited += STATUS_PERIOD_MS)
		usleep(STATUS_PERIOD_MS * 1000);
	stop_status(p);
	struct ts_engine_stats es;
	struct ts_ring_stat rs;
	stats_now(p, &es, &rs);
	ts_status_update(p->status, &es, &rs, p->out, NULL);
	if (p->out) {
		ts_status_summary(p->status, &es, &rs, NULL, 0, p->out);
		fflush(p->out);
	}
	p->summarised = true;
}

TS_EXPORT void ts_producer_forked(struct ts_producer *p)
{
	if (p)
		ts_server_forget_in_child(p->srv);
}

TS_EXPORT void ts_producer_destroy(struct ts_producer *p)
{
	if (!p)
		return;
	if (!p->summarised && p->ring && p->srv && p->status)
		ts_producer_finish(p, TS_E_STOPPED, NULL, 0);
	stop_status(p);
	ts_server_destroy(p->srv);
	ts_ring_destroy(p->ring);
	ts_status_destroy(p->status);
	if (p->out)
		fclose(p->out);
	pthread_cond_destroy(&p->stop_cond);
	pthread_mutex_destroy(&p->stop_lock);
	pthread_mutex_destroy(&p->lock);
	free(p->name);
	free(p);
}
