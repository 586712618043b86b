/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx.h - the receive family of a socket, once io.c has looked it up.
 *
 * io.c captures what a read is counted against (struct fl_rx) and calls
 * fl_rx_recv, which decides how the call is served: on a socket the shim
 * does not redirect, the kernel's call as it is; on an enrolled one, with
 * the fixes that make the redirect path behave like TCP (config.h,
 * fl_compat_on): urgent data (rx_oob.h), MSG_TRUNC (rx_trunc.h),
 * MSG_PEEK|MSG_WAITALL (rx_peek.h), held bytes and SO_PEEK_OFF
 * (rx_held.h), MSG_WAITALL (rx_waitall.h), a spurious EAGAIN
 * (rx_retry.h), a reset reported once (reset.h) and splice() from the
 * socket (splice.h).
 */
#ifndef FL_RX_H
#define FL_RX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "socket/sock.h" /* struct fl_sock_id */

struct fl_fd;
struct fl_rxq;
struct fl_sock;

/* What a read credits its bytes to, captured before the call, and the
 * socket's early-taken bytes or emulated peek offset, if any (rxq.h).
 * Filled by io.c (fl_rx_begin). */
struct fl_rx {
	bool on;     /* enrolled: count the read in the slot, apply TCP's fixes */
	struct fl_sock *sock; /* enrolled: the socket's object (sock.h), or NULL */
	struct fl_sock_id id; /* with sock: its identity when the call began
			       * (fdtable.h, fl_fd_sock) */
	struct fl_rxq *q;
	int fd;
	struct fl_fd *pend; /* a pending fd's entry: the read counts there */
	struct fl_fd *e;    /* the fd's entry, if enrolled */
	bool held;          /* counted in flight (io.c, fl_tracked_io) */
};

/* Which call of the family, and its arguments. */
enum fl_rx_kind { FL_RX_READ, FL_RX_READV, FL_RX_RECVFROM, FL_RX_RECVMSG, FL_RX_SPLICE };

/* SPLICE's own arguments (len is the call's). */
struct fl_rx_splice {
	off_t *off_in, *off_out;
	int fd_out;
	unsigned int flags;
};

/* IMPORTANT: at most 80 bytes, for the reason struct fl_tx_call gives
 * (tx.h): every read builds one, and a larger one was cleared with a slow
 * "rep stos" (88 bytes were, in fl_read). So splice's arguments are
 * behind a pointer, and no field is padding. */
struct fl_rx_call {
	enum fl_rx_kind kind;
	int flags;                           /* RECVFROM, RECVMSG; 0 otherwise */
	void *buf;                           /* READ, RECVFROM */
	size_t len;
	const struct iovec *iov;             /* READV */
	int iovcnt;
	bool served;                         /* out: false for a splice the
					      * caller makes itself, as a
					      * write into sp->fd_out (the
					      * socket is not enrolled, or the
					      * fixes are off) */
	struct sockaddr *addr;               /* RECVFROM */
	socklen_t *alen;
	struct msghdr *msg;                  /* RECVMSG */
	const struct fl_rx_splice *sp;       /* SPLICE */
};
_Static_assert(sizeof(struct fl_rx_call) <= 80, "struct fl_rx_call: see IMPORTANT above");

/* The call on rx->fd; returns what the application's call returns (with
 * errno set). */
ssize_t fl_rx_recv(const struct fl_rx *rx, struct fl_rx_call *c);

#endif
