// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_retry.c - a spurious EAGAIN of a blocking receive is repeated (rx_retry.h). */
#include "rx_retry.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "base/config.h"
#include "common/clock.h"
#include "base/libc.h"
#include "base/signals.h"

/*
 * IMPORTANT: every enrolled read starts a retry state, so its clock must be
 * cheap: the coarse clock is a plain load in the vDSO, where the precise one
 * reads the (paravirtual) TSC, 1% of a pinned 64 B round trip. It is only
 * compared against SO_RCVTIMEO after a spurious EAGAIN, and the kernel times
 * each wait itself; a tick of error there only decides whether to wait once
 * more.
 */
void fl_rx_retry_init(struct fl_retry *r)
{
	r->started = true;
	r->start = fl_clock_s(CLOCK_MONOTONIC_COARSE);
	r->sigs = fl_sig_runs();
}

bool fl_rx_retry_eagain(int fd, int flags, struct fl_retry *r)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);
	int fl, saved = errno;
	double timeo;

	if (!fl_compat_on() || (flags & MSG_DONTWAIT))
		return false;
	fl = libc_fcntl(fd, F_GETFL, NULL);
	if (fl < 0 || (fl & O_NONBLOCK))
		goto no;
	if (!r->started)
		fl_rx_retry_init(r); /* late: a handler that ran in the first call is missed */
	if (libc_getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len))
		tv.tv_sec = tv.tv_usec = 0;
	if (fl_sig_runs() != r->sigs) {
		/* A handler ran: TCP would have returned EINTR, or restarted the
		 * call if the handler has SA_RESTART - but never a call with a
		 * receive timeout set (sock_intr_errno(), signal(7)). */
		r->sigs = fl_sig_runs();
		if (fl_sig_ends_socket_wait(tv.tv_sec || tv.tv_usec)) {
			errno = EINTR;
			return false;
		}
	}
	if (tv.tv_sec || tv.tv_usec) {
		timeo = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
		if (fl_clock_s(CLOCK_MONOTONIC_COARSE) - r->start >= timeo)
			goto no; /* the receive timeout did expire: EAGAIN is right */
	}
	errno = saved;
	return true;
no:
	errno = saved;
	return false;
}
