/* fuzz-tar.c - libFuzzer target: any bytes as a WebDataset tar shard,
 * listed by the tar reader of runtime/source.c (ustar, GNU long names, pax
 * path records, .cls labels) through ts_source_open, then a few members
 * read back with ts_source_read. The shard is a file in a private tmpfs
 * folder (/dev/shm, else /tmp), made once per run and rewritten for each
 * input. Every listed member must lie inside the file and read back at
 * its listed size. Nothing may crash, hang or leak. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a finding: stop here so libFuzzer keeps the input. */
#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static char dir[64];
static char file[96];

static void cleanup(void)
{
	unlink(file);
	rmdir(dir);
}

/* The shard's folder: made on the first input, removed at exit. */
static void setup(void)
{
	snprintf(dir, sizeof(dir), "/dev/shm/ts-fuzz-tar-XXXXXX");
	if (!mkdtemp(dir)) {
		snprintf(dir, sizeof(dir), "/tmp/ts-fuzz-tar-XXXXXX");
		if (!mkdtemp(dir))
			__builtin_trap();
	}
	snprintf(file, sizeof(file), "%s/shard.tar", dir);
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_index *ix = NULL;
	struct ts_error e = { 0 };

	if (!dir[0])
		setup();
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		__builtin_trap();
	CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
	close(fd);

	struct ts_source src = {
		.kind = TS_SRC_TAR, .path = (char *)"shard.tar", .base_dir = dir,
	};
	int rc = ts_source_open(&src, &ix, &e);
	if (rc < 0) {
		CHECK(ix == NULL && e.code == rc && e.msg[0]);
		return 0;
	}
	CHECK(ix && ix->n > 0 && ix->n == ix->n_total);
	for (size_t i = 0; i < ix->n; i++) {
		struct ts_item it;
		ts_source_item(ix, i, &it);
		CHECK(it.is_range && it.label >= 0 && (size_t)it.label < ix->n_classes);
		CHECK(it.offset <= size && it.size <= size - it.offset);
		if (i >= 4)
			continue;
		uint8_t *buf = NULL;
		size_t len = 0;
		memset(&e, 0, sizeof(e));
		CHECK(ts_source_read(&it, UINT64_MAX, &buf, &len, &e) == 0);
		CHECK(buf && len == it.size);
		CHECK(len == 0 || memcmp(buf, data + it.offset, len) == 0);
		free(buf);
	}
	ts_source_index_destroy(ix);
	return 0;
}
