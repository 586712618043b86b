// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ratelimit.c - how many log lines a process may write: a token bucket. */
#include "ratelimit.h"

#include <time.h>

#include "common/clock.h"

/* Tokens are counted in thousandths of a line, so that the refill of one
 * millisecond (FL_RL_PER_SEC thousandths) is a whole number. */
#define FL_RL_LINE 1000u
#define FL_RL_FULL ((uint64_t)FL_RL_BURST * FL_RL_LINE)

/*
 * Owned by this file, lock-free. fl_rl_state packs, in one word changed only
 * by compare-and-swap: the high 32 bits, the millisecond (CLOCK_MONOTONIC,
 * truncated) of the last refill; the low 32 bits, the deficit (thousandths
 * of a line missing from a full bucket). IMPORTANT: a deficit rather than a
 * level, so that the zero-initialised word is a full bucket and no
 * initialisation (with its ordering questions) is needed. fl_rl_dropped
 * counts refused lines until the next line written takes them (exchange).
 * Both are inherited by a fork child, which is harmless.
 */
static uint64_t fl_rl_state;
static uint64_t fl_rl_dropped;

static uint32_t fl_rl_now_ms(void)
{
	/* The coarse clock is a vDSO read (no system call), a few ms coarse:
	 * plenty for a rate of lines per second. */
	return (uint32_t)(fl_clock_ns(CLOCK_MONOTONIC_COARSE) / 1000000);
}

/* The state refilled up to now. */
static uint64_t fl_rl_refill(uint64_t st, uint32_t now)
{
	uint32_t last = (uint32_t)(st >> 32);
	uint64_t deficit = (uint32_t)st, gain;
	int32_t elapsed = (int32_t)(now - last);

	/* Another thread may have refilled with a (slightly) later clock
	 * reading than ours: nothing to add then. Far "in the future" means
	 * the first line ever (last is 0) or more than 24 days of silence
	 * (the 32-bit difference wrapped): a full bucket either way. */
	if (elapsed <= 0)
		return elapsed > -60000 ? st : (uint64_t)now << 32;
	gain = (uint64_t)(uint32_t)elapsed * FL_RL_PER_SEC;
	deficit = gain >= deficit ? 0 : deficit - gain;
	return ((uint64_t)now << 32) | deficit;
}

bool fl_rl_take(uint64_t *dropped)
{
	uint32_t now = fl_rl_now_ms();
	uint64_t st = __atomic_load_n(&fl_rl_state, __ATOMIC_RELAXED), nst;

	do {
		nst = fl_rl_refill(st, now);
		if ((uint32_t)nst + FL_RL_LINE > FL_RL_FULL) {
			__atomic_fetch_add(&fl_rl_dropped, 1, __ATOMIC_RELAXED);
			return false;
		}
		nst += FL_RL_LINE;
	} while (!__atomic_compare_exchange_n(&fl_rl_state, &st, nst, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	*dropped = __atomic_load_n(&fl_rl_dropped, __ATOMIC_RELAXED) ?
			   __atomic_exchange_n(&fl_rl_dropped, 0, __ATOMIC_RELAXED) : 0;
	return true;
}

bool fl_rl_peek(void)
{
	uint64_t st = fl_rl_refill(__atomic_load_n(&fl_rl_state, __ATOMIC_RELAXED), fl_rl_now_ms());

	return (uint32_t)st + FL_RL_LINE <= FL_RL_FULL;
}
