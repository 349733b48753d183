/*
 * producer-tool - serves synthetic samples through the ring and the
 * handoff server without the engine, and a C consumer over libtsclient,
 * for the multi-process sharing tests.
 *
 *   producer-tool [serve] SOCKET [--samples-per-epoch N] [--epochs E]
 *       [--shape HxWxC] [--capacity N] [--batch N] [--rate S/s]
 *       [--min-consumers N] [--fail-at SEQ] [--linger S] [--status MS]
 *   producer-tool consume SOCKET [--batch N] [--join now|next]
 *       [--drop-last] [--max-batches N] [--sleep-us U] [--out FILE]
 *   producer-tool try-write SOCKET
 *
 * Sample (epoch e, index i) byte j is (e*131 + i*31 + j*7 + (j>>8)*3) & 255
 * and its label (i*7 + e) % 1000, so consumers verify every byte. The
 * consumer writes one line per batch: "seq epoch index n fnv64", then
 * "stream-digest X" (FNV-1a over every byte it saw, in order) and exits
 * 0 at end of stream, 2 on a content mismatch, 3 on a producer error
 * (after printing "error: CODE MESSAGE" and the seconds it took to notice
 * the hang-up, "noticed-after-ms N").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "server.h"
#include "tsclient.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill_sample(uint8_t *p, size_t n, uint64_t e, uint64_t i)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (uint8_t)(e * 131 + i * 31 + j * 7 + (j >> 8) * 3);
}

static int32_t label_of(uint64_t e, uint64_t i)
{
	return (int32_t)((i * 7 + e) % 1000);
}

static const char *arg_val(int argc, char **argv, int *k)
{
	if (*k + 1 >= argc) {
		fprintf(stderr, "producer-tool: %s needs a value\n", argv[*k]);
		exit(64);
	}
	return argv[++*k];
}

static int serve(int argc, char **argv)
{
	const char *sock = NULL;
	uint64_t spe = 1000, fail_at = UINT64_MAX;
	unsigned epochs = 1, min_consumers = 0;
	int h = 8, w = 8, c = 3, status_ms = 0;
	uint64_t capacity = 1024;
	uint32_t batch = 32;
	double rate = 0, linger = 30;

	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];
		if (!strcmp(a, "--samples-per-epoch"))
			spe = strtoull(arg_val(argc, argv, &k), NULL, 10);
		else if (!strcmp(a, "--epochs"))
			epochs = (unsigned)atoi(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--shape")) {
			if (sscanf(arg_val(argc, argv, &k), "%dx%dx%d", &h, &w, &c) != 3)
				return 64;
		} else if (!strcmp(a, "--capacity"))
			capacity = strtoull(arg_val(argc, argv, &k), NULL, 10);
		else if (!strcmp(a, "--batch"))
			batch = (uint32_t)atoi(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--rate"))
			rate = atof(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--min-consumers"))
			min_consumers = (unsigned)atoi(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--fail-at"))
			fail_at = strtoull(arg_val(argc, argv, &k), NULL, 10);
		else if (!strcmp(a, "--linger"))
			linger = atof(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--status"))
			status_ms = atoi(arg_val(argc, argv, &k));
		else if (a[0] != '-' && !sock)
			sock = a;
		else {
			fprintf(stderr, "producer-tool: unknown argument %s\n", a);
			return 64;
		}
	}
	if (!sock) {
		fprintf(stderr, "producer-tool: no socket\n");
		return 64;
	}
	struct ts_ring_params p = {
		.height = h, .width = w, .channels = c, .dtype = TS_DTYPE_U8,
		.layout = TS_LAYOUT_NHWC, .capacity = capacity,
		.epochs = epochs, .samples_per_epoch = spe,
		.min_consumers = min_consumers, .default_batch = batch,
	};
	struct ts_error err = { 0 };
	struct ts_ring *r = NULL;
	struct ts_server *s = NULL;
	if (ts_ring_create(&p, &r, &err) < 0 ||
	    ts_server_create(r, sock, NULL, &s, &err) < 0) {
		fprintf(stderr, "producer-tool: %s\n", err.msg);
		ts_ring_destroy(r);
		return 1;
	}
	struct ts_ring_info info;
	ts_ring_get_info(r, &info);
	printf("ready capacity=%" PRIu64 " sample_bytes=%zu pid=%d\n",
	       info.capacity, info.sample_bytes, (int)getpid());
	fflush(stdout);

	uint64_t total = epochs ? (uint64_t)epochs * spe : UINT64_MAX;
	double t0 = now_s(), last_status = t0;
	int rc = 0;
	uint64_t seq;
	for (seq = 0; seq < total && !stop; seq++) {
		int wr;
		while ((wr = ts_ring_wait_writable(r, seq, 100)) == -ETIMEDOUT &&
		       !stop) {
			if (status_ms && now_s() - last_status > status_ms / 1e3) {
				struct ts_ring_stat st;
				ts_ring_stat(r, &st);
				fprintf(stderr, "status head=%" PRIu64 " consumers=%zu",
					st.head, st.n_consumers);
				for (size_t i = 0; i < st.n_consumers; i++)
					fprintf(stderr, " [pid=%d batch=%u lag=%" PRIu64 "]",
						(int)st.consumers[i].pid,
						st.consumers[i].batch,
						st.consumers[i].lag);
				fprintf(stderr, "\n");
				last_status = now_s();
			}
		}
		if (wr < 0)
			break;
		if (seq == fail_at) {
			ts_ring_publish(r, seq);
			ts_ring_finish(r, TS_E_DECODE);
			rc = 3;
			break;
		}
		uint64_t e = seq / spe, i = seq % spe;
		fill_sample(ts_ring_slot(r, seq), info.sample_bytes, e, i);
		ts_ring_set_meta(r, seq, label_of(e, i), (uint32_t)e, i);
		ts_ring_publish(r, seq + 1);
		if (rate > 0) {
			double due = t0 + (double)(seq + 1) / rate;
			double d = due - now_s();
			if (d > 0)
				usleep((useconds_t)(d * 1e6));
		}
	}
	if (rc == 0)
		ts_ring_finish(r, 0);
	double end = now_s() + linger;
	while (!stop && ts_server_consumers(s) > 0 && now_s() < end)
		usleep(10000);
	printf("done published=%" PRIu64 "\n", ts_ring_head(r));
	fflush(stdout);
	ts_server_destroy(s);
	ts_ring_destroy(r);
	return rc;
}

static uint64_t fnv64(const uint8_t *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int consume(int argc, char **argv)
{
	const char *sock = NULL, *out = NULL;
	struct ts_client_opts o;
	long max_batches = -1, sleep_us = 0;

	ts_client_opts_init(&o);
	for (int k = 2; k < argc; k++) {
		const char *a = argv[k];
		if (!strcmp(a, "--batch"))
			o.batch_size = (uint32_t)atoi(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--join"))
			o.join = strcmp(arg_val(argc, argv, &k), "next") == 0
					 ? TS_CLIENT_JOIN_NEXT_EPOCH
					 : TS_CLIENT_JOIN_NOW;
		else if (!strcmp(a, "--drop-last"))
			o.drop_last = 1;
		else if (!strcmp(a, "--max-batches"))
			max_batches = atol(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--sleep-us"))
			sleep_us = atol(arg_val(argc, argv, &k));
		else if (!strcmp(a, "--out"))
			out = arg_val(argc, argv, &k);
		else if (a[0] != '-' && !sock)
			sock = a;
		else {
			fprintf(stderr, "producer-tool: unknown argument %s\n", a);
			return 64;
		}
	}
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f || !sock)
		return 64;
	struct ts_error err = { 0 };
	struct ts_client *c;
	int rc = ts_client_connect(sock, &o, &c, &err);
	if (rc < 0) {
		fprintf(f, "error: %d %s\n", rc, err.msg);
		fclose(f);
		return rc == TS_E_REFUSED ? 4 : 1;
	}
	struct ts_client_info info;
	ts_client_info(c, &info);
	fprintf(f, "welcome batch=%u start=%" PRIu64 " start_epoch=%" PRIu64 "\n",
		info.batch_size, info.start, info.start_epoch);
	fflush(f);
	uint8_t *expect = malloc(info.sample_bytes);
	struct ts_batch b;
	int status = 0;
	long nb = 0;
	double t_wait = 0;
	uint64_t stream = 0xcbf29ce484222325ull;  /* over every byte, in order */
	while (max_batches < 0 || nb < max_batches) {
		t_wait = now_s();
		rc = ts_client_next(c, &b, &err);
		if (rc < 0)
			break;
		const uint8_t *d = b.data;
		for (size_t i = 0; i < b.n; i++) {
			fill_sample(expect, info.sample_bytes, b.epoch, b.index + i);
			if (memcmp(expect, d + i * b.sample_stride,
				   info.sample_bytes) != 0 ||
			    b.labels[i] != label_of(b.epoch, b.index + i)) {
				fprintf(f, "mismatch seq=%" PRIu64 "\n", b.seq + i);
				status = 2;
			}
		}
		/* the samples' bytes in order (not the padding of padded slots) */
		uint64_t h = 0xcbf29ce484222325ull;
		for (size_t i = 0; i < b.n; i++) {
			h = fnv64(d + i * b.sample_stride, info.sample_bytes, h);
			stream = fnv64(d + i * b.sample_stride, info.sample_bytes, stream);
		}
		fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %zu %016" PRIx64 "\n", b.seq,
			b.epoch, b.index, b.n, h);
		fflush(f);
		nb++;
		if (sleep_us)
			usleep((useconds_t)sleep_us);
	}
	fprintf(f, "stream-digest %016" PRIx64 "\n", stream);
	if (rc == TS_E_EOS)
		fprintf(f, "eos\n");
	else if (rc < 0) {
		fprintf(f, "error: %d %s\nnoticed-after-ms %d\n", rc, err.msg,
			(int)((now_s() - t_wait) * 1000));
		if (status == 0)
			status = 3;
	}
	fclose(f);
	free(expect);
	ts_client_close(c);
	return status;
}

/* Speak the protocol by hand to hold the raw descriptors, then try every
 * way to write the ring. Exit 0 when all are refused. */
static int try_write(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint8_t buf[TS_PROTO_HDR_LEN + TS_PROTO_MAX_BODY];
	int fds[2], nfds = 0, bad = 0;
	uint16_t type, len;
	struct ts_error err = { 0 };

	if (argc < 3)
		return 64;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[2]);
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 1;
	struct ts_proto_hello h = { .version = TS_PROTO_VERSION, .batch = 4,
				    .pid = (uint32_t)getpid() };
	ts_proto_send(s, buf, ts_proto_put_hello(buf, &h), NULL, 0);
	if (ts_proto_recv(s, 5000, &type, buf, &len, fds, &nfds, &err) < 0 ||
	    type != TS_MSG_WELCOME || nfds != 2) {
		printf("no welcome: %s\n", err.msg);
		return 1;
	}
	long page = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fds[0], page);
	printf("mmap-write: %s\n", m == MAP_FAILED ? strerror(errno) : "ALLOWED");
	bad += m != MAP_FAILED;
	m = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fds[0], page);
	int pr = mprotect(m, (size_t)page, PROT_READ | PROT_WRITE);
	printf("mprotect-write: %s\n", pr < 0 ? strerror(errno) : "ALLOWED");
	bad += pr == 0;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fds[0]);
	int rw = open(proc, O_RDWR | O_CLOEXEC);
	if (rw >= 0) {
		void *m2 = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
				MAP_SHARED, rw, page);
		printf("reopen-mmap-write: %s\n",
		       m2 == MAP_FAILED ? strerror(errno) : "ALLOWED");
		bad += m2 != MAP_FAILED;
		ssize_t n = pwrite(rw, "x", 1, page);
		printf("reopen-pwrite: %s\n", n < 0 ? strerror(errno) : "ALLOWED");
		bad += n >= 0;
		close(rw);
	} else {
		printf("reopen-rdwr: %s\n", strerror(errno));
	}
	ssize_t n = pwrite(fds[0], "x", 1, page);
	printf("pwrite: %s\n", n < 0 ? strerror(errno) : "ALLOWED");
	bad += n >= 0;
	close(fds[0]);
	close(fds[1]);
	close(s);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "consume"))
		return consume(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "try-write"))
		return try_write(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return serve(argc - 1, argv + 1);
	return serve(argc, argv);
}
