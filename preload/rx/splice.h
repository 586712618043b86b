/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * splice.h - splice(socket -> pipe) of an enrolled socket, emulated.
 *
 * The kernel's splice reads only TCP's queue of an enrolled socket, never
 * the redirected one (docs/kernel.md#splice-blind), so the shim moves the
 * bytes itself. It must behave as splice does on plain TCP (measured on
 * 6.18):
 *
 * - a pipe is full when every one of its buffers (slots) is in use, not
 *   when its bytes reach F_GETPIPE_SZ: bytes spliced from TCP hold a slot
 *   each whatever their size;
 * - pipe full: EAGAIN with SPLICE_F_NONBLOCK or an O_NONBLOCK pipe (even
 *   at EOF), else wait until the pipe has room; no reader: EPIPE, SIGPIPE;
 * - room: read the socket as its own O_NONBLOCK, SO_RCVTIMEO and signals
 *   say (SPLICE_F_NONBLOCK does not make the socket non-blocking), and move
 *   what fits now; never wait for more room once a byte moved.
 *
 * A byte taken from the socket must reach the pipe, and the pipe may be
 * drained only by the caller (haproxy's pipes are blocking and it relies on
 * SPLICE_F_NONBLOCK): so the bytes are peeked, put into the pipe without
 * ever blocking on it, and exactly what the pipe took is then consumed.
 */
#ifndef FL_SPLICE_H
#define FL_SPLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fl_rxq;

/*
 * True if splice(socket, off_in, fd_out, off_out, len, flags) would read
 * from the socket. False when the kernel fails the call (or returns 0 for
 * len 0) before it reads a byte: offsets, unknown flags, an fd_out that is
 * not the writing end of a pipe. Such a call can go to the kernel as it is.
 */
bool fl_splice_reads(const off_t *off_in, int fd_out, const off_t *off_out, size_t len,
		     unsigned int flags);

/*
 * splice(fd_in -> fd_out) for an enrolled socket fd_in whose call
 * fl_splice_reads() accepted; q: the socket's held bytes (rxq.h) or NULL.
 * Returns what splice would return; the bytes returned were consumed from
 * the socket (or q) and are in the pipe, no more and no fewer.
 */
ssize_t fl_splice_in(int fd_in, struct fl_rxq *q, int fd_out, size_t len,
		     unsigned int flags);

#endif
