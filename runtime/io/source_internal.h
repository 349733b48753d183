/*
 * source_internal.h - what the source kinds share, for runtime/source*.c
 * only:
 *   source.c            open (any kind), items, the synchronous read;
 *                       the path arena, item vector, path and label
 *                       helpers below
 *   source_folder.c     folder(): ImageFolder trees
 *   source_list.c       list(): "path,label" files
 *   source_tar.c        tar(): WebDataset shards
 *   source_pattern.c    brace expansion of shard patterns
 *   source_synthetic.c  synthetic(): shape checks and generated pixels
 */
#ifndef TS_SOURCE_INTERNAL_H
#define TS_SOURCE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
};

struct ts_source_arena {
	struct arena_chunk *head;
};


/* A growable item array. */
struct ts_item_vec {
	struct ts_item *v;
	size_t n, cap;
};


/* source.c: a copy of s[0, len) in the arena (NULL: out of memory); free
 * the arena; append to an item vector (TS_E_NOMEM); path joined to dir
 * unless absolute; a path's folder; read len bytes at off exactly (-EIO
 * at a short file); s without surrounding blanks, in place; a label. */
char *ts_source_arena_dup(struct ts_source_arena *a, const char *s, size_t len);
void ts_source_arena_free(struct ts_source_arena *a);
int ts_source_vec_push(struct ts_item_vec *iv, const struct ts_item *it);
char *ts_source_join_path(const char *dir, const char *path);
char *ts_source_dir_of(const char *path);
int ts_source_pread_full(int fd, void *buf, size_t len, uint64_t off);
char *ts_source_trim(char *s);
bool ts_source_parse_label(const char *s, int32_t *out);

/* One source kind's row, in its source_<kind>.c; source.c lists them and
 * reaches a kind only through its row. open lists every item (before
 * sharding) into items, paths in ix->arena, class names in ix->classes;
 * root is src->path joined to the pipeline's folder ("synthetic" for a
 * source without files: dsl/plan.h's ts_source_kind_encoded). A source
 * of generated items lists none: its open sets ix->n_total and
 * ix->n_classes, and item makes item i. */
struct ts_source_type {
	enum ts_source_kind kind;
	int (*open)(const struct ts_source *src, const char *root,
		    struct ts_index *ix, struct ts_item_vec *items,
		    struct ts_error *err);
	void (*item)(const struct ts_index *ix, size_t i, struct ts_item *out);
};

extern const struct ts_source_type ts_source_type_folder;    /* source_folder.c */
extern const struct ts_source_type ts_source_type_list;      /* source_list.c */
extern const struct ts_source_type ts_source_type_tar;       /* source_tar.c */
extern const struct ts_source_type ts_source_type_synthetic; /* source_synthetic.c */

/* source_synthetic.c: a synthetic source's count and shape are valid. */
int ts_source_synthetic_check(const struct ts_source *src, struct ts_error *err);

#endif
