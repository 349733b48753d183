/*
 * reload_req.h - the request files of `tsrun reload`, as the running tsrun
 * reads them: "<dir>/<name>.reload.<PID>.req", next to the socket
 * "<dir>/<name>", holding the new pipeline's absolute path and a newline.
 * Anyone who may write the socket's folder may plant such a file, so the
 * parsing is kept apart (and fuzzed: tests/fuzz/fuzz-reloadreq.c). Pure
 * functions: no I/O, thread-safe.
 */
#ifndef TS_RELOAD_REQ_H
#define TS_RELOAD_REQ_H

#include <stddef.h>

/* Longest path a request may name (PATH_MAX with its NUL). */
#define TS_RELOAD_REQ_PATH_MAX 4096

/* The folder and the file-name prefix ("<name>.reload") of socket_path's
 * requests into dir[dn] and prefix[pn]. Returns 0, or -ENAMETOOLONG when
 * either does not fit (nothing then is a request). */
int ts_reload_req_where(const char *socket_path, char *dir, size_t dn,
			char *prefix, size_t pn);

/* The asker's pid if name is "<prefix>.<PID>.req" with PID a decimal
 * number 1..2^31-1 (no sign, no leading zero), else 0. */
long ts_reload_req_pid(const char *name, const char *prefix);

/* The path a request's text[0..len) names: its first line (the newline
 * ending it, if any, is not part of it; nothing may follow but an empty
 * line's end) into path[n]. Returns 0, or -EINVAL for an empty text, a
 * path that is not absolute, that holds a NUL or a control character, or
 * that is followed by more text, -ENAMETOOLONG when it does not fit. */
int ts_reload_req_path(const char *text, size_t len, char *path, size_t n);

#endif
