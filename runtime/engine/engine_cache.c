/*
 * engine_cache.c - the decoded cache (serve setting cache = SIZE): the
 * decoded pixels of a fixed subset of the data set's items, kept for the
 * engine's life, so that later epochs skip their read and decode. An item
 * is admitted the first time a worker decodes it, while the arena has room
 * for it, and is never evicted (CoorDL's MinIO policy: with epochs in a
 * random order, a fixed subset hits as often as any replacement policy
 * could, and costs no bookkeeping on the hot path).
 *
 * What an entry holds (engine_load.c decides, per item):
 *   - a frame (resume 0): the decode of the whole image at one DCT scale,
 *     before the op fused into the decode, when that op draws (a random
 *     crop): a request the decoder serves at that scale is then the
 *     frame's window, pixel for pixel (decode.h, Exactness: a region at
 *     scale n/8 is the whole image's n/8 decode cropped), and one it
 *     serves at another reads and decodes the file. The scale is the one
 *     most of the item's requests get (16 draws of the op's box for its
 *     size at admission): full scale for a 224 crop of a 500 x 375 photo,
 *     4/8 for a 96 crop of it;
 *   - an image (resume k > 0): what the sample is before ops[k], when
 *     nothing before it drew (a fixed resize or crop fused into the
 *     decode, and the ops after it that drew nothing for this item): it
 *     is the same in every epoch, so ops[k..] run from it.
 *
 * Memory: one anonymous private mapping of the whole size, the entry
 * table at its start (TS_CACHE_ENTRY_BYTES per item of the data set) and
 * the pixels after it, handed out by an atomic bump, 64-byte aligned.
 * Pages are faulted in as entries are written (the process's RSS grows
 * with what the cache holds, up to its size, which the plan's memory
 * figure counts in full) and locked as they are faulted (mlock2 with
 * MLOCK_ONFAULT), so they are never swapped out: a cached epoch never
 * waits on the swap device, and the memory comes back only when the run
 * ends. Where locking is refused (RLIMIT_MEMLOCK without CAP_IPC_LOCK),
 * the cache works unlocked and says so (ts_engine_stats.cache_locked).
 * MADV_DONTDUMP keeps it out of core dumps.
 *
 * Concurrency: an entry goes EMPTY -> FILLING (one worker wins the
 * compare-and-swap) -> READY (its fields and pixels written before the
 * release store) or NONE (did not fit) or back to EMPTY (its read or
 * decode failed). READY entries are never written again, so readers take
 * no lock. A frame is decoded straight into its entry: the worker
 * reserves the bytes (ts_engine_cache_reserve), the decoder writes them,
 * and it commits the entry (or drops it when the decode fails), so an
 * admission costs no copy of the frame.
 */
#include "engine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "barrier.h"
#include "util.h"

enum { CACHE_EMPTY, CACHE_FILLING, CACHE_READY, CACHE_NONE };

#define ALIGN 64u

struct ts_engine_cache {
	uint8_t *base;
	size_t size;              /* of the mapping */
	struct ts_cache_entry *ent;
	uint64_t n_ent;
	uint64_t data_off;        /* the first pixel byte */
	uint64_t used;            /* bump pointer (from base): ATOMIC_CMPXCHG */
	uint64_t items, hits, misses, bypass; /* counts: ATOMIC_ADD_RELAXED */
	bool locked;
};

bool ts_engine_cache_applies(const struct ts_plan *plan)
{
	return ts_source_kind_encoded(plan->source.kind) && !ts_engine_banded(plan);
}

int ts_engine_cache_create(uint64_t bytes, uint64_t items,
			   struct ts_engine_cache **out, struct ts_error *err)
{
	uint64_t table = ts_round_up(items * sizeof(struct ts_cache_entry), ALIGN);
	if (bytes < table + ALIGN)
		return ts_error_set(err, TS_E_ARG,
				    "a cache of %llu bytes does not hold even its table of %llu "
				    "items (%zu bytes each); give it at least %llu MiB, or cache = 0",
				    (unsigned long long)bytes, (unsigned long long)items,
				    sizeof(struct ts_cache_entry),
				    (unsigned long long)(table >> 20) + 2);
	if (bytes > SIZE_MAX)
		return ts_error_set(err, TS_E_ARG, "cache size too large for this machine");
	struct ts_engine_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return ts_error_set(err, TS_E_NOMEM, "out of memory");
	void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		free(c);
		return ts_error_set(err, TS_E_NOMEM, "cannot map the decoded cache of %llu MiB: "
				    "%s; use a smaller cache", (unsigned long long)(bytes >> 20),
				    strerror(e));
	}
	c->base = p;
	c->size = (size_t)bytes;
	c->ent = p;
	c->n_ent = items;
	c->data_off = table;
	c->used = table;
	(void)madvise(p, c->size, MADV_DONTDUMP);
#ifdef MADV_HUGEPAGE
	(void)madvise(p, c->size, MADV_HUGEPAGE); /* fewer TLB misses; a hint */
#endif
#ifdef MLOCK_ONFAULT
	c->locked = getenv("TSRUN_CACHE_NOLOCK") == NULL && /* a testing hook */
		    mlock2(p, c->size, MLOCK_ONFAULT) == 0;
#endif
	*out = c;
	return 0;
}

void ts_engine_cache_destroy(struct ts_engine_cache *c)
{
	if (!c)
		return;
	munmap(c->base, c->size);
	free(c);
}

const struct ts_cache_entry *ts_engine_cache_get(const struct ts_engine_cache *c,
						 uint32_t id)
{
	if (!c || id >= c->n_ent)
		return NULL;
	const struct ts_cache_entry *en = &c->ent[id];
	/* acquire: pairs with the filler's release; its fields and pixels
	 * are written before it */
	return smp_load_acquire(&en->state) == CACHE_READY ? en : NULL;
}

bool ts_engine_cache_claim(struct ts_engine_cache *c, uint32_t id)
{
	if (!c || id >= c->n_ent)
		return false;
	uint8_t expect = CACHE_EMPTY;
	return ATOMIC_CMPXCHG(&c->ent[id].state, &expect, (uint8_t)CACHE_FILLING);
}

void ts_engine_cache_abandon(struct ts_engine_cache *c, uint32_t id)
{
	/* release: nothing was written; another worker may claim it again */
	smp_store_release(&c->ent[id].state, (uint8_t)CACHE_EMPTY);
}

/* Bytes from the bump pointer for n, or UINT64_MAX when they do not fit
 * (the arena is never compacted: an item too large for what is left is
 * not cached, smaller ones after it still may be). */
static uint64_t reserve(struct ts_engine_cache *c, uint64_t n)
{
	uint64_t cur = READ_ONCE(c->used);
	for (;;) {
		uint64_t next = cur + ts_round_up(n, ALIGN);
		if (next < cur || next > c->size)
			return UINT64_MAX;
		if (ATOMIC_CMPXCHG(&c->used, &cur, next))
			return cur;
	}
}

uint8_t *ts_engine_cache_reserve(struct ts_engine_cache *c, uint32_t id, uint64_t n)
{
	struct ts_cache_entry *en = &c->ent[id];
	uint64_t off = n ? reserve(c, n) : UINT64_MAX;
	if (off == UINT64_MAX) {
		/* release: a final state, never claimed again */
		smp_store_release(&en->state, (uint8_t)CACHE_NONE);
		return NULL;
	}
	en->off = off; /* the entry is FILLING: no reader looks at it */
	return c->base + off;
}

void ts_engine_cache_commit(struct ts_engine_cache *c, uint32_t id, const struct ts_image *img,
			    int resume, const struct ts_cache_frame *fr)
{
	struct ts_cache_entry *en = &c->ent[id];
	en->width = (uint32_t)img->width;
	en->height = (uint32_t)img->height;
	en->resume = (uint16_t)resume;
	en->channels = (uint8_t)img->channels;
	en->dtype = (uint8_t)img->dtype;
	en->format = fr ? (uint8_t)fr->format : 0;
	en->scale = fr ? (uint8_t)fr->scale : 8;
	en->full_w = fr ? (uint16_t)fr->full_w : 0;
	en->full_h = fr ? (uint16_t)fr->full_h : 0;
	ATOMIC_ADD_RELAXED(&c->items, 1);
	/* release: the fields and pixels (written by the caller into the
	 * reservation) are written when a reader sees READY */
	smp_store_release(&en->state, (uint8_t)CACHE_READY);
}

void ts_engine_cache_drop(struct ts_engine_cache *c, uint32_t id, uint64_t n)
{
	struct ts_cache_entry *en = &c->ent[id];
	/* The bytes go back when nothing was reserved after them; else they
	 * stay unused (the arena is never compacted) and the entry is final,
	 * so a file that fails to decode every epoch wastes them only once. */
	uint64_t end = en->off + ts_round_up(n, ALIGN);
	bool back = ATOMIC_CMPXCHG(&c->used, &end, en->off);
	/* release: a final state, or one another worker may claim again */
	smp_store_release(&en->state, (uint8_t)(back ? CACHE_EMPTY : CACHE_NONE));
}

bool ts_engine_cache_put(struct ts_engine_cache *c, uint32_t id, const struct ts_image *img,
			 int resume, const struct ts_cache_frame *fr)
{
	size_t row = (size_t)img->width * (size_t)img->channels * ts_dtype_size(img->dtype);
	uint8_t *dst = ts_engine_cache_reserve(c, id, (uint64_t)row * (uint64_t)img->height);
	if (!dst)
		return false;
	for (int y = 0; y < img->height; y++)
		memcpy(dst + (size_t)y * row, img->data + (size_t)y * img->stride, row);
	struct ts_image held = *img;
	held.stride = row;
	ts_engine_cache_commit(c, id, &held, resume, fr);
	return true;
}

struct ts_image ts_engine_cache_image(const struct ts_engine_cache *c,
				      const struct ts_cache_entry *en)
{
	size_t row = (size_t)en->width * en->channels * ts_dtype_size((enum ts_dtype)en->dtype);
	return (struct ts_image){
		.width = (int)en->width, .height = (int)en->height, .channels = en->channels,
		.dtype = (enum ts_dtype)en->dtype, .stride = row,
		.data = c->base + en->off, .capacity = 0,
	};
}

void ts_engine_cache_count(struct ts_engine_cache *c, int what)
{
	if (!c)
		return;
	ATOMIC_ADD_RELAXED(what == TS_CACHE_HIT ? &c->hits
			   : what == TS_CACHE_MISS ? &c->misses : &c->bypass, 1);
}

void ts_engine_cache_stats(const struct ts_engine_cache *c, struct ts_engine_stats *st)
{
	if (!c)
		return;
	st->cache_bytes = c->size;
	st->cache_used = READ_ONCE(c->used) - c->data_off; /* stats: untorn */
	st->cache_items = READ_ONCE(c->items);
	st->cache_hits = READ_ONCE(c->hits);
	st->cache_misses = READ_ONCE(c->misses);
	st->cache_bypass = READ_ONCE(c->bypass);
	st->cache_locked = c->locked;
}
