/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* tcp_inq.h - TCP's own unread byte count of a socket, in O(1). */
#ifndef FL_TCP_INQ_H
#define FL_TCP_INQ_H

#include <stdbool.h>

/*
 * rcv_nxt - copied_seq of the connected TCP socket fd: what its own
 * receive queue holds, the redirected queue not counted, and a FIN that
 * arrived counted as one byte (rcv_nxt moves past it; once it is read,
 * the answer is 1). The kernel's tcp_inq_hint(), returned by a
 * TCP_ZEROCOPY_RECEIVE that maps nothing. 0 and *out, or -1: the kernel
 * or the process does not allow it, or 4 KiB or more are unread behind a
 * FIN that arrived (the kernel's EIO); the caller counts another way.
 */
int fl_tcp_inq_hint(int fd, int *out);

/* True once fd's TCP has SOCK_DONE: a FIN arrived in order, or the
 * connection was reset or closed (its state, asked with TCP_INFO). TCP's
 * own FIONREAD then counts one byte less than rcv_nxt - copied_seq. */
bool fl_tcp_done(int fd);

#endif
