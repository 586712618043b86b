/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_retry.h - a blocking receive of an enrolled socket that returned
 * EAGAIN is repeated, as TCP would have kept waiting
 * (docs/kernel.md#spurious-eagain: tcp_bpf wakes a reader without data,
 * or a signal ran).
 */
#ifndef FL_RX_RETRY_H
#define FL_RX_RETRY_H

#include <stdbool.h>

/* A retry state: when the receive started, and how many signal handlers
 * had run by then. Zeroed, or started with fl_rx_retry_init. */
struct fl_retry {
	double start;
	unsigned sigs;
	bool started;
};

/* Starts a retry state: the time and the handler count before the call. */
void fl_rx_retry_init(struct fl_retry *r);

/*
 * A blocking receive returned EAGAIN. True if the call must be repeated:
 * the socket blocks, MSG_DONTWAIT was not asked, SO_RCVTIMEO (if set) has
 * not expired since the first try, and no signal handler without
 * SA_RESTART ran (then errno becomes EINTR, as TCP gives). False too with
 * FASTLOCAL_TCP_COMPAT=off. errno is kept otherwise.
 */
bool fl_rx_retry_eagain(int fd, int flags, struct fl_retry *r);

#endif
