// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * wait_spin.c - epoll_wait() that looks for events a little while before
 * it sleeps (FASTLOCAL_SPIN_USEC, docs/delivery.md "Waiting without
 * sleeping").
 *
 * IMPORTANT: on a redirected connection the answer to a request comes back
 * in microseconds, and most of a round trip is then the two sleeps and
 * wakeups of the event loops waiting for it: on these virtual machines an
 * idle vCPU halts, and its wakeup alone costs tens of microseconds
 * (fl-bench rr with one connection: 10.8k transactions/s, 93 us each;
 * with a 20 us look before sleeping, 70k/s). So epoll_wait() first asks the
 * kernel without a timeout, again and again, for up to spin_usec, and
 * sleeps only if nothing came. Three things keep that from costing what
 * it saves:
 *  - only while the process holds an enrolled socket (fl_sock_any): a
 *    program with none, or whose connections are not local, never looks;
 *  - only when the process may run on two CPUs or more (a peer that needs
 *    this very CPU to answer would wait for the look to end: on one CPU
 *    the same rr ran at 0.28x);
 *  - only while looks pay: FL_SPIN_MISSES looks in a row that find nothing
 *    make this thread sleep at once for its next FL_SPIN_SKIP waits (an
 *    idle loop spends at most 8 x 20 us in every 72 waits, each of which
 *    sleeps anyway); a look that finds events starts the count over. (A
 *    thread that stopped looking after each miss made its peer miss too,
 *    and both fell back to sleeping: rr at 12.8k/s.)
 *  - a signal handler that runs during the look ends the call with EINTR,
 *    as it would have ended the sleep (epoll_wait is never restarted).
 * The application's timeout still counts from the call; a sigmask
 * (epoll_pwait) or a timespec (epoll_pwait2) is the kernel's alone, so
 * those calls never look first.
 */
#include "calls.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/epoll.h>

#include "base/config.h"
#include "base/libc.h"
#include "base/signals.h"
#include "common/clock.h"
#include "socket/sock.h"

#define FL_SPIN_MISSES 8 /* looks in a row that found nothing ... */
#define FL_SPIN_SKIP 64  /* ... make the thread sleep at once for this many waits */
#define FL_SPIN_CPUS_EVERY_NS 1000000000LL /* affinity looked at again after a second */

/* Each thread's own (initial-exec TLS: no allocation, no lock): looks to
 * skip before the next one, and how many the next failure skips. */
static __thread unsigned fl_spin_skip __attribute__((tls_model("initial-exec")));
static __thread unsigned fl_spin_misses __attribute__((tls_model("initial-exec")));

/* The process's: whether it may run on two CPUs or more, and when that was
 * last asked. Any thread may refresh them (atomics; a race only asks
 * twice). */
static int fl_spin_cpus_ok;
static int64_t fl_spin_cpus_at;

static bool fl_spin_cpus(int64_t now)
{
	if (now - __atomic_load_n(&fl_spin_cpus_at, __ATOMIC_RELAXED) >= FL_SPIN_CPUS_EVERY_NS) {
		cpu_set_t set;
		int ok = !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) >= 2;

		__atomic_store_n(&fl_spin_cpus_ok, ok, __ATOMIC_RELAXED);
		__atomic_store_n(&fl_spin_cpus_at, now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&fl_spin_cpus_ok, __ATOMIC_RELAXED);
}

static inline void fl_spin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The look found nothing: after FL_SPIN_MISSES such looks in a row, skip
 * the next FL_SPIN_SKIP waits. */
static void fl_spin_failed(void)
{
	if (++fl_spin_misses < FL_SPIN_MISSES)
		return;
	fl_spin_misses = 0;
	fl_spin_skip = FL_SPIN_SKIP;
}

int fl_epoll_wait_spin(int epfd, struct epoll_event *ev, int max, int timeout)
{
	/* First: a handler that runs from here on ends the call (one that
	 * ran before it is the application's own race, as without the shim). */
	const unsigned runs = fl_sig_runs();
	const unsigned usec = fl_config()->spin_usec;
	int64_t t0, until, now;
	bool empty = false;
	int r, saved = errno;

	fl_before_wait();
	if (!timeout || !usec || !fl_sock_any())
		return libc_epoll_wait(epfd, ev, max, timeout);
	if (fl_spin_skip) {
		fl_spin_skip--;
		return libc_epoll_wait(epfd, ev, max, timeout);
	}
	t0 = fl_clock_ns(CLOCK_MONOTONIC);
	if (!fl_spin_cpus(t0))
		return libc_epoll_wait(epfd, ev, max, timeout);
	until = t0 + (int64_t)usec * 1000;
	for (;;) {
		r = libc_epoll_wait(epfd, ev, max, 0);
		if (r != 0) {
			if (r > 0 && empty)
				fl_spin_misses = 0; /* the look paid */
			return r;
		}
		empty = true;
		if (fl_sig_runs() != runs) {
			errno = EINTR; /* a handler ran: the sleep would have ended */
			return -1;
		}
		now = fl_clock_ns(CLOCK_MONOTONIC);
		if (now >= until)
			break;
		fl_spin_relax();
	}
	fl_spin_failed();
	errno = saved;
	if (timeout > 0) {
		int64_t spent_ms = (now - t0) / 1000000;

		if (spent_ms >= timeout)
			return 0;
		timeout -= (int)spent_ms;
	}
	return libc_epoll_wait(epfd, ev, max, timeout);
}
