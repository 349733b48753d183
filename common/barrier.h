/*
 * barrier.h - shared-memory ordering: one set of primitives for every
 * field another thread or process writes (the ring header and ctl pages,
 * the device ring, the engine's and the server's flags), after liburing's
 * barrier.h and the kernel's names. Every use says in a comment what it
 * orders, and names its partner for a Dekker pair.
 */
#ifndef TS_BARRIER_H
#define TS_BARRIER_H

#include <stdbool.h>
#include <stdint.h>

/*
 *   smp_load_acquire / smp_store_release: the classic publish pair.
 *   READ_ONCE / WRITE_ONCE: a single untorn access, no ordering.
 *   smp_mb: a full fence, for the store-then-load (Dekker) handshakes of
 *   the sleep flags.
 */
#define smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define smp_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
/* Fences for a seqlock: smp_wmb orders the writer's stores before it
 * against its stores after it (the odd sequence before the fields);
 * smp_rmb the reader's loads before it against its loads after it (the
 * fields before the second look at the sequence). Compiler barriers
 * only on x86. */
#define smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
/* A store followed by a full fence: the store side of a Dekker pair. */
#define smp_store_mb(x, v) \
	do { WRITE_ONCE(x, v); smp_mb(); } while (0)
/* Read-modify-writes: full barriers (seq_cst) on every architecture. */
#define ATOMIC_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define ATOMIC_SUB(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_SEQ_CST)
#define ATOMIC_XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
/* *p = v if *p == *expected (true), else *expected = *p (false). */
#define ATOMIC_CMPXCHG(p, expected, v) \
	__atomic_compare_exchange_n((p), (expected), (v), false, __ATOMIC_SEQ_CST, \
				    __ATOMIC_SEQ_CST)
/* A statistic's add: untorn, no ordering (read after the adders are
 * joined, or as a rough figure while they run). */
#define ATOMIC_ADD_RELAXED(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

/* The 64-bit words other processes read (head, release) must be single
 * untorn accesses, not a libatomic lock that lives in one process. */
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0),
	       "the ring needs lock-free 64-bit atomics");

/* A spin-wait's pause: lets the sibling hyperthread run. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

#endif
