/*
 * source.h - the data set index: what a pipeline's source names, listed
 * once at open time and handed to the engine as an array of items
 * (a file, or a byte range of a tar shard, plus a label).
 *
 * Sources (struct ts_source in dsl/plan.h):
 *   folder     the ImageFolder layout: root/<class>/.../<file>. Labels are
 *              the indices of the class sub-folder names sorted in byte
 *              order, as torchvision assigns them; files are matched by
 *              extension case-insensitively, nested directories inside a
 *              class are walked, and the order is torchvision's (files of
 *              each directory sorted, directories sorted by path).
 *   list       a text/CSV file of `path,label` lines; paths are relative
 *              to the list file's directory; blank lines and lines whose
 *              first non-blank character is '#' are skipped.
 *   tar        WebDataset shards: a pattern with brace expressions
 *              ("train-{000..146}.tar", "{a,b}.tar"); members grouped by
 *              key (the member path up to the first '.' after the last
 *              '/'); the image is the .jpg/.jpeg/.png member, the label
 *              the ASCII integer in the .cls member (read at open time).
 *   synthetic  `count` generated images; no files.
 * Relative source paths resolve against source->base_dir.
 *
 * Every node lists the whole data set; shard() takes the node's share per
 * epoch, after the epoch's order (share.h).
 *
 * All functions return 0 or a negative code (-errno or TS_E_*) and fill
 * err when non-NULL; none prints. An index is immutable once opened and
 * may be read from any number of threads.
 */
#ifndef TS_SOURCE_H
#define TS_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "plan.h"
#include "image.h"

/* One sample to read. path is owned by the index that holds the item. */
struct ts_item {
	const char *path;  /* the image file, or the tar shard; NULL for
			      synthetic items */
	int32_t label;
	uint64_t offset;   /* byte range in path: for plain files offset 0 */
	uint64_t size;     /* and size 0 ("unknown: the whole file"); for tar
			      members the member's data range (size may be
			      0 for an empty member: then is_range tells) */
	bool is_range;     /* true: read exactly [offset, offset + size) */
};

struct ts_source_type;

struct ts_index {
	const struct ts_source_type *type; /* its kind's row (source_internal.h) */
	struct ts_item *items;  /* n items, in listing order;
				   NULL for synthetic sources */
	size_t n;               /* items */
	size_t n_total;         /* the same: every node lists them all */
	char **classes;         /* folder: the sorted class names (label i
				   is classes[i]); NULL otherwise */
	size_t n_classes;       /* folder: count of classes; others: highest
				   label + 1 (synthetic: source->classes) */
	char *root;             /* the resolved source path (for messages) */
	/* private */
	struct ts_source_arena *arena;
};

/*
 * List the data set that src names (all of it: shard() is the engine's).
 * src:  the plan's source; only read, not kept (the index copies what it
 *       needs).
 * out:  on success, a new index the caller frees with
 *       ts_source_index_destroy(); untouched on failure.
 * Returns 0; TS_E_SOURCE when the source is missing, empty, malformed
 * (err names the path, or file:line for a list, or shard and key for a
 * tar), or it is empty; TS_E_NOMEM; -errno for an I/O
 * failure while listing. Reentrant.
 */
int ts_source_open(const struct ts_source *src, struct ts_index **out,
		   struct ts_error *err);

/* Free an index and every string it owns. NULL is a no-op. */
void ts_source_index_destroy(struct ts_index *ix);

/*
 * Item i (0 <= i < ix->n) of any index, synthetic included: for synthetic
 * sources path is NULL, label is the item's label and offset holds the
 * synthetic image id to pass to ts_source_synthetic(). Thread-safe.
 */
void ts_source_item(const struct ts_index *ix, size_t i, struct ts_item *out);

/*
 * Generate synthetic image `id` (ts_source_item(...).offset) of src's
 * height x width x channels at src->depth bits (8 -> TS_DTYPE_U8,
 * 16 -> TS_DTYPE_U16) into out (reserved with ts_image_reserve, so a
 * reused image allocates nothing). The pixels are a pure function of id
 * and the shape. *label (when non-NULL) gets id % classes (0 when
 * classes <= 0). Returns 0, TS_E_NOMEM or TS_E_ARG for a bad shape.
 * Thread-safe for distinct out images.
 */
int ts_source_synthetic(const struct ts_source *src, uint64_t id,
			struct ts_image *out, int32_t *label);

/*
 * Read one item synchronously (pread; the fallback path and tools).
 * *data gets a malloc'd buffer the caller frees (never NULL on success,
 * even for 0 bytes), *len its length. A range shorter on disk than its
 * size is -EIO. Only regular files are read, opened without blocking (a
 * FIFO, device or socket is -ESPIPE: never waited on); a file or range
 * of more than max bytes is -EFBIG, not read. Returns 0 or -errno (err
 * names the path and the reason). Thread-safe.
 */
/* What a read of something other than a regular file says. */
#define TS_SOURCE_NOT_REGULAR "not a regular file (a FIFO, device or socket): " \
	"tsrun reads only regular files"
/* The size of the file at path now (0 when it cannot be stat'ed). */
uint64_t ts_source_file_size(const char *path);
/* "3 GiB, more than max_file_size (64 MiB): not read; ..." into err;
 * returns -EFBIG. */
int ts_source_too_big(uint64_t size, uint64_t max, struct ts_error *err);

int ts_source_read(const struct ts_item *item, uint64_t max, uint8_t **data, size_t *len,
		   struct ts_error *err);

/*
 * Expand brace expressions in pattern: numeric ranges "{000..146}" (the
 * width of a zero-padded bound is kept; descending ranges count down) and
 * lists "{a,b,c}"; several braces give the cartesian product, left to
 * right. A pattern without braces expands to itself.
 * out: on success a malloc'd array of *n malloc'd strings; free with
 * ts_source_strings_free(). Returns 0, TS_E_SOURCE for an unbalanced or
 * empty brace or more than 1,000,000 results, TS_E_NOMEM.
 */
int ts_source_expand(const char *pattern, char ***out, size_t *n,
		     struct ts_error *err);
void ts_source_strings_free(char **v, size_t n);

#endif
