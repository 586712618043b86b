/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * clock.h - the time, read one way everywhere: the shim, the CLI, the
 * benchmarks and the tests include this one header.
 *
 * Inline: the send path reads the clock, and a call through the PLT would
 * cost more than the vDSO read itself. CLOCK_MONOTONIC for intervals,
 * CLOCK_MONOTONIC_COARSE (a few ms coarse, cheaper) where that is plenty,
 * CLOCK_REALTIME only for times shown to people.
 */
#ifndef FL_CLOCK_H
#define FL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds of clock clk. */
static inline int64_t fl_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Seconds of clock clk, with the fraction. */
static inline double fl_clock_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
