/*
 * pngwrite.c - PNG output through libpng (pngwrite.h).
 */
#include "pngwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct png_fail {
	char msg[128];
};

static void on_error(png_structp png, png_const_charp msg)
{
	struct png_fail *f = png_get_error_ptr(png);
	snprintf(f->msg, sizeof(f->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/* libpng's part: everything between fopen and fclose. 0 or a libpng
 * failure (f->msg). */
static int encode(FILE *fp, const struct ts_image *img, const char *description,
		  struct png_fail *f)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, f, on_error,
						  on_warning);
	if (!png) {
		snprintf(f->msg, sizeof(f->msg), "out of memory");
		return TS_E_NOMEM;
	}
	png_infop info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		snprintf(f->msg, sizeof(f->msg), "out of memory");
		return TS_E_NOMEM;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return -EIO;
	}
	png_init_io(png, fp);
	png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
		     PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	if (description) {
		png_text t = {
			.compression = PNG_TEXT_COMPRESSION_NONE,
			.key = (png_charp)"Description",
			.text = (png_charp)description,
			.text_length = strlen(description),
		};
		png_set_text(png, info, &t, 1);
	}
	png_write_info(png, info);
	for (int y = 0; y < img->height; y++)
		png_write_row(png, img->data + (size_t)y * img->stride);
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	return 0;
}

/* A new file beside path, created exclusively (never a file or link that
 * is already there) with the usual 0666 & ~umask mode: "<path>.tmpPID-K". */
static int create_beside(const char *path, char **tmp, FILE **fp)
{
	for (unsigned k = 0; k < 100; k++) {
		char *t = NULL;
		if (asprintf(&t, "%s.tmp%ld-%u", path, (long)getpid(), k) < 0)
			return TS_E_NOMEM;
		int fd = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0) {
			int e = errno;
			free(t);
			if (e == EEXIST)
				continue;
			return -e;
		}
		*fp = fdopen(fd, "wb");
		if (!*fp) {
			int e = errno;
			close(fd);
			unlink(t);
			free(t);
			return -e;
		}
		*tmp = t;
		return 0;
	}
	return -EEXIST;
}

int ts_pngwrite_file(const struct ts_image *img, const char *path,
		     const char *description, struct ts_error *err)
{
	if (!img || !path || img->dtype != TS_DTYPE_U8 || img->channels != 3 ||
	    img->width <= 0 || img->height <= 0)
		return ts_error_set(err, TS_E_ARG, "png: an 8-bit RGB image and a path are required");
	char *tmp = NULL;
	FILE *fp = NULL;
	int rc = create_beside(path, &tmp, &fp);
	if (rc)
		return ts_error_set(err, rc, "cannot write '%s': %s", path,
				    rc == TS_E_NOMEM ? "out of memory" : strerror(-rc));
	struct png_fail f = {{0}};
	rc = encode(fp, img, description, &f);
	if (fflush(fp) != 0 && rc == 0) {
		rc = -errno;
		snprintf(f.msg, sizeof(f.msg), "%s", strerror(errno));
	}
	if (fclose(fp) != 0 && rc == 0) {
		rc = -errno;
		snprintf(f.msg, sizeof(f.msg), "%s", strerror(errno));
	}
	if (rc == 0 && rename(tmp, path) != 0) {
		rc = -errno;
		snprintf(f.msg, sizeof(f.msg), "%s", strerror(errno));
	}
	if (rc) {
		unlink(tmp);
		ts_error_set(err, rc, "cannot write '%s': %s", path, f.msg);
	}
	free(tmp);
	return rc;
}
