/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_peek.h - MSG_PEEK of an enrolled socket across both of its receive
 * queues, with the emulated SO_PEEK_OFF (rxq.h), and
 * recv(MSG_PEEK|MSG_WAITALL).
 */
#ifndef FL_RX_PEEK_H
#define FL_RX_PEEK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fl_rxq;

/* Peek len bytes from the head of what is unread (held bytes, then both
 * kernel queues), moving redirected bytes into q if the kernel's peek cannot
 * reach TCP's queue behind them. From the emulated peek offset, which it
 * advances. */
ssize_t fl_rx_peek(int fd, struct fl_rxq *q, void *buf, size_t len);

/* recv(MSG_PEEK|MSG_WAITALL) on fd, whose held bytes are q (NULL: memory
 * was short): waits until len bytes are there (or EOF, an error, a signal,
 * the receive timeout), then peeks them across both queues. */
ssize_t fl_rx_peek_waitall(int fd, struct fl_rxq *q, void *buf, size_t len, int flags);

#endif
