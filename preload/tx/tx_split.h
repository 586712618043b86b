/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tx_split.h - a large blocking write goes to the kernel in slices.
 *
 * One sendmsg() of many megabytes runs the verdict once per message the
 * kernel makes of it, all inside that one call: once its first message
 * went over TCP (the peer had not enrolled yet, or the reader was a budget
 * behind), the ordering gate keeps every later one there too, since the
 * writer never pauses for its reader to catch up. Sent in slices, the
 * throttle (throttle.h) runs before each, and with it the hold that lets
 * the gate reopen and the wait that keeps a redirected direction within
 * its budget.
 *
 * Only where nothing the application can observe changes: a blocking
 * write (TCP blocks it anyway while its buffers are full), without
 * SO_SNDTIMEO (each slice would get a whole timeout of its own). A slice
 * that goes short (a signal, an error) ends the write with what went, as
 * TCP's sendmsg returns what it copied, and so does a signal handled
 * between slices (in one TCP call it would have stayed pending and ended
 * the next wait for room); slices after the first carry
 * MSG_NOSIGNAL, since TCP raises SIGPIPE only on a call that sent nothing.
 * A sendmsg slice after the first runs with signals blocked until its
 * wait for room, a ppoll that unblocks them (tx_split.c, fl_tx_slice), so
 * no signal can fall between a look and the kernel's wait.
 */
#ifndef FL_TX_SPLIT_H
#define FL_TX_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "socket/tx_state.h"

#define FL_SPLIT_BYTES (1u << 20) /* a slice */
#define FL_SPLIT_IOV   64         /* at most this many iovecs (a stack copy) */

/* sendmsg() of msg (len bytes) with Nagle's tail as TCP (fl_tx_sendmsg_len),
 * in slices when the write is large and blocking. Called with tx's lock
 * held; returns what the application's call returns. */
ssize_t fl_tx_send_split(struct fl_tx *tx, int fd, const struct msghdr *msg, int flags,
			 size_t len);

/* sendfile() (sendfile64 if large) in slices when the write is large and
 * blocking. Called without tx's lock (taken around each throttle); slices
 * after the first block SIGPIPE around the call and take back the one an
 * EPIPE raised, as TCP raises it only on a call that sent nothing. */
ssize_t fl_tx_sendfile_split(struct fl_tx *tx, int fd, int in_fd, off_t *offset, size_t count,
			     bool large);

#endif
