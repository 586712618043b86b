/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * claim_end.h - how far a lock-free table of claimed entries is worth
 * scanning.
 *
 * own_fds.c and epoll_sets.c claim entries of a fixed table with a CAS,
 * lowest free first, and every close() looks through them: the scan stops
 * at the end mark, one past the highest entry ever claimed, which only
 * grows. A claim raises it after the CAS; a lookup racing the claim of a
 * brand-new entry may miss it, which neither table's users can notice
 * (nobody else knows that fd yet).
 */
#ifndef FL_CLAIM_END_H
#define FL_CLAIM_END_H

/* One past the highest entry claimed so far. */
static inline int fl_claim_end(const int *end)
{
	return __atomic_load_n(end, __ATOMIC_ACQUIRE);
}

/* Entry i was just claimed. */
static inline void fl_claim_end_raise(int *end, int i)
{
	int cur = fl_claim_end(end);

	while (cur <= i &&
	       !__atomic_compare_exchange_n(end, &cur, i + 1, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		;
}

#endif
