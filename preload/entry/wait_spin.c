// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * wait_spin.c - epoll_wait() and poll() that look for events a little
 * while before they sleep (base/spin.h says why and when; docs/delivery.md
 * "Waiting without sleeping").
 *
 * Only while the process holds an enrolled socket (fl_sock_any): a program
 * with none, or whose connections are not local, never looks. A signal
 * handler that runs during the look ends the call with EINTR, as it would
 * have ended the sleep (epoll_wait and poll are never restarted). The
 * application's timeout still counts from the call; a sigmask (epoll_pwait,
 * ppoll) or a timespec (epoll_pwait2, ppoll) is the kernel's alone, so
 * those calls never look first; nor does select (its timeval is updated
 * in place, and its fd sets rewritten by each look).
 */
#include "calls.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <poll.h>
#include <sys/epoll.h>

#include "base/libc.h"
#include "base/signals.h"
#include "base/spin.h"
#include "common/clock.h"
#include "kernel/maps.h"
#include "socket/sock.h"

/* One wait of the application's call with the given timeout. */
typedef int (*fl_wait_fn)(const void *call, int timeout);

/* The look, then the sleep (with what is left of the timeout). */
static int fl_wait_spin(fl_wait_fn wait, const void *call, int timeout)
{
	/* First: a handler that runs from here on ends the call (one that
	 * ran before it is the application's own race, as without the shim). */
	const unsigned runs = fl_sig_runs();
	int64_t t0, until, now;
	bool empty = false;
	int r, saved = errno;

	fl_before_wait();
	if (!timeout || !fl_sock_any() || !fl_spin_may())
		return wait(call, timeout);
	t0 = fl_clock_ns(CLOCK_MONOTONIC);
	until = fl_spin_until(t0);
	for (;;) {
		r = wait(call, 0);
		if (r != 0) {
			if (r > 0 && empty) {
				fl_spin_paid();
				fl_ustat_add(FL_USTAT_SPIN_FOUND, 1);
			}
			return r;
		}
		if (!empty)
			fl_ustat_add(FL_USTAT_SPIN_LOOKS, 1);
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
	return wait(call, timeout);
}

struct fl_epoll_call {
	int epfd;
	struct epoll_event *ev;
	int max;
};

static int fl_epoll_once(const void *call, int timeout)
{
	const struct fl_epoll_call *c = call;

	return libc_epoll_wait(c->epfd, c->ev, c->max, timeout);
}

int fl_epoll_wait_spin(int epfd, struct epoll_event *ev, int max, int timeout)
{
	const struct fl_epoll_call c = { epfd, ev, max };

	return fl_wait_spin(fl_epoll_once, &c, timeout);
}

struct fl_poll_call {
	struct pollfd *fds;
	nfds_t nfds;
	bool chk;      /* __poll_chk, with ... */
	size_t fdslen; /* ... its buffer's size */
};

static int fl_poll_once(const void *call, int timeout)
{
	const struct fl_poll_call *c = call;

	return c->chk ? libc___poll_chk(c->fds, c->nfds, timeout, c->fdslen) :
			libc_poll(c->fds, c->nfds, timeout);
}

int fl_poll_spin(struct pollfd *fds, nfds_t nfds, int timeout, bool chk, size_t fdslen)
{
	const struct fl_poll_call c = { fds, nfds, chk, fdslen };

	return fl_wait_spin(fl_poll_once, &c, timeout);
}
