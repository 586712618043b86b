// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* compat.c - making the redirect path behave like TCP where it does not. */
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/sock_diag.h>

#include "config.h"
#include "holders.h"
#include "libc.h"
#include "log.h"
#include "rxq.h"
#include "signals.h"
#include "slot.h"
#include "tcp_diag.h"
#include "tx.h"

bool fl_compat_on(void)
{
	return fl_config()->compat;
}

static double fl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * IMPORTANT: every enrolled read starts a retry state, so its clock must be
 * cheap: the coarse clock is a plain load in the vDSO, where the precise one
 * reads the (paravirtual) TSC, 1% of a pinned 64 B round trip. It is only
 * compared against SO_RCVTIMEO after a spurious EAGAIN, and the kernel times
 * each wait itself; a tick of error there only decides whether to wait once
 * more.
 */
static double fl_now_coarse(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------- FIONREAD */

/* True when TCP's receive queue of fd holds no skb (SO_MEMINFO, Linux
 * 3.19: SK_MEMINFO_RMEM_ALLOC counts the receive queue's skbs, and the
 * out-of-order queue's, which only makes this answer "not empty"). */
bool fl_compat_tcp_queue_empty(int fd)
{
	__u32 mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	return !libc_getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) &&
	       len > SK_MEMINFO_RMEM_ALLOC * sizeof(__u32) && mem[SK_MEMINFO_RMEM_ALLOC] == 0;
}

/* TCP's next byte is the urgent one and the application reads without
 * SO_OOBINLINE (forced: the shim holds it on, rxq.h): then TCP counts
 * nothing from there (tcp_inq counts up to the mark). */
static bool fl_inq_at_mark(int fd, bool forced)
{
	int inl = 0, saved = errno;
	socklen_t len = sizeof(inl);

	if (!fl_compat_atmark(fd))
		return false;
	if (!forced && libc_getsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &inl, &len))
		inl = 0;
	errno = saved;
	return forced || !inl;
}

/* TCP's FIN counts in rcv_nxt (so in sock_diag's rqueue), not in FIONREAD. */
static bool fl_fin_received(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	int saved = errno;
	bool fin = libc_poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP));

	errno = saved;
	return fin;
}

/* urgent: the answer the application gets, with tcp_inq's rule for the
 * urgent mark (forced: SO_OOBINLINE is the shim's, off for the
 * application); without it, every byte either queue holds. */
static int fl_inq(int fd, int *out, bool urgent, bool forced)
{
	int tries, redirected = 0;
	ssize_t tcp;
	long rq;

	for (tries = 0; tries < 8; tries++) {
		/* On this kernel FIONREAD of an enrolled socket is the
		 * redirected queue alone. */
		if (libc_ioctl(fd, FIONREAD, &redirected))
			return -1;
		if (redirected == 0) {
			/* Only TCP's queue can hold bytes: a truncating peek goes
			 * straight to tcp_recvmsg, which counts without copying
			 * (up to the urgent mark, like tcp_inq, unless it starts
			 * at the mark: then the urgent byte is skipped). */
			tcp = libc_recv(fd, NULL, INT_MAX, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
			if (tcp > 0 && urgent && fl_inq_at_mark(fd, forced))
				tcp = 0;
			if (tcp >= 0) {
				*out = (int)tcp;
				return 0;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				*out = 0;
				return 0;
			}
			if (errno == EFAULT)
				continue; /* a redirected message came in between: again */
			*out = 0;
			return 0;
		}
		/* Both queues may hold bytes (after a flow-control fallback, TCP's
		 * comes after the redirected one). IMPORTANT: usually TCP's is
		 * empty, and then its memory (sk_rmem_alloc, which redirected
		 * messages do not use) is zero: one getsockopt says so. Only
		 * otherwise ask sock_diag for TCP's count, which costs about
		 * 150 µs: a reader that asks FIONREAD after every read (wrk)
		 * fell behind its writer by that alone. */
		if (fl_compat_tcp_queue_empty(fd) || (urgent && fl_inq_at_mark(fd, forced))) {
			*out = redirected;
			return 0;
		}
		rq = fl_tcp_diag_rqueue(fd);
		if (rq > 0 && fl_fin_received(fd))
			rq--;
		*out = redirected + (rq > 0 ? (int)(rq > INT_MAX - redirected ? INT_MAX - redirected : rq) : 0);
		return 0;
	}
	*out = redirected;
	return 0;
}

int fl_compat_inq(int fd, int *out)
{
	return fl_inq(fd, out, false, false);
}

int fl_compat_inq_app(int fd, bool forced, int *out)
{
	return fl_inq(fd, out, true, forced);
}

bool fl_compat_atmark(int fd)
{
	int at = 0, saved = errno;

	if (libc_ioctl(fd, SIOCATMARK, &at))
		at = 0;
	errno = saved;
	return at > 0;
}

/* ------------------------------------------------------------- receive */

void fl_retry_init(struct fl_retry *r)
{
	r->started = true;
	r->start = fl_now_coarse();
	r->sigs = fl_sig_runs();
}

bool fl_compat_retry_eagain(int fd, int flags, struct fl_retry *r)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);
	int fl, saved = errno;
	double timeo;

	if (!fl_compat_on() || (flags & MSG_DONTWAIT))
		return false;
	fl = libc_fcntl(fd, F_GETFL, NULL);
	if (fl < 0 || (fl & O_NONBLOCK))
		goto no;
	if (!r->started)
		fl_retry_init(r); /* late: a handler that ran in the first call is missed */
	if (libc_getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len))
		tv.tv_sec = tv.tv_usec = 0;
	if (fl_sig_runs() != r->sigs) {
		/* A handler ran: TCP would have returned EINTR, or restarted the
		 * call if the handler has SA_RESTART - but never a call with a
		 * receive timeout set (sock_intr_errno(), signal(7)). */
		r->sigs = fl_sig_runs();
		if (!fl_sig_last_restarts() || tv.tv_sec || tv.tv_usec) {
			errno = EINTR;
			return false;
		}
	}
	if (tv.tv_sec || tv.tv_usec) {
		timeo = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
		if (fl_now_coarse() - r->start >= timeo)
			goto no; /* the receive timeout did expire: EAGAIN is right */
	}
	errno = saved;
	return true;
no:
	errno = saved;
	return false;
}

/* One receive into iov without MSG_WAITALL, repeated after a spurious EAGAIN. */
static ssize_t fl_recv_once(int fd, struct msghdr *m, int flags, struct fl_retry *start)
{
	ssize_t r;

	do
		r = libc_recvmsg(fd, m, flags & ~MSG_WAITALL);
	while (r < 0 && errno == EAGAIN && fl_compat_retry_eagain(fd, flags, start));
	return r;
}

ssize_t fl_compat_recvmsg_waitall(int fd, struct msghdr *msg, int flags)
{
	struct iovec v[64], *iov = msg->msg_iov;
	size_t total = 0, want = 0, i, n = msg->msg_iovlen;
	struct msghdr m = *msg;
	struct fl_retry start;
	ssize_t r;

	fl_retry_init(&start);
	if (n > 64)
		return libc_recvmsg(fd, msg, flags); /* rare: as the kernel does it */
	for (i = 0; i < n; i++) {
		v[i] = iov[i];
		want += iov[i].iov_len;
	}
	m.msg_iov = v;
	while (total < want) {
		r = fl_recv_once(fd, &m, flags, &start);
		if (r <= 0) {
			/* EOF, or an error/signal/timeout: TCP returns what it has. */
			if (total)
				break;
			return r;
		}
		total += (size_t)r;
		/* Advance the iovec past the bytes received. */
		while (r > 0 && m.msg_iovlen) {
			size_t k = (size_t)r < m.msg_iov->iov_len ? (size_t)r : m.msg_iov->iov_len;

			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + k;
			m.msg_iov->iov_len -= k;
			r -= (ssize_t)k;
			if (!m.msg_iov->iov_len) {
				m.msg_iov++;
				m.msg_iovlen--;
			}
		}
		/* Control data and the peer address come with the first part. */
		m.msg_control = NULL;
		m.msg_controllen = 0;
		m.msg_name = NULL;
		m.msg_namelen = 0;
		/* TCP's MSG_WAITALL stops at the urgent mark once it has bytes
		 * (tcp_recvmsg); our next call would start there afresh and
		 * read past it. */
		if (total < want && fl_compat_atmark(fd))
			break;
	}
	msg->msg_flags = m.msg_flags;
	return (ssize_t)total;
}

ssize_t fl_compat_recv_waitall(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			       socklen_t *alen)
{
	struct iovec v = { buf, len };
	struct msghdr m = { .msg_name = addr, .msg_namelen = alen ? *alen : 0, .msg_iov = &v,
			    .msg_iovlen = 1 };
	ssize_t r = fl_compat_recvmsg_waitall(fd, &m, flags);

	if (alen)
		*alen = m.msg_namelen;
	return r;
}

ssize_t fl_compat_recv_trunc(int fd, size_t len, int flags)
{
	char scratch[16384];
	size_t done = 0;
	struct fl_retry start;
	ssize_t r;

	fl_retry_init(&start);
	while (done < len) {
		size_t k = len - done < sizeof(scratch) ? len - done : sizeof(scratch);

		do
			r = libc_recv(fd, scratch, k, (flags & ~(MSG_TRUNC | MSG_WAITALL)) |
						      (done ? MSG_DONTWAIT : 0));
		while (r < 0 && errno == EAGAIN && !done && fl_compat_retry_eagain(fd, flags, &start));
		if (r <= 0) {
			if (done && !(flags & MSG_WAITALL))
				break;
			if (r < 0 && errno == EAGAIN && done) {
				/* MSG_WAITALL: wait for the rest as TCP would. */
				if (!fl_compat_retry_eagain(fd, flags & ~MSG_DONTWAIT, &start))
					break;
				struct pollfd p = { .fd = fd, .events = POLLIN };

				libc_poll(&p, 1, 100);
				continue;
			}
			return done ? (ssize_t)done : r;
		}
		done += (size_t)r;
		if (!(flags & MSG_WAITALL) && (size_t)r < k)
			break; /* what was there is gone; TCP returns then too */
	}
	return (ssize_t)done;
}

ssize_t fl_compat_peek_waitall(int fd, uint32_t slot, uint64_t gen, void *buf, size_t len,
			       int flags)
{
	struct fl_rxq *q = fl_rxq_get(slot, gen, true);
	size_t want = len + (q && fl_rxq_peek_off(q) > 0 ? (size_t)fl_rxq_peek_off(q) : 0);
	struct timeval tv = { 0, 0 };
	socklen_t tl = sizeof(tv);
	struct timespec nap = { 0, 1000000 };
	double start = fl_now(), timeo = 0;
	int have = 0, fl = libc_fcntl(fd, F_GETFL, NULL);
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

	if (fl >= 0 && (fl & O_NONBLOCK))
		return libc_recv(fd, buf, len, flags & ~MSG_WAITALL);
	if (!libc_getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tl))
		timeo = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
	for (;;) {
		if (fl_compat_inq(fd, &have) == 0 &&
		    (size_t)have + (q ? fl_rxq_held(q) : 0) >= want)
			break;
		/* Nothing more will come once the peer stopped sending. */
		if (libc_poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			break;
		if (timeo && fl_now() - start >= timeo)
			break;
		if (!have) {
			/* Wait for the first byte in the kernel, as a peek would. */
			if (libc_poll(&p, 1, timeo ? 10 : 100) < 0 && errno == EINTR)
				return -1;
			continue;
		}
		if (nanosleep(&nap, NULL) && errno == EINTR)
			break; /* a signal: TCP returns what it has */
	}
	if (q)
		return fl_rxq_peek(fd, q, buf, len, flags);
	return libc_recv(fd, buf, len, (flags & ~MSG_WAITALL) | MSG_DONTWAIT);
}

void fl_compat_after_reset(int fd, ssize_t r)
{
	int err = 0, saved = errno;
	socklen_t len = sizeof(err);

	if (r >= 0 || errno != ECONNRESET || !fl_compat_on())
		return;
	libc_getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	errno = saved;
}

/* ------------------------------------------------------------- close */

void fl_compat_before_close(int fd, struct fl_fd *e)
{
	struct linger lg = { 1, 0 };
	int redirected = 0, saved = errno;

	if (!fl_compat_on() || !e->tx || !fl_tx_last_copy(e->tx) || fl_slot_left(e->slot))
		return;
	/* Bytes left in TCP's queue make TCP reset the connection itself;
	 * bytes left in the redirected queue would just vanish, and the peer
	 * would never learn (docs/kernel.md#loss). A zero linger makes the
	 * close a reset, but only the last close of the socket is one:
	 * another process that holds it (a fork) may still read them. */
	if (!libc_ioctl(fd, FIONREAD, &redirected) && redirected > 0 && fl_holders_others(fd) == 0) {
		libc_setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		fl_debug("fd %d closed with %d redirected bytes unread: resetting, as TCP does",
			 fd, redirected);
	}
	errno = saved;
}
