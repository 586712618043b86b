// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* throttle.c - a blocking writer waits for a reader that is a budget behind. */
#include "throttle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <time.h>
#include <sys/socket.h>

#include "libc.h"
#include "maps.h"
#include "slot.h"

#define FL_THROTTLE_MAX_NS (200 * 1000000LL) /* then let the verdict choose TCP */

static int64_t fl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * True if fd still names the socket that owns the slot. An fd can be closed
 * behind the shim's back (glibc's internal close of a FILE, a raw system
 * call) and its number reused. Costs a system call, so asked only before
 * sleeping.
 */
static bool fl_still_ours(int fd, uint32_t slot)
{
	struct fl_slot *s = fl_slot_at(slot);
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	return s && !getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) &&
	       cookie == __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
}

int fl_throttle(int fd, uint32_t slot, size_t len, int flags)
{
	uint32_t budget;
	bool redirecting;
	uint64_t unread, target;
	struct timespec pause = { 0, 20000 };
	int64_t deadline;
	int saved, r = 0;

	if (!len || (flags & MSG_DONTWAIT))
		return 0;
	unread = fl_slot_peer_unread(slot, &budget, &redirecting);
	if (!redirecting || !unread || unread + len <= budget)
		return 0;
	saved = errno;
	if (libc_fcntl(fd, F_GETFL, NULL) & O_NONBLOCK)
		goto out; /* the application wants EAGAIN, not a wait */
	if (!fl_still_ours(fd, slot)) {
		r = -1;
		goto out;
	}
	/* Hysteresis: wait until half the budget is free (or all of it for a
	 * write larger than half), so that writers wait rarely, not per write. */
	target = len <= budget / 2 ? budget / 2 : len < budget ? budget - len : 0;
	fl_ustat_add(FL_USTAT_THROTTLED, 1);
	deadline = fl_mono_ns() + FL_THROTTLE_MAX_NS;
	while (unread > target && redirecting) {
		/* A signal ends the wait: the kernel call then behaves as TCP would. */
		if (nanosleep(&pause, NULL) || fl_mono_ns() > deadline)
			break;
		if (pause.tv_nsec < 1000000)
			pause.tv_nsec *= 2;
		unread = fl_slot_peer_unread(slot, &budget, &redirecting);
	}
out:
	errno = saved;
	return r;
}
