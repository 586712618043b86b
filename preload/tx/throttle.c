// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* throttle.c - a blocking writer waits for a reader that is a budget behind. */
#include "throttle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "common/clock.h"
#include "base/config.h"
#include "base/libc.h"
#include "base/signals.h"
#include "kernel/maps.h"
#include "kernel/slot.h"

#define FL_THROTTLE_MAX_NS (200 * 1000000LL) /* then let the verdict choose TCP */

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

	return s && !libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) &&
	       cookie == __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
}

/*
 * A handler ran while the shim held the write: true if it ends the write
 * as it ends TCP's wait for room (fl_sig_ends_socket_wait); else TCP
 * restarts its call, and the shim goes on. (Off with the TCP
 * compatibility fixes: then the write goes on to the kernel, as before.)
 * SO_SNDTIMEO is asked only when the handler had SA_RESTART.
 */
static bool fl_signal_ends_write(int fd)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);

	if (!fl_compat_on())
		return false;
	if (fl_sig_last_restarts() && libc_getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len))
		tv.tv_sec = tv.tv_usec = 0;
	return fl_sig_ends_socket_wait(tv.tv_sec || tv.tv_usec);
}

/*
 * One sleep of the shim's wait. True if a handler that ends the write ran
 * meanwhile (*runs: fl_sig_runs when the wait began). IMPORTANT: asked of
 * the handler count, not of nanosleep's EINTR: a signal that comes between
 * two sleeps (the first are 10-80 us) runs its handler without ending
 * either, and the write would then go on to wait in the kernel, the signal
 * spent (seen in test throttle_signal under load).
 */
static bool fl_hold_sleep(int fd, const struct timespec *pause, unsigned *runs)
{
	unsigned now;

	nanosleep(pause, NULL);
	now = fl_sig_runs();
	if (now == *runs)
		return false;
	*runs = now;
	return fl_signal_ends_write(fd);
}

#define FL_HOLD_MAX_NS     (200 * 1000000LL)
#define FL_HOLD_STALL_NS   (20 * 1000000LL)

/* The gate-reopening hold (throttle.h). Costs nothing unless the gate
 * alone keeps the socket on TCP: then a clock read, and a fcntl before it
 * sleeps. Returns true if a signal ended it and the write. */
static bool fl_gate_hold(int fd, uint32_t slot, int flags, struct fl_hold *h)
{
	uint64_t consumed, last, unread = fl_slot_gate_unread(slot, &consumed);
	struct timespec pause = { 0, 10000 };
	int64_t now, start, progress;
	bool signalled = false;
	uint32_t now_us;
	unsigned runs;
	int saved;

	if (!unread || !h || (flags & MSG_DONTWAIT))
		return false;
	now = fl_clock_ns(CLOCK_MONOTONIC);
	now_us = (uint32_t)(now / 1000);
	if (h->gap_us && (int32_t)(h->at_us - now_us) > 0)
		return false; /* a recent hold failed: not yet */
	saved = errno;
	if (libc_fcntl(fd, F_GETFL, NULL) & O_NONBLOCK)
		goto out; /* never delay a non-blocking write */
	fl_ustat_add(FL_USTAT_GATE_HOLDS, 1);
	start = progress = now;
	last = consumed;
	runs = fl_sig_runs();
	while (unread) {
		if (fl_hold_sleep(fd, &pause, &runs)) {
			signalled = true;
			break;
		}
		if (pause.tv_nsec < 500000)
			pause.tv_nsec *= 2;
		unread = fl_slot_gate_unread(slot, &consumed);
		now = fl_clock_ns(CLOCK_MONOTONIC);
		if (consumed != last) {
			last = consumed;
			progress = now;
		}
		if (now - progress > FL_HOLD_STALL_NS || now - start > FL_HOLD_MAX_NS)
			break;
	}
	if (!unread) {
		fl_ustat_add(FL_USTAT_GATE_HOLDS_OPENED, 1);
		h->gap_us = 0;
	} else {
		h->gap_us = fl_hold_gap_next(h->gap_us);
		h->at_us = (uint32_t)(fl_clock_ns(CLOCK_MONOTONIC) / 1000) + h->gap_us;
	}
out:
	errno = saved;
	return signalled;
}

int fl_throttle(int fd, uint32_t slot, size_t len, int flags, struct fl_hold *hold)
{
	uint32_t budget;
	bool redirecting;
	uint64_t unread, target;
	struct timespec pause = { 0, 20000 };
	int64_t deadline;
	unsigned runs;
	int saved, r = 0;

	if (!len || (flags & MSG_DONTWAIT))
		return 0;
	if (fl_gate_hold(fd, slot, flags, hold))
		return 1;
	unread = fl_slot_peer_unread(slot, &budget, &redirecting);
	if (!fl_throttle_needed(redirecting, unread, len, budget))
		return 0;
	saved = errno;
	if (libc_fcntl(fd, F_GETFL, NULL) & O_NONBLOCK)
		goto out; /* the application wants EAGAIN, not a wait */
	if (!fl_still_ours(fd, slot)) {
		r = -1;
		goto out;
	}
	target = fl_throttle_target(len, budget); /* hysteresis (throttle.h) */
	fl_ustat_add(FL_USTAT_THROTTLED, 1);
	deadline = fl_clock_ns(CLOCK_MONOTONIC) + FL_THROTTLE_MAX_NS;
	runs = fl_sig_runs();
	while (unread > target && redirecting) {
		/* IMPORTANT: a handler that ends TCP's wait for room ends this
		 * one and the write (EINTR): handed to the kernel instead, the
		 * write went over TCP and waited there for a reader that may
		 * never come, the signal spent (test throttle_signal). */
		if (fl_hold_sleep(fd, &pause, &runs)) {
			r = 1;
			break;
		}
		if (fl_clock_ns(CLOCK_MONOTONIC) > deadline)
			break;
		if (pause.tv_nsec < 1000000)
			pause.tv_nsec *= 2;
		unread = fl_slot_peer_unread(slot, &budget, &redirecting);
	}
out:
	errno = saved;
	return r;
}
