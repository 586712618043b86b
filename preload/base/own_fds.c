// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* own_fds.c - the shim's own file descriptors, kept out of the application's way. */
#include "own_fds.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/resource.h>

#include "claim_end.h"
#include "init_hooks.h"
#include "libc.h"

/*
 * Owned by this file: the addresses of the variables that hold the shim's
 * fds. Registered with a CAS into a free entry and never removed while the
 * fd lives; read with atomic loads, so fl_own_fd() is lock-free and
 * signal-safe.
 */
static int *fl_own[FL_OWN_FDS_MAX];
/* Lookups stop there (claim_end.h): every close() looks. */
static int fl_own_end;

static int fl_own_base(void)
{
	struct rlimit rl;
	long base = 900;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (long)rl.rlim_cur - 64 < base)
		base = (long)rl.rlim_cur - 64 > 3 ? (long)rl.rlim_cur - 64 : 3;
	return (int)base;
}

/* Puts fdp in a free entry; false if there is none. */
static bool fl_own_register(int *fdp)
{
	int i, *expect;

	for (i = 0; i < FL_OWN_FDS_MAX; i++) {
		expect = NULL;
		if (__atomic_compare_exchange_n(&fl_own[i], &expect, fdp, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			fl_claim_end_raise(&fl_own_end, i);
			return true;
		}
	}
	return false;
}

void fl_own_fd_take(int *fdp)
{
	int fd = *fdp, hi;

	if (fd < 0)
		return;
	hi = libc_fcntl(fd, F_DUPFD_CLOEXEC, (void *)(long)fl_own_base());
	if (hi >= 0) {
		libc_close(fd);
		__atomic_store_n(fdp, hi, __ATOMIC_RELEASE);
	}
	fl_own_register(fdp);
}

bool fl_own_fd_copy(int fd, int *fdp)
{
	int hi = libc_fcntl(fd, F_DUPFD_CLOEXEC, (void *)(long)fl_own_base());

	if (hi < 0)
		return false;
	__atomic_store_n(fdp, hi, __ATOMIC_RELEASE);
	if (fl_own_register(fdp))
		return true;
	libc_close(hi);
	__atomic_store_n(fdp, -1, __ATOMIC_RELEASE);
	return false;
}

void fl_own_fd_drop(int *fdp)
{
	int i, *expect;

	for (i = 0; i < FL_OWN_FDS_MAX; i++) {
		expect = fdp;
		__atomic_compare_exchange_n(&fl_own[i], &expect, NULL, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	}
	if (*fdp >= 0)
		libc_close(*fdp);
	__atomic_store_n(fdp, -1, __ATOMIC_RELEASE); /* read lock-free (tx/linger.c) */
}

static int *fl_own_find(int fd)
{
	int i, *p;

	if (fd < 0)
		return NULL;
	for (i = 0; i < fl_claim_end(&fl_own_end); i++) {
		p = __atomic_load_n(&fl_own[i], __ATOMIC_ACQUIRE);
		if (p && fl_own_fd_get(p) == fd)
			return p;
	}
	return NULL;
}

bool fl_own_fd(int fd)
{
	return fl_own_find(fd) != NULL;
}

void fl_own_fd_evict(int newfd)
{
	int *p = fl_own_find(newfd);
	int moved;

	if (!p)
		return;
	moved = libc_fcntl(newfd, F_DUPFD_CLOEXEC, (void *)(long)(newfd + 1));
	if (moved < 0)
		return;
	__atomic_store_n(p, moved, __ATOMIC_RELEASE);
	libc_close(newfd);
}

int fl_own_fds_in(unsigned int first, unsigned int last, int *out, int max)
{
	int i, j, n = 0, fd, *p;

	for (i = 0; i < fl_claim_end(&fl_own_end) && n < max; i++) {
		p = __atomic_load_n(&fl_own[i], __ATOMIC_ACQUIRE);
		fd = p ? fl_own_fd_get(p) : -1;
		if (fd < 0 || (unsigned int)fd < first || (unsigned int)fd > last)
			continue;
		for (j = n; j > 0 && out[j - 1] > fd; j--) /* insertion sort */
			out[j] = out[j - 1];
		out[j] = fd;
		n++;
	}
	return n;
}

/*
 * IMPORTANT: the first fd moved high grows the process's fd table to cover
 * it, and in a process that already has threads the kernel then waits for
 * an RCU grace period (expand_fdtable: synchronize_rcu when the table is
 * shared): measured at 8 ms here, during which the thread enrolling its
 * first socket holds it in ENROLLING and several MB go over TCP. So the
 * table is grown when the shim loads, while the process is normally still
 * single-threaded: one dup of a standard fd to the base, then its close.
 * Nothing is kept; without a standard fd open, nothing is done.
 */
void fl_own_fds_init(void)
{
	int fd, std;

	for (std = 0; std < 3; std++) {
		fd = libc_fcntl(std, F_DUPFD_CLOEXEC, (void *)(long)fl_own_base());
		if (fd >= 0) {
			libc_close(fd);
			return;
		}
	}
}
