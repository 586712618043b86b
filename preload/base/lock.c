// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lock.c - the slow half of lock.h: sleeping and waking. */
#include "lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The lock was seen held (seen: 1 or 2): mark it contended and sleep
 * until it is given back, then take it as contended (another may sleep
 * still; the unlock that finds 2 wakes one). */
void fl_lock_wait(struct fl_lock *l, uint32_t seen)
{
	int saved = errno;

	if (seen != 2)
		seen = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
	while (seen) {
		/* EINTR, EAGAIN (no longer 2): look again. */
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		seen = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
	}
	errno = saved;
}

void fl_lock_wake(struct fl_lock *l)
{
	int saved = errno;

	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}
