// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * io.c - the send and receive families.
 *
 * Receive: every byte the application reads from an enrolled socket is added
 * to its slot's consumed counter, which is what opens the peer's ordering
 * gate and bounds its unread redirected bytes. The slot is captured before
 * the call, so bytes are never credited to a socket that took the fd number
 * meanwhile. A read the shim cannot see only makes the count low, which keeps
 * the gate shut: the safe direction.
 *
 * Send: a blocking write that would push the peer's unread bytes over its
 * budget waits (bounded) for the reader first, so that a fast writer does
 * not fall back to TCP every time it gets ahead; non-blocking writes never
 * wait: the verdict falls back to TCP and TCP's window gives EAGAIN.
 *
 * Hot path: one table lookup for an fd the shim does not track; for an
 * enrolled one, one atomic add after a read and two loads before a write.
 * No allocation, no lock, no system call beyond the application's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <time.h>
#include <sys/socket.h>

#include "calls.h"
#include "enroll.h"
#include "fdtable.h"
#include "libc.h"
#include "maps.h"
#include "slot.h"

#define FL_THROTTLE_MAX_NS (200 * 1000000LL) /* then let the verdict choose TCP */

/* What a read credits its bytes to, captured before the call. */
struct fl_rx {
	uint32_t slot;
	uint64_t gen;
	bool on;
};

/* A non-blocking connect() finished: enroll before the first read or write. */
static void fl_first_use(int fd, struct fl_fd *e)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	uint32_t expect = FL_FD_CONNECTING;
	int saved = errno;

	if (poll(&p, 1, 0) <= 0) { /* still connecting */
		errno = saved;
		return;
	}
	/* One thread enrolls; a failed connect simply stays untracked. */
	if (__atomic_compare_exchange_n(&e->state, &expect, FL_FD_UNKNOWN, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		fl_enroll(fd);
	errno = saved;
}

static inline struct fl_fd *fl_tracked(int fd)
{
	struct fl_fd *e = fl_fd_peek(fd);
	uint32_t st = fl_fd_state(e);

	if (st == FL_FD_UNKNOWN)
		return NULL;
	if (st == FL_FD_CONNECTING) {
		fl_first_use(fd, e);
		if (fl_fd_state(e) != FL_FD_ENROLLED)
			return NULL;
	}
	return e;
}

static inline void fl_rx_begin(int fd, struct fl_rx *rx)
{
	struct fl_fd *e = fl_tracked(fd);

	rx->on = e != NULL;
	rx->slot = e ? e->slot : 0;
	rx->gen = e ? e->gen : 0;
}

static inline void fl_rx_end(const struct fl_rx *rx, ssize_t n, int flags)
{
	if (rx->on && n > 0 && !(flags & MSG_PEEK))
		fl_slot_consume(rx->slot, rx->gen, (uint64_t)n);
}

static int64_t fl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * True if fd still names the socket that owns the entry's slot. An fd can be
 * closed behind the shim's back (glibc's internal close of a FILE, a raw
 * system call) and its number reused; the entry would then describe a dead
 * socket. Costs a system call, so it is asked only before sleeping.
 */
static bool fl_still_ours(int fd, struct fl_fd *e)
{
	struct fl_slot *s = fl_slot_at(e->slot);
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	if (s && !getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) &&
	    cookie == __atomic_load_n(&s->owner, __ATOMIC_RELAXED))
		return true;
	fl_fd_clear(fd);
	return false;
}

/* Waits until the peer has room for len more redirected bytes. */
static void fl_throttle(int fd, struct fl_fd *e, size_t len)
{
	uint32_t budget;
	bool redirecting;
	uint64_t unread = fl_slot_peer_unread(e->slot, &budget, &redirecting), target;
	struct timespec pause = { 0, 20000 };
	int64_t deadline;
	int saved;

	if (!redirecting || !unread || unread + len <= budget)
		return;
	saved = errno;
	if ((libc_fcntl(fd, F_GETFL, NULL) & O_NONBLOCK) || !fl_still_ours(fd, e)) {
		errno = saved;
		return; /* the application wants EAGAIN, not a wait; or a stale entry */
	}
	/* Hysteresis: wait until half the budget is free (or all of it for a
	 * write larger than half), so that writers wait rarely, not per write. */
	target = len <= budget / 2 ? budget / 2 : len < budget ? budget - len : 0;
	fl_ustat_add(FL_USTAT_THROTTLED, 1);
	deadline = fl_mono_ns() + FL_THROTTLE_MAX_NS;
	while (unread > target && redirecting) {
		/* A signal ends the wait: the kernel call then behaves as TCP would. */
		if (nanosleep(&pause, NULL) || fl_mono_ns() > deadline)
			break;
		if (pause.tv_nsec < 1000000)
			pause.tv_nsec *= 2;
		unread = fl_slot_peer_unread(e->slot, &budget, &redirecting);
	}
	errno = saved;
}

static inline void fl_tx_begin(int fd, size_t len, int flags)
{
	struct fl_fd *e = fl_tracked(fd);

	if (e && len && !(flags & MSG_DONTWAIT))
		fl_throttle(fd, e, len);
}

static size_t fl_iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;
	int i;

	for (i = 0; iov && i < n; i++)
		len += iov[i].iov_len;
	return len;
}

/* ------------------------------------------------------------- send */

ssize_t fl_send(int fd, const void *buf, size_t len, int flags)
{
	fl_tx_begin(fd, len, flags);
	return libc_send(fd, buf, len, flags);
}

ssize_t fl_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
		  socklen_t alen)
{
	fl_tx_begin(fd, len, flags);
	return libc_sendto(fd, buf, len, flags, addr, alen);
}

ssize_t fl_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	fl_tx_begin(fd, msg ? fl_iov_len(msg->msg_iov, (int)msg->msg_iovlen) : 0, flags);
	return libc_sendmsg(fd, msg, flags);
}

ssize_t fl_write(int fd, const void *buf, size_t len)
{
	fl_tx_begin(fd, len, 0);
	return libc_write(fd, buf, len);
}

ssize_t fl_writev(int fd, const struct iovec *iov, int iovcnt)
{
	fl_tx_begin(fd, fl_iov_len(iov, iovcnt), 0);
	return libc_writev(fd, iov, iovcnt);
}

ssize_t fl_sendfile(int out_fd, int in_fd, off_t *offset, size_t count, int large)
{
	fl_tx_begin(out_fd, count, 0);
	return large ? libc_sendfile64(out_fd, in_fd, offset, count) :
		       libc_sendfile(out_fd, in_fd, offset, count);
}

ssize_t fl_splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len,
		  unsigned int flags)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd_in, &rx);
	if (rx.on)
		/* splice() from a socket reads only TCP's queue, never the
		 * redirected one (trap 6): the peer must stop redirecting. */
		fl_slot_blind(rx.slot, rx.gen, "the application splices from the socket");
	fl_tx_begin(fd_out, len, 0);
	n = libc_splice(fd_in, off_in, fd_out, off_out, len, flags);
	fl_rx_end(&rx, n, 0);
	return n;
}

/* ------------------------------------------------------------- receive */

ssize_t fl_read(int fd, void *buf, size_t len)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc_read(fd, buf, len);
	fl_rx_end(&rx, n, 0);
	return n;
}

ssize_t fl_readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc_readv(fd, iov, iovcnt);
	fl_rx_end(&rx, n, 0);
	return n;
}

ssize_t fl_recv(int fd, void *buf, size_t len, int flags)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc_recv(fd, buf, len, flags);
	fl_rx_end(&rx, n, flags);
	return n;
}

ssize_t fl_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		    socklen_t *alen)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc_recvfrom(fd, buf, len, flags, addr, alen);
	fl_rx_end(&rx, n, flags);
	return n;
}

ssize_t fl_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc_recvmsg(fd, msg, flags);
	fl_rx_end(&rx, n, flags);
	return n;
}

ssize_t fl_read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc___read_chk(fd, buf, len, buflen);
	fl_rx_end(&rx, n, 0);
	return n;
}

ssize_t fl_recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc___recv_chk(fd, buf, len, buflen, flags);
	fl_rx_end(&rx, n, flags);
	return n;
}

ssize_t fl_recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			struct sockaddr *addr, socklen_t *alen)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = libc___recvfrom_chk(fd, buf, len, buflen, flags, addr, alen);
	fl_rx_end(&rx, n, flags);
	return n;
}
