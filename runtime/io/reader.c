/*
 * reader.c - asynchronous reads: io_uring linked open -> read -> close on
 * direct descriptors into registered buffers, a cache of open tar shards
 * as fixed files, and a synchronous fallback with the same interface.
 * See reader.h for the buffer and large-file design.
 */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef TS_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#endif

#include "barrier.h"
#include "util.h"

enum { OP_OPEN = 0, OP_READ = 1, OP_CLOSE = 2 };
#define UD(req, op) (((uint64_t)(req) << 2) | (uint64_t)(op))
#define SHARD_SLOTS 16u
/* The largest single read: results are ints. */
#define MAX_READ (1u << 30)

struct req {
	bool used;
	uint64_t tag;
	const char *path;
	uint64_t off;        /* item offset (0 for plain files) */
	uint64_t size;       /* range length */
	bool range;
	int buf;             /* pool buffer, or -1 once the bytes moved to heap */
	uint8_t *heap;
	size_t cap, got, want;
	int pending;         /* CQEs still to come */
	int status;
	int read_res;
	int shard;           /* shard cache slot held, or -1 */
};

struct shard_slot {
	char *path;          /* a copy (the index may go first); NULL: empty */
	unsigned refs;       /* reads in flight on it */
	uint64_t last_use;
};

/* A FIFO of request indices (capacity qd). */
struct fifo {
	unsigned *v;
	unsigned head, n, cap;
};

struct ts_reader {
	bool uring;
	uint64_t max_file;   /* bytes: larger files and ranges are -EFBIG */
	bool fixed_bufs;
	bool ring_ok;
	bool closing;
	const char *reason;
	char reason_buf[200];
	struct io_uring ring;

	unsigned qd;
	size_t buf_size;
	unsigned nbuf;
	uint8_t *pool;
	size_t pool_bytes;

	pthread_mutex_t lock;  /* guards free_bufs / n_free_bufs only */
	unsigned *free_bufs;
	unsigned n_free_bufs;

	struct req *reqs;
	unsigned *free_reqs;
	unsigned n_free_reqs;
	unsigned active;       /* requests with CQEs pending */
	struct fifo ready;     /* finished, not yet reaped */
	struct fifo queued;    /* fallback: submitted, not yet read */

	struct shard_slot shards[SHARD_SLOTS];
	uint64_t clock;
};

static void fifo_push(struct fifo *f, unsigned x)
{
	f->v[(f->head + f->n) % f->cap] = x;
	f->n++;
}

static unsigned fifo_pop(struct fifo *f)
{
	unsigned x = f->v[f->head];
	f->head = (f->head + 1) % f->cap;
	f->n--;
	return x;
}

static int take_buf(struct ts_reader *r)
{
	int b = -1;
	pthread_mutex_lock(&r->lock);
	if (r->n_free_bufs)
		b = (int)r->free_bufs[--r->n_free_bufs];
	pthread_mutex_unlock(&r->lock);
	return b;
}

static void give_buf(struct ts_reader *r, unsigned b)
{
	pthread_mutex_lock(&r->lock);
	r->free_bufs[r->n_free_bufs++] = b;
	pthread_mutex_unlock(&r->lock);
}

/* Under valgrind, bytes an io_uring read wrote are defined (a no-op
 * otherwise, or without valgrind's headers at build time). */
static void mark_defined(const void *p, size_t n)
{
#ifdef TS_HAVE_VALGRIND
	(void)VALGRIND_MAKE_MEM_DEFINED(p, n);
#else
	(void)p;
	(void)n;
#endif
}

static uint8_t *req_base(struct ts_reader *r, struct req *q)
{
	return q->buf >= 0 ? r->pool + (size_t)q->buf * r->buf_size : q->heap;
}

/* The next read of q: into the buffer after what arrived, up to the end of
 * the buffer (plain files) or of the range. */
static size_t req_next_len(const struct req *q)
{
	size_t len = q->cap - q->got;
	if (q->range && q->size - q->got < len)
		len = (size_t)(q->size - q->got);
	return len > MAX_READ ? MAX_READ : len;
}

/*
 * Move the bytes of q out of its pool buffer into a heap buffer of twice
 * the capacity (or grow the heap buffer), so a file larger than the pool
 * buffer keeps reading. The pool buffer goes back at once.
 */
static int req_grow(struct ts_reader *r, struct req *q)
{
	size_t cap = q->cap * 2;
	if (cap < q->cap)
		return -EFBIG;
	if (q->buf >= 0) {
		uint8_t *h = malloc(cap);
		if (!h)
			return TS_E_NOMEM;
		memcpy(h, req_base(r, q), q->got);
		give_buf(r, (unsigned)q->buf);
		q->buf = -1;
		q->heap = h;
	} else {
		uint8_t *h = realloc(q->heap, cap);
		if (!h)
			return TS_E_NOMEM;
		q->heap = h;
	}
	q->cap = cap;
	return 0;
}

static void req_drop_buffers(struct ts_reader *r, struct req *q)
{
	if (q->buf >= 0)
		give_buf(r, (unsigned)q->buf);
	free(q->heap);
	q->buf = -1;
	q->heap = NULL;
}

static void shard_put(struct ts_reader *r, struct req *q)
{
	if (q->shard >= 0) {
		r->shards[q->shard].refs--;
		q->shard = -1;
	}
}

/* Finished (well or not): queue q for reaping. */
static void req_ready(struct ts_reader *r, struct req *q)
{
	shard_put(r, q);
	if (q->status)
		req_drop_buffers(r, q);
	fifo_push(&r->ready, (unsigned)(q - r->reqs));
}

/* ---------------------------------------------------------------------
 * io_uring path
 */

/* An SQE, flushing the queue to the kernel when it is full. */
static struct io_uring_sqe *get_sqe(struct ts_reader *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		io_uring_submit(&r->ring);
		sqe = io_uring_get_sqe(&r->ring);
	}
	return sqe;
}

/*
 * The fixed-file slot holding shard `path`, opening and registering it when
 * absent (one blocking open per shard while it stays cached, on the reader
 * thread). Evicts the least recently used idle slot. Returns the slot, -1
 * when every slot is busy (the caller then opens per read), or -errno when
 * the shard cannot be opened.
 */
static int shard_get(struct ts_reader *r, const char *path)
{
	int victim = -1;
	for (unsigned i = 0; i < SHARD_SLOTS; i++) {
		struct shard_slot *s = &r->shards[i];
		if (s->path && strcmp(s->path, path) == 0) {
			s->refs++;
			s->last_use = ++r->clock;
			return (int)i;
		}
		if (s->refs == 0 &&
		    (victim < 0 || !s->path ||
		     (r->shards[victim].path && s->last_use < r->shards[victim].last_use)))
			victim = (int)i;
	}
	if (victim < 0)
		return -1;
	char *copy = strdup(path);
	if (!copy)
		return TS_E_NOMEM;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
		errno = ESPIPE;
	}
	if (fd < 0) {
		int e = errno;
		free(copy);
		return -e;
	}
	int rc = io_uring_register_files_update(&r->ring, r->qd + (unsigned)victim, &fd, 1);
	close(fd); /* the fixed-file table holds its own reference */
	if (rc < 0) {
		free(copy);
		return rc;
	}
	struct shard_slot *s = &r->shards[victim];
	free(s->path);
	s->path = copy;
	s->refs = 1;
	s->last_use = ++r->clock;
	return victim;
}

/* Queue the SQEs of the next read of q. */
static int uring_start(struct ts_reader *r, struct req *q)
{
	unsigned idx = (unsigned)(q - r->reqs);
	uint8_t *dst = req_base(r, q) + q->got;
	q->want = req_next_len(q);
	q->read_res = 0;
	uint64_t off = q->off + q->got;

	if (q->range && q->shard < 0) {
		int s = shard_get(r, q->path);
		if (s < -1)
			return s;
		q->shard = s;
	}
	if (q->range && q->shard >= 0) {
		struct io_uring_sqe *sqe = get_sqe(r);
		if (!sqe)
			return -EBUSY;
		unsigned fslot = r->qd + (unsigned)q->shard;
		if (q->buf >= 0 && r->fixed_bufs)
			io_uring_prep_read_fixed(sqe, (int)fslot, dst, (unsigned)q->want, off, q->buf);
		else
			io_uring_prep_read(sqe, (int)fslot, dst, (unsigned)q->want, off);
		sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, UD(idx, OP_READ));
		q->pending = 1;
		r->active++;
		return 0;
	}

	/* open -> read -> close, linked, on the direct descriptor slot idx.
	 * The read is hard-linked to the close so a short read (the normal
	 * end of a file) still closes the slot. */
	if (io_uring_sq_space_left(&r->ring) < 3)
		io_uring_submit(&r->ring);
	if (io_uring_sq_space_left(&r->ring) < 3)
		return -EBUSY;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	io_uring_prep_openat_direct(sqe, AT_FDCWD, q->path, O_RDONLY, 0, idx);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, UD(idx, OP_OPEN));

	sqe = io_uring_get_sqe(&r->ring);
	if (q->buf >= 0 && r->fixed_bufs)
		io_uring_prep_read_fixed(sqe, (int)idx, dst, (unsigned)q->want, off, q->buf);
	else
		io_uring_prep_read(sqe, (int)idx, dst, (unsigned)q->want, off);
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
	io_uring_sqe_set_data64(sqe, UD(idx, OP_READ));

	sqe = io_uring_get_sqe(&r->ring);
	io_uring_prep_close_direct(sqe, idx);
	io_uring_sqe_set_data64(sqe, UD(idx, OP_CLOSE));
	q->pending = 3;
	r->active++;
	return 0;
}

/*
 * Every CQE of q's last read is in: account the bytes and either finish q
 * or queue the next read (a file that filled its buffer, a range that came
 * short but not empty).
 */
static void uring_finish(struct ts_reader *r, struct req *q)
{
	r->active--;
	if (q->status == 0) {
		q->got += (size_t)q->read_res;
		if (q->range) {
			if (q->got == q->size)
				goto done;
			if (q->read_res == 0) {
				q->status = -EIO; /* the shard is shorter than its header said */
				goto done;
			}
		} else {
			if ((size_t)q->read_res < q->want || q->want == 0)
				goto done; /* end of file */
			if (q->got == q->cap) {
				int rc = q->got >= r->max_file ? -EFBIG : req_grow(r, q);
				if (rc) {
					q->status = rc;
					goto done;
				}
			}
		}
		if (r->closing) {
			q->status = -ECANCELED;
			goto done;
		}
		int rc = uring_start(r, q);
		if (rc == 0)
			return;
		q->status = rc;
	}
done:
	req_ready(r, q);
}

static void uring_cqe(struct ts_reader *r, const struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	struct req *q = &r->reqs[ud >> 2];
	int op = (int)(ud & 3);
	if (op == OP_OPEN && cqe->res < 0 && q->status == 0)
		q->status = cqe->res;
	if (op == OP_READ) {
		if (cqe->res < 0) {
			if (q->status == 0)
				q->status = cqe->res;
		} else {
			q->read_res = cqe->res;
			/* The kernel wrote these bytes; memcheck cannot see
			 * io_uring do it. */
			mark_defined(req_base(r, q) + q->got, (size_t)cqe->res);
		}
	}
	if (--q->pending == 0)
		uring_finish(r, q);
}

/* Process every CQE available now; returns how many. */
static unsigned uring_drain(struct ts_reader *r)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&r->ring, head, cqe) {
		uring_cqe(r, cqe);
		n++;
	}
	io_uring_cq_advance(&r->ring, n);
	return n;
}

/* ---------------------------------------------------------------------
 * fallback path: the same request life cycle with open/pread/close.
 */
static void sync_read(struct ts_reader *r, struct req *q)
{
	int fd = open(q->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		q->status = -errno;
		goto done;
	}
	for (;;) {
		if (q->range && q->got == q->size)
			break;
		if (!q->range && q->got == q->cap) {
			int rc = q->got >= r->max_file ? -EFBIG : req_grow(r, q);
			if (rc) {
				q->status = rc;
				break;
			}
		}
		size_t len = req_next_len(q);
		ssize_t n = pread(fd, req_base(r, q) + q->got, len, (off_t)(q->off + q->got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			q->status = -errno;
			break;
		}
		if (n == 0) {
			if (q->range)
				q->status = -EIO;
			break;
		}
		q->got += (size_t)n;
	}
	close(fd);
done:
	req_ready(r, q);
}

/* ---------------------------------------------------------------------
 * Fault injection: a testing aid, compiled in always and inert unless
 * TSRUN_FAULT_READ is set (see reader.h). The rules are parsed once per
 * process and the count is process-wide, so the io_uring path (which
 * rewrites completions as they are handed out) and the engine's plain
 * reads in its workers (which call ts_reader_fault) get the same faults.
 */
enum fault_kind { FAULT_EIO, FAULT_ENOENT, FAULT_SHORT };

#define MAX_FAULTS 16u

static struct {
	pthread_once_t once;
	unsigned n;
	struct {
		enum fault_kind kind;
		uint64_t n;    /* the nth completion (1-based) ... */
		bool every;    /* ... or every nth */
	} rule[MAX_FAULTS];
	uint64_t done;  /* completions seen so far (ATOMIC_ADD) */
} g_fault = { .once = PTHREAD_ONCE_INIT };

/* Parse "KIND:N[,KIND:%N...]"; a malformed entry is ignored (an unknown
 * fault must never fire by accident). */
static void fault_parse(void)
{
	const char *env = getenv("TSRUN_FAULT_READ");
	while (env && *env && g_fault.n < MAX_FAULTS) {
		size_t len = strcspn(env, ",");
		char tok[64];
		if (len < sizeof(tok)) {
			memcpy(tok, env, len);
			tok[len] = '\0';
			char *num = strchr(tok, ':');
			int kind = -1;
			if (num) {
				*num++ = '\0';
				kind = strcmp(tok, "eio") == 0 ? FAULT_EIO :
				       strcmp(tok, "enoent") == 0 ? FAULT_ENOENT :
				       strcmp(tok, "short") == 0 ? FAULT_SHORT : -1;
			}
			bool every = num && *num == '%';
			char *end = NULL;
			unsigned long long n = kind >= 0 ? strtoull(num + every, &end, 10) : 0;
			if (kind >= 0 && n > 0 && end && !*end) {
				unsigned i = g_fault.n++;
				g_fault.rule[i].kind = (enum fault_kind)kind;
				g_fault.rule[i].n = n;
				g_fault.rule[i].every = every;
			}
		}
		env += len + (env[len] == ',');
	}
}

int ts_reader_fault(bool range, int status, size_t *len)
{
	pthread_once(&g_fault.once, fault_parse);
	if (g_fault.n == 0)
		return status;
	/* each completion its own number, across reader threads */
	uint64_t k = ATOMIC_ADD(&g_fault.done, 1);
	for (unsigned i = 0; i < g_fault.n; i++) {
		if (g_fault.rule[i].every ? k % g_fault.rule[i].n != 0 : k != g_fault.rule[i].n)
			continue;
		if (status)
			return status;
		switch (g_fault.rule[i].kind) {
		case FAULT_EIO:
			return -EIO;
		case FAULT_ENOENT:
			return -ENOENT;
		case FAULT_SHORT:
			if (range)
				return -EIO; /* as a real short range read */
			*len /= 2;
			return 0;
		}
	}
	return status;
}

/* ---------------------------------------------------------------------
 * life cycle
 */

/* Set up the ring; on failure leave r in the fallback mode with a reason. */
static void uring_setup(struct ts_reader *r)
{
	const char *env = getenv("TSRUN_NO_URING");
	if (env && *env && strcmp(env, "0") != 0) {
		r->reason = "io_uring disabled by TSRUN_NO_URING: plain reads";
		return;
	}
	unsigned entries = 8;
	while (entries < r->qd * 3 && entries < 32768)
		entries *= 2;
	int rc = io_uring_queue_init(entries, &r->ring, 0);
	if (rc < 0) {
		snprintf(r->reason_buf, sizeof(r->reason_buf),
			 "io_uring unavailable (%s%s): plain reads", strerror(-rc),
			 rc == -EPERM ? ", kernel.io_uring_disabled?" : "");
		r->reason = r->reason_buf;
		return;
	}
	r->ring_ok = true;

	struct io_uring_probe *probe = io_uring_get_probe_ring(&r->ring);
	bool ops = probe && io_uring_opcode_supported(probe, IORING_OP_OPENAT) &&
		   io_uring_opcode_supported(probe, IORING_OP_READ) &&
		   io_uring_opcode_supported(probe, IORING_OP_CLOSE) &&
		   io_uring_opcode_supported(probe, IORING_OP_READ_FIXED);
	if (probe)
		io_uring_free_probe(probe);
	if (!ops) {
		r->reason = "io_uring lacks open/read/close operations: plain reads";
		goto off;
	}
	rc = io_uring_register_files_sparse(&r->ring, r->qd + SHARD_SLOTS);
	if (rc < 0) {
		snprintf(r->reason_buf, sizeof(r->reason_buf),
			 "io_uring direct descriptors unavailable (%s): plain reads",
			 strerror(-rc));
		r->reason = r->reason_buf;
		goto off;
	}
	struct iovec *iov = calloc(r->nbuf, sizeof(*iov));
	if (iov) {
		for (unsigned i = 0; i < r->nbuf; i++) {
			iov[i].iov_base = r->pool + (size_t)i * r->buf_size;
			iov[i].iov_len = r->buf_size;
		}
		rc = io_uring_register_buffers(&r->ring, iov, r->nbuf);
		free(iov);
	} else {
		rc = TS_E_NOMEM;
	}
	r->fixed_bufs = rc == 0;
	if (rc) {
		snprintf(r->reason_buf, sizeof(r->reason_buf),
			 "io_uring registered buffers unavailable (%s%s): unregistered reads",
			 ts_error_name(rc), rc == -ENOMEM ? ", RLIMIT_MEMLOCK too low?" : "");
		r->reason = r->reason_buf;
	}
	r->uring = true;
	return;
off:
	io_uring_queue_exit(&r->ring);
	r->ring_ok = false;
}

int ts_reader_create(unsigned queue_depth, size_t buf_size,
		     struct ts_reader **out, struct ts_error *err)
{
	if (queue_depth < 1 || queue_depth > 4096)
		return ts_error_set(err, TS_E_ARG,
				    "reader queue depth %u is not in 1..4096", queue_depth);
	if (buf_size == 0)
		buf_size = TS_READER_DEFAULT_BUF;
	if (buf_size > MAX_READ)
		return ts_error_set(err, TS_E_ARG, "reader buffer size %zu is too large",
				    buf_size);
	int rc = 0;
	struct ts_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	r->pool = MAP_FAILED;
	r->qd = queue_depth;
	r->buf_size = buf_size;
	r->max_file = UINT64_MAX;
	r->nbuf = queue_depth * 2;
	r->pool_bytes = (size_t)r->nbuf * buf_size;
	r->reqs = calloc(r->qd, sizeof(*r->reqs));
	r->free_reqs = calloc(r->qd, sizeof(unsigned));
	r->free_bufs = calloc(r->nbuf, sizeof(unsigned));
	r->ready.v = calloc(r->qd, sizeof(unsigned));
	r->queued.v = calloc(r->qd, sizeof(unsigned));
	if (!r->reqs || !r->free_reqs || !r->free_bufs || !r->ready.v || !r->queued.v) {
		rc = ts_error_set(err, TS_E_NOMEM, "out of memory");
		goto fail;
	}
	r->ready.cap = r->queued.cap = r->qd;
	r->pool = mmap(NULL, r->pool_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->pool == MAP_FAILED) {
		rc = ts_error_set(err, -errno, "reader buffers (%zu bytes): %s",
				  r->pool_bytes, strerror(errno));
		goto fail;
	}
	for (unsigned i = 0; i < r->qd; i++)
		r->free_reqs[i] = r->qd - 1 - i;
	r->n_free_reqs = r->qd;
	for (unsigned i = 0; i < r->nbuf; i++)
		r->free_bufs[i] = r->nbuf - 1 - i;
	r->n_free_bufs = r->nbuf;
	uring_setup(r);
	*out = r;
	return 0;
fail:
	ts_reader_destroy(r);
	return rc;
}

void ts_reader_destroy(struct ts_reader *r)
{
	if (!r)
		return;
	if (r->ring_ok) {
		/* Let every read in flight land before its buffer is freed:
		 * the kernel may still be writing to unregistered memory. */
		r->closing = true;
		while (r->active) {
			struct io_uring_cqe *cqe;
			io_uring_submit(&r->ring);
			if (io_uring_wait_cqe(&r->ring, &cqe) < 0)
				break;
			uring_drain(r);
		}
		io_uring_queue_exit(&r->ring);
	}
	if (r->reqs) {
		for (unsigned i = 0; i < r->qd; i++)
			if (r->reqs[i].used)
				free(r->reqs[i].heap);
	}
	if (r->pool != MAP_FAILED)
		munmap(r->pool, r->pool_bytes);
	for (unsigned i = 0; i < SHARD_SLOTS; i++)
		free(r->shards[i].path);
	free(r->reqs);
	free(r->free_reqs);
	free(r->free_bufs);
	free(r->ready.v);
	free(r->queued.v);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

bool ts_reader_uses_uring(const struct ts_reader *r)
{
	return r->uring;
}

const char *ts_reader_fallback_reason(const struct ts_reader *r)
{
	return r->reason;
}

unsigned ts_reader_in_flight(const struct ts_reader *r)
{
	return r->qd - r->n_free_reqs;
}

int ts_reader_submit(struct ts_reader *r, const struct ts_item *item,
		     uint64_t tag)
{
	if (!item || !item->path)
		return TS_E_ARG;
	if (r->n_free_reqs == 0)
		return -EBUSY;
	int buf = -1;
	uint8_t *heap = NULL;
	size_t cap = r->buf_size;
	if (item->is_range && item->size > r->buf_size) {
		if (item->size > SIZE_MAX)
			return -EFBIG;
		heap = malloc((size_t)item->size);
		if (!heap)
			return TS_E_NOMEM;
		cap = (size_t)item->size;
	} else {
		buf = take_buf(r);
		if (buf < 0)
			return -EBUSY;
	}
	unsigned idx = r->free_reqs[--r->n_free_reqs];
	struct req *q = &r->reqs[idx];
	memset(q, 0, sizeof(*q));
	q->used = true;
	q->tag = tag;
	q->path = item->path;
	q->range = item->is_range;
	q->off = item->is_range ? item->offset : 0;
	q->size = item->size;
	q->buf = buf;
	q->heap = heap;
	q->cap = cap;
	q->shard = -1;

	/* Only regular files within max_file: a FIFO would block the open
	 * (in the kernel's io-wq, for good), a device or a huge sparse file
	 * would be read without end. The file was a regular one when it was
	 * listed; this catches one named by a list, or swapped since. */
	struct stat st;
	if (!q->range) {
		if (stat(q->path, &st) != 0)
			q->status = -errno;
		else if (!S_ISREG(st.st_mode))
			q->status = S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
		else if ((uint64_t)st.st_size > r->max_file)
			q->status = -EFBIG;
	} else if (q->size > r->max_file) {
		q->status = -EFBIG;
	}
	if (q->status) {
		req_ready(r, q);
	} else if (q->range && q->size == 0) {
		req_ready(r, q);   /* nothing to read */
	} else if (!r->uring) {
		fifo_push(&r->queued, idx);
	} else {
		int rc = uring_start(r, q);
		if (rc) {
			q->status = rc;
			req_ready(r, q);
		}
	}
	return 0;
}

void ts_reader_set_max_file(struct ts_reader *r, uint64_t max)
{
	r->max_file = max;
}

/* Hand finished requests to the caller, freeing their slots. */
static unsigned take_ready(struct ts_reader *r, struct ts_read_done *done,
			   unsigned n, unsigned max)
{
	while (n < max && r->ready.n) {
		unsigned idx = fifo_pop(&r->ready);
		struct req *q = &r->reqs[idx];
		int st = ts_reader_fault(q->range, q->status, &q->got);
		if (st != q->status) {
			q->status = st; /* an injected fault (testing aid) */
			req_drop_buffers(r, q);
		}
		done[n].tag = q->tag;
		done[n].status = q->status;
		done[n].data = q->status ? NULL : req_base(r, q);
		done[n].len = q->status ? 0 : q->got;
		n++;
		q->used = false;
		q->heap = NULL; /* now owned by the caller until release */
		r->free_reqs[r->n_free_reqs++] = idx;
	}
	return n;
}

int ts_reader_reap(struct ts_reader *r, struct ts_read_done *done,
		   unsigned max, int timeout_ms)
{
	unsigned n = take_ready(r, done, 0, max);
	if (!r->uring) {
		/* Fallback: perform queued reads here, one per slot asked. */
		while (n < max && r->queued.n) {
			sync_read(r, &r->reqs[fifo_pop(&r->queued)]);
			n = take_ready(r, done, n, max);
		}
		return (int)n;
	}
	int64_t deadline = timeout_ms > 0 ? ts_clock_ms() + timeout_ms : 0;
	while (n < max) {
		if (io_uring_sq_ready(&r->ring)) {
			int rc = io_uring_submit(&r->ring);
			if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)
				return n ? (int)n : rc;
		}
		if (uring_drain(r)) {
			n = take_ready(r, done, n, max);
			continue;
		}
		if (n > 0 || r->active == 0 || timeout_ms == 0)
			break;
		struct io_uring_cqe *cqe;
		int rc;
		if (timeout_ms < 0) {
			rc = io_uring_wait_cqe(&r->ring, &cqe);
		} else {
			int64_t left = deadline - ts_clock_ms();
			if (left <= 0)
				break;
			struct __kernel_timespec ts = {
				.tv_sec = left / 1000,
				.tv_nsec = (left % 1000) * 1000000,
			};
			rc = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
		}
		if (rc == -ETIME)
			break;
		if (rc < 0 && rc != -EINTR)
			return rc;
	}
	return (int)n;
}

void ts_reader_release(struct ts_reader *r, uint8_t *data)
{
	if (!data)
		return;
	if (data >= r->pool && data < r->pool + r->pool_bytes) {
		give_buf(r, (unsigned)((size_t)(data - r->pool) / r->buf_size));
		return;
	}
	free(data);
}
