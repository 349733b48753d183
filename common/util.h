/*
 * util.h - small helpers shared by dsl/ and runtime/: error filling and
 * checked allocation. Internal; not installed.
 */
#ifndef TS_UTIL_H
#define TS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define TS_EXPORT __attribute__((visibility("default")))
#define TS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* v rounded up to a multiple of unit (unit > 0). */
static inline uint64_t ts_round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1) / unit * unit;
}

/* Fill err (when non-NULL) with code and a printf-style message; returns
 * code so callers can write `return ts_error_set(err, -ENOENT, ...)`. */
int ts_error_set(struct ts_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same, with a source location. */
int ts_error_set_at(struct ts_error *err, int code, struct ts_loc loc,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A short English name for a code: "syntax error", "No such file ...". */
const char *ts_error_name(int code);

/* Read fd to its end into a new buffer (*out, NUL-terminated one byte
 * past *len; freed by the caller), with room for hint bytes first (0: a
 * default). With max > 0, more than max bytes is -EFBIG (*len then says
 * how many were read; nothing is returned). Else 0, TS_E_NOMEM or
 * -errno. The one read-to-EOF loop of the pipeline file, side files and
 * sample files. */
int ts_read_fd_all(int fd, size_t hint, uint64_t max, void **out, size_t *len);

/* strdup that returns NULL for NULL. */
char *ts_strdup(const char *s);

/* The one clock: CLOCK_MONOTONIC in seconds, and in whole milliseconds. */
double ts_clock_now(void);
int64_t ts_clock_ms(void);

/*
 * A caller's sized struct (a public options struct whose first field is
 * its size_t size, libtsrun(3), Sized structs) into dst, dst_size bytes,
 * which holds the defaults: the fields that fit in the caller's size are
 * copied over them, the rest keep their defaults, and dst's size becomes
 * dst_size. 0, or TS_E_ARG with err naming the struct (type, "struct
 * ts_client_opts") and how to set it (init, "ts_client_opts_init sets it"): size
 * unset or too small to hold itself, implausibly large (uninitialised
 * memory), or larger than dst_size with a non-zero byte past it (fields
 * of a newer header that this library cannot honour). dst is unchanged
 * on failure.
 */
int ts_sized_in(void *dst, size_t dst_size, const void *src, const char *type,
		const char *init, struct ts_error *err);

/* The caller's side of an _init for a sized struct of size bytes: the
 * defaults in def (def_size bytes, its size field already def_size) as
 * far as size reaches, the bytes past def_size zeroed, and its size. */
void ts_sized_init(void *o, size_t size, const void *def, size_t def_size);

#endif
