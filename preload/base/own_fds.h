/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * own_fds.h - the shim's own file descriptors, kept out of the application's way.
 *
 * The shim holds a few fds for the life of the process (the pinned maps, a
 * netlink socket). They are moved high and made close-on-exec, and the
 * interposed close()/dup2()/close_range() leave them alone: a daemon that
 * closes every fd must not free the sockhash under its enrolled sockets.
 */
#ifndef FL_OWN_FDS_H
#define FL_OWN_FDS_H

#include <stdbool.h>

/* The maps (4), the log, the netlink socket, splice.c's pipe (2) and room:
 * 16; and one for each socket closed while its held bytes wait for room
 * (tx/linger.h, FL_LINGER_MAX). */
#define FL_OWN_FDS_MAX (16 + 64)

/* Moves *fdp high (F_DUPFD_CLOEXEC), closing the original, and registers
 * the variable: if the application later dup2()s onto that number, the fd
 * moves again and *fdp is updated (atomically). A negative *fdp is left. */
void fl_own_fd_take(int *fdp);

/* Registers a copy of fd, made high (F_DUPFD_CLOEXEC), in *fdp. False,
 * with nothing made, when no copy can be made or every entry is taken. */
bool fl_own_fd_copy(int fd, int *fdp);

/* Forgets and closes an fd taken before (on an error path); sets it to -1. */
void fl_own_fd_drop(int *fdp);

/* True if fd is one of the shim's own. Lock-free. */
bool fl_own_fd(int fd);

/* If newfd (a dup2/dup3 target) is one of ours, moves ours elsewhere first so
 * that the application's dup2 does not close it. */
void fl_own_fd_evict(int newfd);

/* The shim's own fds within [first, last], ascending, at most max of them.
 * Returns how many. */
int fl_own_fds_in(unsigned int first, unsigned int last, int *out, int max);

/* Reads a registered fd variable. */
static inline int fl_own_fd_get(const int *fdp)
{
	return __atomic_load_n(fdp, __ATOMIC_ACQUIRE);
}

#endif
