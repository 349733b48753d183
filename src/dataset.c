/*
 * dataset.c - make the built-in ImageNet-like data set from real photos.
 *
 * One photo per class, decoded once per class into a small pyramid (full,
 * 1/2, 1/4, 1/8 through libjpeg-turbo's DCT scaling); every image of the
 * class is a random crop of it, resampled from the smallest pyramid level
 * that still has at least the output's resolution, so the resize reads at
 * most about four source pixels per output pixel whatever the crop size.
 * Images of one class are spread over worker threads; each image's random
 * choices depend on (seed, split, index) only.
 */
#include "dataset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "augment.h"
#include "barrier.h"
#include "image.h"
#include "rng.h"
#include "util.h"

#define N_LEVELS 4          /* pyramid: 1, 1/2, 1/4, 1/8 */
#define MAX_THREADS 64
#define JPEG_QUALITY 90
#define PNG_LEVEL 1         /* zlib level: speed over size; these are benchmark files */
#define MARKER_VERSION 1
#define INSTALL_HINT "install the photos with `apt-get install mate-backgrounds`, " \
	"or set TSRUN_PHOTOS to a folder of JPEG photos"

/* Folders searched, in order, when neither opts->photos nor TSRUN_PHOTOS
 * names one. */
static const char *const known_dirs[] = {
	"/usr/share/backgrounds/mate/nature",
	"/usr/share/backgrounds/mate",
	"/usr/share/backgrounds",
};

struct photo_list {
	char **paths;   /* sorted by name */
	size_t n;
};

/* What one pass (a split's class) shares with its workers. */
struct pass {
	const struct ts_dataset_opts *opts;
	const struct ts_image *levels;   /* N_LEVELS pyramid of the photo */
	int full_w, full_h;              /* the photo at scale 1 */
	const char *class_dir;           /* DIR/<split>/<class> */
	int split;                       /* 0 train, 1 val */
	int klass, count;                /* images g = klass + i * classes */
	int next;                        /* the next image to make (ATOMIC_ADD) */
	int *done;                       /* over the whole run (ATOMIC_ADD) */
	bool stop;                       /* a worker failed: the others stop */
	pthread_mutex_t lock;            /* guards the fields below */
	struct ts_error err;
	int rc;
	uint64_t bytes;
	double sum_w, sum_h;
	long n_made;
};

static void photo_list_free(struct photo_list *pl)
{
	for (size_t i = 0; i < pl->n; i++)
		free(pl->paths[i]);
	free(pl->paths);
	pl->paths = NULL;
	pl->n = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_jpeg_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* List the regular *.jpg / *.jpeg files directly in dir, sorted, so that
 * class k is the same photo on every machine with the same package. */
static int list_photos(const char *dir, struct photo_list *out)
{
	struct photo_list pl = {0};
	int rc = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !is_jpeg_name(e->d_name))
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			rc = TS_E_NOMEM;
			goto out;
		}
		struct stat st;
		if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		char **np = realloc(pl.paths, (pl.n + 1) * sizeof(*np));
		if (!np) {
			free(p);
			rc = TS_E_NOMEM;
			goto out;
		}
		pl.paths = np;
		pl.paths[pl.n++] = p;
	}
	if (pl.n)
		qsort(pl.paths, pl.n, sizeof(*pl.paths), cmp_str);
	*out = pl;
	pl = (struct photo_list){0};
out:
	photo_list_free(&pl);
	closedir(d);
	return rc;
}

TS_EXPORT int ts_dataset_find_photos(int classes, char *buf, size_t size,
				     struct ts_error *err)
{
	const char *env = getenv("TSRUN_PHOTOS");
	struct photo_list pl;
	int rc;

	if (classes < 1)
		return ts_error_set(err, TS_E_ARG, "classes must be at least 1");
	if (env && *env) {
		rc = list_photos(env, &pl);
		if (rc < 0)
			return ts_error_set(err, TS_E_SOURCE,
					    "TSRUN_PHOTOS=%s: %s", env, ts_error_name(rc));
		size_t n = pl.n;
		photo_list_free(&pl);
		if (n < (size_t)classes)
			return ts_error_set(err, TS_E_SOURCE,
					    "TSRUN_PHOTOS=%s holds %zu JPEG photos, %d classes need %d",
					    env, n, classes, classes);
		if ((size_t)snprintf(buf, size, "%s", env) >= size)
			return ts_error_set(err, -ENAMETOOLONG, "TSRUN_PHOTOS is too long");
		return 0;
	}
	size_t best = 0;
	const char *best_dir = NULL;
	for (size_t i = 0; i < TS_ARRAY_LEN(known_dirs); i++) {
		if (list_photos(known_dirs[i], &pl) < 0)
			continue;
		size_t n = pl.n;
		photo_list_free(&pl);
		if (n >= (size_t)classes) {
			if ((size_t)snprintf(buf, size, "%s", known_dirs[i]) >= size)
				return ts_error_set(err, -ENAMETOOLONG, "buffer too small");
			return 0;
		}
		if (n > best) {
			best = n;
			best_dir = known_dirs[i];
		}
	}
	if (best_dir)
		return ts_error_set(err, TS_E_SOURCE,
				    "%s holds only %zu JPEG photos and %d classes need %d: "
				    "use --classes %zu or fewer, or set TSRUN_PHOTOS to a folder with more",
				    best_dir, best, classes, classes, best);
	return ts_error_set(err, TS_E_SOURCE,
			    "no photos to make the data set from (looked in %s): " INSTALL_HINT,
			    known_dirs[0]);
}

TS_EXPORT void ts_dataset_defaults(struct ts_dataset_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->images = TS_DATASET_DEFAULT_IMAGES;
	opts->classes = TS_DATASET_DEFAULT_CLASSES;
}

/* ---- files ---- */

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Write buf to path via path.tmp and a rename, so a reader never sees a
 * half-written file under the final name. */
static int write_file_atomic(const char *path, const void *buf, size_t len)
{
	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = write_all(fd, buf, len);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The marker's text for opts; `complete` says whether every image is in. */
static int marker_text(const struct ts_dataset_opts *o, const char *photos,
		       bool complete, char *buf, size_t size)
{
	int n = snprintf(buf, size,
			 "tsrun-dataset %d\nstate %s\nimages %d\nval %d\nclasses %d\n"
			 "seed %" PRIu64 "\nformat %s\nphotos %s\n",
			 MARKER_VERSION, complete ? "complete" : "building",
			 o->images, o->val_images, o->classes, o->seed,
			 o->png ? "png" : "jpg", photos);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int rc = n < 0 ? -errno : 0;
	close(fd);
	if (rc == 0)
		buf[n] = '\0';
	return rc;
}

/* Does the file name look like one this module writes: digits, then
 * .jpg/.png, maybe .tmp? Only those are removed when a set is remade. */
static bool is_our_image_name(const char *name)
{
	const char *p = name;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == name)
		return false;
	return !strcmp(p, ".jpg") || !strcmp(p, ".png") ||
	       !strcmp(p, ".jpg.tmp") || !strcmp(p, ".png.tmp");
}

/* Remove DIR/<split>/<class>/<n>.{jpg,png} and the emptied folders. A file
 * this module did not write stays, and the rmdir then fails: we never
 * delete what we did not make. */
static int remove_split(const char *root, const char *split, struct ts_error *err)
{
	char sdir[PATH_MAX], cdir[PATH_MAX], f[PATH_MAX];
	int rc = 0;
	if ((size_t)snprintf(sdir, sizeof(sdir), "%s/%s", root, split) >= sizeof(sdir))
		return ts_error_set(err, -ENAMETOOLONG, "%s: path too long", root);
	DIR *d = opendir(sdir);
	if (!d)
		return errno == ENOENT ? 0 : ts_error_set(err, -errno, "%s: %s", sdir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(cdir, sizeof(cdir), "%s/%s", sdir, e->d_name) >= sizeof(cdir))
			continue;
		DIR *c = opendir(cdir);
		if (!c)
			continue;
		struct dirent *ce;
		while ((ce = readdir(c))) {
			if (!is_our_image_name(ce->d_name))
				continue;
			if ((size_t)snprintf(f, sizeof(f), "%s/%s", cdir, ce->d_name) < sizeof(f))
				unlink(f);
		}
		closedir(c);
		if (rmdir(cdir) != 0) {
			rc = ts_error_set(err, -errno, "%s: %s (not removing files tsrun did not write)",
					  cdir, strerror(errno));
			goto out;
		}
	}
	if (rmdir(sdir) != 0)
		rc = ts_error_set(err, -errno, "%s: %s", sdir, strerror(errno));
out:
	closedir(d);
	return rc;
}

/* Is dir absent or empty (ignoring . and ..)? */
static int dir_state(const char *dir, bool *empty)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT) {
			*empty = true;
			return 0;
		}
		return -errno;
	}
	bool e = true;
	struct dirent *ent;
	while ((ent = readdir(d))) {
		if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) {
			e = false;
			break;
		}
	}
	closedir(d);
	*empty = e;
	return 0;
}

/* ---- photos ---- */

/* Decode the photo at scales 1, 1/2, 1/4, 1/8 (libjpeg-turbo's DCT
 * scaling makes the small ones nearly free). */
static int decode_pyramid(const char *path, struct ts_image *levels,
			  int *full_w, int *full_h, struct ts_error *err)
{
	uint8_t *jpg = NULL;
	tjhandle tj = NULL;
	int rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ts_error_set(err, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = ts_error_set(err, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	jpg = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!jpg) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory reading %s", path);
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, jpg + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = ts_error_set(err, r < 0 ? -errno : TS_E_DECODE,
					  "%s: short read", path);
			goto out;
		}
		got += (size_t)r;
	}
	tj = tjInitDecompress();
	if (!tj) {
		rc = ts_error_set(err, TS_E_NOMEM, "tjInitDecompress failed");
		goto out;
	}
	int w, h, sub, cs;
	if (tjDecompressHeader3(tj, jpg, got, &w, &h, &sub, &cs) != 0) {
		rc = ts_error_set(err, TS_E_DECODE, "%s: %s", path, tjGetErrorStr2(tj));
		goto out;
	}
	for (int l = 0; l < N_LEVELS; l++) {
		tjscalingfactor sf = {1, 1 << l};
		int lw = TJSCALED(w, sf), lh = TJSCALED(h, sf);
		rc = ts_image_reserve(&levels[l], lw, lh, 3, TS_DTYPE_U8);
		if (rc < 0) {
			rc = ts_error_set(err, TS_E_NOMEM, "out of memory decoding %s", path);
			goto out;
		}
		if (tjDecompress2(tj, jpg, got, levels[l].data, lw, (int)levels[l].stride,
				  lh, TJPF_RGB, 0) != 0 &&
		    tjGetErrorCode(tj) == TJERR_FATAL) {
			rc = ts_error_set(err, TS_E_DECODE, "%s: %s", path, tjGetErrorStr2(tj));
			goto out;
		}
	}
	*full_w = w;
	*full_h = h;
out:
	if (tj)
		tjDestroy(tj);
	free(jpg);
	close(fd);
	return rc;
}

/* The class folder name: the photo's file stem, lowercased, with anything
 * but letters and digits turned into '-'. */
static void class_name(const char *path, char *buf, size_t size)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t i = 0;
	for (; base[i] && base[i] != '.' && i + 1 < size; i++) {
		char c = base[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			c = '-';
		buf[i] = c;
	}
	buf[i] = '\0';
}

/* ---- one image ---- */

struct worker_bufs {
	tjhandle tj;
	uint8_t *jpg;            /* tjAlloc'd, tjBufSize of the largest output */
	unsigned long jpg_cap;
	struct ts_image out;
	uint8_t *png;            /* growable PNG output */
	size_t png_len, png_cap;
	bool png_oom;
};

static void png_write_mem(png_structp png, png_bytep data, png_size_t len)
{
	struct worker_bufs *b = png_get_io_ptr(png);
	if (b->png_oom)
		return;
	if (b->png_len + len > b->png_cap) {
		size_t cap = (b->png_len + len) * 2;
		uint8_t *p = realloc(b->png, cap);
		if (!p) {
			b->png_oom = true;
			return;
		}
		b->png = p;
		b->png_cap = cap;
	}
	memcpy(b->png + b->png_len, data, len);
	b->png_len += len;
}

static void png_flush_mem(png_structp png)
{
	(void)png;
}

static void png_error_fn(png_structp png, png_const_charp msg)
{
	(void)msg;
	png_longjmp(png, 1);
}

static void png_warn_fn(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/* Encode img (RGB u8) as PNG into b->png. Kept apart so that setjmp's
 * frame holds nothing that must survive the longjmp. */
static int encode_png(struct worker_bufs *b, const struct ts_image *img)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
						  png_error_fn, png_warn_fn);
	if (!png)
		return TS_E_NOMEM;
	png_infop info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		return TS_E_NOMEM;
	}
	b->png_len = 0;
	b->png_oom = false;
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return TS_E_DECODE;
	}
	png_set_write_fn(png, b, png_write_mem, png_flush_mem);
	png_set_compression_level(png, PNG_LEVEL);
	/* One filter, not libpng's try-them-all heuristic: 3x faster, ~10% larger. */
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
	png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
		     PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (int y = 0; y < img->height; y++)
		png_write_row(png, img->data + (size_t)y * img->stride);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return b->png_oom ? TS_E_NOMEM : 0;
}

/*
 * Make image g of the pass: draw the output size and the crop, pick the
 * pyramid level, resample, encode, write. The draws follow torchvision's
 * idea of a crop (area and aspect), but shaped to look like ImageNet's
 * files: mostly landscape, shorter side skewed toward 300 px.
 */
static int make_one(struct pass *ps, struct worker_bufs *b, int g,
		    struct ts_error *err)
{
	const struct ts_dataset_opts *o = ps->opts;
	struct ts_rng r;
	ts_rng_init(&r, o->seed, (uint64_t)ps->split, (uint64_t)g, 0);

	double u = ts_rng_uniform(&r);
	int out_short = TS_DATASET_MIN_SIDE +
		(int)((TS_DATASET_MAX_SIDE - TS_DATASET_MIN_SIDE) * u * u + 0.5);
	double ratio = ts_rng_range(&r, 1.0, 4.0 / 3.0);
	bool landscape = ts_rng_uniform(&r) < 0.8;
	int out_long = (int)(out_short * ratio + 0.5);
	int ow = landscape ? out_long : out_short;
	int oh = landscape ? out_short : out_long;

	int W = ps->full_w, H = ps->full_h;
	double c = ts_rng_range(&r, 0.25, 1.0) * (W < H ? W : H);
	double cw = landscape ? c * ratio : c, ch = landscape ? c : c * ratio;
	double f = 1.0;
	if (cw > W)
		f = W / cw;
	if (ch * f > H)
		f = H / ch;
	int icw = (int)(cw * f), ich = (int)(ch * f);
	if (icw < 1)
		icw = 1;
	if (ich < 1)
		ich = 1;
	int x0 = (int)ts_rng_below(&r, (uint64_t)(W - icw + 1));
	int y0 = (int)ts_rng_below(&r, (uint64_t)(H - ich + 1));

	/* Smallest level whose crop still covers the output: downscale from
	 * there (antialiased), never upscale from a coarser level. */
	int crop_short = icw < ich ? icw : ich;
	int l = N_LEVELS - 1;
	while (l > 0 && crop_short / (1 << l) < out_short)
		l--;
	const struct ts_image *lv = &ps->levels[l];
	int lx = x0 >> l, ly = y0 >> l;
	int lw = icw >> l, lh = ich >> l;
	if (lw < 1)
		lw = 1;
	if (lh < 1)
		lh = 1;
	if (lx + lw > lv->width)
		lx = lv->width - lw;
	if (ly + lh > lv->height)
		ly = lv->height - lh;
	struct ts_image view = {
		.width = lw, .height = lh, .channels = 3, .dtype = TS_DTYPE_U8,
		.stride = lv->stride,
		.data = lv->data + (size_t)ly * lv->stride + (size_t)lx * 3,
		.capacity = 0,
	};
	int rc = ts_aug_resize(&view, &b->out, ow, oh, TS_INTERP_BILINEAR, true);
	if (rc < 0)
		return ts_error_set(err, rc, "resize to %dx%d failed: %s", ow, oh,
				    ts_error_name(rc));

	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%06d.%s", ps->class_dir, g,
			     o->png ? "png" : "jpg") >= sizeof(path))
		return ts_error_set(err, -ENAMETOOLONG, "%s: path too long", ps->class_dir);
	const void *data;
	size_t len;
	if (o->png) {
		rc = encode_png(b, &b->out);
		if (rc < 0)
			return ts_error_set(err, rc, "%s: PNG encoding failed", path);
		data = b->png;
		len = b->png_len;
	} else {
		unsigned long jlen = b->jpg_cap;
		if (tjCompress2(b->tj, b->out.data, b->out.width, (int)b->out.stride,
				b->out.height, TJPF_RGB, &b->jpg, &jlen, TJSAMP_420,
				JPEG_QUALITY, TJFLAG_NOREALLOC) != 0)
			return ts_error_set(err, TS_E_DECODE, "%s: %s", path,
					    tjGetErrorStr2(b->tj));
		data = b->jpg;
		len = jlen;
	}
	rc = write_file_atomic(path, data, len);
	if (rc < 0)
		return ts_error_set(err, rc, "%s: %s", path, ts_error_name(rc));

	pthread_mutex_lock(&ps->lock);
	ps->bytes += len;
	ps->sum_w += b->out.width;
	ps->sum_h += b->out.height;
	ps->n_made++;
	pthread_mutex_unlock(&ps->lock);
	return 0;
}

static int bufs_init(struct worker_bufs *b, bool png)
{
	memset(b, 0, sizeof(*b));
	if (png)
		return 0;
	b->tj = tjInitCompress();
	if (!b->tj)
		return TS_E_NOMEM;
	int maxl = (TS_DATASET_MAX_SIDE * 4 + 2) / 3 + 1;
	b->jpg_cap = tjBufSize(maxl, maxl, TJSAMP_420);
	b->jpg = tjAlloc((int)b->jpg_cap);
	if (!b->jpg) {
		tjDestroy(b->tj);
		b->tj = NULL;
		return TS_E_NOMEM;
	}
	return 0;
}

static void bufs_free(struct worker_bufs *b)
{
	if (b->tj)
		tjDestroy(b->tj);
	tjFree(b->jpg);
	free(b->png);
	ts_image_free(&b->out);
}

static void pass_fail(struct pass *ps, int rc, const struct ts_error *e)
{
	pthread_mutex_lock(&ps->lock);
	if (ps->rc == 0) {
		ps->rc = rc;
		ps->err = *e;
	}
	pthread_mutex_unlock(&ps->lock);
	/* Seen by the other workers' next check; the error itself is
	 * published by the mutex. */
	WRITE_ONCE(ps->stop, true);
}

/* Take images off the pass until none is left; the calling thread (main)
 * also reports progress. */
static void pass_work(struct pass *ps, bool report)
{
	struct worker_bufs b;
	struct ts_error e = {0};
	int rc = bufs_init(&b, ps->opts->png);
	if (rc < 0) {
		ts_error_set(&e, TS_E_NOMEM, "out of memory starting a worker");
		pass_fail(ps, TS_E_NOMEM, &e);
		return;
	}
	while (!READ_ONCE(ps->stop)) {
		int i = ATOMIC_ADD(&ps->next, 1) - 1;
		if (i >= ps->count)
			break;
		rc = make_one(ps, &b, ps->klass + i * ps->opts->classes, &e);
		if (rc < 0) {
			pass_fail(ps, rc, &e);
			break;
		}
		int done = ATOMIC_ADD(ps->done, 1);
		if (report && ps->opts->progress)
			ps->opts->progress(ps->opts->progress_ctx, done,
					   ps->opts->images + ps->opts->val_images);
	}
	bufs_free(&b);
}

static void *pass_thread(void *arg)
{
	pass_work(arg, false);
	return NULL;
}

static int online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* Run one pass on `threads` threads (the caller is one of them). */
static int run_pass(struct pass *ps, int threads, struct ts_error *err)
{
	pthread_t tids[MAX_THREADS];
	int started = 0;
	for (int t = 1; t < threads && t < ps->count; t++) {
		if (pthread_create(&tids[started], NULL, pass_thread, ps) != 0)
			break;   /* fewer threads is still correct */
		started++;
	}
	pass_work(ps, true);
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	if (ps->rc < 0) {
		if (err)
			*err = ps->err;
		return ps->rc;
	}
	return 0;
}

static int check_opts(const struct ts_dataset_opts *o, struct ts_error *err)
{
	if (!o || !o->dir || !*o->dir)
		return ts_error_set(err, TS_E_ARG, "no data set folder given");
	if (o->classes < 1 || o->classes > 1000)
		return ts_error_set(err, TS_E_ARG, "classes must be between 1 and 1000 (got %d)",
				    o->classes);
	if (o->images < o->classes || o->images > 10000000)
		return ts_error_set(err, TS_E_ARG,
				    "images must be between the class count (%d) and 10000000 (got %d)",
				    o->classes, o->images);
	if (o->val_images < 0 || o->val_images > 10000000)
		return ts_error_set(err, TS_E_ARG, "val images must be between 0 and 10000000");
	if (o->threads < 0)
		return ts_error_set(err, TS_E_ARG, "threads must be 0 (auto) or more");
	return 0;
}

/*
 * Decide what to do with an existing DIR: make (fresh or after removing a
 * stale set of ours), reuse, or refuse. *reuse is set when a complete
 * matching set is there.
 */
static int prepare_dir(const struct ts_dataset_opts *o, const char *photos,
		       bool *reuse, struct ts_error *err)
{
	char marker[PATH_MAX], have[2048], want[2048];
	bool empty = false;
	int rc = dir_state(o->dir, &empty);
	if (rc < 0)
		return ts_error_set(err, rc, "%s: %s", o->dir, ts_error_name(rc));
	*reuse = false;
	if (empty)
		return 0;
	if ((size_t)snprintf(marker, sizeof(marker), "%s/%s", o->dir, TS_DATASET_MARKER)
	    >= sizeof(marker))
		return ts_error_set(err, -ENAMETOOLONG, "%s: path too long", o->dir);
	rc = read_small_file(marker, have, sizeof(have));
	if (rc < 0)
		return ts_error_set(err, -EEXIST,
				    "%s is not empty and is not a tsrun data set: "
				    "give a new or empty folder", o->dir);
	rc = marker_text(o, photos, true, want, sizeof(want));
	if (rc < 0)
		return ts_error_set(err, rc, "photo folder path too long");
	if (!strcmp(have, want)) {
		*reuse = true;
		return 0;
	}
	/* Ours, but other options or interrupted: remake it. */
	rc = remove_split(o->dir, "train", err);
	if (rc == 0)
		rc = remove_split(o->dir, "val", err);
	if (rc == 0 && unlink(marker) != 0)
		rc = ts_error_set(err, -errno, "%s: %s", marker, strerror(errno));
	return rc;
}

TS_EXPORT int ts_dataset_make(const struct ts_dataset_opts *opts,
			      struct ts_dataset_result *res, struct ts_error *err)
{
	struct photo_list pl = {0};
	struct ts_image levels[N_LEVELS] = {0};
	char photos[512], marker[PATH_MAX], text[2048], cdir[PATH_MAX], cname[128];
	int done = 0;
	struct ts_dataset_result r = {0};
	bool reuse;
	int rc = check_opts(opts, err);
	if (rc < 0)
		return rc;

	if (opts->photos) {
		if ((size_t)snprintf(photos, sizeof(photos), "%s", opts->photos) >= sizeof(photos))
			return ts_error_set(err, TS_E_ARG, "photo folder path too long");
	} else {
		rc = ts_dataset_find_photos(opts->classes, photos, sizeof(photos), err);
		if (rc < 0)
			return rc;
	}
	rc = list_photos(photos, &pl);
	if (rc < 0)
		return ts_error_set(err, TS_E_SOURCE, "%s: %s: %s", photos, ts_error_name(rc),
				    INSTALL_HINT);
	if (pl.n < (size_t)opts->classes) {
		rc = ts_error_set(err, TS_E_SOURCE,
				  "%s holds %zu JPEG photos and %d classes need %d%s",
				  photos, pl.n, opts->classes, opts->classes,
				  pl.n ? "" : ": " INSTALL_HINT);
		goto out;
	}

	rc = prepare_dir(opts, photos, &reuse, err);
	if (rc < 0)
		goto out;
	snprintf(r.photos, sizeof(r.photos), "%s", photos);
	r.images = opts->images;
	r.val_images = opts->val_images;
	r.classes = opts->classes;
	if (reuse) {
		r.reused = true;
		goto done;
	}

	rc = mkdir_p(opts->dir);
	if (rc < 0) {
		ts_error_set(err, rc, "%s: %s", opts->dir, ts_error_name(rc));
		goto out;
	}
	snprintf(marker, sizeof(marker), "%s/%s", opts->dir, TS_DATASET_MARKER);
	rc = marker_text(opts, photos, false, text, sizeof(text));
	if (rc == 0)
		rc = write_file_atomic(marker, text, strlen(text));
	if (rc < 0) {
		ts_error_set(err, rc, "%s: %s", marker, ts_error_name(rc));
		goto out;
	}

	int threads = opts->threads ? opts->threads : online_cores();
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	double sum_w = 0, sum_h = 0;
	long made = 0;
	for (int k = 0; k < opts->classes; k++) {
		int W = 0, H = 0;
		rc = decode_pyramid(pl.paths[k], levels, &W, &H, err);
		if (rc < 0)
			goto out;
		class_name(pl.paths[k], cname, sizeof(cname));
		for (int split = 0; split < 2; split++) {
			int total = split ? opts->val_images : opts->images;
			int count = total / opts->classes + (k < total % opts->classes);
			if (count == 0)
				continue;
			if ((size_t)snprintf(cdir, sizeof(cdir), "%s/%s/%03d-%s", opts->dir,
					     split ? "val" : "train", k, cname) >= sizeof(cdir)) {
				rc = ts_error_set(err, -ENAMETOOLONG, "%s: path too long", opts->dir);
				goto out;
			}
			rc = mkdir_p(cdir);
			if (rc < 0) {
				ts_error_set(err, rc, "%s: %s", cdir, ts_error_name(rc));
				goto out;
			}
			struct pass ps = {
				.opts = opts, .levels = levels, .full_w = W, .full_h = H,
				.class_dir = cdir, .split = split, .klass = k, .count = count,
				.done = &done,
			};
			pthread_mutex_init(&ps.lock, NULL);
			rc = run_pass(&ps, threads, err);
			pthread_mutex_destroy(&ps.lock);
			r.bytes += ps.bytes;
			sum_w += ps.sum_w;
			sum_h += ps.sum_h;
			made += ps.n_made;
			if (rc < 0)
				goto out;
		}
	}
	rc = marker_text(opts, photos, true, text, sizeof(text));
	if (rc == 0)
		rc = write_file_atomic(marker, text, strlen(text));
	if (rc < 0) {
		ts_error_set(err, rc, "%s: %s", marker, ts_error_name(rc));
		goto out;
	}
	if (made) {
		r.mean_width = sum_w / (double)made;
		r.mean_height = sum_h / (double)made;
	}
done:
	if (res)
		*res = r;
	rc = 0;
out:
	for (int l = 0; l < N_LEVELS; l++)
		ts_image_free(&levels[l]);
	photo_list_free(&pl);
	ts_aug_scratch_free();   /* the calling thread's resize scratch */
	return rc;
}
