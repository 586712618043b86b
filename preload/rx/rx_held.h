/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_held.h - a read of an enrolled socket whose bytes the shim holds
 * (rxq.h: taken out early, or an emulated SO_PEEK_OFF): from the held bytes
 * first, then the kernel, in order.
 */
#ifndef FL_RX_HELD_H
#define FL_RX_HELD_H

#include <stddef.h>
#include <sys/types.h>

struct fl_rxq;

/* recv()/read() of the socket. Handles MSG_PEEK (with the emulated
 * offset) and MSG_WAITALL. Returns what the call returns. */
ssize_t fl_rx_held_recv(int fd, struct fl_rxq *q, void *buf, size_t len, int flags);

#endif
