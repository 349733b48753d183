/*
 * embed.c - run a tsrun pipeline inside your own program (tsrun.h,
 * libtsrun): compile it from text, open it, pull batches, close. No
 * socket, no tsrun process.
 *
 *   embed [FILE.ts] [--threads N] [--epochs N] [--batches N] [--start E:I]
 *         [--memory MiB]
 *
 * Without FILE it runs a small built-in synthetic pipeline. It prints the
 * sample shape, one line per batch for the first few (epoch, index, count,
 * first labels), and at the end the totals and a digest of every sample's
 * bytes and label in stream order (FNV-1a, 64 bit): the same stream gives
 * the same digest for any thread count, and the process's peak resident
 * memory (getrusage), to compare with the budget (--memory, in MiB, else
 * the pipeline's own). Exit status: 0, 1 when the
 * pipeline fails to compile, open or run, 2 for a usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tsrun.h"

static const char builtin[] =
	"# 100 generated 32x32 RGB images, randomly cropped and flipped\n"
	"pipeline demo =\n"
	"    synthetic(36, count = 100, classes = 10)\n"
	"    | random_crop(32)\n"
	"    | flip(horizontal)\n"
	"    | to(uint8, nhwc)\n"
	"    | batch(16)\n";

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV_PRIME;
	return h;
}

/* The whole file, NUL-terminated, in a malloc'd buffer; NULL on error. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		char *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		if (bad)
			errno = EIO;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int parse_num(const char *s, long min, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return -1;
	*out = v;
	return 0;
}

static const char *dtype_name(enum ts_dtype d)
{
	static const char *const names[] = {"uint8", "uint16", "float16", "float32"};
	return (unsigned)d < 4 ? names[d] : "?";
}

static int usage(void)
{
	fprintf(stderr, "usage: embed [FILE.ts] [--threads N] [--epochs N] [--batches N] "
			"[--start EPOCH:INDEX] [--memory MiB]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	long threads = 0, epochs = -1, max_batches = 0, memory_mib = 0;
	unsigned long long start_epoch = 0, start_index = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--threads") == 0 && v) {
			if (parse_num(v, 1, &threads))
				return usage();
			i++;
		} else if (strcmp(a, "--epochs") == 0 && v) {
			if (parse_num(v, 0, &epochs))
				return usage();
			i++;
		} else if (strcmp(a, "--batches") == 0 && v) {
			if (parse_num(v, 1, &max_batches))
				return usage();
			i++;
		} else if (strcmp(a, "--memory") == 0 && v) {
			if (parse_num(v, 1, &memory_mib))
				return usage();
			i++;
		} else if (strcmp(a, "--start") == 0 && v) {
			if (sscanf(v, "%llu:%llu", &start_epoch, &start_index) != 2)
				return usage();
			i++;
		} else if (a[0] == '-' || file) {
			return usage();
		} else {
			file = a;
		}
	}

	/* 1. Compile: the text can come from anywhere (a file, an upload). */
	char *text = NULL;
	size_t len = sizeof(builtin) - 1;
	if (file) {
		text = read_file(file, &len);
		if (!text) {
			fprintf(stderr, "embed: %s: %s\n", file, strerror(errno));
			return 1;
		}
	}
	struct ts_pipeline *p = NULL;
	struct ts_stream *s = NULL;
	struct ts_error err = {0};
	char *diags = NULL;
	int status = 1;
	/* Relative data paths resolve against the file's folder. */
	char *dir = NULL;
	if (file && strrchr(file, '/')) {
		dir = strdup(file);
		if (dir)
			*strrchr(dir, '/') = '\0';
	}
	int rc = ts_pipeline_compile(file ? text : builtin, len, file ? file : "builtin.ts",
				     NULL, dir, &p, &diags, &err);
	if (rc) {
		fputs(diags ? diags : err.msg, stderr);
		if (!diags)
			fputc('\n', stderr);
		goto out;
	}
	int h, w, c, batch;
	enum ts_dtype dt;
	enum ts_layout lay;
	ts_pipeline_shape(p, &h, &w, &c, &dt, &lay, &batch);
	printf("shape: %dx%dx%d %s %s, batch %d, memory %" PRIu64 " bytes\n",
	       lay == TS_LAYOUT_NCHW ? c : h, lay == TS_LAYOUT_NCHW ? h : w,
	       lay == TS_LAYOUT_NCHW ? w : c, dtype_name(dt),
	       lay == TS_LAYOUT_NCHW ? "nchw" : "nhwc", batch,
	       ts_pipeline_memory(p, (int)threads));

	/* 2. Open: workers start producing into the stream's own ring. */
	struct ts_stream_opts o = {
		.size = sizeof(struct ts_stream_opts),
		.threads = (int)threads, .epochs = (int)epochs,
		.start_epoch = start_epoch, .start_index = start_index,
		.memory_budget = (uint64_t)memory_mib << 20,
	};
	rc = ts_pipeline_open(p, &o, &s, &err);
	if (rc) {
		fprintf(stderr, "embed: %s\n", err.msg);
		goto out;
	}

	/* 3. Pull batches until the end of the stream. */
	uint64_t digest = FNV_OFFSET, samples = 0, batches = 0;
	struct ts_stream_batch b;
	while (max_batches == 0 || batches < (uint64_t)max_batches) {
		rc = ts_stream_next(s, &b, &err);
		if (rc == TS_E_EOS)
			break;
		if (rc) {
			fprintf(stderr, "embed: %s\n", err.msg);
			goto out;
		}
		for (size_t i = 0; i < b.n; i++) {
			digest = fnv1a(digest, (const char *)b.data + i * b.sample_stride,
				       b.sample_bytes);
			digest = fnv1a(digest, &b.labels[i], sizeof(b.labels[i]));
		}
		if (batches < 4) {
			printf("batch %" PRIu64 ": epoch %" PRIu64 " index %" PRIu64
			       " n %zu labels", batches, b.epoch, b.index, b.n);
			for (size_t i = 0; i < b.n && i < 8; i++)
				printf(" %d", b.labels[i]);
			printf("%s\n", b.n > 8 ? " ..." : "");
		}
		samples += b.n;
		batches++;
	}
	printf("batches: %" PRIu64 "\n", batches);
	printf("samples: %" PRIu64 "\n", samples);
	printf("skipped: %" PRIu64 "\n", ts_stream_skipped(s));
	printf("digest: %016" PRIx64 "\n", digest);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)   /* ru_maxrss is in KiB */
		printf("peak rss: %ld KiB\n", ru.ru_maxrss);
	status = 0;
out:
	/* 4. Close: stops the workers and frees the ring. */
	ts_stream_close(s);
	ts_pipeline_destroy(p);
	free(diags);
	free(dir);
	free(text);
	return status;
}
