/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_oob.h - recv(MSG_OOB) of an enrolled socket: TCP's urgent byte, not
 * the redirected queue's bytes.
 */
#ifndef FL_RX_OOB_H
#define FL_RX_OOB_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct fl_rxq;

/*
 * recv(MSG_OOB) of the socket in slot/gen, whose held bytes are q; msg:
 * the caller's, whose msg_flags it sets. Moves the redirected queue
 * into q (rxq.h), so that the call reaches TCP's urgent byte instead of
 * redirected bytes, and answers as TCP does (never blocking, EINVAL
 * without urgent data). While q then holds bytes, SO_OOBINLINE is on for
 * the kernel only (rx_oob.c says why).
 */
ssize_t fl_rx_oob_recv(int fd, uint32_t slot, uint64_t gen, struct fl_rxq *q, struct msghdr *msg,
		       int flags);

#endif
