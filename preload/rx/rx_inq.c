// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_inq.c - unread bytes across both receive queues, and the urgent mark (rx_inq.h). */
#include "rx_inq.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sock_diag.h>

#include "base/libc.h"
#include "kernel/tcp_diag.h"
#include "kernel/tcp_inq.h"

/* True when TCP's receive queue of fd holds no skb (SO_MEMINFO, Linux
 * 3.19: SK_MEMINFO_RMEM_ALLOC counts the receive queue's skbs, and the
 * out-of-order queue's, which only makes this answer "not empty"). */
bool fl_rx_tcp_queue_empty(int fd)
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

	if (!fl_rx_atmark(fd))
		return false;
	if (!forced && libc_getsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &inl, &len))
		inl = 0;
	errno = saved;
	return forced || !inl;
}

/* TCP's FIN counts in rcv_nxt (so in sock_diag's rqueue and in
 * tcp_inq_hint), not in FIONREAD: tcp_inq counts one less once SOCK_DONE.
 * revents: a poll's of POLLRDHUP. The read side shut (POLLRDHUP) is not
 * enough: the application's own shutdown(SHUT_RD) sets it too, without a
 * FIN; TCP's state tells (fl_tcp_done). */
static bool fl_fin_in(int fd, short revents)
{
	return (revents & (POLLRDHUP | POLLHUP)) && fl_tcp_done(fd);
}

static bool fl_fin_received(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	int saved = errno;
	bool fin = libc_poll(&p, 1, 0) == 1 && fl_fin_in(fd, p.revents);

	errno = saved;
	return fin;
}

/* Owned by this file: set once this process met TCP urgent data (its
 * recv(MSG_OOB), or POLLPRI seen here), never cleared; atomic, no lock.
 * From then on TCP's part is counted by the walk, which knows the mark:
 * after a recv(MSG_OOB) the urgent byte stays in TCP's queue, uncounted
 * by FIONREAD, and nothing cheap tells that it is there. */
static bool fl_urgent_seen;

void fl_rx_inq_urgent_seen(void)
{
	__atomic_store_n(&fl_urgent_seen, true, __ATOMIC_RELAXED);
}

/*
 * TCP's part, in O(1): rcv_nxt - copied_seq (fl_tcp_inq_hint) less a FIN
 * that arrived, as TCP's own FIONREAD counts (tcp_inq: one less once
 * SOCK_DONE). False when that cannot say: the kernel refused the call, or
 * the process met urgent data, whose mark TCP counts up to.
 *
 * IMPORTANT: the truncating peek below gives the same number by walking
 * every buffer in TCP's queue. A reader that asks FIONREAD after every
 * read (wrk) with megabytes queued on TCP (nginx's non-blocking sendfile
 * keeps its direction there) spent 39% of all CPU in that walk, and
 * fetched a 64 MiB file at a tenth of plain TCP's speed
 * (docs/benchmarks.md).
 */
static bool fl_inq_tcp_fast(int fd, int *out)
{
	struct pollfd p = { .fd = fd, .events = POLLPRI | POLLRDHUP };
	int hint, saved = errno;

	if (__atomic_load_n(&fl_urgent_seen, __ATOMIC_RELAXED) || fl_tcp_inq_hint(fd, &hint))
		return false;
	if (hint > 0) {
		if (libc_poll(&p, 1, 0) < 0 || (p.revents & POLLPRI)) {
			if (p.revents & POLLPRI)
				fl_rx_inq_urgent_seen();
			errno = saved;
			return false;
		}
		if (fl_fin_in(fd, p.revents))
			hint--;
	}
	errno = saved;
	*out = hint;
	return true;
}

/* urgent: the answer the application gets, with tcp_inq's rule for the
 * urgent mark (forced: SO_OOBINLINE is the shim's, off for the
 * application); without it, every byte either queue holds. */
static int fl_inq(int fd, int *out, bool urgent, bool forced)
{
	int tries, redirected = 0, quick;
	ssize_t tcp;
	long rq;

	for (tries = 0; tries < 8; tries++) {
		/* On this kernel FIONREAD of an enrolled socket is the
		 * redirected queue alone. */
		if (libc_ioctl(fd, FIONREAD, &redirected))
			return -1;
		if (fl_inq_tcp_fast(fd, &quick)) {
			*out = quick > INT_MAX - redirected ? INT_MAX : redirected + quick;
			return 0;
		}
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
		if (fl_rx_tcp_queue_empty(fd) || (urgent && fl_inq_at_mark(fd, forced))) {
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

int fl_rx_inq(int fd, int *out)
{
	return fl_inq(fd, out, false, false);
}

int fl_rx_inq_app(int fd, bool forced, int *out)
{
	return fl_inq(fd, out, true, forced);
}

bool fl_rx_atmark(int fd)
{
	int at = 0, saved = errno;

	if (libc_ioctl(fd, SIOCATMARK, &at))
		at = 0;
	errno = saved;
	return at > 0;
}
