/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * throttle.h - a blocking writer waits for a reader that is a budget behind.
 *
 * When handing len more bytes to the kernel would push the peer's unread
 * redirected bytes past its budget, the verdict would fall back to TCP.
 * A blocking writer instead waits (sleeping, at most 200 ms, ended by a
 * signal as TCP's wait would be) until half the budget is free; a
 * non-blocking one never waits.
 */
#ifndef FL_THROTTLE_H
#define FL_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The same writer also waits, briefly, for a reader that is catching up on
 * bytes sent over TCP: while any is unread, the ordering gate keeps every
 * new message on TCP, and a writer that stays ahead of its reader would
 * keep the connection there for good. Holding a blocking write until the
 * reader has read them all lets the next message be redirected. The hold
 * ends when the reader has caught up, stops making progress (20 ms), after
 * 200 ms, or at a signal as the throttle's wait does; one that failed is
 * not tried again for a while
 * (1 ms, doubling up to 1 s), kept in *hold (per socket, may be NULL).
 * Nothing the application can observe changes: a blocking write may
 * always take that long in TCP.
 * The backoff is a struct fl_hold (throttle_hold.h).
 */
#include "socket/throttle_hold.h"

/* Waits if it should. Returns 0; 1 if a signal handler ended the wait as
 * it ends TCP's (no SA_RESTART, or SO_SNDTIMEO set): the write then ends
 * too, with EINTR, or with the part of itself it already sent, as TCP's;
 * or -1 if fd no longer names the socket that owns slot (its entry is
 * stale: the caller forgets it). */
int fl_throttle(int fd, uint32_t slot, size_t len, int flags, struct fl_hold *hold);

/* ----------------------------------------------- the decisions, pure
 * (test/unit/throttle.c) */

/* A write of len bytes waits when the peer's redirected bytes unread
 * would then pass its budget (only while the direction is redirected). */
static inline bool fl_throttle_needed(bool redirecting, uint64_t unread, size_t len,
				      uint32_t budget)
{
	return redirecting && unread && unread + len > budget;
}

/* Hysteresis: wait until half the budget is free (or all of it for a
 * write larger than half), so that writers wait rarely, not per write.
 * The wait ends once unread is at most this. */
static inline uint64_t fl_throttle_target(size_t len, uint32_t budget)
{
	return len <= budget / 2 ? budget / 2 : len < budget ? budget - len : 0;
}

#define FL_HOLD_GAP_MIN_US 1000u
#define FL_HOLD_GAP_MAX_US 1000000u

/* The wait after a gate-reopening hold that failed, given the last one
 * (0: none failed yet): 1 ms, doubling up to 1 s. */
static inline uint32_t fl_hold_gap_next(uint32_t gap_us)
{
	return !gap_us ? FL_HOLD_GAP_MIN_US :
	       gap_us >= FL_HOLD_GAP_MAX_US / 2 ? FL_HOLD_GAP_MAX_US : gap_us * 2;
}

#endif
