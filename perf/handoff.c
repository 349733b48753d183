/*
 * handoff - publish-to-wake latency and producer CPU per consumer of the
 * shared ring, through the real handoff (Unix socket, hello/welcome,
 * SCM_RIGHTS, libtsclient) with consumers in separate processes.
 *
 *   handoff [--consumers 1,2,4,8] [--batches 20000] [--batch 32]
 *           [--interval-us 50,500] [--rounds 3] [--socket PATH]
 *
 * The producer publishes one batch every interval (absolute deadlines,
 * clock_nanosleep), stamping CLOCK_MONOTONIC into the batch's first
 * sample just before ts_ring_publish(). Each consumer takes the time as
 * ts_client_next() returns that batch: the difference is the publish to
 * consumer-wake latency (spin or futex, whichever the wait took). A short
 * interval keeps consumers on the spin path, a long one puts them to
 * sleep on the futex.
 *
 * Producer CPU is getrusage(RUSAGE_THREAD) of the publishing thread over
 * the publish loop (wait_writable + stamp + publish + the pacing sleep's
 * syscall), per batch. The cost per extra consumer is the least-squares
 * slope over N. Cells are run in turn (round 1: every N and interval,
 * round 2: again, ...); each cell's latencies are pooled over its rounds
 * and consumers, the CPU figure is the median over rounds.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "server.h"
#include "tsclient.h"

#define MAX_N 64
#define MAX_LIST 16
#define WARMUP 50

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static int parse_list(const char *s, long *out)
{
	int n = 0;
	char *end;
	while (*s && n < MAX_LIST) {
		out[n++] = strtol(s, &end, 10);
		if (end == s)
			return -1;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t k = read(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * A consumer process: connect (retrying until the producer listens),
 * record one latency per batch, send "count, latencies" down fd.
 */
static int consumer_main(const char *sock, uint32_t batch, size_t max, int fd)
{
	struct ts_client_opts o;
	struct ts_client *c = NULL;
	struct ts_error err = { 0 };
	uint32_t *lat = calloc(max, sizeof(*lat));
	uint64_t n = 0;
	int rc = -1;

	ts_client_opts_init(&o);
	o.batch_size = batch;
	o.timeout_ms = 30000;
	for (int tries = 0; tries < 2000; tries++) {
		rc = ts_client_connect(sock, &o, &c, &err);
		if (rc == 0)
			break;
		usleep(5000);
	}
	if (rc < 0 || !lat) {
		fprintf(stderr, "handoff: consumer: %s\n", err.msg);
		return 1;
	}
	struct ts_batch b;
	while ((rc = ts_client_next(c, &b, &err)) == 0) {
		uint64_t t = now_ns(), stamp;
		memcpy(&stamp, b.data, sizeof(stamp));
		if (n < max)
			lat[n++] = t > stamp ? (uint32_t)(t - stamp < UINT32_MAX
							  ? t - stamp
							  : UINT32_MAX)
					     : 0;
	}
	ts_client_close(c);
	if (rc != TS_E_EOS)
		fprintf(stderr, "handoff: consumer: %s\n", err.msg);
	if (write_all(fd, &n, sizeof(n)) < 0 ||
	    write_all(fd, lat, n * sizeof(*lat)) < 0)
		return 1;
	free(lat);
	return rc == TS_E_EOS ? 0 : 1;
}

struct cell {
	long n, interval_us;
	uint32_t *lat;      /* pooled latencies, ns */
	size_t n_lat, cap_lat;
	double cpu_per_batch[MAX_LIST]; /* one per round, seconds */
	int rounds;
	double late_us;     /* mean pacing overshoot: how loaded we were */
};

/* One run: N consumer processes, `batches` paced batches. */
static int run_cell(struct cell *cl, const char *sock, uint32_t batch,
		    long batches)
{
	int fds[MAX_N][2];
	pid_t pids[MAX_N];
	long n = cl->n;
	size_t max = (size_t)batches + 16;

	for (long k = 0; k < n; k++) {
		if (pipe2(fds[k], O_CLOEXEC) < 0)
			return -1;
		pids[k] = fork();
		if (pids[k] == 0) {
			close(fds[k][0]);
			_exit(consumer_main(sock, batch, max, fds[k][1]));
		}
		close(fds[k][1]);
	}

	struct ts_ring_params p = {
		.height = 4, .width = 4, .channels = 4, .dtype = TS_DTYPE_U8,
		.layout = TS_LAYOUT_NHWC, .capacity = 8 * batch,
		.epochs = 1, .samples_per_epoch = (uint64_t)batches * batch,
		.min_consumers = (unsigned)n, .default_batch = batch,
	};
	struct ts_error err = { 0 };
	struct ts_ring *r = NULL;
	struct ts_server *s = NULL;
	unlink(sock);
	if (ts_ring_create(&p, &r, &err) < 0 ||
	    ts_server_create(r, sock, NULL, &s, &err) < 0) {
		fprintf(stderr, "handoff: %s\n", err.msg);
		return -1;
	}
	/* All N attached before the clock starts (min_consumers holds the
	 * first write until then). */
	if (ts_ring_wait_writable(r, 0, 30000) < 0) {
		fprintf(stderr, "handoff: consumers did not attach\n");
		return -1;
	}
	uint64_t period = (uint64_t)cl->interval_us * 1000u;
	uint64_t due = now_ns() + period;
	double cpu0 = 0, late = 0;
	for (long i = 0; i < batches; i++) {
		uint64_t seq = (uint64_t)i * batch;
		if (i == WARMUP)
			cpu0 = thread_cpu_s();
		struct timespec ts = { (time_t)(due / 1000000000u),
				       (long)(due % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		uint64_t woke = now_ns();
		if (i >= WARMUP)
			late += (double)(woke - due);
		due += period;
		if (woke > due)  /* fell behind: do not burst to catch up */
			due = woke + period;
		for (uint64_t q = seq; q < seq + batch; q++) {
			if (ts_ring_wait_writable(r, q, 30000) < 0) {
				fprintf(stderr, "handoff: producer stuck\n");
				return -1;
			}
			ts_ring_set_meta(r, q, 0, 0, q);
		}
		uint64_t t = now_ns();
		memcpy(ts_ring_slot(r, seq), &t, sizeof(t));
		ts_ring_publish(r, seq + batch);
	}
	double cpu = thread_cpu_s() - cpu0;
	cl->cpu_per_batch[cl->rounds++] = cpu / (double)(batches - WARMUP);
	cl->late_us += late / (double)(batches - WARMUP) / 1e3;
	ts_ring_finish(r, 0);

	int bad = 0;
	for (long k = 0; k < n; k++) {
		uint64_t got = 0;
		if (read_all(fds[k][0], &got, sizeof(got)) < 0 || got > max) {
			bad = 1;
			got = 0;
		}
		if (cl->n_lat + got > cl->cap_lat) {
			cl->cap_lat = (cl->n_lat + got) * 2;
			cl->lat = realloc(cl->lat, cl->cap_lat * sizeof(*cl->lat));
		}
		uint32_t *dst = cl->lat + cl->n_lat;
		if (got && read_all(fds[k][0], dst, got * sizeof(*dst)) < 0)
			bad = 1;
		/* Drop the warm-up batches of each consumer. */
		if (got > WARMUP) {
			memmove(dst, dst + WARMUP, (got - WARMUP) * sizeof(*dst));
			cl->n_lat += got - WARMUP;
		}
		close(fds[k][0]);
		int st;
		waitpid(pids[k], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	}
	ts_server_destroy(s);
	ts_ring_destroy(r);
	return bad ? -1 : 0;
}

static double pct(const uint32_t *v, size_t n, double q)
{
	if (!n)
		return 0;
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i] / 1e3;
}

int main(int argc, char **argv)
{
	long ns[MAX_LIST] = { 1, 2, 4, 8 }, ivs[MAX_LIST] = { 50, 500 };
	int n_ns = 4, n_ivs = 2, rounds = 3;
	long batches = 20000;
	uint32_t batch = 32;
	char sock[108];

	snprintf(sock, sizeof(sock), "/tmp/tsrun-handoff-%d.sock", (int)getpid());
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
		if (!v) {
			fprintf(stderr, "handoff: %s needs a value\n", a);
			return 64;
		}
		k++;
		if (!strcmp(a, "--consumers"))
			n_ns = parse_list(v, ns);
		else if (!strcmp(a, "--interval-us"))
			n_ivs = parse_list(v, ivs);
		else if (!strcmp(a, "--batches"))
			batches = atol(v);
		else if (!strcmp(a, "--batch"))
			batch = (uint32_t)atoi(v);
		else if (!strcmp(a, "--rounds"))
			rounds = atoi(v);
		else if (!strcmp(a, "--socket"))
			snprintf(sock, sizeof(sock), "%s", v);
		else {
			fprintf(stderr, "handoff: unknown argument %s\n", a);
			return 64;
		}
	}
	if (n_ns <= 0 || n_ivs <= 0 || rounds < 1 || rounds > MAX_LIST ||
	    batch == 0) {
		fprintf(stderr, "handoff: bad arguments\n");
		return 64;
	}
	for (int i = 0; i < n_ns; i++)
		if (ns[i] < 1 || ns[i] > MAX_N) {
			fprintf(stderr, "handoff: 1..%d consumers\n", MAX_N);
			return 64;
		}
	/* Per run: the batches of the cell split over the rounds. */
	long per_run = batches / rounds;
	if (per_run <= 2 * WARMUP) {
		fprintf(stderr, "handoff: too few batches per round\n");
		return 64;
	}
	prctl(PR_SET_TIMERSLACK, 1UL);
	signal(SIGPIPE, SIG_IGN);

	struct cell cells[MAX_LIST][MAX_LIST];
	memset(cells, 0, sizeof(cells));
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	printf("handoff: %ld batches of %u per cell over %d rounds, %ld cpus\n",
	       batches, batch, rounds, online);
	fflush(stdout);
	for (int rd = 0; rd < rounds; rd++)
		for (int j = 0; j < n_ivs; j++)
			for (int i = 0; i < n_ns; i++) {
				struct cell *cl = &cells[j][i];
				cl->n = ns[i];
				cl->interval_us = ivs[j];
				if (run_cell(cl, sock, batch, per_run) < 0) {
					fprintf(stderr, "handoff: run N=%ld "
						"interval %ld us failed\n",
						ns[i], ivs[j]);
					return 1;
				}
			}

	int fail = 0;
	for (int j = 0; j < n_ivs; j++) {
		printf("\ninterval %ld us (%s)\n", ivs[j],
		       ivs[j] <= 100 ? "consumers mostly spin"
				     : "consumers mostly sleep on the futex");
		printf("  %3s %9s %9s %9s %9s %12s %11s\n", "N", "p50 us",
		       "p99 us", "max us", "samples", "cpu/batch us",
		       "pace-late us");
		double sx = 0, sy = 0, sxx = 0, sxy = 0;
		for (int i = 0; i < n_ns; i++) {
			struct cell *cl = &cells[j][i];
			qsort(cl->lat, cl->n_lat, sizeof(*cl->lat), cmp_u32);
			qsort(cl->cpu_per_batch, (size_t)cl->rounds,
			      sizeof(double), cmp_dbl);
			double cpu = cl->cpu_per_batch[cl->rounds / 2] * 1e6;
			double p99 = pct(cl->lat, cl->n_lat, 0.99);
			printf("  %3ld %9.1f %9.1f %9.1f %9zu %12.2f %11.1f\n",
			       cl->n, pct(cl->lat, cl->n_lat, 0.50), p99,
			       cl->n_lat ? cl->lat[cl->n_lat - 1] / 1e3 : 0.0,
			       cl->n_lat, cpu, cl->late_us / cl->rounds);
			if (cl->n == 1 && p99 >= 20.0)
				fail = 1;
			sx += (double)cl->n;
			sy += cpu;
			sxx += (double)cl->n * (double)cl->n;
			sxy += (double)cl->n * cpu;
		}
		double m = n_ns;
		double den = m * sxx - sx * sx;
		if (den > 0) {
			double slope = (m * sxy - sx * sy) / den;
			double base = cells[j][0].cpu_per_batch[cells[j][0].rounds / 2] * 1e6;
			printf("  producer CPU per extra consumer: %.2f us/batch "
			       "(%.2f %% of one core at this rate; %.1f %% of "
			       "the N=%ld per-batch cost)\n",
			       slope, slope / (double)ivs[j] * 100.0,
			       base > 0 ? slope / base * 100.0 : 0.0,
			       cells[j][0].n);
		}
		for (int i = 0; i < n_ns; i++)
			free(cells[j][i].lat);
	}
	printf("\ntarget: p99 < 20 us (N=1: %s); producer CPU per extra "
	       "consumer < 1 %%\n", fail ? "missed" : "met");
	unlink(sock);
	return 0;
}
