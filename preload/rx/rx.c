// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx.c - the receive family of a socket, once io.c has looked it up (rx.h). */
#include "rx.h"

#include <errno.h>

#include "base/config.h"
#include "base/libc.h"
#include "kernel/maps.h"
#include "reset.h"
#include "rx_held.h"
#include "rx_oob.h"
#include "rx_peek.h"
#include "rx_retry.h"
#include "rx_spin.h"
#include "rx_trunc.h"
#include "rx_waitall.h"
#include "socket/fdtable.h"
#include "socket/rxq.h"
#include "kernel/slot.h"
#include "socket/sock.h"
#include "rx_topup.h"
#include "splice.h"

/* The application's call as it is. */
static ssize_t fl_rx_syscall(int fd, struct fl_rx_call *c)
{
	switch (c->kind) {
	case FL_RX_READ:
		return libc_read(fd, c->buf, c->len);
	case FL_RX_READV:
		return libc_readv(fd, c->iov, c->iovcnt);
	case FL_RX_RECVFROM:
		return libc_recvfrom(fd, c->buf, c->len, c->flags, c->addr, c->alen);
	case FL_RX_RECVMSG:
	case FL_RX_SPLICE: /* never here: fl_rx_splice */
		break;
	}
	return libc_recvmsg(fd, c->msg, c->flags);
}

/* The application's call without waiting (an rx_spin.h look); a splice,
 * or a readv with a bad count (the kernel's own error), is never tried. */
static ssize_t fl_rx_try(int fd, const void *call)
{
	const struct fl_rx_call *c = call;
	struct msghdr m = { 0 };

	switch (c->kind) {
	case FL_RX_READ:
		return libc_recvfrom(fd, c->buf, c->len, MSG_DONTWAIT, NULL, NULL);
	case FL_RX_READV:
		if (c->iovcnt < 0)
			break;
		m.msg_iov = (struct iovec *)c->iov;
		m.msg_iovlen = (size_t)c->iovcnt;
		return libc_recvmsg(fd, &m, MSG_DONTWAIT);
	case FL_RX_RECVFROM:
		return libc_recvfrom(fd, c->buf, c->len, c->flags | MSG_DONTWAIT, c->addr, c->alen);
	case FL_RX_RECVMSG:
		return libc_recvmsg(fd, c->msg, c->flags | MSG_DONTWAIT);
	case FL_RX_SPLICE:
		break;
	}
	return fl_rx_syscall(fd, (struct fl_rx_call *)c);
}

/* Whether a look without waiting gives what the blocking call would when
 * bytes are there: not with MSG_WAITALL (here only with the fixes off) or
 * MSG_OOB, nor with an SO_RCVLOWAT the shim saw (a blocking receive waits
 * for that many bytes, a non-blocking one takes what is there); and
 * MSG_ERRQUEUE never waits, so there is nothing to look for. */
static inline bool fl_rx_may_look(const struct fl_rx *rx, const struct fl_rx_call *c)
{
	return !(c->flags & (MSG_WAITALL | MSG_OOB | MSG_ERRQUEUE)) &&
	       !(rx->e && (__atomic_load_n(&rx->e->flags, __ATOMIC_RELAXED) & FL_FDF_RCVLOWAT));
}

/* Flags under which a read is not "take what is there": a peek, urgent
 * data, a discard, a wait for all (rx_waitall.c loops itself), the error
 * queue. */
#define FL_TOPUP_NOT (MSG_PEEK | MSG_OOB | MSG_TRUNC | MSG_WAITALL | MSG_ERRQUEUE)

/* A short read of an enrolled socket goes on into TCP's queue
 * (rx_topup.h): the calls that read into a buffer, without control data
 * (timestamps, TCP_INQ: a second call would replace the first's). */
static ssize_t fl_rx_short(const struct fl_rx *rx, const struct fl_rx_call *c, ssize_t n)
{
	struct iovec one = { c->buf, c->len };

	if (n <= 0 || (c->flags & FL_TOPUP_NOT) || !fl_compat_on())
		return n;
	switch (c->kind) {
	case FL_RX_READ:
	case FL_RX_RECVFROM:
		return fl_rx_top_up(rx->fd, rx->id.slot, &one, 1, n);
	case FL_RX_READV:
		return fl_rx_top_up(rx->fd, rx->id.slot, c->iov, (size_t)c->iovcnt, n);
	case FL_RX_RECVMSG:
		if (!c->msg || c->msg->msg_controllen)
			return n;
		return fl_rx_top_up(rx->fd, rx->id.slot, c->msg->msg_iov, c->msg->msg_iovlen, n);
	case FL_RX_SPLICE:
		break;
	}
	return n;
}

/*
 * The kernel's call. On an enrolled socket a blocking receive first looks
 * for bytes a little while (rx_spin.h), and is repeated after a spurious
 * EAGAIN (rx_retry.h; docs/kernel.md#spurious-eagain).
 */
static ssize_t fl_rx_kernel(const struct fl_rx *rx, struct fl_rx_call *c)
{
	struct fl_retry start;
	ssize_t n;

	if (!rx->on)
		return fl_rx_syscall(rx->fd, c);
	fl_rx_retry_init(&start);
	if (fl_rx_may_look(rx, c) && fl_rx_spin(rx->fd, c->flags, fl_rx_try, c, &start, &n))
		return fl_rx_short(rx, c, n); /* answered by a look before sleeping (rx_spin.h) */
	do
		n = fl_rx_syscall(rx->fd, c);
	while (n < 0 && errno == EAGAIN && fl_rx_retry_eagain(rx->fd, c->flags, &start));
	return fl_rx_short(rx, c, n);
}

/* recv(MSG_WAITALL) of an enrolled socket: looped as TCP does (rx_waitall.h). */
static inline bool fl_rx_waitall(const struct fl_rx *rx, int flags)
{
	return rx->on && (flags & MSG_WAITALL) && !(flags & (MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC)) &&
	       fl_compat_on();
}

/* recv(MSG_OOB) of an enrolled socket: TCP's urgent byte, not the
 * redirected queue's bytes (rx_oob.h). False if it is not one. */
static bool fl_rx_urgent(const struct fl_rx *rx, struct msghdr *msg, int flags, ssize_t *n)
{
	struct fl_rxq *q;

	if (!(flags & MSG_OOB) || !rx->on || !fl_compat_on())
		return false;
	q = rx->q ? rx->q : fl_sock_rxq(rx->sock, rx->id.gen, true);
	if (!q)
		return false; /* out of memory: as the kernel answers */
	*n = fl_rx_oob_recv(rx->fd, rx->id.slot, rx->id.gen, q, msg, flags);
	return true;
}

/* recv() flags the redirect path gets wrong; n is the result. */
static inline bool fl_rx_special(const struct fl_rx *rx, void *buf, size_t len, int flags,
				 ssize_t *n)
{
	if (!rx->on || !fl_compat_on())
		return false;
	if ((flags & MSG_TRUNC) && !(flags & MSG_PEEK)) {
		*n = fl_rx_recv_trunc(rx->fd, len, flags);
		return true;
	}
	if ((flags & (MSG_PEEK | MSG_WAITALL)) == (MSG_PEEK | MSG_WAITALL) &&
	    !(flags & (MSG_DONTWAIT | MSG_TRUNC)) && buf) {
		*n = fl_rx_peek_waitall(rx->fd, fl_sock_rxq(rx->sock, rx->id.gen, true), buf, len, flags);
		return true;
	}
	if (rx->q && buf) {
		/* Bytes taken out early, or an emulated peek offset (rxq.h). */
		*n = fl_rx_held_recv(rx->fd, rx->q, buf, len, flags);
		return true;
	}
	return false;
}

static ssize_t fl_rx_read(const struct fl_rx *rx, struct fl_rx_call *c)
{
	ssize_t n;

	if (rx->q)
		n = fl_rx_held_recv(rx->fd, rx->q, c->buf, c->len, 0);
	else
		n = fl_rx_kernel(rx, c);
	if (rx->on)
		fl_reset_report_once(rx->fd, n);
	return n;
}

static ssize_t fl_rx_readv(const struct fl_rx *rx, struct fl_rx_call *c)
{
	if (rx->q && c->iovcnt > 0) /* a short read */
		return fl_rx_held_recv(rx->fd, rx->q, c->iov[0].iov_base, c->iov[0].iov_len, 0);
	return fl_rx_kernel(rx, c);
}

static ssize_t fl_rx_recvfrom(const struct fl_rx *rx, struct fl_rx_call *c)
{
	int flags = c->flags;
	ssize_t n;

	if ((flags & MSG_OOB) && rx->on) {
		struct iovec v = { c->buf, c->len };
		struct msghdr m = { .msg_name = c->addr, .msg_namelen = c->alen ? *c->alen : 0,
				    .msg_iov = &v, .msg_iovlen = 1 };

		if (fl_rx_urgent(rx, &m, flags, &n)) {
			if (c->alen && n >= 0)
				*c->alen = m.msg_namelen;
		} else {
			n = fl_rx_syscall(rx->fd, c);
		}
	} else if (fl_rx_special(rx, c->buf, c->len, flags, &n))
		;
	else if (fl_rx_waitall(rx, flags))
		n = fl_rx_recv_waitall(rx->fd, c->buf, c->len, flags, c->addr, c->alen);
	else
		n = fl_rx_kernel(rx, c);
	if (rx->on)
		fl_reset_report_once(rx->fd, n);
	return n;
}

static ssize_t fl_rx_recvmsg(const struct fl_rx *rx, struct fl_rx_call *c)
{
	struct msghdr *msg = c->msg;
	int flags = c->flags;
	ssize_t n;

	if (msg && fl_rx_urgent(rx, msg, flags, &n))
		;
	else if (msg && msg->msg_iovlen >= 1 && (msg->msg_iovlen == 1 || rx->q) &&
		 fl_rx_special(rx, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags, &n))
		;
	else if (msg && fl_rx_waitall(rx, flags))
		n = fl_rx_recvmsg_waitall(rx->fd, msg, flags);
	else
		n = fl_rx_kernel(rx, c);
	if (rx->on)
		fl_reset_report_once(rx->fd, n);
	return n;
}

/* splice() from the socket. */
static ssize_t fl_rx_splice(const struct fl_rx *rx, struct fl_rx_call *c)
{
	ssize_t n;

	if (rx->on && fl_compat_on()) {
		/* splice() from a socket reads only TCP's queue, never the
		 * redirected one (docs/kernel.md#splice-blind): move the bytes
		 * ourselves, in order (splice.h). A call that fails before it
		 * reads (offsets, not a pipe...) goes to the kernel as it is. */
		if (fl_splice_reads(c->sp->off_in, c->sp->fd_out, c->sp->off_out, c->len,
				    c->sp->flags)) {
			n = fl_splice_in(rx->fd, rx->q, c->sp->fd_out, c->len, c->sp->flags);
			if (n > 0)
				fl_ustat_add(FL_USTAT_SPLICE_EMULATED, (uint64_t)n);
		} else {
			n = libc_splice(rx->fd, c->sp->off_in, c->sp->fd_out, c->sp->off_out,
					c->len, c->sp->flags);
		}
		return n;
	}
	if (rx->on)
		fl_slot_blind(rx->id.slot, rx->id.gen, "the application splices from the socket");
	c->served = false; /* the caller writes into sp->fd_out */
	return 0;
}

ssize_t fl_rx_recv(const struct fl_rx *rx, struct fl_rx_call *c)
{
	c->served = true;
	switch (c->kind) {
	case FL_RX_READ:
		return fl_rx_read(rx, c);
	case FL_RX_READV:
		return fl_rx_readv(rx, c);
	case FL_RX_RECVFROM:
		return fl_rx_recvfrom(rx, c);
	case FL_RX_SPLICE:
		return fl_rx_splice(rx, c);
	case FL_RX_RECVMSG:
		break;
	}
	return fl_rx_recvmsg(rx, c);
}
