// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * wait_spin.c - epoll_wait() that looks for events a little while before
 * it sleeps (base/spin.h says why and when; docs/delivery.md "Waiting
 * without sleeping").
 *
 * Only while the process holds an enrolled socket (fl_sock_any): a program
 * with none, or whose connections are not local, never looks. A signal
 * handler that runs during the look ends the call with EINTR, as it would
 * have ended the sleep (epoll_wait is never restarted). The application's
 * timeout still counts from the call; a sigmask (epoll_pwait) or a
 * timespec (epoll_pwait2) is the kernel's alone, so those calls never look
 * first.
 */
#include "calls.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/epoll.h>

#include "base/libc.h"
#include "base/signals.h"
#include "base/spin.h"
#include "common/clock.h"
#include "socket/sock.h"

int fl_epoll_wait_spin(int epfd, struct epoll_event *ev, int max, int timeout)
{
	/* First: a handler that runs from here on ends the call (one that
	 * ran before it is the application's own race, as without the shim). */
	const unsigned runs = fl_sig_runs();
	int64_t t0, until, now;
	bool empty = false;
	int r, saved = errno;

	fl_before_wait();
	if (!timeout || !fl_sock_any() || !fl_spin_start(&until))
		return libc_epoll_wait(epfd, ev, max, timeout);
	t0 = fl_clock_ns(CLOCK_MONOTONIC);
	for (;;) {
		r = libc_epoll_wait(epfd, ev, max, 0);
		if (r != 0) {
			if (r > 0 && empty)
				fl_spin_paid();
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
	fl_spin_missed();
	errno = saved;
	if (timeout > 0) {
		int64_t spent_ms = (now - t0) / 1000000;

		if (spent_ms >= timeout)
			return 0;
		timeout -= (int)spent_ms;
	}
	return libc_epoll_wait(epfd, ev, max, timeout);
}
