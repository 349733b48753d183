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
	size_t at = b->layout == TS_CLIENT_NCHW ? (size_t)ch * hw + k
						: k * (size_t)b->channels + (size_t)ch;
	if (b->dtype == TS_CLIENT_FLOAT32) {
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

int main(int argc, char **argv)
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
	struct ts_client_opts co;
	ts_client_opts_init(&co);
	co.timeout_ms = 60000;
	long batch = 0, max_batches = 0, classes = 10, log_every = 25;
	double lr = 0.5;
	int c;
	while ((c = getopt_long(argc, argv, "b:n:k:l:L:J:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_long(optarg, 1, 1 << 20, &batch))
				goto bad;
			break;
		case 'n':
			if (parse_long(optarg, 1, INT32_MAX, &max_batches))
				goto bad;
			break;
		case 'k':
			if (parse_long(optarg, 2, MAX_CLASSES, &classes))
				goto bad;
			break;
		case 'L':
			if (parse_long(optarg, 1, INT32_MAX, &log_every))
				goto bad;
			break;
		case 'l': {
			char *end;
			lr = strtod(optarg, &end);
			if (end == optarg || *end || !(lr > 0))
				goto bad;
			break;
		}
		case 'J':
			if (strcmp(optarg, "now") == 0)
				co.join = TS_CLIENT_JOIN_NOW;
			else if (strcmp(optarg, "next_epoch") == 0)
				co.join = TS_CLIENT_JOIN_NEXT_EPOCH;
			else
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	co.batch_size = (uint32_t)batch;

	struct ts_client *cl = NULL;
	struct ts_error err = {0};
	int rc = ts_client_connect(path, &co, &cl, &err);
	if (rc) {
		fprintf(stderr, "consumer: %s: %s\n", path,
			err.msg[0] ? err.msg : ts_client_strerror(rc));
		return 1;
	}
	struct ts_client_info info;
	ts_client_info(cl, &info);
	if (info.channels < 1 || info.channels > MAX_CHANNELS ||
	    (info.dtype != TS_CLIENT_FLOAT32 && info.dtype != TS_CLIENT_UINT8)) {
		fprintf(stderr, "consumer: %s: want 1..%d channels of float32 or uint8\n",
			path, MAX_CHANNELS);
		ts_client_close(cl);
		return 1;
	}
	printf("consumer: %s: %dx%dx%d %s, batch %u, pid %d\n", path, info.channels,
	       info.height, info.width, info.dtype == TS_CLIENT_FLOAT32 ? "float32" : "uint8",
	       info.batch_size, info.producer_pid);
	fflush(stdout);

	struct model m = {.classes = (int)classes, .features = 2 * info.channels + 1, .lr = lr};
	m.w = calloc((size_t)m.classes * (size_t)m.features, sizeof(double));
	m.grad = calloc((size_t)m.classes * (size_t)m.features, sizeof(double));
	if (!m.w || !m.grad) {
		free(m.w);
		free(m.grad);
		fprintf(stderr, "consumer: out of memory\n");
		ts_client_close(cl);
		return 1;
	}
	double first[WINDOW], last[WINDOW], run = 0;
	uint64_t images = 0, steps = 0, label_sum = 0;
	uint32_t epoch_lo = UINT32_MAX, epoch_hi = 0;
	int status = 0;
	double t0 = now_s();
	struct ts_batch b;
	while (max_batches == 0 || steps < (uint64_t)max_batches) {
		rc = ts_client_next(cl, &b, &err);
		if (rc == TS_E_EOS)
			break;
		if (rc) {
			fprintf(stderr, "consumer: %s: %s\n", path,
				err.msg[0] ? err.msg : ts_client_strerror(rc));
			status = 1;
			break;
		}
		for (size_t i = 0; i < b.n; i++) {
			if (b.labels[i] < 0 || b.labels[i] >= m.classes) {
				fprintf(stderr, "consumer: label %d outside 0..%d (use --classes)\n",
					b.labels[i], m.classes - 1);
				status = 1;
				goto done;
			}
			label_sum += (uint64_t)b.labels[i];
		}
		double loss = train_step(&m, &b);
		if (!isfinite(loss)) {
			fprintf(stderr, "consumer: loss is %g at step %" PRIu64 "\n", loss, steps + 1);
			status = 1;
			break;
		}
		if (steps < WINDOW)
			first[steps] = loss;
		last[steps % WINDOW] = loss;
		run += loss;
		images += b.n;
		steps++;
		if (b.epoch < epoch_lo)
			epoch_lo = b.epoch;
		if (b.epoch > epoch_hi)
			epoch_hi = b.epoch;
		if (steps % (uint64_t)log_every == 0) {
			printf("consumer: step %" PRIu64 " epoch %u loss %.3f\n", steps, b.epoch,
			       run / (double)log_every);
			fflush(stdout);
			run = 0;
		}
	}
done:;
	double wall = now_s() - t0;
	printf("consumer: images %" PRIu64 " batches %" PRIu64 " epochs %u..%u label_sum %" PRIu64
	       " %.0f images/s\n",
	       images, steps, epoch_lo == UINT32_MAX ? 0 : epoch_lo, epoch_hi, label_sum,
	       wall > 0 ? (double)images / wall : 0.0);
	if (steps) {
		/* Windows of up to WINDOW steps, at most half the run each. */
		uint64_t w = steps / 2 < WINDOW ? steps / 2 : WINDOW;
		if (w == 0)
			w = 1;
		double f = 0, l = 0;
		for (uint64_t i = 0; i < w; i++) {
			f += first[i];
			l += last[(steps - 1 - i) % WINDOW];
		}
		printf("loss: first %.2f last %.2f\n", f / (double)w, l / (double)w);
	}
	fflush(stdout);
	/* Close after reporting: tsrun's summary, printed once every trainer
	 * has gone, then comes last. */
	ts_client_close(cl);
	free(m.w);
	free(m.grad);
	return status;
bad:
	fprintf(stderr, "consumer: bad value for --%s: '%s'\n",
		c == 'b' ? "batch" : c == 'n' ? "max-batches" : c == 'k' ? "classes" :
		c == 'L' ? "log-every" : c == 'l' ? "lr" : "join", optarg);
	usage(stderr);
	return 2;
}
