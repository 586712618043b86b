/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * linger.h - sockets the application closed while the shim still held
 * bytes for them that the kernel had no room for.
 *
 * TCP's close() returns at once and sends what it holds, then the FIN, by
 * itself. The shim's held bytes are not in the kernel yet, so the socket
 * is kept open on an fd of the shim's own (own_fds.h: the application
 * cannot close it, and a dup2 over it moves it) until a flush has put
 * them in; that flush closes it, and the kernel sends the FIN after them
 * (tx_flush.c, fl_tx_end_linger). Each entry holds a reference to the
 * socket's object, released by fl_linger_reap once its fd is closed.
 */
#ifndef FL_LINGER_H
#define FL_LINGER_H

#include "socket/sock.h"

/* Sockets lingering at once; a close beyond them waits for room in the
 * kernel as before (tx.c, fl_tx_drain). */
#define FL_LINGER_MAX 64

/* How long a closed socket's bytes may wait for room before they are
 * dropped and the FIN goes (as close() waited before), and the longest gap
 * between two tries (tx_flush.c, fl_tx_linger_gap). */
#define FL_LINGER_MAX_NS (60 * 1000000000LL)
#define FL_LINGER_GAP_MAX_NS (10 * 1000000LL)

/* Keeps s open on a copy of fd and takes a reference to it. Returns the
 * registered variable that holds the copy (fl_own_fd_get, fl_own_fd_drop),
 * or NULL when there is no room or no copy can be made. */
int *fl_linger_add(struct fl_sock *s, int fd);

/* Releases the references of the sockets whose copy is closed. Call with
 * no send buffer's lock held (a release may retire a socket). */
void fl_linger_reap(void);

/* fork() (init.c): the child closes its copies; the parent sends the
 * bytes and closes its own. */
void fl_linger_fork_prepare(void);
void fl_linger_fork_parent(void);
void fl_linger_fork_child(void);

#endif
