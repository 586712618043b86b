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
 * Send: an enrolled socket's writes go through its send buffer (tx.h),
 * which coalesces small writes; a blocking writer that gets a budget ahead
 * of its reader waits for it (throttle.h).
 *
 * Hot path: one table lookup for an fd the shim does not track; for an
 * enrolled one, one atomic add after a read and a few loads of the slots
 * before a write. No allocation and no system call beyond the
 * application's own; no lock for a write that goes at once into an empty
 * send buffer (tx.c, fl_tx_may_skip_lock: request/response, ping-pong).
 * What is not free, and why it stays:
 * - a write that is held (the reader is still busy) takes its buffer's
 *   lock, and the first one of each batch asks the kernel once whether the
 *   fd still names the socket (SO_COOKIE, tx.c fl_tx_fd_ok): a
 *   close the shim cannot see (a raw system call) may have given the
 *   number to another file, whose writes must not be buffered for a dead
 *   socket (lifecycle's hidden-close test). The batch it starts saves the
 *   reader a message and a wakeup, which cost more;
 * - an enrolled read reads the coarse clock (a load in the vDSO, no
 *   system call; 0.03% of a ping-pong's samples): the start of an
 *   SO_RCVTIMEO wait, looked at only after a spurious EAGAIN (rx_retry.c);
 * - a read flushes buffered bytes first (fl_rx_begin says why); with
 *   nothing buffered that is one atomic load.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>

#include "calls.h"
#include "enroll/enroll.h"
#include "common/enroll_maps.h"
#include "socket/fdtable.h"
#include "base/libc.h"
#include "kernel/maps.h"
#include "rx/reset.h"
#include "rx/rx.h"
#include "rx/rx_inq.h"
#include "socket/rxq.h"
#include "kernel/slot.h"
#include "socket/sock.h"
#include "tx/tx.h"
#include "enroll/unpaired.h"

/* A non-blocking connect() finished: enroll before the first read or write. */
static void fl_first_use(int fd, struct fl_fd *e)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	uint32_t expect = FL_FD_CONNECTING;
	int saved = errno;

	/* IMPORTANT: this used to call the shim's own poll(), which first
	 * pushes every buffered socket into the kernel (fl_before_wait). A
	 * zero timeout never waits, but the flush is kept so that behaviour
	 * stays exactly as it was (cost: one atomic load when none is due). */
	if (fl_tx_any_pending())
		fl_tx_flush_all();
	/* Enrolling at once (FASTLOCAL_ENROLL_AFTER=0, or switched off: marked
	 * off at once) needs the handshake done: asked. Deferred, the fd only
	 * counts the bytes it moves, and bytes move only once it is
	 * connected: no need to ask (a poll less per connection). */
	if ((!fl_config()->enroll_after || !fl_config()->enabled) &&
	    libc_poll(&p, 1, 0) <= 0) { /* still connecting */
		errno = saved;
		return;
	}
	/* One thread enrolls (or defers); a failed connect simply stays
	 * untracked. */
	if (__atomic_compare_exchange_n(&e->state, &expect, FL_FD_UNKNOWN, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		fl_enroll_or_defer(fd);
	errno = saved;
}

/*
 * A write of a pending socket, or any call on a socket that is enrolled but
 * not yet safe to redirect into, counts itself in flight (e->inflight) so
 * that the check of who holds it runs only when no call of this process is
 * inside the kernel on it (enroll.c, fl_enroll_drain says why). Counted first,
 * then the state looked at again, both sequentially consistent: the check
 * sets the state to ENROLLING before it reads the count, so one of the two
 * sees the other. True if counted.
 */
static bool fl_inflight_take(struct fl_fd *e, uint32_t *seen)
{
	uint32_t st;

	__atomic_fetch_add(&e->inflight, 1, __ATOMIC_SEQ_CST);
	st = __atomic_load_n(&e->state, __ATOMIC_SEQ_CST);
	*seen = st;
	if (st == FL_FD_ENROLLED || st == FL_FD_PENDING)
		return true;
	__atomic_fetch_sub(&e->inflight, 1, __ATOMIC_SEQ_CST);
	return false;
}

/* The end of a counted call: the last one out runs the check if it is due. */
static void fl_inflight_drop(int fd, struct fl_fd *e)
{
	uint32_t f;
	int saved;

	if (__atomic_sub_fetch(&e->inflight, 1, __ATOMIC_SEQ_CST) ||
	    fl_fd_state(e) != FL_FD_ENROLLED)
		return;
	/* A check found us busy (READY_WANTED): ask now, the backoff is for
	 * answers of the kernel's, not for our own calls in flight. */
	f = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
	if ((f & FL_FDF_RX_READY) || (!(f & FL_FDF_READY_WANTED) && !fl_fd_retry_due(e)))
		return;
	saved = errno;
	fl_enroll_check_ready(fd, e);
	errno = saved;
}

/* The states other than enrolled-and-ready and untracked (fl_tracked_io). */
static struct fl_fd *fl_tracked_slow(int fd, struct fl_fd *e, uint32_t st, size_t len,
				     struct fl_fd **pend, bool *held, uint32_t *st_out)
{
	uint32_t seen;

	*st_out = FL_FD_UNKNOWN;
	for (;;) {
		if (st == FL_FD_CONNECTING) {
			fl_first_use(fd, e);
			st = fl_fd_state(e);
			if (st == FL_FD_CONNECTING)
				return NULL;
			continue;
		}
		if (st == FL_FD_ENROLLING) { /* another thread is at it: a moment */
			sched_yield();
			st = fl_fd_state(e);
			continue;
		}
		if (st == FL_FD_ENROLLED) {
			/* Not safe to redirect into yet: ask again when due (the
			 * check waits a moment for our calls in the kernel). */
			if (fl_fd_retry_due(e))
				fl_enroll_check_ready(fd, e);
			if (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_RX_READY) {
				*st_out = FL_FD_ENROLLED;
				return e;
			}
			if (fl_inflight_take(e, &seen)) {
				*held = true;
				*st_out = seen;
				return e;
			}
			st = fl_fd_state(e);
			continue;
		}
		if (st != FL_FD_PENDING)
			return NULL;
		if (len) { /* a write: it may be the one that enrolls */
			fl_pending_io(fd, e, len);
			len = 0;
			st = fl_fd_state(e);
			if (st != FL_FD_PENDING)
				continue;
			/* Plain TCP, counted in flight so that an enrolling
			 * thread waits for it (enroll.c, fl_enroll_drain). */
			if (fl_inflight_take(e, &seen)) {
				*held = true;
				*st_out = seen;
				return e;
			}
			st = fl_fd_state(e);
			continue;
		}
		if (!pend)
			return NULL;
		/* A read: counted in flight first, then the state checked
		 * again (fl_pending_io says why). */
		__atomic_fetch_add(&e->pend_readers, 1, __ATOMIC_SEQ_CST);
		st = __atomic_load_n(&e->state, __ATOMIC_SEQ_CST);
		if (st == FL_FD_PENDING) {
			*pend = e;
			return NULL;
		}
		__atomic_fetch_sub(&e->pend_readers, 1, __ATOMIC_SEQ_CST);
	}
}

/*
 * The fd's entry if it is enrolled (*st_out ENROLLED), before a call that
 * moves `len` bytes (0 for a read: its bytes are counted after it,
 * fl_rx_end). A pending fd that has now moved enough is enrolled first.
 * For a read of a pending fd, *pend is set to its entry, counted as a
 * reader in flight until fl_rx_end; pend is NULL for calls that are not
 * reads. A write of a pending fd returns its entry with *st_out PENDING:
 * plain TCP, but counted in flight. *held: the call is counted in flight
 * (fl_inflight_take) and must end with fl_inflight_drop.
 */
static inline struct fl_fd *fl_tracked_io(int fd, size_t len, struct fl_fd **pend,
					  uint32_t *st_out, bool *held)
{
	struct fl_fd *e = fl_fd_peek(fd);
	uint32_t st = fl_fd_state(e);

	if (pend)
		*pend = NULL;
	*held = false;
	*st_out = st;
	if (st == FL_FD_UNKNOWN)
		return NULL;
	if (__builtin_expect(st == FL_FD_ENROLLED &&
			     (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_RX_READY), 1))
		return e;
	return fl_tracked_slow(fd, e, st, len, pend, held, st_out);
}


static inline void fl_rx_begin(int fd, struct fl_rx *rx)
{
	struct fl_fd *e;
	uint32_t st;

	/*
	 * IMPORTANT: a read may wait for an answer to what this process
	 * buffered, on any socket: a process that writes to socket A and then
	 * blocks reading socket B, a pipe or a terminal may be waiting for a
	 * peer that waits for A's bytes (a proxy, a helper process, the same
	 * connection's request). So every buffered byte goes to the kernel
	 * before any read. Narrowing it would need to know, without a system
	 * call, that this read cannot block or cannot depend on those bytes:
	 * the shim knows neither for an fd it does not track (a pipe is as
	 * dangerous as a socket), MSG_DONTWAIT alone does not say the caller
	 * will not spin on it waiting for the answer, and a skipped flush
	 * would then wait for the timer (delivery's "request/response never
	 * waits for the flush timer"). The cost is small where it matters:
	 * one atomic load when nothing is buffered (request/response, where
	 * writes go at once), and otherwise the sends of bytes that were
	 * going to be sent anyway, only earlier.
	 */
	if (fl_tx_any_pending())
		fl_tx_flush_all();
	e = fl_tracked_io(fd, 0, &rx->pend, &st, &rx->held);

	rx->fd = fd;
	rx->e = e;
	rx->sock = e && st == FL_FD_ENROLLED ? fl_fd_sock(e, &rx->id) : NULL;
	rx->on = rx->sock != NULL; /* NULL: another thread is forgetting it */
	rx->q = rx->on ? fl_sock_rxq(rx->sock, rx->id.gen, false) : NULL;
	if (!fl_rxq_active(rx->q))
		rx->q = NULL;
}

/*
 * IMPORTANT: an urgent byte read out of band (MSG_OOB) is not counted. TCP
 * keeps it in its receive queue until a normal read passes the mark (and
 * skips it), so counting it could open the ordering gate with that queue
 * not empty: the next read, once the redirected queue is empty, would go to
 * tcp_recvmsg and sleep there while redirected bytes arrive
 * (docs/kernel.md#reorder, #asleep-in-tcp). The byte skipped is not counted
 * either: a direction that carried urgent data stays on TCP, where the
 * urgent pointer is anyway (fl_tx_urgent).
 */
static inline void fl_rx_end(const struct fl_rx *rx, ssize_t n, int flags)
{
	bool counted = n > 0 && !(flags & (MSG_PEEK | MSG_OOB));

	if (rx->on && counted)
		fl_slot_consume(rx->id.slot, rx->id.gen, (uint64_t)n);
	if (rx->held)
		fl_inflight_drop(rx->fd, rx->e);
	if (rx->pend)
		fl_pending_read_done(rx->fd, rx->pend, counted ? (uint64_t)n : 0);
}

/* The kernel's UIO_MAXIOV: more iovecs in one call are refused, by
 * writev/readv with EINVAL and by sendmsg/recvmsg with EMSGSIZE. */
#define FL_UIO_MAXIOV 1024

/*
 * IMPORTANT: the send buffer copies the application's iovecs itself, so it
 * must only see what the kernel would accept: at most FL_UIO_MAXIOV of
 * them, and an array that is there when it has entries. Anything else goes
 * to the kernel as it is, which fails it as TCP does and moves nothing.
 * (A bad iov_base inside a valid array is the application's own fault the
 * shim cannot see without a system call: docs/semantics.md.)
 */
static inline bool fl_iov_ok(const struct iovec *iov, size_t n)
{
	return n <= FL_UIO_MAXIOV && (iov || !n);
}

static size_t fl_iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;
	int i;

	for (i = 0; iov && i < n; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * Urgent data needs TCP's urgent pointer, and the redirect path has none:
 * the byte would arrive in band, without POLLPRI or SIGURG. So an enrolled
 * socket's MSG_OOB send, and every later send of it, goes over TCP (the
 * verdict honours SEND_TCP; redirect -> TCP is order-safe). IMPORTANT: set
 * before the send buffer is flushed (tx.c flushes it for MSG_OOB), so that
 * buffered bytes go over TCP too, in front of the urgent byte.
 */
static inline void fl_tx_urgent(const struct fl_fd *e, int flags)
{
	struct fl_sock_id id;

	if (e && (flags & MSG_OOB) && fl_compat_on() && fl_fd_sock(e, &id))
		fl_slot_send_tcp(id.slot, id.gen, "an urgent (MSG_OOB) send");
}

/*
 * The write family: the fd looked up (a pending fd that has now moved
 * enough is enrolled first, fl_tracked_io), then the one call into tx.h,
 * which sends or buffers. c->len is the bytes the call moves.
 */
static ssize_t fl_io_send(int fd, struct fl_tx_call *c)
{
	uint32_t st;
	bool held;
	struct fl_fd *e = fl_tracked_io(fd, c->len, NULL, &st, &held);
	struct fl_fd *held_e = held ? e : NULL; /* drop at the end */
	bool counts = c->kind != FL_TX_SENDFILE && c->kind != FL_TX_SPLICE;
	ssize_t r;
	int saved;

	if (st != FL_FD_ENROLLED) /* pending: plain TCP's */
		e = NULL;
	/* A zero-copy send wants TCP's own path (SO_ZEROCOPY, sock_calls.c). */
	if (e && (c->kind == FL_TX_SEND || c->kind == FL_TX_SENDMSG) &&
	    (c->flags & MSG_ZEROCOPY) && fl_compat_on() && fl_unenroll(fd, "MSG_ZEROCOPY") == 0)
		e = NULL;
	fl_tx_urgent(e, c->flags);
	r = fl_tx_send(e, fd, c);
	if (c->stale)
		e = NULL;
	/* After a write on an enrolled socket: a reset is reported once
	 * (reset.h). Not for sendfile or splice, whose errors are the
	 * kernel's own. */
	if (e && counts && r < 0)
		fl_reset_report_once(fd, r);
	if (held_e || c->stale) {
		saved = errno;
		if (held_e)
			fl_inflight_drop(fd, held_e);
		if (c->stale)
			fl_fd_clear(fd); /* a stale entry: the fd names another file now */
		errno = saved;
	}
	if (e && counts && r > 0)
		fl_unpaired_after_send(fd, e);
	return r;
}

/* ------------------------------------------------------------- send */

ssize_t fl_send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec v = { (void *)buf, len };
	struct fl_tx_call c = { .kind = FL_TX_SEND, .flags = flags, .iov = &v, .iovcnt = 1,
				.len = len };

	return fl_io_send(fd, &c);
}

ssize_t fl_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
		  socklen_t alen)
{
	struct iovec v = { (void *)buf, len };
	struct fl_tx_call c = { .kind = FL_TX_SENDTO, .flags = flags, .iov = &v, .iovcnt = 1,
				.len = len, .addr = addr, .alen = alen };

	return fl_io_send(fd, &c);
}

ssize_t fl_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct fl_tx_call c = { .kind = FL_TX_SENDMSG, .flags = flags, .msg = msg };

	/* A header the kernel refuses (EFAULT, EMSGSIZE) fails before the
	 * socket is looked at: no byte moves, nothing waits (fl_iov_ok). */
	if (!msg || !fl_iov_ok(msg->msg_iov, msg->msg_iovlen))
		return libc_sendmsg(fd, msg, flags);
	c.iov = msg->msg_iov;
	c.iovcnt = (int)msg->msg_iovlen;
	c.len = fl_iov_len(msg->msg_iov, (int)msg->msg_iovlen);
	return fl_io_send(fd, &c);
}

/*
 * sendmmsg() of an enrolled socket: its messages one by one through
 * fl_sendmsg, as the kernel's __sys_sendmmsg sends them (each its own
 * sendmsg; a failure after the first returns the count sent, the error
 * lost, as the kernel's does). IMPORTANT: the kernel's own call would
 * reach the socket past the shim's send buffer, and its bytes would
 * overtake the ones held there. Every other fd (UDP, the main user)
 * gets the kernel's call as it is: one system call for the batch.
 */
int fl_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	unsigned int i;
	ssize_t n;

	if (fl_fd_state(fl_fd_peek(fd)) != FL_FD_ENROLLED || !vec)
		return libc_sendmmsg(fd, vec, vlen, flags);
	if (vlen > FL_UIO_MAXIOV)
		vlen = FL_UIO_MAXIOV; /* the kernel's cap, UIO_MAXIOV */
	for (i = 0; i < vlen; i++) {
		n = fl_sendmsg(fd, &vec[i].msg_hdr, flags);
		if (n < 0)
			return i ? (int)i : -1;
		vec[i].msg_len = (unsigned int)n;
	}
	return (int)i;
}

ssize_t fl_write(int fd, const void *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };
	struct fl_tx_call c = { .kind = FL_TX_WRITE, .iov = &v, .iovcnt = 1, .len = len };

	return fl_io_send(fd, &c);
}

ssize_t fl_writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct fl_tx_call c = { .kind = FL_TX_WRITEV, .iov = iov, .iovcnt = iovcnt };

	/* A count or array the kernel refuses (EINVAL, EFAULT) fails before
	 * the socket is looked at (fl_iov_ok). */
	if (iovcnt < 0 || !fl_iov_ok(iov, (size_t)iovcnt))
		return libc_writev(fd, iov, iovcnt);
	c.len = fl_iov_len(iov, iovcnt);
	return fl_io_send(fd, &c);
}

ssize_t fl_sendfile(int out_fd, int in_fd, off_t *offset, size_t count, int large)
{
	struct fl_tx_call c = { .kind = FL_TX_SENDFILE, .len = count, .in_fd = in_fd,
				.offset = offset, .large = large };

	return fl_io_send(out_fd, &c);
}

/* ------------------------------------------------------------- receive */

/* The receive family: the fd looked up (fl_rx_begin), the one call into
 * rx.h, and the read counted (fl_rx_end). A splice rx.h does not serve is
 * a write into its pipe's other end (out). */
static ssize_t fl_io_recv(int fd, struct fl_rx_call *c, struct fl_tx_call *out)
{
	struct fl_rx rx;
	ssize_t n;

	fl_rx_begin(fd, &rx);
	n = fl_rx_recv(&rx, c);
	if (!c->served && out)
		n = fl_io_send(c->sp->fd_out, out);
	fl_rx_end(&rx, n, c->flags);
	return n;
}

ssize_t fl_read(int fd, void *buf, size_t len)
{
	struct fl_rx_call c = { .kind = FL_RX_READ, .buf = buf, .len = len };

	return fl_io_recv(fd, &c, NULL);
}

ssize_t fl_readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct fl_rx_call c = { .kind = FL_RX_READV, .iov = iov, .iovcnt = iovcnt };

	/* A count the kernel refuses (EINVAL) fails before the socket is
	 * looked at. */
	if (iovcnt < 0 || iovcnt > FL_UIO_MAXIOV)
		return libc_readv(fd, iov, iovcnt);
	return fl_io_recv(fd, &c, NULL);
}

ssize_t fl_recv(int fd, void *buf, size_t len, int flags)
{
	return fl_recvfrom(fd, buf, len, flags, NULL, NULL);
}

ssize_t fl_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		    socklen_t *alen)
{
	struct fl_rx_call c = { .kind = FL_RX_RECVFROM, .flags = flags, .buf = buf, .len = len,
				.addr = addr, .alen = alen };

	return fl_io_recv(fd, &c, NULL);
}

ssize_t fl_splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len,
		  unsigned int flags)
{
	const struct fl_rx_splice sp = { .off_in = off_in, .off_out = off_out, .fd_out = fd_out,
					 .flags = flags };
	struct fl_rx_call c = { .kind = FL_RX_SPLICE, .len = len, .sp = &sp };
	struct fl_tx_call out = { .kind = FL_TX_SPLICE, .len = len, .in_fd = fd_in,
				  .offset = off_out, .off_in = off_in, .splice_flags = flags };

	return fl_io_recv(fd_in, &c, &out);
}

/*
 * A socket received through SCM_RIGHTS that some process enrolled is adopted,
 * as after exec (adopt.c): its reads then get the fixes of the redirect path
 * (tcp_bpf's spurious EAGAIN when another holder's write wakes a reader,
 * docs/kernel.md#spurious-eagain; MSG_WAITALL, #waitall) and are counted,
 * so its peer's gate can open. Only when the message carried rights: one
 * look at the control data otherwise.
 */
static void fl_adopt_received(const struct msghdr *msg)
{
	struct cmsghdr *cm;
	int saved = errno;

	for (cm = CMSG_FIRSTHDR((struct msghdr *)msg); cm; cm = CMSG_NXTHDR((struct msghdr *)msg, cm)) {
		size_t i, n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len < CMSG_LEN(0))
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int rfd;

			memcpy(&rfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (rfd >= 0 && fl_fd_state(fl_fd_peek(rfd)) == FL_FD_UNKNOWN &&
			    fl_is_tcp_socket(rfd))
				fl_enroll_adopt(rfd);
		}
	}
	errno = saved;
}

ssize_t fl_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct fl_rx_call c = { .kind = FL_RX_RECVMSG, .flags = flags, .msg = msg };
	ssize_t n;

	/* More iovecs than the kernel takes: it fails the call (EMSGSIZE)
	 * before looking at the socket, and so must we. */
	if (msg && msg->msg_iovlen > FL_UIO_MAXIOV)
		return libc_recvmsg(fd, msg, flags);
	n = fl_io_recv(fd, &c, NULL);
	if (n >= 0 && msg && msg->msg_control && msg->msg_controllen >= CMSG_LEN(0))
		fl_adopt_received(msg);
	return n;
}

/* The _chk variants: glibc checks len against buflen, then the call is the
 * plain one. */
ssize_t fl_read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		return libc___read_chk(fd, buf, len, buflen); /* fails the check */
	return fl_read(fd, buf, len);
}

ssize_t fl_recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		return libc___recv_chk(fd, buf, len, buflen, flags);
	return fl_recvfrom(fd, buf, len, flags, NULL, NULL);
}

ssize_t fl_recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			struct sockaddr *addr, socklen_t *alen)
{
	if (len > buflen)
		return libc___recvfrom_chk(fd, buf, len, buflen, flags, addr, alen);
	return fl_recvfrom(fd, buf, len, flags, addr, alen);
}

/*
 * SIOCATMARK of an enrolled socket: the kernel knows TCP's bytes only, so
 * it is "at the mark" as soon as the TCP bytes in front of the urgent byte
 * are read, with redirected ones (in its queue or held in q) still unread.
 * Those always come first (the redirect -> TCP order), so with any of them
 * unread the answer is 0; otherwise the kernel's.
 */
static int fl_atmark(int fd, struct fl_fd *e, int *arg)
{
	struct fl_rxq *q = fl_fd_rxq(e, false);
	int redirected = 0;

	if ((q && fl_rxq_held(q)) || (!libc_ioctl(fd, FIONREAD, &redirected) && redirected > 0)) {
		*arg = 0;
		return 0;
	}
	return libc_ioctl(fd, SIOCATMARK, arg);
}

/* FIONREAD/SIOCINQ count both queues of an enrolled socket
 * (docs/kernel.md#fionread, rx_inq.h), and the bytes the shim took out early;
 * SIOCATMARK sees them too. */
int fl_ioctl(int fd, unsigned long req, void *arg)
{
	struct fl_sock_id id;
	struct fl_sock *s;
	struct fl_rxq *q;
	struct fl_fd *e;
	int r;

	if (req == SIOCATMARK && arg && fl_compat_on()) {
		e = fl_fd_peek(fd);
		if (fl_fd_state(e) == FL_FD_ENROLLED)
			return fl_atmark(fd, e, (int *)arg);
	}

	if ((req == FIONREAD || req == SIOCINQ) && arg && fl_compat_on()) {
		e = fl_fd_peek(fd);
		/* A socket that left the sockhash through another process
		 * (FL_SLOT_LEFT) counts both queues itself again. */
		s = fl_fd_state(e) == FL_FD_ENROLLED ? fl_fd_sock(e, &id) : NULL;
		if (s && fl_slot_left(id.slot))
			fl_fd_forget_socket(fd);
		s = fl_fd_state(e) == FL_FD_ENROLLED ? fl_fd_sock(e, &id) : NULL;
		if (s) {
			q = fl_sock_rxq(s, id.gen, false);
			r = fl_rx_inq_app(fd, q && fl_rxq_inline_forced(q), (int *)arg);
			if (!r && q)
				*(int *)arg += (int)fl_rxq_held(q);
			return r;
		}
	}
	return libc_ioctl(fd, req, arg);
}

int fl_sockatmark(int fd)
{
	int at = 0;

	return fl_ioctl(fd, SIOCATMARK, &at) ? -1 : at;
}

/* SO_PEEK_OFF of an enrolled socket is the shim's (rxq.h), and so is
 * SO_OOBINLINE while the shim holds it on (rx_oob.c). */
int fl_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct fl_rxq *q;
	struct fl_fd *e;

	if (level == SOL_SOCKET && name == SO_OOBINLINE && val && len && *len >= sizeof(int)) {
		e = fl_fd_peek(fd);
		q = fl_fd_state(e) == FL_FD_ENROLLED ? fl_fd_rxq(e, false) : NULL;
		if (q && fl_rxq_inline_forced(q)) {
			*(int *)val = 0;
			*len = sizeof(int);
			return 0;
		}
	}

	if (level == SOL_SOCKET && name == SO_PEEK_OFF && val && len && *len >= sizeof(int) &&
	    fl_compat_on()) {
		e = fl_fd_peek(fd);
		q = fl_fd_state(e) == FL_FD_ENROLLED ? fl_fd_rxq(e, false) : NULL;
		if (q) {
			*(int *)val = fl_rxq_peek_off(q);
			*len = sizeof(int);
			return 0;
		}
	}
	return libc_getsockopt(fd, level, name, val, len);
}
