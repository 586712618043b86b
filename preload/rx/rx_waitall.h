/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_waitall.h - recv(MSG_WAITALL) of an enrolled socket
 * (docs/kernel.md#waitall): the kernel returns after the first message.
 * These loop as TCP does: until len bytes, EOF, an error, a signal, the
 * receive timeout or the urgent mark. They return what the call returns.
 */
#ifndef FL_RX_WAITALL_H
#define FL_RX_WAITALL_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

ssize_t fl_rx_recv_waitall(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			   socklen_t *alen);
ssize_t fl_rx_recvmsg_waitall(int fd, struct msghdr *msg, int flags);

#endif
