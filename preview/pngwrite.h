/*
 * pngwrite.h - write an 8-bit RGB image (struct ts_image) as a PNG file
 * with libpng: the picture `tsrun preview` makes. The bytes depend on the
 * pixels and the text chunks only (no time stamp), so the same picture is
 * the same file.
 *
 * Returns 0 or a negative code (-errno, TS_E_ARG, TS_E_NOMEM) with err
 * filled when non-NULL; prints nothing. Thread safe.
 */
#ifndef TS_PNGWRITE_H
#define TS_PNGWRITE_H

#include "error.h"
#include "image.h"

/* Write img (TS_DTYPE_U8, 3 channels) to path, replacing it: the file is
 * written beside it under a new temporary name (created exclusively, so
 * a file or link planted there is never written through) and renamed, so
 * a reader never sees half a picture. description (may be NULL) goes into a tEXt chunk
 * "Description". */
int ts_pngwrite_file(const struct ts_image *img, const char *path,
		     const char *description, struct ts_error *err);

#endif
