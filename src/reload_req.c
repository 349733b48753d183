/* reload_req.c - the request files of `tsrun reload` (reload_req.h). */
#include "reload_req.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

int ts_reload_req_where(const char *socket_path, char *dir, size_t dn,
			char *prefix, size_t pn)
{
	const char *slash = strrchr(socket_path, '/');
	const char *name = slash ? slash + 1 : socket_path;
	size_t dlen = !slash ? 1 : slash == socket_path ? 1 : (size_t)(slash - socket_path);
	size_t nlen = strlen(name);

	if (dlen + 1 > dn || nlen + sizeof(".reload") > pn)
		return -ENAMETOOLONG;
	if (!slash)
		memcpy(dir, ".", 1);
	else
		memcpy(dir, socket_path, dlen);
	dir[dlen] = '\0';
	memcpy(prefix, name, nlen);
	memcpy(prefix + nlen, ".reload", sizeof(".reload"));
	return 0;
}

long ts_reload_req_pid(const char *name, const char *prefix)
{
	size_t plen = strlen(prefix), len = strlen(name);
	long pid = 0;

	/* "<prefix>." + at least one digit + ".req" */
	if (len < plen + 1 + 1 + 4 || strncmp(name, prefix, plen) != 0 ||
	    name[plen] != '.' || strcmp(name + len - 4, ".req") != 0)
		return 0;
	const char *d = name + plen + 1, *end = name + len - 4;
	if (*d == '0')
		return 0;
	for (; d < end; d++) {
		if (*d < '0' || *d > '9')
			return 0;
		pid = pid * 10 + (*d - '0');
		if (pid > INT_MAX)
			return 0;
	}
	return pid;
}

int ts_reload_req_path(const char *text, size_t len, char *path, size_t n)
{
	const char *nl = memchr(text, '\n', len);
	size_t plen = nl ? (size_t)(nl - text) : len;

	if (plen == 0 || text[0] != '/')
		return -EINVAL;
	/* After the path's newline: nothing, or one more newline (an editor's). */
	if (nl && !(len == plen + 1 || (len == plen + 2 && nl[1] == '\n')))
		return -EINVAL;
	for (size_t i = 0; i < plen; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			return -EINVAL;
	if (plen + 1 > n)
		return -ENAMETOOLONG;
	memcpy(path, text, plen);
	path[plen] = '\0';
	return 0;
}
