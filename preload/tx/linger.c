// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* linger.c - sockets the application closed while the shim still held
 * bytes for them (linger.h). */
#include "linger.h"

#include <pthread.h>
#include <stddef.h>

#include "base/own_fds.h"

/*
 * Owned by this file. fl_linger_lock guards each entry's s and the claim
 * of a free entry (add, reap, fork). An entry's fd is registered with
 * own_fds.c from the moment it is made; the send buffer's owner closes it
 * with fl_own_fd_drop under the buffer's lock once the bytes are in the
 * kernel (tx_flush.c), which sets it to -1 atomically: the next reap then
 * releases s. fl_linger_used counts the entries with s set, so that a reap
 * with nothing to do costs one load.
 */
static pthread_mutex_t fl_linger_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct fl_sock *s;
	int fd;
} fl_lingering[FL_LINGER_MAX];
static int fl_linger_used;

int *fl_linger_add(struct fl_sock *s, int fd)
{
	int *own = NULL;
	int i;

	pthread_mutex_lock(&fl_linger_lock);
	for (i = 0; i < FL_LINGER_MAX && fl_lingering[i].s; i++)
		;
	if (i < FL_LINGER_MAX && fl_own_fd_copy(fd, &fl_lingering[i].fd)) {
		fl_sock_hold(s);
		fl_lingering[i].s = s;
		__atomic_fetch_add(&fl_linger_used, 1, __ATOMIC_RELAXED);
		own = &fl_lingering[i].fd;
	}
	pthread_mutex_unlock(&fl_linger_lock);
	return own;
}

void fl_linger_reap(void)
{
	struct fl_sock *done[FL_LINGER_MAX];
	int i, n = 0;

	if (!__atomic_load_n(&fl_linger_used, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&fl_linger_lock);
	for (i = 0; i < FL_LINGER_MAX; i++) {
		if (!fl_lingering[i].s || fl_own_fd_get(&fl_lingering[i].fd) >= 0)
			continue;
		done[n++] = fl_lingering[i].s;
		fl_lingering[i].s = NULL;
		__atomic_fetch_sub(&fl_linger_used, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&fl_linger_lock);
	/* Outside the lock: the last release retires the socket, which takes
	 * its send buffer's lock. */
	for (i = 0; i < n; i++)
		fl_sock_release(done[i], -1);
}

void fl_linger_fork_prepare(void)
{
	pthread_mutex_lock(&fl_linger_lock);
}

void fl_linger_fork_parent(void)
{
	pthread_mutex_unlock(&fl_linger_lock);
}

/* IMPORTANT: the child's copies would keep each socket open, and its FIN
 * unsent, for as long as the child lives. Its buffers start empty
 * (tx.c, fl_tx_fork_child), so its entries are only references to
 * release, at its first reap. */
void fl_linger_fork_child(void)
{
	int i;

	for (i = 0; i < FL_LINGER_MAX; i++)
		if (fl_lingering[i].s && fl_own_fd_get(&fl_lingering[i].fd) >= 0)
			fl_own_fd_drop(&fl_lingering[i].fd);
	pthread_mutex_unlock(&fl_linger_lock);
}
