/*
 * session.c - one served pipeline (session.h): the host ring, the device
 * ring behind it for device(cuda), the engine, the socket server, and hot
 * reload. The plan that runs is owned here; a reloaded plan waits
 * (ts_engine_reload) until the engine reaches the epoch boundary, then an
 * engine for it goes on in the same ring from its head (or, if it cannot
 * start, one for the old plan does).
 */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "util.h"

/* How long the end of a device(cuda) stream waits for trainers to close
 * the device ring (tsrun(1), "device(cuda)"). */
#define TS_SESSION_DEVICE_WAIT_MS 10000

struct ts_session {
	struct ts_plan *plan;          /* running */
	struct ts_engine_reload reload;   /* a plan waiting for the boundary */
	struct ts_engine_opts eo;
	struct ts_ring *ring;
	struct ts_devserve *dsv;
	struct ts_engine *eng;
	struct ts_server *srv;
	struct ts_session_info info;
	char *socket_path;
};

const struct ts_plan *ts_session_plan(const struct ts_session *s)
{
	return s->plan;
}

void ts_session_get_info(const struct ts_session *s, struct ts_session_info *out)
{
	*out = s->info;
	out->reader_note = s->eng ? ts_engine_reader_note(s->eng) : NULL;
}

/* device(cuda) asked for: is the GPU there? Sets *want, or returns
 * TS_E_ARG for an ordinal past the devices this process sees. */
static int probe_device(struct ts_session *s, int dev, bool *want, struct ts_error *err)
{
	struct ts_error derr = {0};
	int ndev = 0;
	*want = false;
	if (ts_cuda_probe(&ndev, &derr) < 0) {
		snprintf(s->info.device_note, sizeof(s->info.device_note), "%s", derr.msg);
		s->info.device_fallback = true;
		return 0;
	}
	if (dev < 0 || dev >= ndev)
		return ts_error_set(err, TS_E_NODEV, "device %d, but this process sees %d CUDA "
				    "device%s (0..%d; CUDA_VISIBLE_DEVICES applies)", dev, ndev,
				    ndev == 1 ? "" : "s", ndev - 1);
	*want = true;
	return 0;
}

/* The host ring, and behind it the device ring when want_device (falling
 * back to a plain host ring, with the reason in the info, when the
 * device ring cannot start). */
static int make_rings(struct ts_session *s, const struct ts_session_opts *o, bool want_device,
		      struct ts_error *err)
{
	const struct ts_plan *plan = s->plan;
	struct ts_ring_params rp = {
		.height = plan->height, .width = plan->width, .channels = plan->channels,
		.dtype = plan->dtype, .layout = plan->layout,
		.sample_bytes = plan->sample_bytes,
		.capacity = (uint64_t)plan->ring_samples,
		.epochs = (uint32_t)s->info.epochs,
		.min_consumers = o->wait,
		.default_batch = (uint32_t)plan->batch,
		.staged = want_device,
		.n_views = plan->n_views, .views = plan->views,
	};
	int rc = ts_ring_create(&rp, &s->ring, err);
	if (rc || !want_device)
		return rc;
	struct ts_error derr = {0};
	char note[256] = "";
	if (ts_devserve_start(s->ring, plan, o->device, &s->dsv, note, &derr) < 0) {
		snprintf(s->info.device_note, sizeof(s->info.device_note), "%s", derr.msg);
		s->info.device_fallback = true;
		/* what the failed start allocated went with its stop; the
		 * context it created stays on the GPU (hundreds of MiB) unless
		 * given back: this process (tsrun run) serves no GPU now */
		ts_cuda_release(o->device);
		ts_ring_destroy(s->ring);
		s->ring = NULL;
		rp.staged = false;
		return ts_ring_create(&rp, &s->ring, err);
	}
	s->info.device = true;
	ts_devserve_stats(s->dsv, &s->info.dev);
	snprintf(s->info.device_note, sizeof(s->info.device_note), "%s", note);
	return 0;
}

int ts_session_create(struct ts_plan *plan, const struct ts_session_opts *o,
		    struct ts_session **out, struct ts_error *err)
{
	struct ts_session *s = calloc(1, sizeof(*s));
	if (!s) {
		ts_plan_destroy(plan);
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	}
	s->plan = plan;
	s->info.epochs = o->epochs >= 0 ? o->epochs : plan->epochs;
	s->socket_path = ts_strdup(o->socket_path ? o->socket_path : plan->socket);
	int rc = TS_E_NOMEM;
	if (!s->socket_path) {
		ts_error_set(err, rc, "out of memory");
		goto fail;
	}
	s->info.socket_path = s->socket_path;
	s->eo = (struct ts_engine_opts){
		.threads = o->threads, .epochs = s->info.epochs,
		.start_epoch = o->start_epoch, .start_index = o->start_index,
	};
	/* device(cuda): with a GPU, the CPU stages write uint8 NHWC into a
	 * staged host ring and a finisher fills the device ring that trainers
	 * open over CUDA IPC (tscuda.h, devserve). Without one, the host ring
	 * serves the uint8 NHWC samples; the info says why. */
	bool want_device = false;
	if (plan->device.cuda) {
		rc = probe_device(s, o->device, &want_device, err);
		if (rc)
			goto fail;
	}
	rc = make_rings(s, o, want_device, err);
	if (rc)
		goto fail;
	rc = ts_engine_create(plan, &s->eo, s->ring, &s->eng, err);
	if (rc)
		goto fail;
	/* Trainers learn the epoch size at welcome (len() of a Loader); a
	 * tile or filter pipeline's is not known in advance. */
	if (!plan->expands)
		ts_ring_set_samples_per_epoch(s->ring, ts_engine_epoch_size(s->eng));
	struct ts_proto_device pdev;
	if (s->dsv)
		ts_devserve_describe(s->dsv, &pdev);
	if (!o->socket_path && plan->socket_private) {
		rc = ts_server_private_dir(s->socket_path, plan->group, err);
		if (rc)
			goto fail;
	}
	rc = ts_server_create_device(s->ring, s->socket_path, plan->group,
				     s->dsv ? &pdev : NULL, &s->srv, err);
	if (rc)
		goto fail;
	if (plan->device.cuda && !s->dsv) {
		/* the host ring serves what device(cuda) promised to finish:
		 * every welcome says so, with the promise and the reason */
		struct ts_proto_fallback fb = {
			.dtype = (uint32_t)plan->device.dtype,
			.normalize = plan->device.normalize,
		};
		for (int c = 0; c < 4; c++) {
			fb.mean[c] = plan->device.normalize ? plan->device.mean[c] : 0.0f;
			fb.std[c] = plan->device.normalize ? plan->device.std[c] : 1.0f;
		}
		snprintf(fb.why, sizeof(fb.why), "%.127s",
			 s->info.device_note[0] ? s->info.device_note : "no device ring");
		rc = ts_server_set_fallback(s->srv, &fb, err);
		if (rc)
			goto fail;
	}
	rc = ts_server_set_limits(s->srv, plan->stall_timeout_s,
				  (unsigned)plan->max_consumers, err);
	if (rc == 0)
		rc = ts_server_set_job_timeout(s->srv, plan->job_timeout_s, err);
	if (rc)
		goto fail;
	s->info.socket_path = ts_server_path(s->srv);
	*out = s;
	return 0;
fail:
	ts_session_destroy(s, NULL);
	return rc;
}

int ts_session_start(struct ts_session *s, struct ts_error *err)
{
	return ts_engine_start(s->eng, err);
}

void ts_session_stats(struct ts_session *s, struct ts_engine_stats *es, struct ts_ring_stat *rs)
{
	ts_engine_stats(s->eng, es);
	ts_server_stat(s->srv, rs);
}

int ts_session_reload(struct ts_session *s, struct ts_plan *next, uint64_t *epoch,
		    bool *replaced, struct ts_error *err)
{
	int rc = ts_engine_reload_offer(&s->reload, s->eng, s->plan, next, &s->eo, replaced,
					err);
	if (rc == 0)
		*epoch = s->reload.epoch;
	return rc;
}

int ts_session_poll(struct ts_session *s, enum ts_session_event *ev, struct ts_error *err)
{
	enum ts_engine_reload_event rev;
	struct ts_plan *taken = NULL;
	*ev = TS_SESSION_NOTHING;
	int rc = ts_engine_reload_poll(&s->reload, &s->eng, s->plan, &s->eo, &rev, &taken, err);
	if (rc)
		/* With the old engine there, its error ended the ring:
		 * ts_session_ended() says so and ts_session_join() why. */
		return s->eng ? 0 : rc;
	if (rev == TS_RELOAD_FELL_BACK) {
		*ev = TS_SESSION_FELL_BACK;
	} else if (rev == TS_RELOAD_TOOK_OVER) {
		ts_plan_destroy(s->plan);
		s->plan = taken;
		/* Trainers joining from now on learn the new plan's epoch
		 * size (0: unknown, for tile or filter). */
		ts_ring_set_samples_per_epoch(s->ring, s->plan->expands ? 0
						       : ts_engine_epoch_size(s->eng));
		*ev = TS_SESSION_TOOK_OVER;
	}
	return 0;
}

bool ts_session_ended(struct ts_session *s)
{
	struct ts_ring_stat rs;
	ts_server_stat(s->srv, &rs);
	return rs.state != TS_RING_RUNNING;
}

void ts_session_stop(struct ts_session *s)
{
	ts_engine_stop(s->eng);
}

int ts_session_join(struct ts_session *s, struct ts_error *err)
{
	return s->eng ? ts_engine_join(s->eng, err) : 0;
}

void ts_session_abort(struct ts_session *s)
{
	ts_ring_fail(s->ring, TS_E_STOPPED, NULL);
	ts_server_unlink(s->srv);
}

bool ts_session_take_note(struct ts_session *s, char *buf, size_t n)
{
	return ts_server_take_note(s->srv, buf, n);
}

unsigned ts_session_consumers(struct ts_session *s)
{
	return ts_server_consumers(s->srv);
}

size_t ts_session_skipped(const struct ts_session *s, const char *const **list)
{
	return ts_engine_skipped(s->eng, list);
}

bool ts_session_device_stats(struct ts_session *s, struct ts_devserve_stats *out)
{
	if (!s->dsv)
		return false;
	ts_devserve_stats(s->dsv, out);
	return true;
}

static unsigned serve_importers(void *arg)
{
	return ts_server_consumers(arg);
}

int ts_session_destroy(struct ts_session *s, struct ts_error *err)
{
	if (!s)
		return 0;
	/* Trainers may have the device ring open (CUDA IPC): end the stream
	 * (the engine's join finishes the ring, also after a signal), then
	 * give them TS_SESSION_DEVICE_WAIT_MS to close it and hang up before
	 * it is freed (ts_devserve_wait_importers). */
	unsigned importers = 0;
	if (s->dsv && s->srv) {
		ts_engine_destroy(s->eng);
		s->eng = NULL;
		importers = ts_devserve_wait_importers(serve_importers, s->srv,
						       TS_SESSION_DEVICE_WAIT_MS);
	}
	ts_server_destroy(s->srv);
	ts_engine_destroy(s->eng);
	int rc = ts_devserve_stop(s->dsv, importers, err);
	ts_ring_destroy(s->ring);
	ts_engine_reload_clear(&s->reload);
	ts_plan_destroy(s->plan);
	free(s->socket_path);
	free(s);
	return rc;
}
