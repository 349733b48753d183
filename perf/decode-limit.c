/*
 * decode-limit.c - libjpeg-turbo's own decode limit on a data set: every
 * JPEG under DIR (recursively) is read into memory first, then decoded
 * with TurboJPEG into RGB in a tight loop (the tjbench idea). This is
 * the reference for tsrun's decode-only target and for the CPU per image
 * of its recipes: no I/O, no allocation per image, no resize.
 *
 *   decode-limit DIR [--rounds N] [--threads N] [--fast]
 *
 * --threads N (default 1) decodes on N threads at once, thread t taking
 * the images i with i % N == t in each round, each with its own handle
 * and buffer: the full decode's CPU per image when N cores are busy, as
 * they are while a recipe runs on N workers (the cores share the L3 and
 * the memory bus, and a decode costs more CPU than on an idle machine).
 *
 * Prints (one "key: value" per line, as `tsrun bench` does):
 *   images: N, rounds: R, threads: T, images/s, MPix/s, MB/s (compressed
 *   bytes), cpu: seconds (user+sys of the decode loop, all threads),
 *   cpu/image: ms, peak_rss: MiB.
 * --fast uses TJFLAG_FASTDCT (the ISLOW IDCT is the default, as in PIL).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

struct blob {
	unsigned char *data;
	unsigned long len;
};

struct set {
	struct blob *b;
	size_t n, cap;
	size_t bytes;
};

static int load_file(struct set *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = 0;
	unsigned char *buf = NULL;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto out;
	}
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)r;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct blob *nb = realloc(s->b, cap * sizeof(*nb));
		if (!nb) {
			rc = -ENOMEM;
			goto out;
		}
		s->b = nb;
		s->cap = cap;
	}
	s->b[s->n++] = (struct blob){buf, (unsigned long)got};
	s->bytes += got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

/* Load every *.jpg / *.jpeg below dir. */
static int load_tree(struct set *s, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	int rc = 0;
	char path[4096];
	while (rc == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			rc = load_tree(s, path);
		} else {
			const char *dot = strrchr(e->d_name, '.');
			if (dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")))
				rc = load_file(s, path);
		}
	}
	closedir(d);
	return rc;
}

static double now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One decoding thread's share of the rounds. */
struct job {
	const struct set *s;
	int rounds, flags, t, n_threads;
	pthread_barrier_t *start;
	double pixels;
	long failed;
	int err; /* out of memory */
};

static void *decode_share(void *arg)
{
	struct job *j = arg;
	tjhandle tj = tjInitDecompress();
	size_t cap = 0;
	unsigned char *px = NULL;
	pthread_barrier_wait(j->start);
	if (!tj)
		j->err = ENOMEM;
	for (int r = 0; r < j->rounds && !j->err; r++) {
		for (size_t i = (size_t)j->t; i < j->s->n; i += (size_t)j->n_threads) {
			const struct blob *b = &j->s->b[i];
			int w, h, sub, cs;
			if (tjDecompressHeader3(tj, b->data, b->len, &w, &h, &sub, &cs)) {
				j->failed++;
				continue;
			}
			size_t need = (size_t)w * (size_t)h * 3;
			if (need > cap) {
				free(px);
				cap = need;
				px = malloc(cap);
				if (!px) {
					j->err = ENOMEM;
					break;
				}
			}
			if (tjDecompress2(tj, b->data, b->len, px, w, 0, h, TJPF_RGB, j->flags))
				j->failed++;
			j->pixels += (double)w * h;
		}
	}
	free(px);
	if (tj)
		tjDestroy(tj);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: decode-limit DIR [--rounds N] [--threads N] [--fast]\n");
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int rounds = 1, flags = 0, threads = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fast"))
			flags |= TJFLAG_FASTDCT;
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			usage();
			return 2;
		}
	}
	if (!dir || rounds < 1 || threads < 1 || threads > 1024) {
		usage();
		return 2;
	}
	struct set s = {0};
	int rc = load_tree(&s, dir);
	if (rc < 0 || s.n == 0) {
		fprintf(stderr, "decode-limit: %s: %s\n", dir,
			rc < 0 ? strerror(-rc) : "no JPEG files");
		return 1;
	}
	struct job *jobs = calloc((size_t)threads, sizeof(*jobs));
	pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
	pthread_barrier_t start;
	if (!jobs || !tid) {
		fprintf(stderr, "decode-limit: out of memory\n");
		return 1;
	}
	int brc = pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	if (brc != 0) {
		fprintf(stderr, "decode-limit: pthread_barrier_init: %s\n", strerror(brc));
		return 1;
	}
	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct job){&s, rounds, flags, t, threads, &start, 0.0, 0, 0};
		if (pthread_create(&tid[t], NULL, decode_share, &jobs[t]) != 0) {
			fprintf(stderr, "decode-limit: cannot start thread %d\n", t);
			return 1;
		}
	}
	/* The clocks start when every thread is ready: thread start-up and
	 * each handle's set-up are not the decode's. */
	pthread_barrier_wait(&start);
	double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	double pixels = 0;
	long failed = 0;
	int err = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		pixels += jobs[t].pixels;
		failed += jobs[t].failed;
		if (jobs[t].err)
			err = jobs[t].err;
	}
	double wall = now(CLOCK_MONOTONIC) - t0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double n = (double)s.n * rounds;
	if (err) {
		fprintf(stderr, "decode-limit: %s\n", strerror(err));
		return 1;
	}
	printf("images: %zu\nrounds: %d\nthreads: %d\nfailed: %ld\n", s.n, rounds, threads,
	       failed);
	printf("images/s: %.1f\n", n / wall);
	printf("MPix/s: %.1f\n", pixels / wall / 1e6);
	printf("MB/s: %.1f\n", (double)s.bytes * rounds / wall / 1e6);
	printf("ms/image: %.3f\n", wall / n * 1e3);
	printf("wall: %.3f s\ncpu: %.3f s\ncpu/image: %.3f ms\npeak_rss: %.1f MiB\n", wall,
	       cpu, cpu / n * 1e3, (double)ru.ru_maxrss / 1024.0);
	pthread_barrier_destroy(&start);
	free(jobs);
	free(tid);
	for (size_t i = 0; i < s.n; i++)
		free(s.b[i].data);
	free(s.b);
	return failed ? 1 : 0;
}
