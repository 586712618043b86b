// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tx.c - corked delivery: the one send entry (fl_tx_send) and the per-socket
 * send buffer's filling; handing it to the kernel is tx_flush.c's. */
#include "tx.h"
#include "tx_flush.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include "common/clock.h"
#include "base/config.h"
#include "socket/fdtable.h"
#include "flusher.h"
#include "base/epoll_sets.h"
#include "base/init_hooks.h"
#include "base/libc.h"
#include "base/log.h"
#include "base/own_fds.h"
#include "kernel/maps.h"
#include "kernel/slot.h"
#include "linger.h"
#include "socket/sock.h"
#include "throttle.h"
#include "tx_policy.h"
#include "tx_split.h"

#define FL_THROUGH_IOV 64 /* iovecs sent along with the buffer in one call */

/* ------------------------------------------------------------- the object */

static void fl_tx_closing(struct fl_sock *s, int fd);
static void fl_tx_retire(struct fl_sock *s);

/* What releasing an fd's reference does to the send buffer (sock.h). */
static const struct fl_sock_ops fl_tx_sock_ops = {
	.closing = fl_tx_closing,
	.retire = fl_tx_retire,
};

struct fl_sock *fl_tx_attach(int fd, uint32_t slot, uint64_t gen, uint64_t cookie)
{
	const struct fl_config *cfg = fl_config();
	struct fl_sock *s = fl_sock_new(slot, gen, cookie, &fl_tx_sock_ops);
	struct fl_tx *tx;
	int nodelay = 0, cork = 0;
	socklen_t olen = sizeof(nodelay);

	if (!s)
		return NULL;
	tx = &s->tx;
	if (!tx->made) {
		/* A new object: its buffer once, kept while it is recycled. */
		tx->buf = malloc(cfg->flush_bytes);
		if (!tx->buf) {
			/* Memory is short: the socket is enrolled all the same,
			 * without a send buffer (its writes go straight to the
			 * kernel, fl_tx_of); the object still holds its identity. */
			fl_sock_publish(s);
			return s;
		}
		fl_lock_init(&tx->lock);
		__atomic_store_n(&tx->made, true, __ATOMIC_RELEASE);
	}
	fl_lock(&tx->lock);
	tx->fd = fd;
	tx->len = 0;
	tx->err = 0;
	tx->first_ns = 0;
	tx->hold = (struct fl_hold){ 0 };
	tx->lone = 0;
	tx->lone_skip = 0;
	/* Accepted sockets inherit TCP_NODELAY from their listener. With
	 * batching off the state only counts the fds (io.c never sends
	 * through it). */
	tx->flags = (!libc_getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &olen) && nodelay) ?
		    FL_TXF_NODELAY : 0;
	/* TCP_CORK set while the socket was still pending or waiting. */
	olen = sizeof(cork);
	if (!libc_getsockopt(fd, IPPROTO_TCP, TCP_CORK, &cork, &olen) && cork)
		tx->flags |= FL_TXF_CORK;
	if (!cfg->batch)
		tx->flags |= FL_TXF_THROUGH;
	fl_unlock(&tx->lock);
	fl_sock_publish(s);
	return s;
}

/* The send buffer of s, or NULL: s has none (memory was short when it
 * was given to its socket, fl_tx_attach). */
static inline struct fl_tx *fl_tx_of(struct fl_sock *s)
{
	return s && __atomic_load_n(&s->tx.made, __ATOMIC_ACQUIRE) ? &s->tx : NULL;
}

/* ------------------------------------------------------------- buffer */

/* Appends up to room bytes of the iovec. */
static size_t fl_tx_append(struct fl_tx *tx, const struct iovec *iov, int iovcnt, size_t room)
{
	size_t done = 0;
	int i;

	if (iovcnt == 1) { /* write(), send(): one piece, no loop (the hot path) */
		done = iov[0].iov_len < room ? iov[0].iov_len : room;
		memcpy(tx->buf + tx->len, iov[0].iov_base, done);
	} else {
		for (i = 0; i < iovcnt && done < room; i++) {
			size_t n = iov[i].iov_len < room - done ? iov[i].iov_len : room - done;

			memcpy(tx->buf + tx->len + done, iov[i].iov_base, n);
			done += n;
		}
	}
	if (done)
		fl_tx_wrote(tx);
	if (done && !tx->len) {
		tx->len = (uint32_t)done;
		tx->checked_len = 0;
		fl_tx_mark_pending(tx);
	} else {
		tx->len += (uint32_t)done;
	}
	return done;
}

/*
 * The buffer and the application's bytes in one sendmsg(), so that a write
 * that goes at once never costs two calls (or two wakeups of the reader).
 * Returns what the application's call returns.
 */
static ssize_t fl_tx_through(struct fl_tx *tx, int fd, const struct iovec *iov, int iovcnt,
			     size_t len, int flags, const struct msghdr *msg, enum fl_ustat why)
{
	struct iovec v[FL_THROUGH_IOV + 1];
	struct msghdr m = { 0 };
	size_t pending = tx->len;
	ssize_t n;
	int i, more, waited;

	if (msg)
		m = *msg;
	/* Handing bytes to the kernel: wait here if the reader is a budget
	 * behind. A signal that ends the wait ends the write (the buffer
	 * keeps its bytes for the next write or the timer). */
	waited = fl_throttle(fd, fl_tx_sock(tx)->slot, pending + len, flags, &tx->hold);
	if (waited > 0)
		return (errno = EINTR, -1);
	if (waited < 0) {
		fl_tx_fail(tx, EBADF); /* the fd names another file now */
		tx->err = 0;
		pending = 0;
	}
	if (!pending)
		goto direct;
	if (iovcnt > FL_THROUGH_IOV) {
		/* Rare: flush first, then the application's call as it is. */
		if (fl_tx_flush_locked(tx, fd, !(flags & MSG_DONTWAIT), why))
			return tx->len ? (errno = EAGAIN, -1) : (errno = tx->err, tx->err = 0, -1);
		goto direct;
	}
	v[0].iov_base = tx->buf;
	v[0].iov_len = pending;
	for (i = 0; i < iovcnt; i++)
		v[i + 1] = iov[i];
	m.msg_iov = v;
	m.msg_iovlen = (size_t)iovcnt + 1;
	more = fl_tx_nagle_more(tx, pending + len, flags);
	do
		n = libc_sendmsg(fd, &m, flags | more);
	while (n < 0 && errno == EINTR && !tx->len);
	if (more && n > 0)
		fl_tx_nagle_push(tx, fd);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -1; /* nothing went: the kernel is not writable */
		fl_tx_fail(tx, errno);
		errno = tx->err;
		tx->err = 0;
		return -1;
	}
	if (n > 0) {
		fl_tx_wrote(tx); /* this write went along */
		fl_tx_count(tx, why, (size_t)n);
	}
	if ((size_t)n < pending) {
		fl_tx_advance(tx, (size_t)n);
		errno = EAGAIN; /* a partial send of our own bytes only */
		return -1;
	}
	fl_tx_advance(tx, pending);
	return n - (ssize_t)pending;
direct:
	m.msg_iov = (struct iovec *)iov;
	m.msg_iovlen = (size_t)iovcnt;
	return fl_tx_send_split(tx, fd, &m, flags, len);
}

/*
 * Coalescing pays only on the redirect path with a reader that is busy.
 * The peer's counters are looked at when a batch starts and then every
 * 4 KiB buffered (fl_txp_peer_stale says why).
 */
static bool fl_tx_peer_busy(struct fl_tx *tx)
{
	bool asked = __atomic_load_n(&tx->asked, __ATOMIC_RELAXED);

	if (!fl_txp_peer_stale(tx->len, tx->checked_len, asked))
		return tx->peer_busy;
	tx->checked_len = tx->len;
	tx->peer_busy = fl_tx_peer_unread(tx);
	return tx->peer_busy;
}

/* False while this socket's holds are skipped: its recent batches each went
 * alone (tx_policy.h, FL_LONE_BATCHES), so this write, which a busy reader
 * would have had held, goes at once. Counts the write against the skip. */
static bool fl_tx_hold_pays(struct fl_tx *tx)
{
	if (!tx->lone_skip)
		return true;
	tx->lone_skip--;
	return false;
}

/* The application's call as it is, past the buffer (which is empty or not ours). */
static ssize_t fl_tx_bypass(struct fl_tx *tx, int fd, const struct iovec *iov, int iovcnt,
			    size_t len, int flags, const struct msghdr *msg)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	return fl_tx_sendmsg_len(tx, fd, msg ? msg : &m, flags, len);
}

/*
 * The common write of request/response and ping-pong: nothing buffered,
 * nothing asked to be held, the direction redirecting and its reader with
 * nothing unread (or a write the policy never holds). True if it may go
 * to the kernel without tx->lock (fl_tx_unlocked).
 *
 * Why no lock is needed for it: the lock orders a write with the bytes
 * buffered before it and with a flush in flight, and guards the buffer's
 * fields. first_ns == 0, loaded with acquire, says the buffer is empty and
 * that the flush that emptied it has handed its bytes to the kernel
 * (fl_tx_mark_empty stores it with release, after the send). A write
 * buffered earlier by this thread, or by another thread that the
 * application ordered before this one (by any synchronisation), made
 * first_ns nonzero, visibly: such a write takes the lock. A write of
 * another thread concurrent with this one may land on either side of it,
 * as concurrent TCP writes may. Nothing of tx is written here (an err
 * pending takes the lock), so a retire (fl_sock_release drops only
 * buffered bytes) has nothing to wait for. On TCP the throttle's gate
 * hold keeps its state in tx->hold, which the lock guards: there the
 * locked path runs. Uncontended, the lock (then a pthread mutex) cost
 * two atomic read-modify-writes and two library calls per write, 1.6% of
 * the CPU of a pinned 64 B ping-pong (perf, cpu-clock); the locked path
 * keeps it for everything that touches the buffer, where threads may
 * race on it.
 */
static bool fl_tx_may_skip_lock(struct fl_tx *tx, uint64_t gen, size_t len, int flags,
				const struct msghdr *msg)
{
	const uint32_t txf = __atomic_load_n(&tx->flags, __ATOMIC_RELAXED);
	uint32_t budget;
	bool redirecting;
	uint64_t unread;
	enum fl_txp_hold h;

	/* first_ns first: a stream of small writes finds bytes buffered and
	 * is done with this after one load. A write larger than a slice goes
	 * the locked way, into tx_split.h's slices: sent whole it would stay
	 * on TCP after a flow-control fallback halfway through. */
	if (__atomic_load_n(&tx->first_ns, __ATOMIC_ACQUIRE) || !len || len > FL_SPLIT_BYTES ||
	    (flags & (MSG_MORE | MSG_OOB | MSG_ZEROCOPY | MSG_FASTOPEN)) ||
	    (msg && (msg->msg_name || msg->msg_controllen)) ||
	    (txf & (FL_TXF_MORE | FL_TXF_CORK)) ||
	    __atomic_load_n(&tx->err, __ATOMIC_RELAXED) || !fl_sock_is(fl_tx_sock(tx), gen))
		return false;
	h = fl_txp_hold(txf, fl_tx_shared(tx), false, len, fl_config()->flush_bytes);
	if (h == FL_TXP_HOLD)
		return false;
	unread = fl_slot_peer_unread(fl_tx_sock(tx)->slot, &budget, &redirecting);
	return redirecting && (h == FL_TXP_SEND || !unread);
}

/* That write: what fl_tx_through does with an empty buffer, without the
 * gate hold (the direction is redirecting: it has nothing to hold for). */
static ssize_t fl_tx_unlocked(struct fl_tx *tx, int fd, const struct iovec *iov, int iovcnt,
			      size_t len, int flags, const struct msghdr *msg)
{
	struct msghdr m = { 0 };

	if (msg)
		m = *msg;
	m.msg_iov = (struct iovec *)iov;
	m.msg_iovlen = (size_t)iovcnt;
	/* A reader a budget behind is waited for; -1 (the fd names another
	 * file now) leaves nothing to drop, and the call goes as it is. */
	if (fl_throttle(fd, fl_tx_sock(tx)->slot, len, flags, NULL) > 0)
		return (errno = EINTR, -1); /* a signal ended the wait and the write */
	return fl_tx_sendmsg_len(tx, fd, &m, flags, len);
}

/*
 * A write of an enrolled socket with batching: sends or buffers the iovec
 * (len bytes) under the policy of tx.h (msg: sendmsg's header, else NULL;
 * gen: the socket's generation when the call began, fl_fd_sock). Returns what the
 * application's call returns (with errno set).
 */
static ssize_t fl_tx_buffered(struct fl_tx *tx, uint64_t gen, int fd, const struct iovec *iov,
			      int iovcnt, size_t len, int flags, const struct msghdr *msg)
{
	const uint32_t cap = fl_config()->flush_bytes;
	size_t took;
	bool more = flags & MSG_MORE, hold;
	ssize_t r;

	if (fl_tx_may_skip_lock(tx, gen, len, flags, msg))
		return fl_tx_unlocked(tx, fd, iov, iovcnt, len, flags, msg);
	fl_lock(&tx->lock);
	if (!fl_sock_is(fl_tx_sock(tx), gen)) {
		/* The socket this fd named is gone (a close the shim missed). */
		fl_unlock(&tx->lock);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	if (tx->err) {
		int err = tx->err;

		tx->err = 0;
		/* A broken connection: the kernel reports it on this very call,
		 * with SIGPIPE as the application's flags ask. */
		if (err == EPIPE || err == ECONNRESET) {
			fl_unlock(&tx->lock);
			return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
		}
		/* Another failure of a background flush: reported on the next
		 * call, as TCP reports its asynchronous errors. */
		errno = err;
		fl_unlock(&tx->lock);
		return -1;
	}
	/* Nothing to send: nothing to hold (held, a zero-length write would
	 * "take" nothing and fail with EAGAIN), and the kernel's answer is
	 * TCP's. TCP pushes nothing for it either, MSG_MORE or not. */
	if (!len) {
		fl_unlock(&tx->lock);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	/* Bytes of another call always stay behind the buffer's. Out-of-band,
	 * zero-copy and addressed sends are not ours to hold. */
	if ((flags & (MSG_OOB | MSG_ZEROCOPY | MSG_FASTOPEN)) ||
	    (msg && (msg->msg_name || msg->msg_controllen))) {
		r = fl_tx_flush_locked(tx, fd, !(flags & MSG_DONTWAIT), FL_USTAT_FLUSH_WRITE);
		tx->err = 0; /* reported right here */
		fl_unlock(&tx->lock);
		if (r)
			return (errno = (r == -EAGAIN ? EAGAIN : -(int)r), -1);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	/* Held or not (tx_policy.h); the reader is looked at only when that
	 * decides: under TCP_NODELAY on every write, else now and then. */
	switch (fl_txp_hold(tx->flags, fl_tx_shared(tx), more, len, cap)) {
	case FL_TXP_HOLD:
		hold = true;
		break;
	case FL_TXP_IF_BUSY:
		hold = ((tx->flags & FL_TXF_NODELAY) ? fl_tx_peer_unread(tx) : fl_tx_peer_busy(tx)) &&
		       fl_tx_hold_pays(tx);
		break;
	default:
		hold = false;
	}
	if (!hold || tx->len + len > cap) {
		/* Goes now: with what is buffered, in one call, in order. A batch
		 * buffered through another fd number is checked to still be ours. */
		if (tx->len && !fl_tx_fd_names(tx, fd)) {
			fl_tx_fail(tx, EBADF);
			tx->err = 0;
		}
		if (!hold || fl_txp_large(len, cap)) {
			enum fl_ustat why = fl_txp_flush_why(tx->flags, fl_tx_shared(tx), more, hold, len, cap);

			tx->flags &= ~FL_TXF_MORE;
			r = fl_tx_through(tx, fd, iov, iovcnt, len, flags & ~MSG_MORE, msg, why);
			fl_unlock(&tx->lock);
			return r;
		}
		/* Held, but the buffer is full: make room first. */
		r = fl_tx_push(tx, fd, flags, true, FL_USTAT_FLUSH_FULL);
		if (r == -EINTR) {
			fl_unlock(&tx->lock);
			return (errno = EINTR, -1); /* a signal ended the wait and the write */
		}
		if (r && r != -EAGAIN) {
			errno = tx->err;
			tx->err = 0;
			fl_unlock(&tx->lock);
			return -1;
		}
	}
	if (!tx->len && !fl_tx_fd_names(tx, fd)) {
		/* The fd no longer names our socket (closed behind the shim's
		 * back and reused): this is not ours to buffer. Asked of the
		 * kernel for a new fd number only (tx_flush.c, fl_tx_fd_names). */
		fl_unlock(&tx->lock);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	took = fl_tx_append(tx, iov, iovcnt, cap - tx->len);
	tx->fd = fd;
	/* Written only when it changes: the flusher and fl_tx_may_skip_lock
	 * read this line without the lock. */
	if (more != !!(tx->flags & FL_TXF_MORE))
		tx->flags ^= FL_TXF_MORE;
	if (!took) {
		fl_unlock(&tx->lock);
		errno = EAGAIN; /* full, and the kernel is not writable either */
		return -1;
	}
	/* A full buffer goes now (the reader gets a big batch). */
	if (tx->len >= cap && !(tx->flags & FL_TXF_CORK))
		fl_tx_push(tx, fd, flags, false, FL_USTAT_FLUSH_FULL);
	fl_unlock(&tx->lock);
	return (ssize_t)took;
}

/*
 * IMPORTANT: sendfile() of a small range while the buffer holds bytes or the
 * socket is corked reads the range into the buffer (pread) instead of
 * handing it to the kernel after the buffer. A web server's response is
 * headers written under TCP_CORK and the body sent with sendfile (nginx's
 * tcp_nopush): this way the reader gets the two as one message with one
 * wakeup, as TCP sends them as one segment, and the flush costs no extra
 * system call (the pread replaces the sendfile). TCP's sendfile does not
 * wait for the range to be read either: it queues the file's pages. Larger
 * ranges, an fd the kernel refuses to pread (a pipe, a socket), or a
 * NULL offset (the file position would need two more calls) go to the
 * kernel as they are.
 */
/* A larger range's pages go by the kernel's sendfile, without a copy. */
#define FL_SENDFILE_COPY_MAX (32u << 10)

/* sendfile() into the buffer when it holds bytes or is corked. *took: it
 * was done here, and the return value is sendfile's; else the caller
 * flushes and calls the kernel's. */
static ssize_t fl_tx_sendfile_copy(struct fl_tx *tx, uint64_t gen, int fd, int in_fd,
				   off_t *offset, size_t count, bool *took)
{
	const uint32_t cap = fl_config()->flush_bytes;
	bool corked;
	ssize_t n;

	*took = false;
	if (!offset || !count || count > FL_SENDFILE_COPY_MAX)
		return 0;
	fl_lock(&tx->lock);
	corked = tx->flags & (FL_TXF_CORK | FL_TXF_MORE);
	if (!fl_sock_is(fl_tx_sock(tx), gen) || tx->err || (tx->flags & FL_TXF_THROUGH) || (!tx->len && !corked) ||
	    tx->len + count > cap ||
	    !fl_tx_fd_names(tx, fd))
		goto out;
	n = pread(in_fd, tx->buf + tx->len, count, *offset);
	if (n < 0)
		goto out; /* the kernel's sendfile reports it, or does it */
	*took = true;
	if (n > 0) {
		if (!tx->len) {
			tx->checked_len = 0;
			tx->len = (uint32_t)n;
			fl_tx_mark_pending(tx);
		} else {
			tx->len += (uint32_t)n;
		}
		fl_tx_wrote(tx);
		tx->fd = fd;
		*offset += n;
		fl_ustat_add(FL_USTAT_SENDFILE_COPIED, 1);
	}
	/* Like a write without MSG_MORE: it ends a MSG_MORE run and goes
	 * with it; under TCP_CORK it waits for the uncork. */
	tx->flags &= ~FL_TXF_MORE;
	if (!(tx->flags & FL_TXF_CORK))
		fl_tx_push(tx, fd, 0, false, FL_USTAT_FLUSH_WRITE);
	fl_unlock(&tx->lock);
	return n;
out:
	fl_unlock(&tx->lock);
	return 0;
}

/* Pushes the buffer into the kernel even on a non-blocking socket, for
 * at most wait_ms, and drops what is left then if drop: the application's
 * close() or shutdown() must not lose bytes its writes were told went,
 * nor send its FIN before them. */
static void fl_tx_drain_for(struct fl_tx *tx, int fd, int wait_ms, bool drop)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int tries = 0;

	fl_lock(&tx->lock);
	if (tx->len && !fl_tx_fd_ok(tx, fd))
		fl_tx_fail(tx, EBADF);
	while (tx->len && fl_tx_flush_locked(tx, fd, false, FL_USTAT_FLUSH_CLOSE) == -EAGAIN &&
	       tries++ < wait_ms / 100) {
		fl_unlock(&tx->lock);
		/* IMPORTANT: the shim's own poll() used to run here, and it
		 * first pushes every other buffered socket into the kernel
		 * (fl_before_wait): the reader this close waits for may itself
		 * wait for those bytes. Kept explicitly. */
		fl_tx_flush_all();
		libc_poll(&p, 1, 100); /* at most a minute for a reader that stopped */
		fl_lock(&tx->lock);
	}
	if (tx->len && drop)
		fl_tx_fail(tx, ETIMEDOUT);
	tx->flags &= ~FL_TXF_MORE;
	fl_unlock(&tx->lock);
}

/* The longest a close waits for room, in fl_tx_drain_for's unit. */
#define FL_DRAIN_MAX_MS ((int)(FL_LINGER_MAX_NS / 1000000))

static void fl_tx_drain(struct fl_tx *tx, int fd)
{
	fl_tx_drain_for(tx, fd, FL_DRAIN_MAX_MS, true);
}

/*
 * IMPORTANT: TCP's close() returns at once, and the kernel sends what it
 * holds and then the FIN by itself. When the kernel has no room for the
 * bytes the shim holds (the reader stopped reading), close() used to wait
 * here for it, up to a minute (fl_tx_drain): a non-blocking server that
 * closed such a connection (nginx after its send_timeout, a corked piece
 * held) stalled its whole event loop. Now the socket stays open on an fd
 * of the shim's own (linger.h), the flusher thread pushes the bytes at
 * each flush interval, and the flush that empties the buffer closes that
 * fd (tx_flush.c, fl_tx_end_linger). The socket first leaves the
 * application's epoll sets, which its close() would have taken it out of
 * (base/epoll_sets.h). True when this close need not wait any longer:
 * nothing is held, it lingers, or its bytes were dropped. Not when
 * FL_LINGER_MAX sockets linger already, nor when the process has more
 * epoll fds than the shim keeps.
 *
 * IMPORTANT: SO_LINGER as TCP reads it (inet_release, tcp_close). With a
 * time, close() waits up to that long for the queue to go, then returns
 * and the kernel sends the rest: so the shim waits that long for room,
 * then lingers. With a zero time, close() drops the queue and resets at
 * once: so the bytes still held after the push are dropped (nginx's
 * reset_timedout_connection closes a stalled client that way, and waited
 * here up to a minute).
 */
static bool fl_tx_linger(struct fl_sock *s, int fd)
{
	struct fl_tx *tx = &s->tx;
	struct linger lg = { 0, 0 };
	socklen_t len = sizeof(lg);
	bool done = true;
	int *own;

	fl_lock(&tx->lock);
	if (tx->len && !tx->linger_fd) {
		if (!fl_tx_fd_ok(tx, fd))
			fl_tx_fail(tx, EBADF);
		else
			fl_tx_flush_locked(tx, fd, false, FL_USTAT_FLUSH_CLOSE);
	}
	if (tx->len && !tx->linger_fd &&
	    !libc_getsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, &len) && lg.l_onoff && lg.l_linger > 0) {
		fl_unlock(&tx->lock);
		fl_tx_drain_for(tx, fd, lg.l_linger < FL_DRAIN_MAX_MS / 1000 ? lg.l_linger * 1000 :
					FL_DRAIN_MAX_MS, false);
		fl_lock(&tx->lock);
	}
	if (tx->len && !tx->linger_fd) {
		if (lg.l_onoff && !lg.l_linger) {
			fl_ustat_add(FL_USTAT_CLOSE_RESET, 1);
			fl_debug("fd %d closed under a zero SO_LINGER with %u bytes held and no room "
				 "in the kernel: dropped, as TCP's reset drops its queue", fd, tx->len);
			fl_tx_fail(tx, ECONNRESET);
		} else if (fl_epoll_sets_leave(fd) && (own = fl_linger_add(s, fd))) {
			tx->linger_fd = own;
			tx->fd = fl_own_fd_get(own);
			tx->linger_until = fl_clock_ns(CLOCK_MONOTONIC) + FL_LINGER_MAX_NS;
			tx->flags &= ~FL_TXF_CORK; /* TCP's close pushes corked bytes */
			fl_tx_rearm(tx);
			fl_ustat_add(FL_USTAT_CLOSE_LINGERED, 1);
			fl_debug("fd %d closed with %u bytes held and no room in the kernel: they go "
				 "later, through fd %d", fd, tx->len, tx->fd);
		} else {
			fl_ustat_add(FL_USTAT_CLOSE_WAITED, 1);
			done = false;
		}
	}
	if (done)
		tx->flags &= ~FL_TXF_MORE;
	fl_unlock(&tx->lock);
	return done;
}

/* An fd lets go of the socket (sock.h, ops->closing). */
static void fl_tx_closing(struct fl_sock *s, int fd)
{
	/* Every close puts what is buffered into the kernel, now or later:
	 * a TCP close() delivers what was written, so must we. */
	if (!s->tx.made)
		return;
	fl_linger_reap(); /* before the lock: a reap may retire a socket */
	if (!fl_tx_linger(s, fd))
		fl_tx_drain(&s->tx, fd);
}

/* The last fd let go and the generation is FL_SOCK_GONE already (sock.c):
 * a user that passed the generation check has finished once the lock is
 * ours, and what it left is dropped. */
static void fl_tx_retire(struct fl_sock *s)
{
	struct fl_tx *tx = &s->tx;

	if (!tx->made)
		return;
	fl_lock(&tx->lock);
	tx->len = 0;
	fl_unlock(&tx->lock);
}

/* ------------------------------------------------------------- flushes */

/* With tx->lock held: the buffer through fd (block: fl_tx_flush_locked's),
 * or dropped (EBADF) if fd no longer names its socket; a MSG_MORE run
 * ends. True when the buffer is empty after it. */
static bool fl_tx_flush_fd_locked(struct fl_tx *tx, int fd, bool block, enum fl_ustat why)
{
	if (tx->len && fl_tx_fd_names(tx, fd))
		fl_tx_flush_locked(tx, fd, block, why);
	else if (tx->len)
		fl_tx_fail(tx, EBADF);
	tx->flags &= ~FL_TXF_MORE;
	return !tx->len;
}

/* fl_tx_flush_now, for a buffer in hand. */
static bool fl_tx_flush_sync(struct fl_tx *tx, int fd, bool block, enum fl_ustat why)
{
	bool empty;

	fl_lock(&tx->lock);
	empty = fl_tx_flush_fd_locked(tx, fd, block, why);
	fl_unlock(&tx->lock);
	return empty;
}

/*
 * Before a call that goes to the kernel as it is (sendfile, splice, an
 * addressed sendto): what the buffer holds goes first. False, with errno
 * EAGAIN, when some of it stays (a non-blocking socket whose send buffer
 * is full): the call must not go then.
 *
 * IMPORTANT: it used to go anyway. Room can come between the push and the
 * call, and nginx's sendfile then sent a 64 KiB piece of a file ahead of
 * the 4 KiB piece before it, which a small sendfile had put in the buffer
 * under TCP_CORK (once in about 180 transfers of 64 MiB;
 * test/integration/held_bytes_order.c). TCP refuses a write with EAGAIN
 * when its send buffer is full, and the push just found it full. A push
 * that failed (the connection broke) lets the call go: the kernel reports
 * it on that call, with SIGPIPE as the application's flags ask.
 */
static bool fl_tx_flush_first(struct fl_tx *tx, int fd, bool block)
{
	if (fl_tx_flush_sync(tx, fd, block, FL_USTAT_FLUSH_WRITE))
		return true;
	errno = EAGAIN;
	return false;
}

void fl_tx_flush_now(struct fl_sock *s, int fd, enum fl_ustat why)
{
	if (fl_tx_of(s))
		fl_tx_flush_sync(&s->tx, fd, true, why);
}

void fl_tx_set_nodelay(struct fl_sock *s, int fd, bool on)
{
	struct fl_tx *tx = fl_tx_of(s);

	if (!tx)
		return;
	fl_lock(&tx->lock);
	if (on)
		tx->flags |= FL_TXF_NODELAY;
	else
		tx->flags &= ~FL_TXF_NODELAY;
	fl_unlock(&tx->lock);
	/* Setting TCP_NODELAY pushes what is pending, as in TCP. */
	if (on)
		fl_tx_flush_sync(tx, fd, true, FL_USTAT_FLUSH_OPTION);
}

/* The mark is taken with the buffer's lock, which orders it against the
 * buffer's decisions; without a buffer there are none. */
void fl_tx_set_shared(struct fl_sock *s)
{
	struct fl_tx *tx = __atomic_load_n(&s->tx.made, __ATOMIC_ACQUIRE) ? &s->tx : NULL;

	if (tx)
		fl_lock(&tx->lock);
	__atomic_store_n(&s->shared, 1, __ATOMIC_RELAXED);
	if (tx)
		fl_unlock(&tx->lock);
}

void fl_tx_set_alone(struct fl_sock *s)
{
	struct fl_tx *tx = __atomic_load_n(&s->tx.made, __ATOMIC_ACQUIRE) ? &s->tx : NULL;

	if (tx)
		fl_lock(&tx->lock);
	__atomic_store_n(&s->shared, 0, __ATOMIC_RELAXED);
	if (tx)
		fl_unlock(&tx->lock);
}

void fl_tx_set_through(struct fl_sock *s, int fd)
{
	struct fl_tx *tx = fl_tx_of(s);

	if (!tx)
		return;
	/* Writes the shim does not see (a FILE's) come next: what is held
	 * must be in the kernel first, on a full non-blocking socket too. */
	fl_tx_drain(tx, fd);
	fl_lock(&tx->lock);
	tx->flags |= FL_TXF_THROUGH;
	fl_unlock(&tx->lock);
}

bool fl_tx_shutdown(struct fl_sock *s, int fd)
{
	struct fl_tx *tx = fl_tx_of(s);
	bool later;

	if (!tx)
		return false;
	/*
	 * IMPORTANT: TCP queues the FIN behind every byte written and returns
	 * at once, so the buffer goes first, and what the kernel has no room
	 * for now (a full send buffer) takes the FIN with it later: the flush
	 * that empties the buffer, from the flusher thread or the
	 * application's next call, sends it (tx_flush.c, fl_tx_mark_empty).
	 * A shutdown that sent the FIN anyway lost those bytes (refused with
	 * EPIPE); one that waited for room stalled an event loop whose reader
	 * had stopped (test/integration/held_bytes_order.c). Corked bytes go
	 * too, as TCP's FIN pushes them.
	 */
	fl_lock(&tx->lock);
	later = !fl_tx_flush_fd_locked(tx, fd, false, FL_USTAT_FLUSH_CLOSE);
	tx->flags = (tx->flags & ~FL_TXF_CORK) | FL_TXF_THROUGH;
	if (later) {
		tx->fd = fd;
		tx->flags |= FL_TXF_FIN;
		fl_tx_rearm(tx); /* no longer corked: soon, not at the ceiling */
	}
	fl_unlock(&tx->lock);
	return later;
}

void fl_tx_set_cork(struct fl_sock *s, int fd, bool on)
{
	struct fl_tx *tx = fl_tx_of(s);

	if (!tx)
		return;
	fl_lock(&tx->lock);
	if (on) {
		tx->flags |= FL_TXF_CORK;
	} else {
		tx->flags &= ~FL_TXF_CORK;
		/* Uncorking sends; what a full non-blocking socket did not take
		 * goes at the flush interval now, not at the cork's ceiling its
		 * timer was set for. */
		if (!fl_tx_flush_fd_locked(tx, fd, true, FL_USTAT_FLUSH_OPTION))
			fl_tx_rearm(tx);
	}
	fl_unlock(&tx->lock);
}

/* fl_tx_drain_all, for one object: a live socket's buffer with bytes. */
static void fl_tx_drain_one(struct fl_sock *s, void *arg)
{
	struct fl_tx *tx = &s->tx;

	(void)arg;
	if (__atomic_load_n(&tx->made, __ATOMIC_ACQUIRE) && __atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&tx->first_ns, __ATOMIC_RELAXED))
		fl_tx_drain(tx, tx->fd);
}

void fl_tx_drain_all(void)
{
	/* Every object, without the pool's lock: one released meanwhile is
	 * still a fl_tx, and fl_tx_drain asks the kernel whether tx->fd
	 * still names its socket before it sends. */
	fl_sock_for_each(fl_tx_drain_one, NULL);
}

/* ------------------------------------------------------------- the send family */

/* The application's call as it is, to the kernel. */
static ssize_t fl_tx_syscall(int fd, const struct fl_tx_call *c)
{
	switch (c->kind) {
	case FL_TX_SEND:
		return libc_send(fd, c->iov[0].iov_base, c->len, c->flags);
	case FL_TX_SENDTO:
		return libc_sendto(fd, c->iov[0].iov_base, c->len, c->flags, c->addr, c->alen);
	case FL_TX_SENDMSG:
		return libc_sendmsg(fd, c->msg, c->flags);
	case FL_TX_WRITE:
		return libc_write(fd, c->iov[0].iov_base, c->len);
	case FL_TX_WRITEV:
		return libc_writev(fd, c->iov, c->iovcnt);
	case FL_TX_SENDFILE:
		return c->large ? libc_sendfile64(fd, c->in_fd, c->offset, c->len) :
				  libc_sendfile(fd, c->in_fd, c->offset, c->len);
	case FL_TX_SPLICE:
		break;
	}
	return libc_splice(c->in_fd, c->off_in, fd, c->offset, c->len, c->splice_flags);
}

/* An enrolled socket's write with batching off: straight to the kernel,
 * with Nagle's tail pushed as plain TCP would. */
static ssize_t fl_tx_direct(const struct fl_tx *tx, int fd, const struct fl_tx_call *c)
{
	struct msghdr m = { .msg_iov = (struct iovec *)c->iov, .msg_iovlen = (size_t)c->iovcnt };

	return fl_tx_sendmsg_len(tx, fd, c->msg ? c->msg : &m, c->flags, c->len);
}

/* sendfile() of an enrolled socket (fl_tx_sendfile_copy says why the
 * buffer may take it). */
static ssize_t fl_tx_sendfile(struct fl_tx *batch, struct fl_tx *tx, uint64_t gen, int fd,
			      const struct fl_tx_call *c)
{
	bool corked, took = false;
	ssize_t n;

	if (batch) {
		n = fl_tx_sendfile_copy(batch, gen, fd, c->in_fd, c->offset, c->len, &took);
		if (took)
			return n;
		if (!fl_tx_flush_first(batch, fd, true)) /* the file's bytes go after the buffer's */
			return -1;
	}
	corked = tx && fl_tx_nagle_cork(tx, fd, c->len);
	/* A large blocking one in slices, throttled each (tx_split.h). */
	n = batch ? fl_tx_sendfile_split(batch, fd, c->in_fd, c->offset, c->len, c->large) :
		    fl_tx_syscall(fd, c);
	if (corked)
		fl_tx_nagle_uncork(fd);
	return n;
}

/* A write after shutdown(SHUT_WR), while the FIN still waits for the
 * buffer (fl_tx_shutdown): TCP's answer, EPIPE, and SIGPIPE to the
 * calling thread unless MSG_NOSIGNAL (sk_stream_error). */
static ssize_t fl_tx_after_fin(int flags)
{
	if (!(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	errno = EPIPE;
	return -1;
}

ssize_t fl_tx_send(const struct fl_fd *e, int fd, struct fl_tx_call *c)
{
	struct fl_sock_id id = { 0, 0 };
	struct fl_sock *s = fl_fd_sock(e, &id);
	struct fl_tx *tx = fl_tx_of(s), *batch;
	int waited;

	c->stale = false;
	/* After a shutdown whose FIN waits for the buffer, as after TCP's. */
	if (tx && (__atomic_load_n(&tx->flags, __ATOMIC_RELAXED) & FL_TXF_FIN))
		return fl_tx_after_fin(c->flags);
	/* Without a send buffer the throttle applies here, per write; with
	 * one, where the buffer hands bytes to the kernel (fl_tx_push,
	 * fl_tx_through). */
	waited = s && !tx ? fl_throttle(fd, id.slot, c->len, c->flags, NULL) : 0;
	if (waited > 0)
		return (errno = EINTR, -1); /* a signal ended the wait and the write */
	if (waited < 0) {
		c->stale = true; /* the fd names another file now */
		return fl_tx_syscall(fd, c);
	}
	batch = tx && fl_tx_batching(s) ? tx : NULL;
	switch (c->kind) {
	case FL_TX_SENDTO:
		/* On a connected TCP socket the address is ignored (or
		 * refused): the call goes as it is, after what the buffer
		 * holds. */
		if (batch && c->addr && !fl_tx_flush_first(batch, fd, !(c->flags & MSG_DONTWAIT)))
			return -1;
		if (batch && !c->addr)
			break;
		return fl_tx_syscall(fd, c);
	case FL_TX_SENDFILE:
		return fl_tx_sendfile(batch, tx, id.gen, fd, c);
	case FL_TX_SPLICE:
		if (batch && !fl_tx_flush_first(batch, fd, true)) /* the pipe's bytes go after the buffer's */
			return -1;
		return fl_tx_syscall(fd, c);
	default:
		if (batch)
			break;
		return tx ? fl_tx_direct(tx, fd, c) : fl_tx_syscall(fd, c);
	}
	return fl_tx_buffered(batch, id.gen, fd, c->iov, c->iovcnt, c->len, c->flags, c->msg);
}

/* fork(): every lock may be held by a thread that will not exist in the
 * child; the prepare step flushes what it can and takes the pending list's
 * lock, the child starts with fresh tx locks and empty buffers. (The
 * objects' pool lock and their "shared" mark are sock.c's, init.c.) */
void fl_tx_fork_prepare(void)
{
	fl_tx_flush_all_why(FL_USTAT_FLUSH_CLOSE);
	fl_tx_pending_fork_prepare();
}

void fl_tx_fork_parent(void)
{
	fl_tx_pending_fork_parent();
}

/* fl_tx_fork_child, for one object. */
static void fl_tx_fork_child_one(struct fl_sock *s, void *arg)
{
	struct fl_tx *tx = &s->tx;

	(void)arg;
	if (!tx->made)
		return;
	fl_lock_init(&tx->lock);
	tx->len = 0;
	tx->first_ns = 0;
	tx->listed = 0;
	tx->flags &= ~FL_TXF_FIN; /* the parent sends it, after its bytes */
	tx->linger_fd = NULL; /* the parent's; linger.c closes the child's copy */
}

void fl_tx_fork_child(void)
{
	/* The parent still holds every buffered byte and will send it; the
	 * child's copies would be sent twice, so they go. */
	fl_sock_for_each(fl_tx_fork_child_one, NULL);
	fl_tx_pending_fork_child();
}

/* The process is exiting (exit(), return from main; init.c): push everything
 * out. */
void fl_tx_fini(void)
{
	fl_tx_drain_all();
}
