/* cli.c - helpers shared by the subcommands: files, diagnostics, colour. */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source.h"
#include "util.h"

enum color_mode { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
static enum color_mode color_mode = COLOR_AUTO;

bool ts_cli_set_color(const char *mode)
{
	if (strcmp(mode, "auto") == 0)
		color_mode = COLOR_AUTO;
	else if (strcmp(mode, "always") == 0)
		color_mode = COLOR_ALWAYS;
	else if (strcmp(mode, "never") == 0)
		color_mode = COLOR_NEVER;
	else
		return false;
	return true;
}

bool ts_cli_color(FILE *f)
{
	const char *no = getenv("NO_COLOR");
	if (color_mode != COLOR_AUTO)
		return color_mode == COLOR_ALWAYS;
	return !(no && *no) && isatty(fileno(f));
}

/* Read fd to its end into a new NUL-terminated buffer, no more than max
 * bytes (0: no bound; -EFBIG past it, should the file grow while read).
 * The one read loop of both readers below. */
static int read_all(int fd, size_t max, char **out, size_t *len)
{
	void *p = NULL;
	int rc = ts_read_fd_all(fd, 0, max, &p, len);
	if (rc == 0)
		*out = p;
	return rc;
}

int ts_cli_read_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = strcmp(path, "-") == 0 && !max
		? STDIN_FILENO
		: open(path, O_RDONLY | O_CLOEXEC | (max ? O_NONBLOCK | O_NOCTTY : 0));
	int rc = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	/* Bounded: only a regular file (a FIFO would block, a device never
	 * end), no larger than max, and no more than max bytes read should it
	 * grow meanwhile. */
	if (max && fstat(fd, &st) < 0)
		rc = -errno;
	else if (max && !S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if (max && (uint64_t)st.st_size > max)
		rc = -EFBIG;
	else
		rc = read_all(fd, max ? max : TS_CLI_MAX_SOURCE, out, len);
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

int ts_cli_read_side_file(const char *path, size_t max, unsigned owner, char **out,
			  size_t *len, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	int rc;
	if (fstat(fd, st) < 0)
		rc = -errno;
	else if (!S_ISREG(st->st_mode))
		rc = -EINVAL;
	else if (st->st_uid != geteuid() && st->st_uid != (uid_t)owner)
		rc = -EPERM;
	else if ((uint64_t)st->st_size > max)
		rc = -EFBIG;
	else
		rc = read_all(fd, max ? max : TS_CLI_MAX_SOURCE, out, len);
	close(fd);
	return rc;
}

FILE *ts_cli_side_create(const char *path, char **tmp)
{
	*tmp = NULL;
	if (asprintf(tmp, "%s.XXXXXX", path) < 0) {
		*tmp = NULL;
		errno = ENOMEM;
		return NULL;
	}
	int fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(*tmp);
		*tmp = NULL;
		errno = e;
		return NULL;
	}
	fchmod(fd, 0644);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
		errno = e;
	}
	return f;
}

int ts_cli_side_commit(FILE *f, char *tmp, const char *path)
{
	int rc = 0;
	if (fflush(f) != 0 || ferror(f))
		rc = -(errno ? errno : EIO);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

#define RED "\033[1;31m"
#define YELLOW "\033[1;33m"
#define CYAN "\033[36m"
#define GREEN "\033[1;32m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

/* Colour one rendered line: the severity word, the caret line, the hint.
 * The rendered text stays the single source of the wording. */
static void print_line(FILE *f, const char *s, size_t len, bool color)
{
	static const char *const sev[][2] = {
		{": error: ", RED}, {": warning: ", YELLOW}, {": note: ", CYAN}};
	if (!color) {
		fwrite(s, 1, len, f);
		return;
	}
	for (size_t i = 0; i < TS_ARRAY_LEN(sev); i++) {
		const char *m = memmem(s, len, sev[i][0], strlen(sev[i][0]));
		if (m) {
			size_t head = (size_t)(m - s) + 2;
			size_t word = strlen(sev[i][0]) - 3;
			fprintf(f, BOLD "%.*s" RESET "%s%.*s" RESET BOLD "%.*s" RESET,
				(int)head, s, sev[i][1], (int)word, m + 2,
				(int)(len - head - word), m + 2 + word);
			return;
		}
	}
	if (len >= 5 && strncmp(s, "hint:", 5) == 0) {
		fprintf(f, CYAN "hint:" RESET "%.*s", (int)(len - 5), s + 5);
		return;
	}
	const char *bar = memchr(s, '|', len);
	if (bar && memchr(bar, '^', len - (size_t)(bar - s))) {
		size_t at = (size_t)(bar - s) + 1;
		fprintf(f, "%.*s" GREEN "%.*s" RESET, (int)at, s, (int)(len - at),
			s + at);
		return;
	}
	fwrite(s, 1, len, f);
}

void ts_cli_print_diags(const struct ts_diags *d)
{
	char *text = ts_diags_render(d);
	bool color = ts_cli_color(stderr);

	if (!text) {
		fprintf(stderr, "tsrun: out of memory rendering diagnostics\n");
		return;
	}
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) + 1 : strlen(s);
		print_line(stderr, s, nl ? len - 1 : len, color);
		if (nl)
			fputc('\n', stderr);
		s += len;
	}
	free(text);
}

void ts_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tsrun%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ts_cli_compile(const char *cmd, const char *path, const char *pipeline,
		   struct ts_plan **out)
{
	return ts_cli_compile_max(cmd, path, pipeline, 0, out);
}

/* The plan's source opened and listed as `tsrun run` would (check
 * --sources): a folder, list or shard that is missing or empty becomes
 * an error at the path's place in the file. Returns 0, TS_E_NOMEM, or
 * the source's code when it was reported. */
static int open_source(const struct ts_plan *plan, struct ts_diags *d)
{
	struct ts_index *ix = NULL;
	struct ts_error err = {0};
	int rc = ts_source_open(&plan->source, &ix, &err);

	ts_source_index_destroy(ix);
	if (rc == 0 || rc == TS_E_NOMEM)
		return rc;
	if (ts_diags_add(d, TS_SEV_ERROR, plan->source.loc, NULL, "%s", err.msg) < 0)
		return TS_E_NOMEM;
	return rc;
}

/* What `tsrun graph` can say about the source without listing it (a
 * listing of a million files takes seconds): whether the folder or list
 * file, or a tar pattern's folder, is there. When it is not, a warning
 * at the path says that the sources were not looked at. Returns 0 or
 * TS_E_NOMEM. */
static int probe_source(const struct ts_plan *plan, struct ts_diags *d)
{
	const struct ts_source *s = &plan->source;
	const char *what = s->kind == TS_SRC_FOLDER ? "folder"
			 : s->kind == TS_SRC_LIST ? "list"
			 : s->kind == TS_SRC_TAR ? "the tar shards' folder" : NULL;
	char full[4096], *slash;
	struct stat st;

	if (!what || !s->path)
		return 0;
	if (s->path[0] == '/' || !s->base_dir || !strcmp(s->base_dir, "."))
		snprintf(full, sizeof(full), "%s", s->path);
	else
		snprintf(full, sizeof(full), "%s/%s", s->base_dir, s->path);
	if (s->kind == TS_SRC_TAR) {
		/* the shards' folder: the pattern's braces are the listing's */
		if (!(slash = strrchr(full, '/')))
			return 0;
		*slash = '\0';
	}
	int e = stat(full, &st) ? errno : 0;
	if (!e && (s->kind == TS_SRC_LIST ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode)))
		return 0;
	if (ts_diags_add(d, TS_SEV_WARNING, s->loc,
			 "tsrun check --sources FILE lists the sources as tsrun run does",
			 "%s '%s' %s: the sources were not looked at (a relative path "
			 "starts at the pipeline file's folder)", what, full,
			 e == ENOENT ? "does not exist" : e ? strerror(e)
			 : s->kind == TS_SRC_LIST ? "is not a regular file" : "is not a folder") < 0)
		return TS_E_NOMEM;
	return 0;
}

int ts_cli_compile_max(const char *cmd, const char *path, const char *pipeline,
		       size_t max, struct ts_plan **out)
{
	return ts_cli_compile_sources(cmd, path, pipeline, max, TS_CLI_SOURCES_NONE, out);
}

int ts_cli_compile_sources(const char *cmd, const char *path, const char *pipeline,
			   size_t max, enum ts_cli_sources sources, struct ts_plan **out)
{
	struct ts_diags d;
	char *src = NULL;
	size_t len = 0;
	int rc = ts_cli_read_file(path, max, &src, &len);

	if (rc == -EINVAL || rc == -EFBIG) {
		ts_cli_error(cmd, "cannot read %s: %s%u MiB", path, rc == -EINVAL
			     ? "not a regular file of at most "
			     : "larger than a pipeline file may be, ",
			     (unsigned)((max ? max : TS_CLI_MAX_SOURCE) >> 20));
		return TS_EXIT_USAGE;
	}
	if (rc < 0) {
		ts_cli_error(cmd, "cannot read %s: %s", path, ts_error_name(rc));
		return TS_EXIT_USAGE;
	}
	ts_diags_init(&d, strcmp(path, "-") == 0 ? "<stdin>" : path, src, len);
	rc = ts_dsl_compile(src, len, strcmp(path, "-") == 0 ? "<stdin>" : path,
			    pipeline, &d, out);
	if (rc == 0 && sources != TS_CLI_SOURCES_NONE) {
		int src_rc = sources == TS_CLI_SOURCES_OPEN ? open_source(*out, &d)
							    : probe_source(*out, &d);
		if (src_rc) {
			ts_plan_destroy(*out);
			*out = NULL;
			rc = src_rc;
		}
	}
	ts_cli_print_diags(&d);
	ts_diags_fini(&d);
	free(src);
	if (rc == TS_E_NOMEM) {
		ts_cli_error(cmd, "out of memory");
		return TS_EXIT_INVALID;
	}
	return rc == 0 ? TS_EXIT_OK : TS_EXIT_INVALID;
}

double ts_cli_cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

bool ts_cli_parse_long(const char *s, long min, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return false;
	*out = v;
	return true;
}

bool ts_cli_parse_start(const char *s, unsigned long long *epoch,
			unsigned long long *index)
{
	char *end;
	errno = 0;
	if (*s < '0' || *s > '9')
		return false;
	unsigned long long e = strtoull(s, &end, 10);
	if (errno || end == s || *end != ':')
		return false;
	const char *p = end + 1;
	if (*p < '0' || *p > '9')
		return false;
	unsigned long long i = strtoull(p, &end, 10);
	if (errno || end == p || *end)
		return false;
	*epoch = e;
	*index = i;
	return true;
}

bool ts_cli_opt_long(const char *cmd, const char *opt, const char *arg,
		     long min, long *out)
{
	if (ts_cli_parse_long(arg, min, out))
		return true;
	ts_cli_error(cmd, "%s wants a whole number >= %ld, got '%s'", opt, min, arg);
	return false;
}

bool ts_cli_opt_start(const char *cmd, const char *arg,
		      unsigned long long *epoch, unsigned long long *index)
{
	if (!ts_cli_parse_start(arg, epoch, index)) {
		ts_cli_error(cmd, "--start wants EPOCH:INDEX such as 2:1000, got '%s'", arg);
		return false;
	}
	/* the ring and the protocol carry an epoch in 32 bits */
	if (*epoch > UINT32_MAX) {
		ts_cli_error(cmd, "--start %s: epoch %llu is past the last epoch a stream "
			     "can count (%u)", arg, *epoch, UINT32_MAX);
		return false;
	}
	return true;
}

/*
 * getopt_long's own messages name the program by argv[0] ("bench"); a
 * command sets opterr = 0, passes ":..." as optstring, and on '?' or ':'
 * calls this, which says what was wrong as "tsrun CMD: ..." and returns
 * TS_EXIT_USAGE for the command to print its usage and return.
 */
int ts_cli_bad_option(const char *cmd, int c, char **argv, const struct option *opts)
{
	const char *arg = argv[optind - 1];
	size_t len = strcspn(arg, "=");
	int matches = 0;

	if (c == ':') {
		ts_cli_error(cmd, "option '%s' needs a value", arg);
	} else if (strncmp(arg, "--", 2) == 0) {
		for (const struct option *o = opts; o->name; o++) {
			if (strncmp(o->name, arg + 2, len - 2) != 0)
				continue;
			if (strlen(o->name) == len - 2) {
				matches = 1; /* an exact name is never ambiguous */
				break;
			}
			matches++;
		}
		if (matches > 1)
			ts_cli_error(cmd, "ambiguous option '%.*s'", (int)len, arg);
		else if (matches == 1 && arg[len] == '=')
			ts_cli_error(cmd, "option '%.*s' takes no value", (int)len, arg);
		else
			ts_cli_error(cmd, "unknown option '%s'", arg);
	} else {
		ts_cli_error(cmd, "unknown option '-%c'", optopt);
	}
	return TS_EXIT_USAGE;
}
