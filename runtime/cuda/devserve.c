/*
 * devserve.c - the producer's device ring behind its staged host ring
 * (tscuda.h, "devserve"): a devring sized like the host ring, the host
 * ring page-locked for DMA where the driver allows, and a finisher whose
 * fill is ts_devring_fill. Compiled in every build; without CUDA the
 * first call into tscuda says TS_E_NODEV and start fails with it.
 */
#include "tscuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "barrier.h"
#include "ring_finisher.h"
#include "proto.h"
#include "ring.h"
#include "util.h"

/* Samples per fill: big enough to keep the copy engine and the kernel
 * busy, small enough that consumers see the first batches early. */
#define DEVSERVE_CHUNK 256
/* The largest piece of the host ring page-locked in one call: the
 * driver holds locks of its own for the length of a cudaHostRegister
 * (it faults in and locks every page; about 0.1 s a GB), and the
 * finisher's copies and kernels wait for them. In pieces, and with the
 * pin thread letting a fill under way end before its next piece (a
 * fill's copy is split at piece boundaries, and each part would wait
 * for a piece of its own), a fill waits for one piece at most, never for
 * the whole ring. */
#define DEVSERVE_PIN_PIECE (64u << 20)   /* and at most 1/16 of the ring */

struct ts_devserve {
	struct ts_ring *ring;
	struct ts_devring *dr;
	struct ts_finisher *fin;
	struct ts_finish_params p;
	int dev;
	/* Page-locking the host ring (cudaHostRegister) touches every page
	 * on one thread, seconds for a ring of GBs: it runs on its own
	 * thread beside serving, so the first batches do not wait for it
	 * (their copies are staged by the driver until it is done), and in
	 * pieces (DEVSERVE_PIN_PIECE), so that their CUDA calls do not wait
	 * for the driver's locks through the whole registration either. */
	void *pin_base;               /* the host ring's first mapping */
	size_t pin_len;
	size_t pin_piece;             /* bytes, whole slots and pages */
	size_t pin_done;              /* pieces registered (pin thread;
					 read after the join) */
	int pin_stop;                 /* set by stop: release; pin thread:
					 acquire between pieces */
	pthread_t pin_thread;
	bool pin_started;
	int pin_state;                /* 0 registering, 1 pinned, -1 refused:
					 release by the pin thread, acquire by
					 stats (pin_note written before) */
	char pin_note[192];
	/* A fill under way, and fills done: the finisher sets and counts
	 * them, the pin thread waits on fill_cv for the end of one before
	 * its next piece (all under fill_mu). */
	pthread_mutex_t fill_mu;
	pthread_cond_t fill_cv;
	bool filling;
	uint64_t fills;
	size_t host_stride;           /* its sample_stride */
	struct ts_proto_device desc;
	struct ts_cuda_info info;
};

/* Before a piece: let a fill under way end (its copies then wait for no
 * piece after the one it may have waited for); a fill that starts
 * after that waits for this piece at most, and the registration moves
 * on by a piece a fill. Stop wakes it. */
static void pin_yield(struct ts_devserve *d)
{
	pthread_mutex_lock(&d->fill_mu);
	if (d->filling) {
		uint64_t seen = d->fills;
		while (d->fills == seen && !READ_ONCE(d->pin_stop))
			pthread_cond_wait(&d->fill_cv, &d->fill_mu);
	}
	pthread_mutex_unlock(&d->fill_mu);
}

static void *pin_main(void *arg)
{
	struct ts_devserve *d = arg;
	struct ts_error perr = {0};
	int rc = ts_cuda_set_device(d->dev, &perr);
	for (size_t off = 0; rc == 0 && off < d->pin_len; off += d->pin_piece) {
		if (off > 0)
			pin_yield(d);
		/* pairs with the release in ts_devserve_stop: stop waits for
		 * one piece, not the whole ring */
		if (smp_load_acquire(&d->pin_stop)) {
			rc = 1;
			break;
		}
		size_t len = d->pin_len - off < d->pin_piece ? d->pin_len - off : d->pin_piece;
		rc = ts_cuda_host_register((uint8_t *)d->pin_base + off, len, &perr);
		if (rc == 0)
			d->pin_done++;
	}
	if (rc < 0)
		snprintf(d->pin_note, sizeof(d->pin_note), "host ring not page-locked (%.100s); "
			 "copies to the GPU are staged by the driver", perr.msg);
	if (rc != 0)
		rc = -1;                  /* refused, or stopped: not pinned */
	/* orders pin_note before the state that says to read it */
	smp_store_release(&d->pin_state, rc < 0 ? -1 : 1);
	return NULL;
}

static int fill(void *arg, const void *host, uint64_t seq, size_t n,
		struct ts_error *err)
{
	struct ts_devserve *d = arg;
	pthread_mutex_lock(&d->fill_mu);
	d->filling = true;
	pthread_mutex_unlock(&d->fill_mu);
	/* the finisher thread's current device */
	int rc = ts_cuda_set_device(d->dev, err);
	if (rc >= 0)
		rc = ts_devring_fill(d->dr, host, d->host_stride, seq, n, err);
	pthread_mutex_lock(&d->fill_mu);
	d->filling = false;
	d->fills++;
	pthread_cond_broadcast(&d->fill_cv);     /* pin_yield */
	pthread_mutex_unlock(&d->fill_mu);
	return rc;
}

int ts_devserve_start(struct ts_ring *ring, const struct ts_plan *plan, int dev,
		      struct ts_devserve **out, char *note, struct ts_error *err)
{
	struct ts_ring_info ri;
	struct ts_devring_handle h;
	int rc;

	if (note)
		note[0] = 0;
	if (!ring || !plan || !out)
		return ts_error_set(err, TS_E_ARG, "devserve: ring and plan needed");
	struct ts_devserve *d = calloc(1, sizeof(*d));
	if (!d)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	d->ring = ring;
	d->dev = dev;
	pthread_mutex_init(&d->fill_mu, NULL);
	pthread_cond_init(&d->fill_cv, NULL);
	rc = ts_finish_params_from_plan(plan, &d->p, err);
	if (rc < 0)
		goto fail;
	ts_ring_get_info(ring, &ri);
	d->host_stride = ri.sample_stride;
	if (ri.sample_bytes != (size_t)d->p.height * (size_t)d->p.width * (size_t)d->p.channels) {
		rc = ts_error_set(err, TS_E_ARG, "devserve: the host ring does not hold "
				  "uint8 %dx%dx%d samples", d->p.height, d->p.width, d->p.channels);
		goto fail;
	}
	rc = ts_cuda_set_device(dev, err);
	if (rc < 0)
		goto fail;
	/* trainers open the ring from their own processes: a device that
	 * admits one process only would refuse them all */
	rc = ts_cuda_check_shareable(dev, err);
	if (rc < 0)
		goto fail;
	rc = ts_cuda_info(dev, &d->info, err);
	if (rc < 0)
		goto fail;
	size_t chunk = ri.capacity / 2 < DEVSERVE_CHUNK ? ri.capacity / 2 : DEVSERVE_CHUNK;
	if (chunk == 0)
		chunk = 1;
	/* mirror = the largest batch a consumer may ask for (half the ring) */
	rc = ts_devring_create(dev, ri.capacity, ri.capacity / 2, &d->p, chunk, &d->dr, err);
	if (rc < 0)
		goto fail;
	rc = ts_devring_export(d->dr, &h, err);
	if (rc < 0)
		goto fail;
	d->desc.dtype = (uint32_t)d->p.dtype;
	d->desc.layout = (uint32_t)TS_LAYOUT_NCHW;
	d->desc.sample_bytes = h.sample_bytes;
	d->desc.sample_stride = h.sample_stride;
	d->desc.capacity = h.capacity;
	d->desc.mirror = h.mirror;
	d->desc.device = dev;
	d->desc.pid = h.pid;
	_Static_assert(sizeof(d->desc.ipc) == sizeof(h.ipc), "IPC handle sizes");
	memcpy(d->desc.ipc, h.ipc, sizeof(h.ipc));
	rc = ts_cuda_pci_bus_id(dev, d->desc.pci_bus_id, sizeof(d->desc.pci_bus_id), err);
	if (rc < 0)
		goto fail;
	rc = ts_cuda_uuid(dev, d->desc.uuid, err);
	if (rc < 0)
		goto fail;

	/* The finisher reads each run from the first mapping only (it never
	 * crosses the wrap), so pinning that one is enough for DMA; on its
	 * own thread (pin_main), while the first batches are served. */
	d->pin_base = ts_ring_slot(ring, 0);
	d->pin_len = ri.capacity * ri.sample_stride;
	{
		/* whole slots (a fill's copy is split at piece boundaries) and
		 * whole pages (registrations round to pages: two must not share
		 * one): a multiple of page / gcd(stride, page) slots */
		size_t page = (size_t)sysconf(_SC_PAGESIZE), a = ri.sample_stride, b = page;
		while (b) {
			size_t t = a % b;
			a = b;
			b = t;
		}
		size_t unit = page / a, max = d->pin_len / 16 < DEVSERVE_PIN_PIECE ?
						    d->pin_len / 16 : DEVSERVE_PIN_PIECE;
		size_t per = max / (unit * ri.sample_stride);
		uint64_t slots = (per ? per : 1) * unit;
		d->pin_piece = slots * ri.sample_stride;
		if (slots < ri.capacity)
			ts_devring_host_pieces(d->dr, d->pin_base, slots);
	}
	if (pthread_create(&d->pin_thread, NULL, pin_main, d) == 0)
		d->pin_started = true;
	else
	{
		snprintf(d->pin_note, sizeof(d->pin_note),
			 "host ring not page-locked (no thread to register it)");
		d->pin_state = -1;
	}

	rc = ts_finisher_start(ring, chunk, fill, d, &d->fin, err);
	if (rc < 0)
		goto fail;
	*out = d;
	return 0;
fail:
	ts_devserve_stop(d, 0, NULL);
	return rc;
}

void ts_devserve_describe(const struct ts_devserve *d, struct ts_proto_device *out)
{
	*out = d->desc;
}

void ts_devserve_stats(struct ts_devserve *d, struct ts_devserve_stats *out)
{
	struct ts_finisher_stats fs = {0};
	memset(out, 0, sizeof(*out));
	if (d->fin)
		ts_finisher_stats(d->fin, &fs);
	out->samples = fs.samples;
	out->fill_s = fs.fill_s;
	int pin = smp_load_acquire(&d->pin_state);   /* pairs with pin_main */
	out->pinned = pin == 1;
	snprintf(out->pin_note, sizeof(out->pin_note), "%s", pin < 0 ? d->pin_note : "");
	out->device = d->dev;
	snprintf(out->name, sizeof(out->name), "%.127s", d->info.name);
	snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%.15s", d->desc.pci_bus_id);
}

unsigned ts_devserve_wait_importers(unsigned (*importers)(void *arg), void *arg,
				    int timeout_ms)
{
	struct timespec t0, t, tick = { 0, 10 * 1000 * 1000 };
	unsigned n;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = importers(arg)) > 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    timeout_ms)
			break;
		nanosleep(&tick, NULL);
	}
	return n;
}

int ts_devserve_stop(struct ts_devserve *d, unsigned importers, struct ts_error *err)
{
	if (!d)
		return 0;
	int rc = ts_finisher_stop(d->fin, err);
	/* orders nothing else: the pin thread stops between pieces */
	smp_store_release(&d->pin_stop, 1);
	pthread_mutex_lock(&d->fill_mu);
	pthread_cond_broadcast(&d->fill_cv);     /* a pin_yield under way */
	pthread_mutex_unlock(&d->fill_mu);
	if (d->pin_started)
		pthread_join(d->pin_thread, NULL);
	/* joined: plain reads; every piece registered, even of a
	 * registration refused or stopped part way */
	for (size_t i = 0; i < d->pin_done; i++)
		ts_cuda_host_unregister((uint8_t *)d->pin_base + i * d->pin_piece);
	/* cudaFree of memory another process still has open through
	 * cudaIpcOpenMemHandle is undefined behaviour: with importers left,
	 * the block stays allocated and goes with this process's context */
	if (importers == 0)
		ts_devring_destroy(d->dr);
	pthread_cond_destroy(&d->fill_cv);
	pthread_mutex_destroy(&d->fill_mu);
	free(d);
	return rc;
}
