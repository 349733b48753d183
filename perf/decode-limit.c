/*
 * decode-limit.c - libjpeg-turbo's own decode limit on a data set: every
 * JPEG under DIR (recursively) is read into memory first, then decoded
 * with TurboJPEG into RGB, on one thread, in a tight loop (the tjbench
 * idea). This is the reference for tsrun's decode-only target ("within
 * 1.25x"): no I/O, no allocation per image, no resize.
 *
 *   decode-limit DIR [--rounds N] [--fast]
 *
 * Prints (one "key: value" per line, as `tsrun bench` does):
 *   images: N, rounds: R, images/s, MPix/s, MB/s (compressed bytes),
 *   cpu: seconds (user+sys of the decode loop), peak_rss: MiB.
 * --fast uses TJFLAG_FASTDCT (the ISLOW IDCT is the default, as in PIL).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int rounds = 1, flags = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fast"))
			flags |= TJFLAG_FASTDCT;
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			fprintf(stderr, "usage: decode-limit DIR [--rounds N] [--fast]\n");
			return 2;
		}
	}
	if (!dir || rounds < 1) {
		fprintf(stderr, "usage: decode-limit DIR [--rounds N] [--fast]\n");
		return 2;
	}
	struct set s = {0};
	int rc = load_tree(&s, dir);
	if (rc < 0 || s.n == 0) {
		fprintf(stderr, "decode-limit: %s: %s\n", dir,
			rc < 0 ? strerror(-rc) : "no JPEG files");
		return 1;
	}
	tjhandle tj = tjInitDecompress();
	size_t cap = 0;
	unsigned char *px = NULL;
	double pixels = 0;
	long failed = 0;
	double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < s.n; i++) {
			int w, h, sub, cs;
			if (tjDecompressHeader3(tj, s.b[i].data, s.b[i].len, &w, &h, &sub, &cs)) {
				failed++;
				continue;
			}
			size_t need = (size_t)w * (size_t)h * 3;
			if (need > cap) {
				free(px);
				cap = need;
				px = malloc(cap);
				if (!px)
					return 1;
			}
			if (tjDecompress2(tj, s.b[i].data, s.b[i].len, px, w, 0, h, TJPF_RGB, flags))
				failed++;
			pixels += (double)w * h;
		}
	}
	double wall = now(CLOCK_MONOTONIC) - t0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double n = (double)s.n * rounds;
	printf("images: %zu\nrounds: %d\nfailed: %ld\n", s.n, rounds, failed);
	printf("images/s: %.1f\n", n / wall);
	printf("MPix/s: %.1f\n", pixels / wall / 1e6);
	printf("MB/s: %.1f\n", (double)s.bytes * rounds / wall / 1e6);
	printf("ms/image: %.3f\n", wall / n * 1e3);
	printf("wall: %.3f s\ncpu: %.3f s\npeak_rss: %.1f MiB\n", wall, cpu,
	       (double)ru.ru_maxrss / 1024.0);
	free(px);
	tjDestroy(tj);
	for (size_t i = 0; i < s.n; i++)
		free(s.b[i].data);
	free(s.b);
	return failed ? 1 : 0;
}
