/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* tcp_diag.h - what TCP itself holds for a socket, asked through sock_diag. */
#ifndef FL_TCP_DIAG_H
#define FL_TCP_DIAG_H

/* Bytes in TCP's receive queue of the connected socket fd (the kernel's
 * idiag_rqueue: rcv_nxt - copied_seq), or -1. One netlink round trip. */
long fl_tcp_diag_rqueue(int fd);

/* The same for the socket at the other end of fd's connection, when it is
 * in this network namespace (a same-host peer); else -1. */
long fl_tcp_diag_peer_rqueue(int fd);

#endif
