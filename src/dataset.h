/*
 * dataset.h - the built-in data set: a small ImageNet-like ImageFolder
 * tree made from real photographs that a Debian package ships
 * (mate-backgrounds), for the quickstart, the tests and the benchmarks.
 *
 *   DIR/train/<class>/<n>.jpg      (or .png)
 *   DIR/val/<class>/<n>.jpg        (only when val_images > 0)
 *
 * <class> is "<k>-<photo>" (k zero-padded to 3 digits, the photo's file
 * stem lowercased: "000-aqua"), so sorted folder order is class order;
 * <n> is the image's index in its split, zero-padded to 6 digits.
 *   DIR/.tsrun-dataset             (the marker: what was made, and whether
 *                                   it is complete)
 *
 * Class k is made of random crops of photo k (the photos sorted by name),
 * so a small CNN can tell the classes apart. Each crop has a random
 * position, a shorter side between 1/4 and all of the photo's shorter
 * side and an aspect between 3/4 and 4/3; it is rescaled so that its
 * shorter side is 300-500 px (about 415x380 on average) and written as
 * JPEG quality 90 (4:2:0) or PNG. Image n's choices come from the
 * counter-based RNG keyed by (seed, split, n), so the bytes depend on the
 * options only, never on the thread count.
 *
 * Functions return 0 or a negative code (-errno or TS_E_*) and fill the
 * struct ts_error when one is given. Nothing here prints.
 */
#ifndef TS_DATASET_H
#define TS_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define TS_DATASET_DEFAULT_IMAGES 2000
#define TS_DATASET_DEFAULT_CLASSES 10
#define TS_DATASET_MIN_SIDE 300   /* shorter side of every image, px */
#define TS_DATASET_MAX_SIDE 500
#define TS_DATASET_MARKER ".tsrun-dataset"

struct ts_dataset_opts {
	const char *dir;     /* where to make the tree; created if missing */
	int images;          /* train images, >= classes */
	int val_images;      /* val images; 0 = no val/ tree */
	int classes;         /* number of classes = photos used */
	uint64_t seed;
	bool png;            /* PNG instead of JPEG quality 90 */
	/* A folder of *.jpg photos to crop from; NULL = the first of the known
	 * folders (mate-backgrounds' nature photos, ...) that holds enough. */
	const char *photos;
	int threads;         /* worker threads; 0 = the online cores */
	/* Called now and then from the calling thread with the images written
	 * so far (train and val) and the total; may be NULL. */
	void (*progress)(void *ctx, int done, int total);
	void *progress_ctx;
};

struct ts_dataset_result {
	bool reused;             /* a matching complete set was already there */
	int images, val_images, classes;
	uint64_t bytes;          /* bytes of image files written (0 if reused) */
	double mean_width, mean_height;  /* over the images written */
	char photos[512];        /* the photo folder used */
};

/* Fill opts with the defaults: 2000 images, 10 classes, seed 0, JPEG, no
 * val, auto threads, no progress callback; dir is left NULL. */
void ts_dataset_defaults(struct ts_dataset_opts *opts);

/*
 * Make the data set described by opts.
 *
 * DIR must be missing, empty, or a previous tsrun data set (it holds the
 * marker). A previous set that is complete and matches the options is
 * kept as it is (res->reused = true); one that does not match (or was
 * interrupted) is removed - its train/ and val/ trees only - and made
 * anew. Any other non-empty DIR is refused with -EEXIST.
 *
 * Each file is written to "<name>.tmp" and renamed into place; the marker
 * says "complete" only once every file is there.
 *
 * Errors: TS_E_SOURCE when no photo folder is found (the message tells the
 * user to `apt-get install mate-backgrounds` or to set TSRUN_PHOTOS) or it
 * holds fewer photos than classes; TS_E_ARG for bad options; TS_E_DECODE
 * when a photo does not decode; -errno from the file system.
 *
 * res (may be NULL) is written only on success. Thread safety: any number
 * of calls may run at once on different directories.
 */
int ts_dataset_make(const struct ts_dataset_opts *opts,
		    struct ts_dataset_result *res, struct ts_error *err);

/*
 * Find the photo folder ts_dataset_make would use for `classes` classes
 * when opts->photos is NULL: copy its path into buf (size bytes) and
 * return 0, or return TS_E_SOURCE (with the install hint in err).
 */
int ts_dataset_find_photos(int classes, char *buf, size_t size,
			   struct ts_error *err);

#endif
