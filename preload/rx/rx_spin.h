/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_spin.h - a blocking receive of an enrolled socket looks for bytes a
 * little while before it sleeps (base/spin.h says why and when).
 *
 * The look is the application's own call made non-blocking: when bytes
 * are there it is the one system call the application asked for. With
 * none, a socket that is non-blocking gets that EAGAIN as its answer; a
 * blocking one asks again until spin_usec is over, then sleeps in the
 * call as it is. A signal handler that runs during the look ends the call
 * as it would have ended the sleep (fl_rx_retry_eagain: EINTR, unless
 * SA_RESTART and no SO_RCVTIMEO). An SO_RCVTIMEO is the sleep's: the
 * kernel times its own call, so a receive may time out spin_usec late.
 */
#ifndef FL_RX_SPIN_H
#define FL_RX_SPIN_H

#include <stdbool.h>
#include <sys/types.h>

#include "rx_retry.h"

/* The application's call on fd, made non-blocking (rx.c's). */
typedef ssize_t (*fl_rx_try_fn)(int fd, const void *call);

/* Looks with try_fn(fd, call), the call's flags being flags. True if the
 * look answered the call: *n is its result (errno set). */
bool fl_rx_spin(int fd, int flags, fl_rx_try_fn try_fn, const void *call, struct fl_retry *r,
		ssize_t *n);

#endif /* FL_RX_SPIN_H */
