/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * throttle.h - a blocking writer waits for a reader that is a budget behind.
 *
 * When handing len more bytes to the kernel would push the peer's unread
 * redirected bytes past its budget, the verdict would fall back to TCP.
 * A blocking writer instead waits (sleeping, at most 200 ms, ended by any
 * signal) until half the budget is free; a non-blocking one never waits.
 */
#ifndef FL_THROTTLE_H
#define FL_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

/* Waits if it should. Returns 0, or -1 if fd no longer names the socket
 * that owns slot (its entry is stale: the caller forgets it). */
int fl_throttle(int fd, uint32_t slot, size_t len, int flags);

#endif
