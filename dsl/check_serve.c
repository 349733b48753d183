/*
 * check_serve.c - serve settings: one serve block's settings resolved
 * into the plan (socket, group, epochs, ring, memory, threads, on_error,
 * queue_depth, max_file_size, max_image_pixels, stall_timeout, consumers, metrics,
 * cache), and the defaults of a pipeline served without one.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "util.h"

static int set_str(char **dst, const char *s)
{
	char *p = ts_strdup(s);
	if (s && !p)
		return TS_E_NOMEM;
	free(*dst);
	*dst = p;
	return 0;
}

/* Longest Unix socket path, without its NUL: what sun_path holds. */
#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* socket and group: empty is never meant, and a socket path must fit a
 * socket address (bind would fail at run time). Reports and returns -1. */
static int check_path_setting(struct ts_check *c, const char *name, const char *s,
			      struct ts_loc loc)
{
	size_t len = s ? strlen(s) : 0;

	if (len == 0) {
		ts_check_err(c, loc,
		    strcmp(name, "socket") == 0
			    ? "name the socket file, e.g. \"/tmp/tsrun-train.sock\", or drop the setting for the default"
			    : "name a group, or drop the setting to allow the owner only",
		    "setting '%s' is empty", name);
		return -1;
	}
	if (strcmp(name, "socket") == 0 && len > SOCKET_PATH_MAX) {
		ts_check_err(c, loc, "use a shorter path, e.g. in /tmp or $XDG_RUNTIME_DIR",
		    "setting 'socket' is %zu bytes long; a Unix socket path holds at most %zu",
		    len, SOCKET_PATH_MAX);
		return -1;
	}
	return 0;
}

void ts_check_serve_defaults(struct ts_plan *plan)
{
	plan->epochs = 1;
	plan->ring_samples = 8 * (int64_t)(plan->batch > 0 ? plan->batch : 1);
	plan->ring_asked = plan->ring_samples;
	plan->threads = 0;
	plan->on_error = TS_ON_ERROR_FAIL;
	plan->queue_depth = 64;
	plan->max_file_size = 64ull << 20;
	plan->max_image_pixels = 1ull << 25;
	plan->stall_timeout_s = 120;
	plan->job_timeout_s = -1;
	plan->max_consumers = 64;
	plan->memory_budget = 0;
	plan->cache_bytes = 0;
	plan->cache_auto = false;
}

/* Resolve the settings of one serve block into plan (which may be a
 * throwaway when the pipeline is undefined). Returns 0 or TS_E_NOMEM;
 * *memory_loc is the memory setting's value, for the budget error. */
int ts_check_serve(struct ts_check *c, const struct ts_ast_stmt *st,
		       struct ts_plan *plan, struct ts_loc *memory_loc,
		       bool *has_memory)
{
	size_t n;
	const struct ts_param *params = ts_registry_serve(&n);
	struct ts_check_val vals[TS_CHECK_MAX_PARAMS] = {{0}};
	const char *names[TS_CHECK_MAX_PARAMS];

	for (size_t i = 0; i < n; i++)
		names[i] = params[i].name;
	*has_memory = false;
	for (const struct ts_ast_setting *s = st->settings; s; s = s->next) {
		const struct ts_param *p = ts_registry_param(NULL, s->name);
		size_t idx;
		if (!p) {
			const char *sug = ts_diag_suggest(s->name, names, n);
			char hint[192];
			if (sug) {
				snprintf(hint, sizeof(hint), "did you mean '%s'?", sug);
			} else {
				size_t len = (size_t)snprintf(hint, sizeof(hint),
							      "serve settings are:");
				for (size_t j = 0; j < n && len < sizeof(hint); j++)
					len += (size_t)snprintf(hint + len, sizeof(hint) - len,
								"%s %s", j ? "," : "", names[j]);
			}
			ts_check_err(c, s->name_loc, hint, "unknown serve setting '%s'",
			    s->name);
			continue;
		}
		idx = (size_t)(p - params);
		if (vals[idx].given) {
			ts_check_err(c, s->loc, NULL, "setting '%s' given twice", p->name);
			continue;
		}
		if (ts_check_convert(c, "setting", p, s->value, &vals[idx]) < 0 ||
		    (p->type == TS_PT_STRING &&
		     check_path_setting(c, p->name, vals[idx].str,
					s->value->loc) < 0)) {
			vals[idx] = (struct ts_check_val){0};
			continue;
		}
		if (strcmp(p->name, "memory") == 0) {
			*memory_loc = s->value->loc;
			*has_memory = true;
		}
	}
	ts_check_defaults(params, n, vals);
	/* ts_check_convert() bounded every given value (check_bounds) and the ones it
	 * refused went back to their defaults, so the conversions below are
	 * in range. */
	for (size_t i = 0; i < n; i++) {
		const char *name = params[i].name;
		struct ts_check_val *v = &vals[i];
		if (strcmp(name, "socket") == 0 && v->given) {
			if (set_str(&plan->socket, v->str) < 0)
				return TS_E_NOMEM;
			plan->socket_private = false;
		} else if (strcmp(name, "group") == 0 && v->given) {
			if (set_str(&plan->group, v->str) < 0)
				return TS_E_NOMEM;
		} else if (strcmp(name, "epochs") == 0) {
			plan->epochs = (int)v->num;
		} else if (strcmp(name, "ring") == 0) {
			plan->ring_samples = (int64_t)v->num *
					     (v->samples ? 1 : plan->batch);
			plan->ring_asked = plan->ring_samples;
		} else if (strcmp(name, "memory") == 0) {
			plan->memory_budget = (uint64_t)v->num;
		} else if (strcmp(name, "threads") == 0) {
			plan->threads = v->is_auto ? 0 : (int)v->num;
		} else if (strcmp(name, "on_error") == 0) {
			plan->on_error = (enum ts_on_error)v->word;
		} else if (strcmp(name, "queue_depth") == 0) {
			plan->queue_depth = (int)v->num;
		} else if (strcmp(name, "max_file_size") == 0) {
			plan->max_file_size = (uint64_t)v->num;
		} else if (strcmp(name, "max_image_pixels") == 0) {
			plan->max_image_pixels = (uint64_t)v->num;
		} else if (strcmp(name, "stall_timeout") == 0) {
			/* The server looks at holders four times a second: a
			 * shorter positive timeout would act as 0.25 s, and
			 * one under a millisecond would round to 0 (never). */
			if (v->given && v->num > 0 && v->num < 0.25)
				ts_check_err(c, v->loc, "give 0 (never detach) or at least 0.25",
					     "setting 'stall_timeout' is %g s, finer than the producer checks stalled trainers (every 0.25 s)",
					     v->num);
			plan->stall_timeout_s = v->num;
		} else if (strcmp(name, "job_timeout") == 0) {
			/* As stall_timeout: looked at every 0.25 s. */
			if (v->given && v->num > 0 && v->num < 0.25)
				ts_check_err(c, v->loc, "give 0 (wait forever) or at least 0.25",
					     "setting 'job_timeout' is %g s, finer than the producer checks waiting jobs (every 0.25 s)",
					     v->num);
			plan->job_timeout_s = v->given ? v->num : -1;
		} else if (strcmp(name, "consumers") == 0) {
			plan->max_consumers = (int)v->num;
		} else if (strcmp(name, "metrics") == 0 && v->given) {
			if (set_str(&plan->metrics, v->str) < 0)
				return TS_E_NOMEM;
		} else if (strcmp(name, "cache") == 0) {
			plan->cache_bytes = (uint64_t)v->num;
			plan->cache_auto = v->given && v->is_auto;
			if (plan->cache_auto && !plan->memory_budget && !*has_memory)
				ts_check_err(c, v->loc, "set memory = 8 GiB (say) beside it, or give the "
					     "cache a size: cache = 4 GiB",
					     "cache = auto takes what the memory budget leaves, "
					     "but this serve block sets no memory budget");
		}
	}
	if (strlen(plan->socket) > SOCKET_PATH_MAX) {
		char hint[192];
		snprintf(hint, sizeof(hint),
			 "set socket = \"...\" to a path of at most %zu bytes",
			 SOCKET_PATH_MAX);
		ts_check_err(c, st->name_loc, hint,
		    "the default socket path for '%s' is %zu bytes long; a Unix socket path holds at most %zu",
		    st->name, strlen(plan->socket), SOCKET_PATH_MAX);
	}
	if (plan->ring_samples < plan->batch) {
		struct ts_loc l = st->name_loc;
		for (const struct ts_ast_setting *s = st->settings; s; s = s->next)
			if (strcmp(s->name, "ring") == 0)
				l = s->value->loc;
		ts_check_err(c, l, "the ring must hold at least one batch",
		    "ring of %lld samples is smaller than the batch of %d",
		    (long long)plan->ring_samples, plan->batch);
	}
	return 0;
}
