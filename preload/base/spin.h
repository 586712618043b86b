/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * spin.h - looking for work a little while before sleeping
 * (FASTLOCAL_SPIN_USEC, docs/delivery.md "Waiting without sleeping").
 *
 * IMPORTANT: on a redirected connection the answer to a request comes back
 * in microseconds, and most of a round trip is then the two sleeps and
 * wakeups of the threads waiting for it: on these virtual machines an idle
 * vCPU halts, and its wakeup alone costs tens of microseconds. So a wait
 * the shim sees (epoll_wait, a blocking receive of an enrolled socket)
 * first asks again and again, for up to spin_usec, and sleeps only if
 * nothing came. What keeps that from costing what it saves:
 *  - only when the process may run on two CPUs or more (a peer that needs
 *    this very CPU to answer would wait for the look to end: on one CPU
 *    fl-bench rr ran at 0.28x with a look);
 *  - only while looks pay: FL_SPIN_MISSES looks in a row that find nothing
 *    make this thread sleep at once for its next FL_SPIN_SKIP waits (an
 *    idle loop spends at most 8 x 20 us in every 72 waits, each of which
 *    sleeps anyway); a look that finds something starts the count over. (A
 *    thread that stopped looking after each miss made its peer miss too,
 *    and both fell back to sleeping: rr at 12.8k/s.)
 * The callers see to signals: a handler that runs during the look ends
 * the wait as it would have ended the sleep.
 */
#ifndef FL_SPIN_H
#define FL_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* May this thread look before this wait? Asks no precise clock (on the
 * receive path it is asked before every blocking read). Counts a skipped
 * wait. */
bool fl_spin_may(void);

/* A look allowed by fl_spin_may starts at t0 (CLOCK_MONOTONIC ns): when it
 * is to stop. */
int64_t fl_spin_until(int64_t t0);

/* The look found nothing by *until / found something after a miss. */
void fl_spin_missed(void);
void fl_spin_paid(void);

/* Between two looks: lets the other hyperthread run. */
static inline void fl_spin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif /* FL_SPIN_H */
