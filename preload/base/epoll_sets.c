// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* epoll_sets.c - the process's epoll instances, known by their fds (epoll_sets.h). */
#include "epoll_sets.h"

#include <errno.h>
#include <sys/epoll.h>

#include "claim_end.h"
#include "libc.h"

#define FL_EPOLL_SETS_MAX 64

/*
 * Owned by this file, lock-free: each entry holds an epoll fd + 1 (0: free),
 * claimed with a CAS and cleared when that fd is closed through close().
 * An entry can go stale (an epoll fd closed by close_range, or a number
 * the application reused): taking a socket out of a set it is not in, or
 * out of a non-epoll fd, fails harmlessly. fl_epoll_sets_full is set for
 * good when an epoll fd found no free entry.
 */
static int fl_epoll_sets[FL_EPOLL_SETS_MAX];
static int fl_epoll_sets_full;
/* Scans stop there (claim_end.h): a process has one or two epoll fds. */
static int fl_epoll_sets_end;

void fl_epoll_sets_add(int epfd)
{
	int i, expect;

	if (epfd < 0)
		return;
	for (i = 0; i < fl_claim_end(&fl_epoll_sets_end); i++)
		if (__atomic_load_n(&fl_epoll_sets[i], __ATOMIC_RELAXED) == epfd + 1)
			return;
	for (i = 0; i < FL_EPOLL_SETS_MAX; i++) {
		expect = 0;
		if (__atomic_compare_exchange_n(&fl_epoll_sets[i], &expect, epfd + 1, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			fl_claim_end_raise(&fl_epoll_sets_end, i);
			return;
		}
	}
	__atomic_store_n(&fl_epoll_sets_full, 1, __ATOMIC_RELAXED);
}

void fl_epoll_sets_closed(int fd)
{
	int i, expect;

	/* Every close() comes here: a load each, a CAS only on a match. */
	for (i = 0; i < fl_claim_end(&fl_epoll_sets_end); i++) {
		expect = fd + 1;
		if (__atomic_load_n(&fl_epoll_sets[i], __ATOMIC_RELAXED) == expect)
			__atomic_compare_exchange_n(&fl_epoll_sets[i], &expect, 0, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

bool fl_epoll_sets_leave(int fd)
{
	int i, epfd, saved = errno;

	if (__atomic_load_n(&fl_epoll_sets_full, __ATOMIC_RELAXED))
		return false;
	for (i = 0; i < fl_claim_end(&fl_epoll_sets_end); i++) {
		epfd = __atomic_load_n(&fl_epoll_sets[i], __ATOMIC_RELAXED) - 1;
		if (epfd >= 0)
			libc_epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
	}
	errno = saved;
	return true;
}
