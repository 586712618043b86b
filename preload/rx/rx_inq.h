/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_inq.h - how many bytes an enrolled socket has unread, across both of
 * its receive queues (docs/kernel.md#fionread), and where TCP's urgent
 * mark is.
 *
 * An enrolled socket can hold bytes in two queues: the redirected one,
 * always older, and TCP's (after a flow-control fallback). The kernel's
 * FIONREAD counts only the first.
 */
#ifndef FL_RX_INQ_H
#define FL_RX_INQ_H

#include <stdbool.h>

/* FIONREAD/SIOCINQ: the kernel counts only the redirected queue; the
 * answer must include TCP's. 0 and *out, or -1 with errno. */
int fl_rx_inq(int fd, int *out);
/* The same, as the application is answered: TCP counts up to the urgent
 * mark only (forced: the shim holds SO_OOBINLINE on, rxq.h). */
int fl_rx_inq_app(int fd, bool forced, int *out);

/* This process met TCP urgent data (rx_oob.c calls it on recv(MSG_OOB)):
 * from now on TCP's part is counted the exact, slow way. */
void fl_rx_inq_urgent_seen(void);

/* True when TCP's own receive queue of fd holds nothing (the redirected
 * queue is not looked at). */
bool fl_rx_tcp_queue_empty(int fd);

/* The kernel's SIOCATMARK: TCP's next unread byte is the urgent one. */
bool fl_rx_atmark(int fd);

#endif
