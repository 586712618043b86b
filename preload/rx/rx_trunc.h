/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_trunc.h - recv(MSG_TRUNC) without MSG_PEEK of an enrolled socket: the
 * redirect path copies instead of discarding (and fails on a NULL buffer).
 * Discards as TCP does; returns what the call returns.
 */
#ifndef FL_RX_TRUNC_H
#define FL_RX_TRUNC_H

#include <stddef.h>
#include <sys/types.h>

ssize_t fl_rx_recv_trunc(int fd, size_t len, int flags);

#endif
