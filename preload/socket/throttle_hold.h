/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * throttle_hold.h - the per-socket state of the throttle's gate-reopening
 * hold (throttle.h). A struct only, in a header of its own, so that the
 * per-socket object (sock.h) can embed it without depending on what the
 * throttle itself calls (the slots and maps).
 */
#ifndef FL_THROTTLE_HOLD_H
#define FL_THROTTLE_HOLD_H

#include <stdint.h>

/* When the next hold may be tried, and how long to wait after the next
 * one that fails (throttle.h says what a hold is). */
struct fl_hold {
	uint32_t at_us;  /* CLOCK_MONOTONIC microseconds (wrapping): next hold allowed */
	uint32_t gap_us; /* the wait after the next failed hold; 0: none failed */
};

#endif
