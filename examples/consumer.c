/*
 * consumer.c - a small C trainer over libtsclient (tsclient.h).
 *
 *   consumer SOCKET [--batch N] [--max-batches N] [--classes K] [--lr F]
 *                   [--log-every N] [--join now|next_epoch]
 *
 * It connects to a running `tsrun run`, reads batches as zero-copy views
 * of the shared ring and trains a softmax classifier on two features per
 * channel (the mean and the standard deviation of the image), so a C
 * program can learn something real from the same stream a PyTorch trainer
 * sees. At the end it prints what it read and
 *
 *   loss: first 2.30 last 1.41
 *
 * (means over the first and last 20 steps, or half the run when it is
 * shorter). Exit status: 0 after the end
 * of the stream or --max-batches; 1 when the producer failed or vanished
 * or the labels do not fit --classes; 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsclient.h"

#define MAX_CHANNELS 4
#define MAX_FEATURES (2 * MAX_CHANNELS + 1) /* + a constant 1 for the bias */
#define MAX_CLASSES 1000
#define WINDOW 20

struct model {
	int classes, features;
	double lr;
	double *w;    /* classes x features */
	double *grad; /* the same shape, per step */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Value k of channel ch in sample p, as a float (uint8 scaled to 0..1). */
static double pixel(const struct ts_batch *b, const unsigned char *p, size_t k,
		    int ch)
{
	size_t hw = (size_t)b->height * (size_t)b->width;
	size_t at = b->layout == TS_LAYOUT_NCHW ? (size_t)ch * hw + k
						: k * (size_t)b->channels + (size_t)ch;
	if (b->dtype == TS_DTYPE_F32) {
		float f;
		memcpy(&f, p + at * sizeof(float), sizeof(f));
		return f;
	}
	return p[at] / 255.0;
}

/* Mean and standard deviation of each channel, then a 1 for the bias. */
static void features(const struct ts_batch *b, const unsigned char *p,
		     double *x)
{
	size_t hw = (size_t)b->height * (size_t)b->width;
	for (int ch = 0; ch < b->channels; ch++) {
		double s = 0, s2 = 0;
		for (size_t k = 0; k < hw; k++) {
			double v = pixel(b, p, k, ch);
			s += v;
			s2 += v * v;
		}
		double mean = s / (double)hw;
		double var = s2 / (double)hw - mean * mean;
		x[2 * ch] = mean;
		x[2 * ch + 1] = sqrt(var > 0 ? var : 0);
	}
	x[2 * b->channels] = 1.0;
}

/* One SGD step of softmax regression on the batch; returns the mean
 * cross-entropy before the step. */
static double train_step(struct model *m, const struct ts_batch *b)
{
	double *grad = m->grad;
	double x[MAX_FEATURES], logit[MAX_CLASSES];
	double loss = 0;
	memset(grad, 0, sizeof(double) * (size_t)m->classes * (size_t)m->features);
	for (size_t i = 0; i < b->n; i++) {
		const unsigned char *p = (const unsigned char *)b->data + i * b->sample_stride;
		features(b, p, x);
		double top = -INFINITY;
		for (int c = 0; c < m->classes; c++) {
			double z = 0;
			for (int f = 0; f < m->features; f++)
				z += m->w[c * m->features + f] * x[f];
			logit[c] = z;
			if (z > top)
				top = z;
		}
		double sum = 0;
		for (int c = 0; c < m->classes; c++) {
			logit[c] = exp(logit[c] - top);
			sum += logit[c];
		}
		int y = b->labels[i];
		loss += -log(logit[y] / sum);
		for (int c = 0; c < m->classes; c++) {
			double g = logit[c] / sum - (c == y ? 1.0 : 0.0);
			for (int f = 0; f < m->features; f++)
				grad[c * m->features + f] += g * x[f];
		}
	}
	for (int k = 0; k < m->classes * m->features; k++)
		m->w[k] -= m->lr * grad[k] / (double)b->n;
	return loss / (double)b->n;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: consumer SOCKET [--batch N] [--max-batches N] [--classes K]\n"
		   "                [--lr F] [--log-every N] [--join now|next_epoch]\n");
}

/* The command line. */
struct args {
	const char *path;
	struct ts_client_opts co;
	long batch, max_batches, classes, log_every;
	double lr;
};

/* The options into *a: -1 to go on, else the exit status (usage said). */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{"batch", required_argument, NULL, 'b'},
		{"max-batches", required_argument, NULL, 'n'},
		{"classes", required_argument, NULL, 'k'},
		{"lr", required_argument, NULL, 'l'},
		{"log-every", required_argument, NULL, 'L'},
		{"join", required_argument, NULL, 'J'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	ts_client_opts_init(&a->co);
	a->co.timeout_ms = 60000;
	a->batch = 0, a->max_batches = 0, a->classes = 10, a->log_every = 25;
	a->lr = 0.5;
	int c;
	while ((c = getopt_long(argc, argv, "b:n:k:l:L:J:h", opts, NULL)) != -1) {
		bool ok = true;
		switch (c) {
		case 'b': ok = !parse_long(optarg, 1, 1 << 20, &a->batch); break;
		case 'n': ok = !parse_long(optarg, 1, INT32_MAX, &a->max_batches); break;
		case 'k': ok = !parse_long(optarg, 2, MAX_CLASSES, &a->classes); break;
		case 'L': ok = !parse_long(optarg, 1, INT32_MAX, &a->log_every); break;
		case 'l': {
			char *end;
			a->lr = strtod(optarg, &end);
			ok = end != optarg && !*end && a->lr > 0;
			break;
		}
		case 'J':
			if (strcmp(optarg, "now") == 0)
				a->co.join = TS_CLIENT_JOIN_NOW;
			else if (strcmp(optarg, "next_epoch") == 0)
				a->co.join = TS_CLIENT_JOIN_NEXT_EPOCH;
			else
				ok = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "consumer: bad value for --%s: '%s'\n",
				c == 'b' ? "batch" : c == 'n' ? "max-batches" : c == 'k' ? "classes" :
				c == 'L' ? "log-every" : c == 'l' ? "lr" : "join", optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	a->path = argv[optind];
	a->co.batch_size = (uint32_t)a->batch;
	return -1;
}

/* What the training loop saw. */
struct run {
	double first[WINDOW], last[WINDOW];
	uint64_t images, steps, label_sum;
	uint32_t epoch_lo, epoch_hi;
};

/* Train on batches until the end of the stream or --max-batches: 0, or
 * 1 after saying what went wrong. */
static int train(struct ts_client *cl, const struct args *a, struct model *m, struct run *r)
{
	struct ts_error err = {0};
	struct ts_batch b;
	double run = 0;
	r->epoch_lo = UINT32_MAX;
	while (a->max_batches == 0 || r->steps < (uint64_t)a->max_batches) {
		int rc = ts_client_next(cl, &b, &err);
		if (rc == TS_E_EOS)
			return 0;
		if (rc) {
			fprintf(stderr, "consumer: %s: %s\n", a->path,
				err.msg[0] ? err.msg : ts_client_strerror(rc));
			return 1;
		}
		for (size_t i = 0; i < b.n; i++) {
			if (b.labels[i] < 0 || b.labels[i] >= m->classes) {
				fprintf(stderr, "consumer: label %d outside 0..%d (use --classes)\n",
					b.labels[i], m->classes - 1);
				return 1;
			}
			r->label_sum += (uint64_t)b.labels[i];
		}
		double loss = train_step(m, &b);
		if (!isfinite(loss)) {
			fprintf(stderr, "consumer: loss is %g at step %" PRIu64 "\n", loss,
				r->steps + 1);
			return 1;
		}
		if (r->steps < WINDOW)
			r->first[r->steps] = loss;
		r->last[r->steps % WINDOW] = loss;
		run += loss;
		r->images += b.n;
		r->steps++;
		if (b.epoch < r->epoch_lo)
			r->epoch_lo = b.epoch;
		if (b.epoch > r->epoch_hi)
			r->epoch_hi = b.epoch;
		if (r->steps % (uint64_t)a->log_every == 0) {
			printf("consumer: step %" PRIu64 " epoch %" PRIu64 " loss %.3f\n", r->steps, b.epoch,
			       run / (double)a->log_every);
			fflush(stdout);
			run = 0;
		}
	}
	return 0;
}

/* The images, batches, epochs and rate, and the loss of the first and
 * last windows of up to WINDOW steps (at most half the run each). */
static void report(const struct run *r, double wall)
{
	printf("consumer: images %" PRIu64 " batches %" PRIu64 " epochs %u..%u label_sum %" PRIu64
	       " %.0f images/s\n",
	       r->images, r->steps, r->epoch_lo == UINT32_MAX ? 0 : r->epoch_lo, r->epoch_hi,
	       r->label_sum, wall > 0 ? (double)r->images / wall : 0.0);
	if (r->steps) {
		uint64_t w = r->steps / 2 < WINDOW ? r->steps / 2 : WINDOW;
		if (w == 0)
			w = 1;
		double f = 0, l = 0;
		for (uint64_t i = 0; i < w; i++) {
			f += r->first[i];
			l += r->last[(r->steps - 1 - i) % WINDOW];
		}
		printf("loss: first %.2f last %.2f\n", f / (double)w, l / (double)w);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct args a;
	int st = parse_args(argc, argv, &a);
	if (st >= 0)
		return st;
	struct ts_client *cl = NULL;
	struct ts_error err = {0};
	int rc = ts_client_connect(a.path, &a.co, &cl, &err);
	if (rc) {
		fprintf(stderr, "consumer: %s: %s\n", a.path,
			err.msg[0] ? err.msg : ts_client_strerror(rc));
		return 1;
	}
	struct ts_client_info info;
	ts_client_info(cl, &info);
	if (info.channels < 1 || info.channels > MAX_CHANNELS ||
	    (info.dtype != TS_DTYPE_F32 && info.dtype != TS_DTYPE_U8)) {
		fprintf(stderr, "consumer: %s: want 1..%d channels of float32 or uint8\n",
			a.path, MAX_CHANNELS);
		ts_client_close(cl);
		return 1;
	}
	printf("consumer: %s: %dx%dx%d %s, batch %u, pid %d\n", a.path, info.channels,
	       info.height, info.width, info.dtype == TS_DTYPE_F32 ? "float32" : "uint8",
	       info.batch_size, info.producer_pid);
	fflush(stdout);

	struct model m = {.classes = (int)a.classes, .features = 2 * info.channels + 1,
			  .lr = a.lr};
	m.w = calloc((size_t)m.classes * (size_t)m.features, sizeof(double));
	m.grad = calloc((size_t)m.classes * (size_t)m.features, sizeof(double));
	if (!m.w || !m.grad) {
		free(m.w);
		free(m.grad);
		fprintf(stderr, "consumer: out of memory\n");
		ts_client_close(cl);
		return 1;
	}
	struct run r = {0};
	double t0 = now_s();
	int status = train(cl, &a, &m, &r);
	report(&r, now_s() - t0);
	/* Close after reporting: tsrun's summary, printed once every trainer
	 * has gone, then comes last. */
	ts_client_close(cl);
	free(m.w);
	free(m.grad);
	return status;
}
