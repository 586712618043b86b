/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ratelimit.h - how many log lines a process may write: a token bucket.
 *
 * A busy server that logs at debug level (a line per connection, per
 * fallback) must not flood its own logs nor slow down: a line costs one
 * token; the bucket holds FL_RL_BURST tokens and gains FL_RL_PER_SEC per
 * second. Lines refused are counted and reported by the next line written.
 * Lock-free (one compare-and-swap on one word) and signal-safe.
 */
#ifndef FL_RATELIMIT_H
#define FL_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define FL_RL_BURST 100  /* lines written at once after a quiet spell */
#define FL_RL_PER_SEC 20 /* lines per second after that, sustained */

/* Takes a token. True if the line may be written; then *dropped holds the
 * number of lines refused since the last line written (0 mostly). */
bool fl_rl_take(uint64_t *dropped);

/* True if a token is there now, without taking it: lets a caller skip
 * expensive work (a backtrace) for a line that would be dropped. */
bool fl_rl_peek(void);

#endif
