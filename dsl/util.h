/*
 * util.h - small helpers shared by dsl/ and runtime/: error filling and
 * checked allocation. Internal; not installed.
 */
#ifndef TS_UTIL_H
#define TS_UTIL_H

#include <stddef.h>
#include "error.h"

#define TS_EXPORT __attribute__((visibility("default")))
#define TS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Fill err (when non-NULL) with code and a printf-style message; returns
 * code so callers can write `return ts_error_set(err, -ENOENT, ...)`. */
int ts_error_set(struct ts_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same, with a source location. */
int ts_error_set_at(struct ts_error *err, int code, struct ts_loc loc,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A short English name for a code: "syntax error", "No such file ...". */
const char *ts_error_name(int code);

/* strdup that returns NULL for NULL. */
char *ts_strdup(const char *s);

#endif
