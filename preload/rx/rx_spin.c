// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_spin.c - a blocking receive looks before it sleeps (rx_spin.h). */
#include "rx_spin.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <sys/socket.h>

#include "base/libc.h"
#include "base/signals.h"
#include "base/spin.h"
#include "common/clock.h"
#include "kernel/maps.h"

bool fl_rx_spin(int fd, int flags, fl_rx_try_fn try_fn, const void *call, struct fl_retry *r,
		ssize_t *n)
{
	int64_t until;
	bool empty = false;
	int saved = errno;

	if ((flags & MSG_DONTWAIT) || !fl_spin_may())
		return false;
	for (;;) {
		*n = try_fn(fd, call);
		if (*n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			if (empty) {
				fl_spin_paid();
				fl_ustat_add(FL_USTAT_SPIN_FOUND, 1);
			}
			return true;
		}
		if (!empty) {
			int fl = libc_fcntl(fd, F_GETFL, NULL);

			if (fl < 0 || (fl & O_NONBLOCK))
				return true; /* EAGAIN: the application's own answer */
			empty = true;
			fl_ustat_add(FL_USTAT_SPIN_LOOKS, 1);
			/* The clock only now: a read with bytes there never
			 * asks it. */
			until = fl_spin_until(fl_clock_ns(CLOCK_MONOTONIC));
		}
		if (fl_sig_runs() != r->sigs) {
			/* A handler ran: EINTR, or on with SA_RESTART. (An
			 * SO_RCVTIMEO is left to the sleep: the kernel times
			 * its own call, spin_usec late at most.) */
			errno = EAGAIN;
			if (!fl_rx_retry_eagain(fd, flags, r))
				return true;
		}
		if (fl_clock_ns(CLOCK_MONOTONIC) >= until)
			break;
		fl_spin_relax();
	}
	fl_spin_missed();
	errno = saved;
	return false;
}
