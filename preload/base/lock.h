/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lock.h - a plain mutual-exclusion lock for the send buffer, cheaper than
 * pthread_mutex_t on the path every small write takes.
 *
 * IMPORTANT: every buffered write takes its buffer's lock once. glibc's
 * pthread_mutex_lock and unlock cost 57 instructions together (callgrind,
 * 64 B writes), and a stream of small writes is bound by the instructions
 * of each write: this lock costs one compare-and-swap to take and one
 * exchange to give back when nobody waits. It is the classic three-state
 * futex mutex (0 free, 1 taken, 2 taken with waiters; U. Drepper,
 * "Futexes Are Tricky", mutex 2). Not recursive, no owner, no condition
 * variable; it needs no destruction.
 */
#ifndef FL_LOCK_H
#define FL_LOCK_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

struct fl_lock {
	uint32_t v; /* 0 free, 1 taken, 2 taken and someone may sleep on it */
};

void fl_lock_wait(struct fl_lock *l, uint32_t seen);
void fl_lock_wake(struct fl_lock *l);

static inline void fl_lock_init(struct fl_lock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

static inline void fl_lock(struct fl_lock *l)
{
	uint32_t c = 0;

	if (!__atomic_compare_exchange_n(&l->v, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		fl_lock_wait(l, c);
}

/* 0 if taken, EBUSY if someone holds it (pthread_mutex_trylock's answer). */
static inline int fl_lock_try(struct fl_lock *l)
{
	uint32_t c = 0;

	return __atomic_compare_exchange_n(&l->v, &c, 1, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED) ? 0 : EBUSY;
}

static inline void fl_unlock(struct fl_lock *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		fl_lock_wake(l);
}

#endif
