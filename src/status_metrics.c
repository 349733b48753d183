/*
 * status_metrics.c - the status of `tsrun run` as Prometheus text
 * (exposition format 0.0.4, what node_exporter's textfile collector and
 * every Prometheus client's parser read): `tsrun stat SOCKET --metrics`
 * and the serve setting metrics = "PATH" both print it from the status
 * file's figures (struct ts_status_info), so the two always agree.
 *
 * Every series carries the pipeline and socket (two tsruns on one host
 * stay apart); a trainer's carry its pid, batch size and job ("" when it
 * is in none). A figure the status does not know (an older client's
 * wait) has no series rather than a made-up value.
 */
#include <stdio.h>

#include "status.h"

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{pipeline=..,socket=..[,extra]} value */
static void series_start(FILE *f, const struct ts_status_info *st, const char *name)
{
	fprintf(f, "%s{pipeline=", name);
	label_value(f, st->pipeline);
	fputs(",socket=", f);
	label_value(f, st->socket);
}

static void plain(FILE *f, const struct ts_status_info *st, const char *name, double v)
{
	series_start(f, st, name);
	fprintf(f, "} %.10g\n", v);
}

static void producer_state(FILE *f, const struct ts_status_info *st, const char *name,
			   const char *state, double v)
{
	if (v < 0)
		return;
	series_start(f, st, name);
	fprintf(f, ",state=\"%s\"} %.6g\n", state, v);
}

static void trainer(FILE *f, const struct ts_status_info *st, const char *name,
		    const struct ts_status_consumer *c, double v)
{
	if (v < 0)
		return;
	series_start(f, st, name);
	fprintf(f, ",pid=\"%ld\",batch=\"%.0f\",job=", c->pid, c->batch);
	label_value(f, c->job);
	fprintf(f, "} %.10g\n", v);
}

/* One trainer figure family: its HELP/TYPE and a series per trainer. */
#define TRAINERS(name, type, help, expr)                                   \
	do {                                                               \
		family(f, name, type, help);                               \
		for (size_t i_ = 0; i_ < st->n_consumers; i_++) {          \
			const struct ts_status_consumer *c = &st->consumers[i_]; \
			trainer(f, st, name, c, (expr));                   \
		}                                                          \
	} while (0)

void ts_status_metrics(const struct ts_status_info *st, FILE *f)
{
	family(f, "tsrun_samples_total", "counter", "Samples the producer published.");
	plain(f, st, "tsrun_samples_total", st->samples);
	family(f, "tsrun_images_per_second", "gauge",
	       "Samples the producer published per second, over the last 0.5 to 1 s.");
	plain(f, st, "tsrun_images_per_second", st->rate);
	family(f, "tsrun_ring_capacity_samples", "gauge", "Samples the ring holds.");
	plain(f, st, "tsrun_ring_capacity_samples", st->capacity);
	family(f, "tsrun_ring_fill_samples", "gauge",
	       "Samples published and not yet released by the slowest trainer.");
	plain(f, st, "tsrun_ring_fill_samples", st->ring_fill);
	family(f, "tsrun_trainers", "gauge", "Trainers connected.");
	plain(f, st, "tsrun_trainers", (double)st->n_consumers);
	family(f, "tsrun_window_seconds", "gauge",
	       "Length of the window of the *_fraction figures (5 to 10 s).");
	plain(f, st, "tsrun_window_seconds", st->window_s);
	family(f, "tsrun_producer_time_fraction", "gauge",
	       "Fraction of the producer's writer time in the window: working (decoding, "
	       "augmenting), slot_wait (every slot held by a trainer), idle (no trainer).");
	producer_state(f, st, "tsrun_producer_time_fraction", "working", st->prod_work);
	producer_state(f, st, "tsrun_producer_time_fraction", "slot_wait", st->prod_slot);
	producer_state(f, st, "tsrun_producer_time_fraction", "idle", st->prod_idle);
	family(f, "tsrun_producer_time_fraction_since_start", "gauge",
	       "As tsrun_producer_time_fraction, since the producer started.");
	producer_state(f, st, "tsrun_producer_time_fraction_since_start", "working",
		       st->prod_work_total);
	producer_state(f, st, "tsrun_producer_time_fraction_since_start", "slot_wait",
		       st->prod_slot_total);
	producer_state(f, st, "tsrun_producer_time_fraction_since_start", "idle",
		       st->prod_idle_total);
	TRAINERS("tsrun_trainer_wait_fraction", "gauge",
		 "Fraction of the trainer's time in the window spent waiting for batches.",
		 c->wait);
	TRAINERS("tsrun_trainer_wait_fraction_since_join", "gauge",
		 "Fraction of the trainer's time since it connected spent waiting for batches.",
		 c->wait_total);
	TRAINERS("tsrun_trainer_images_total", "counter", "Samples handed to the trainer.",
		 c->images);
	TRAINERS("tsrun_trainer_images_per_second", "gauge",
		 "Samples the trainer released per second, over at least 4 batches.", c->rate);
	TRAINERS("tsrun_trainer_lag_samples", "gauge",
		 "Samples published that the trainer has not released.", c->lag);
	TRAINERS("tsrun_trainer_holding_ring", "gauge",
		 "1 for the trainer that holds the ring back (the ring is full up to it).",
		 st->holding_back == c->pid ? 1.0 : 0.0);
}
