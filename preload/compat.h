/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compat.h - where the redirect path behaves unlike TCP, the shim makes it
 * behave like TCP (docs/kernel.md: #loss, #waitall, #spurious-eagain,
 * #splice-blind, #fionread, #rcvlowat, #zerocopy; docs/semantics.md).
 *
 * All of it applies to enrolled sockets only, and all of it is switched off
 * by FASTLOCAL_TCP_COMPAT=off, which exists to show what each fix fixes.
 */
#ifndef FL_COMPAT_H
#define FL_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fdtable.h"

bool fl_compat_on(void);

/* FIONREAD/SIOCINQ (docs/kernel.md#fionread): the kernel counts only the
 * redirected queue; the answer must include TCP's. 0 and *out, or -1 with
 * errno. */
int fl_compat_inq(int fd, int *out);
/* The same, as the application is answered: TCP counts up to the urgent
 * mark only (forced: the shim holds SO_OOBINLINE on, rxq.h). */
int fl_compat_inq_app(int fd, bool forced, int *out);

/* True when TCP's own receive queue of fd holds nothing (the redirected
 * queue is not looked at). */
bool fl_compat_tcp_queue_empty(int fd);

/* The kernel's SIOCATMARK: TCP's next unread byte is the urgent one. */
bool fl_compat_atmark(int fd);

/*
 * A blocking receive returned EAGAIN (docs/kernel.md#spurious-eagain: a
 * wakeup without data, or a signal). True if the call must be repeated: the
 * socket blocks, MSG_DONTWAIT was not asked, SO_RCVTIMEO (if set) has not
 * expired since the first try, and no signal handler without SA_RESTART ran
 * (then errno becomes EINTR, as TCP gives). r is zeroed before the first
 * call.
 */
struct fl_retry {
	double start;
	unsigned sigs;
	bool started;
};
bool fl_compat_retry_eagain(int fd, int flags, struct fl_retry *r);
/* Starts a retry state: the time and the handler count before the call. */
void fl_retry_init(struct fl_retry *r);

/* recv(MSG_WAITALL) (docs/kernel.md#waitall): the kernel returns after the
 * first message. Loops as TCP does: until len bytes, EOF, an error, a
 * signal or the receive timeout. Returns what the call returns. */
ssize_t fl_compat_recv_waitall(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			       socklen_t *alen);
ssize_t fl_compat_recvmsg_waitall(int fd, struct msghdr *msg, int flags);

/* recv(MSG_TRUNC) without MSG_PEEK: the redirect path copies instead of
 * discarding (and fails on a NULL buffer). Discards as TCP does. */
ssize_t fl_compat_recv_trunc(int fd, size_t len, int flags);

/* recv(MSG_PEEK|MSG_WAITALL) on the socket of slot/gen: waits until len
 * bytes are there (or EOF, an error, a signal, the receive timeout), then
 * peeks them across both queues (rxq.h). */
ssize_t fl_compat_peek_waitall(int fd, uint32_t slot, uint64_t gen, void *buf, size_t len,
			       int flags);

/* After a send or receive on an enrolled socket failed with ECONNRESET:
 * the redirect path leaves the error pending (every call reports it again
 * and SO_ERROR keeps it); TCP reports it once. Consumes it. */
void fl_compat_after_reset(int fd, ssize_t r);

/* splice(socket -> pipe) (docs/kernel.md#splice-blind): splice.h. */

/* close() of the last copy of a socket with redirected bytes unread
 * (docs/kernel.md#loss): TCP would reset the connection; arranges for
 * close() to do so. */
void fl_compat_before_close(int fd, struct fl_fd *e);

#endif
