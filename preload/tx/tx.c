// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tx.c - corked delivery: the per-socket send buffer and when it is flushed. */
#include "tx.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include "base/init_hooks.h"
#include "base/libc.h"
#include "base/log.h"
#include "kernel/maps.h"
#include "kernel/slot.h"
#include "socket/sock.h"
#include "throttle.h"
#include "tx_policy.h"

/* How often the flusher thread looks whether the reader of bytes held
 * under TCP_NODELAY has caught up (fl_tx_try_flush). */
#define FL_CATCHUP_POLL_NS (20 * 1000LL)
#define FL_THROUGH_IOV 64 /* iovecs sent along with the buffer in one call */

/* The object that embeds tx (sock.h): the socket's identity, its count of
 * fds and whether another process may hold it. */
static inline const struct fl_sock *fl_tx_sock(const struct fl_tx *tx)
{
	return (const struct fl_sock *)((const char *)tx - offsetof(struct fl_sock, tx));
}

/* Another process may hold the socket (read with tx->lock held). */
static inline int fl_tx_shared(const struct fl_tx *tx)
{
	return __atomic_load_n(&fl_tx_sock(tx)->shared, __ATOMIC_RELAXED);
}

/*
 * Owned by this file: the list of send buffers with bytes waiting, for the
 * flushes that do not come from a write (the timer, a blocking call).
 * The buffers themselves are part of their socket's object (sock.h), which
 * is type-stable: a pointer a racing thread (the flusher) still holds
 * always points at a fl_tx, and the generation check under its lock
 * (fl_sock_is) tells it the socket is gone.
 * fl_pending_lock guards fl_pending and each tx's listed/next_pending.
 * Lock order: a tx lock, then fl_pending_lock; code holding
 * fl_pending_lock only ever trylocks a tx.
 */
static pthread_mutex_t fl_pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl_tx *fl_pending;
int fl_tx_pending_sockets;

/* How long buffered bytes may wait (tx_policy.h). */
static int64_t fl_tx_delay_ns(const struct fl_tx *tx)
{
	return fl_txp_delay_ns(tx->flags, fl_config()->flush_usec);
}

/* ------------------------------------------------------------- Nagle */

/*
 * IMPORTANT: tcp_bpf hands an enrolled socket's message to TCP one page at
 * a time (tcp_bpf_push: one tcp_sendmsg_locked per scatterlist entry, each
 * ending in a push). With Nagle on, the first page leaves alone and the
 * rest waits for its ACK, which a peer in request/response ("pingpong")
 * mode delays by the delayed-ACK timer: measured 43 ms for each 40-70 KiB
 * answer of an enrolled end whose direction was on TCP (docs/kernel.md).
 * Plain TCP's sendmsg queues the whole write, sends full segments and
 * pushes the tail at its end. So a multi-page write that Nagle governs
 * goes with MSG_MORE (the pages queue, full segments still leave), and if
 * the verdict sent it over TCP, turning TCP_CORK off pushes the tail under
 * Nagle's own rule, as the end of plain TCP's sendmsg does. Redirected
 * writes ignore MSG_MORE and need no push. Above 96 KiB the first page's
 * ACK comes at once (more than one full segment arrived) and MSG_MORE only
 * cost time (bench/ measurement in docs/benchmarks.md).
 */
#define FL_NAGLE_MIN_LEN 4097
#define FL_NAGLE_MAX_LEN (96u << 10)

static int fl_tx_nagle_more(const struct fl_tx *tx, size_t len, int flags)
{
	uint32_t f;

	if (!tx || len < FL_NAGLE_MIN_LEN || len > FL_NAGLE_MAX_LEN || (flags & (MSG_MORE | MSG_OOB)))
		return 0;
	f = __atomic_load_n(&tx->flags, __ATOMIC_RELAXED);
	return (f & (FL_TXF_NODELAY | FL_TXF_CORK | FL_TXF_MORE)) ? 0 : MSG_MORE;
}

static void fl_tx_nagle_push(const struct fl_tx *tx, int fd)
{
	struct fl_slot *s = fl_slot_at(fl_tx_sock(tx)->slot);
	int off = 0, saved = errno;

	if (!s || __atomic_load_n(&s->dir, __ATOMIC_ACQUIRE) != FL_DIR_TCP)
		return;
	libc_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	fl_ustat_add(FL_USTAT_NAGLE_PUSHES, 1);
	errno = saved;
}

static bool fl_tx_nagle_cork(const struct fl_tx *tx, int fd, size_t len)
{
	struct fl_slot *s = fl_slot_at(fl_tx_sock(tx)->slot);
	int on = 1, saved = errno;

	/* Only when the last message went over TCP: a redirected one ignores
	 * Nagle, and corking costs two calls. */
	if (!fl_tx_nagle_more(tx, len, 0) || !s ||
	    __atomic_load_n(&s->dir, __ATOMIC_ACQUIRE) != FL_DIR_TCP)
		return false;
	on = !libc_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	errno = saved;
	return on;
}

static void fl_tx_nagle_uncork(int fd)
{
	int off = 0, saved = errno;

	libc_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	fl_ustat_add(FL_USTAT_NAGLE_PUSHES, 1);
	errno = saved;
}

/* sendmsg() of len bytes with Nagle's tail pushed as plain TCP would. */
static ssize_t fl_tx_sendmsg_len(const struct fl_tx *tx, int fd, const struct msghdr *msg,
				 int flags, size_t len)
{
	int more = fl_tx_nagle_more(tx, len, flags);
	ssize_t n = libc_sendmsg(fd, msg, flags | more);

	if (more && n > 0)
		fl_tx_nagle_push(tx, fd);
	return n;
}

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
			fl_sock_release(s, fd); /* nothing to flush: !made */
			return NULL;
		}
		pthread_mutex_init(&tx->lock, NULL);
		__atomic_store_n(&tx->made, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&tx->lock);
	tx->fd = fd;
	tx->len = 0;
	tx->err = 0;
	tx->first_ns = 0;
	tx->hold = (struct fl_hold){ 0 };
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
	pthread_mutex_unlock(&tx->lock);
	fl_sock_publish(s);
	return s;
}

/* ------------------------------------------------------------- buffer */

/* The fd still names the socket whose bytes are buffered: asked of the
 * kernel (one system call). */
static bool fl_tx_fd_ok(const struct fl_tx *tx, int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	return fd >= 0 && !libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) &&
	       cookie == fl_tx_sock(tx)->cookie;
}

/*
 * The same for an application's call through fd while bytes are buffered.
 * IMPORTANT: each batch asks the kernel once, when it starts (fl_tx_send),
 * and a call through the fd number that started it (tx->fd) is then
 * trusted, so that sending the batch costs no system call but the send.
 * Asking at the start is what keeps a write to a number that a close the
 * shim did not see (a raw system call) handed to another file from being
 * buffered for the dead socket; the batch's own fd cannot change files
 * between its start and its send without such a close racing the
 * application's own calls. Another fd number (a dup) is asked, and so is
 * the flusher thread, whose flush no application call vouches for
 * (fl_tx_try_flush).
 */
static bool fl_tx_fd_names(const struct fl_tx *tx, int fd)
{
	return fd == tx->fd || fl_tx_fd_ok(tx, fd);
}

/* Bytes are buffered now: count the socket and tell the timer. */
/* Bytes held under TCP_NODELAY only because the reader was behind (not
 * corked, not MSG_MORE). */
static bool fl_tx_nodelay_held(const struct fl_tx *tx)
{
	return (tx->flags & (FL_TXF_NODELAY | FL_TXF_CORK | FL_TXF_MORE)) == FL_TXF_NODELAY;
}

static void fl_tx_mark_pending(struct fl_tx *tx)
{
	bool was_listed;

	__atomic_store_n(&tx->first_ns, fl_clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELAXED);
	__atomic_fetch_add(&fl_tx_pending_sockets, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fl_pending_lock);
	was_listed = tx->listed;
	if (!was_listed) {
		tx->listed = 1;
		tx->next_pending = fl_pending;
		fl_pending = tx;
	}
	pthread_mutex_unlock(&fl_pending_lock);
	/* Bytes held under TCP_NODELAY are looked at every catch-up poll. */
	fl_flusher_kick(tx->first_ns + (fl_tx_nodelay_held(tx) ? FL_CATCHUP_POLL_NS : fl_tx_delay_ns(tx)),
			fl_tx_flush_expired);
}

static void fl_tx_mark_empty(struct fl_tx *tx)
{
	if (tx->first_ns) {
		__atomic_store_n(&tx->first_ns, 0, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&fl_tx_pending_sockets, 1, __ATOMIC_RELEASE);
	}
}

/* Drops the buffer after an error; the application sees it on its next write. */
static void fl_tx_fail(struct fl_tx *tx, int err)
{
	if (!tx->err)
		tx->err = err;
	fl_debug("slot %u: flushing %u buffered bytes failed: %s", fl_tx_sock(tx)->slot, tx->len,
		 strerror(err));
	tx->len = 0;
	fl_tx_mark_empty(tx);
}

/* Consumes n sent bytes from the front of the buffer. */
static void fl_tx_advance(struct fl_tx *tx, size_t n)
{
	if (n >= tx->len) {
		tx->len = 0;
		fl_tx_mark_empty(tx);
		return;
	}
	memmove(tx->buf, tx->buf + n, tx->len - n);
	tx->len -= (uint32_t)n;
}

/* True when fd is a blocking socket (one system call: asked only when the
 * kernel refused a MSG_DONTWAIT send, fl_tx_flush_locked). */
static bool fl_is_blocking(int fd)
{
	int fl = libc_fcntl(fd, F_GETFL, NULL);

	return fl >= 0 && !(fl & O_NONBLOCK);
}

/* One flush of buffered bytes, for "fastlocal status": why, and how big. */
static void fl_tx_count(struct fl_tx *tx, enum fl_ustat why, size_t bytes)
{
	fl_ustat_add(why, 1);
	fl_ustat_add(FL_USTAT_BATCH_BYTES, bytes);
	fl_ustat_add(FL_USTAT_BATCH_WRITES, tx->writes);
	tx->writes = 0;
}

/*
 * Sends the buffer through fd. block: wait for room as a blocking send does,
 * if the socket is blocking; else MSG_DONTWAIT. Returns 0 when the buffer is
 * empty, -EAGAIN when bytes remain, another -errno when it failed (the
 * buffer is then dropped and the error kept for the application). Called
 * with tx->lock held.
 *
 * IMPORTANT: the first send always has MSG_DONTWAIT, and only a refusal
 * (EAGAIN) asks the socket's O_NONBLOCK flag (fl_is_blocking). A flush the
 * kernel takes at once, nearly every one, then costs the send alone and no
 * fcntl(): a blocking send that does not have to wait does what a
 * non-blocking one does.
 */
static int fl_tx_flush_locked(struct fl_tx *tx, int fd, bool block, enum fl_ustat why)
{
	size_t sent = 0;
	int r = 0, dontwait = MSG_DONTWAIT;

	int more = fl_tx_nagle_more(tx, tx->len, 0);

	while (tx->len) {
		ssize_t n = libc_send(fd, tx->buf, tx->len, MSG_NOSIGNAL | more | dontwait);

		if (n > 0) {
			fl_tx_advance(tx, (size_t)n);
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Full: wait as the blocking socket would (again after
			 * an expired SO_SNDTIMEO). */
			if (block && (!dontwait || fl_is_blocking(fd))) {
				dontwait = 0;
				continue;
			}
			r = -EAGAIN;
			break;
		}
		fl_tx_fail(tx, n < 0 ? errno : EPIPE);
		r = -tx->err;
		break;
	}
	if (sent)
		fl_tx_count(tx, why, sent);
	if (more && sent)
		fl_tx_nagle_push(tx, fd);
	return r;
}


/*
 * The application's thread hands the buffer to the kernel: first the
 * throttle (a reader a budget behind is waited for), then the flush;
 * waiting for room only if the caller may block and wait says so.
 */
static int fl_tx_push(struct fl_tx *tx, int fd, int flags, bool wait, enum fl_ustat why)
{
	if (fl_throttle(fd, fl_tx_sock(tx)->slot, tx->len, flags, &tx->hold) < 0) {
		fl_tx_fail(tx, EBADF); /* the fd names another file now */
		tx->err = 0;
		return 0;
	}
	return fl_tx_flush_locked(tx, fd, wait && !(flags & MSG_DONTWAIT), why);
}

/* Appends up to room bytes of the iovec. */
static size_t fl_tx_append(struct fl_tx *tx, const struct iovec *iov, int iovcnt, size_t room)
{
	size_t done = 0;
	int i;

	for (i = 0; i < iovcnt && done < room; i++) {
		size_t n = iov[i].iov_len < room - done ? iov[i].iov_len : room - done;

		memcpy(tx->buf + tx->len + done, iov[i].iov_base, n);
		done += n;
	}
	if (done)
		tx->writes++;
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
	int i, more;

	if (msg)
		m = *msg;
	/* Handing bytes to the kernel: wait here if the reader is a budget behind. */
	if (fl_throttle(fd, fl_tx_sock(tx)->slot, pending + len, flags, &tx->hold) < 0) {
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
		tx->writes++; /* this write went along */
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
	return fl_tx_sendmsg_len(tx, fd, &m, flags, len);
}

/*
 * Under TCP_NODELAY a write waits only while the reader still has unread
 * bytes: it would only join them in the reader's queue. Looked at on every
 * write, so the first write after the reader caught up takes the buffer
 * with it.
 */
static bool fl_tx_peer_unread(struct fl_tx *tx)
{
	uint32_t budget;
	bool redirecting;
	uint64_t unread = fl_slot_peer_unread(fl_tx_sock(tx)->slot, &budget, &redirecting);

	return redirecting && unread > 0;
}

/*
 * Coalescing pays only on the redirect path with a reader that is busy.
 * The peer's counters are looked at when a batch starts and then every
 * 4 KiB buffered (fl_txp_peer_stale says why).
 */
static bool fl_tx_peer_busy(struct fl_tx *tx)
{
	if (!fl_txp_peer_stale(tx->len, tx->checked_len))
		return tx->peer_busy;
	tx->checked_len = tx->len;
	tx->peer_busy = fl_tx_peer_unread(tx);
	return tx->peer_busy;
}

/* The application's call as it is, past the buffer (which is empty or not ours). */
static ssize_t fl_tx_bypass(struct fl_tx *tx, int fd, const struct iovec *iov, int iovcnt,
			    size_t len, int flags, const struct msghdr *msg)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	return fl_tx_sendmsg_len(tx, fd, msg ? msg : &m, flags, len);
}

/*
 * A write of an enrolled socket with batching: sends or buffers the iovec
 * (len bytes) under the policy of tx.h (msg: sendmsg's header, else NULL;
 * gen: the slot generation the fd entry recorded). Returns what the
 * application's call returns (with errno set).
 */
static ssize_t fl_tx_buffered(struct fl_tx *tx, uint64_t gen, int fd, const struct iovec *iov,
			      int iovcnt, size_t len, int flags, const struct msghdr *msg)
{
	const uint32_t cap = fl_config()->flush_bytes;
	size_t took;
	bool more = flags & MSG_MORE, hold;
	ssize_t r;

	pthread_mutex_lock(&tx->lock);
	if (!fl_sock_is(fl_tx_sock(tx), gen)) {
		/* The socket this fd named is gone (a close the shim missed). */
		pthread_mutex_unlock(&tx->lock);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	if (tx->err) {
		int err = tx->err;

		tx->err = 0;
		/* A broken connection: the kernel reports it on this very call,
		 * with SIGPIPE as the application's flags ask. */
		if (err == EPIPE || err == ECONNRESET) {
			pthread_mutex_unlock(&tx->lock);
			return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
		}
		/* Another failure of a background flush: reported on the next
		 * call, as TCP reports its asynchronous errors. */
		errno = err;
		pthread_mutex_unlock(&tx->lock);
		return -1;
	}
	/* Nothing to send: nothing to hold (held, a zero-length write would
	 * "take" nothing and fail with EAGAIN), and the kernel's answer is
	 * TCP's. TCP pushes nothing for it either, MSG_MORE or not. */
	if (!len) {
		pthread_mutex_unlock(&tx->lock);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	/* Bytes of another call always stay behind the buffer's. Out-of-band,
	 * zero-copy and addressed sends are not ours to hold. */
	if ((flags & (MSG_OOB | MSG_ZEROCOPY | MSG_FASTOPEN)) ||
	    (msg && (msg->msg_name || msg->msg_controllen))) {
		r = fl_tx_flush_locked(tx, fd, !(flags & MSG_DONTWAIT), FL_USTAT_FLUSH_WRITE);
		tx->err = 0; /* reported right here */
		pthread_mutex_unlock(&tx->lock);
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
		hold = (tx->flags & FL_TXF_NODELAY) ? fl_tx_peer_unread(tx) : fl_tx_peer_busy(tx);
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
			pthread_mutex_unlock(&tx->lock);
			return r;
		}
		/* Held, but the buffer is full: make room first. */
		r = fl_tx_push(tx, fd, flags, true, FL_USTAT_FLUSH_FULL);
		if (r && r != -EAGAIN) {
			errno = tx->err;
			tx->err = 0;
			pthread_mutex_unlock(&tx->lock);
			return -1;
		}
	}
	if (!tx->len && !fl_tx_fd_ok(tx, fd)) {
		/* The fd no longer names our socket (closed behind the shim's
		 * back and reused): this is not ours to buffer. */
		pthread_mutex_unlock(&tx->lock);
		return fl_tx_bypass(tx, fd, iov, iovcnt, len, flags, msg);
	}
	took = fl_tx_append(tx, iov, iovcnt, cap - tx->len);
	tx->fd = fd;
	if (more)
		tx->flags |= FL_TXF_MORE;
	else
		tx->flags &= ~FL_TXF_MORE;
	if (!took) {
		pthread_mutex_unlock(&tx->lock);
		errno = EAGAIN; /* full, and the kernel is not writable either */
		return -1;
	}
	/* A full buffer goes now (the reader gets a big batch). */
	if (tx->len >= cap && !(tx->flags & FL_TXF_CORK))
		fl_tx_push(tx, fd, flags, false, FL_USTAT_FLUSH_FULL);
	pthread_mutex_unlock(&tx->lock);
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
#define FL_SENDFILE_COPY_MAX FL_LARGE_WRITE

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
	pthread_mutex_lock(&tx->lock);
	corked = tx->flags & (FL_TXF_CORK | FL_TXF_MORE);
	if (!fl_sock_is(fl_tx_sock(tx), gen) || tx->err || (tx->flags & FL_TXF_THROUGH) || (!tx->len && !corked) ||
	    tx->len + count > cap ||
	    !(tx->len ? fl_tx_fd_names(tx, fd) : fl_tx_fd_ok(tx, fd)))
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
		tx->writes++;
		tx->fd = fd;
		*offset += n;
		fl_ustat_add(FL_USTAT_SENDFILE_COPIED, 1);
	}
	/* Like a write without MSG_MORE: it ends a MSG_MORE run and goes
	 * with it; under TCP_CORK it waits for the uncork. */
	tx->flags &= ~FL_TXF_MORE;
	if (!(tx->flags & FL_TXF_CORK))
		fl_tx_push(tx, fd, 0, false, FL_USTAT_FLUSH_WRITE);
	pthread_mutex_unlock(&tx->lock);
	return n;
out:
	pthread_mutex_unlock(&tx->lock);
	return 0;
}

/* Pushes the buffer into the kernel even on a non-blocking socket: the
 * application's close() must not lose bytes its writes were told went. */
static void fl_tx_drain(struct fl_tx *tx, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int tries = 0;

	pthread_mutex_lock(&tx->lock);
	if (tx->len && !fl_tx_fd_ok(tx, fd))
		fl_tx_fail(tx, EBADF);
	while (tx->len && fl_tx_flush_locked(tx, fd, false, FL_USTAT_FLUSH_CLOSE) == -EAGAIN &&
	       tries++ < 600) {
		pthread_mutex_unlock(&tx->lock);
		/* IMPORTANT: the shim's own poll() used to run here, and it
		 * first pushes every other buffered socket into the kernel
		 * (fl_before_wait): the reader this close waits for may itself
		 * wait for those bytes. Kept explicitly. */
		fl_tx_flush_all();
		libc_poll(&p, 1, 100); /* at most a minute for a reader that stopped */
		pthread_mutex_lock(&tx->lock);
	}
	if (tx->len)
		fl_tx_fail(tx, ETIMEDOUT);
	tx->flags &= ~FL_TXF_MORE;
	pthread_mutex_unlock(&tx->lock);
}

/* An fd lets go of the socket (sock.h, ops->closing). */
static void fl_tx_closing(struct fl_sock *s, int fd)
{
	/* Every close pushes what is buffered into the kernel first: a TCP
	 * close() delivers what was written, so must we. */
	if (s->tx.made)
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
	pthread_mutex_lock(&tx->lock);
	tx->len = 0;
	pthread_mutex_unlock(&tx->lock);
}

/* ------------------------------------------------------------- flushes */

/* fl_tx_flush_now, for a buffer in hand. */
static void fl_tx_flush_sync(struct fl_tx *tx, int fd, enum fl_ustat why)
{
	pthread_mutex_lock(&tx->lock);
	if (tx->len && fl_tx_fd_names(tx, fd))
		fl_tx_flush_locked(tx, fd, true, why);
	else if (tx->len)
		fl_tx_fail(tx, EBADF);
	tx->flags &= ~FL_TXF_MORE;
	pthread_mutex_unlock(&tx->lock);
}

void fl_tx_flush_now(struct fl_sock *s, int fd, enum fl_ustat why)
{
	fl_tx_flush_sync(&s->tx, fd, why);
}

void fl_tx_set_nodelay(struct fl_sock *s, int fd, bool on)
{
	struct fl_tx *tx = &s->tx;

	pthread_mutex_lock(&tx->lock);
	if (on)
		tx->flags |= FL_TXF_NODELAY;
	else
		tx->flags &= ~FL_TXF_NODELAY;
	pthread_mutex_unlock(&tx->lock);
	/* Setting TCP_NODELAY pushes what is pending, as in TCP. */
	if (on)
		fl_tx_flush_sync(tx, fd, FL_USTAT_FLUSH_OPTION);
}

void fl_tx_set_shared(struct fl_sock *s)
{
	pthread_mutex_lock(&s->tx.lock);
	__atomic_store_n(&s->shared, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->tx.lock);
}

void fl_tx_set_alone(struct fl_sock *s)
{
	pthread_mutex_lock(&s->tx.lock);
	__atomic_store_n(&s->shared, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->tx.lock);
}

void fl_tx_set_through(struct fl_sock *s, int fd)
{
	struct fl_tx *tx = &s->tx;

	fl_tx_flush_sync(tx, fd, FL_USTAT_FLUSH_WRITE);
	pthread_mutex_lock(&tx->lock);
	tx->flags |= FL_TXF_THROUGH;
	pthread_mutex_unlock(&tx->lock);
}

void fl_tx_shutdown(struct fl_sock *s, int fd)
{
	struct fl_tx *tx = &s->tx;

	fl_tx_flush_sync(tx, fd, FL_USTAT_FLUSH_CLOSE);
	pthread_mutex_lock(&tx->lock);
	tx->flags |= FL_TXF_THROUGH;
	pthread_mutex_unlock(&tx->lock);
}

void fl_tx_set_cork(struct fl_sock *s, int fd, bool on)
{
	struct fl_tx *tx = &s->tx;

	pthread_mutex_lock(&tx->lock);
	if (on)
		tx->flags |= FL_TXF_CORK;
	else
		tx->flags &= ~FL_TXF_CORK;
	pthread_mutex_unlock(&tx->lock);
	if (!on)
		fl_tx_flush_sync(tx, fd, FL_USTAT_FLUSH_OPTION); /* uncorking sends */
}

/*
 * Takes up to max listed sockets off the pending list (keeping the ones
 * that still have bytes listed). Returns how many were copied into out.
 */
static int fl_tx_snapshot(struct fl_tx **out, int max)
{
	struct fl_tx **pp, *tx;
	int n = 0;

	pthread_mutex_lock(&fl_pending_lock);
	for (pp = &fl_pending; (tx = *pp) && n < max;) {
		if (__atomic_load_n(&tx->first_ns, __ATOMIC_RELAXED) == 0 &&
		    pthread_mutex_trylock(&tx->lock) == 0) {
			/* Empty: unlist it (its lock proves nobody is refilling). */
			if (!tx->first_ns) {
				*pp = tx->next_pending;
				tx->listed = 0;
				pthread_mutex_unlock(&tx->lock);
				continue;
			}
			pthread_mutex_unlock(&tx->lock);
		}
		out[n++] = tx;
		pp = &tx->next_pending;
	}
	pthread_mutex_unlock(&fl_pending_lock);
	return n;
}

/* Flushes one socket without blocking, if nobody else holds it. */
static void fl_tx_try_flush(struct fl_tx *tx, int64_t now, bool due_only, int64_t *next,
			    enum fl_ustat why)
{
	int64_t due;

	if (pthread_mutex_trylock(&tx->lock))
		return; /* its owner is writing or flushing: it will see to it */
	if (tx->len) {
		bool caught_up = false, nodelay = fl_tx_nodelay_held(tx);

		due = tx->first_ns + fl_tx_delay_ns(tx);
		/* Corked bytes wait for uncork, the next send or the ceiling,
		 * even when the process blocks: TCP holds them the same way. */
		if (!due_only && (tx->flags & (FL_TXF_CORK | FL_TXF_MORE)))
			due_only = true;
		if (due_only && nodelay && now < due)
			caught_up = !fl_tx_peer_unread(tx);
		if (!due_only || now >= due || caught_up) {
			if (fl_tx_fd_ok(tx, tx->fd))
				fl_tx_flush_locked(tx, tx->fd, false,
						   caught_up ? FL_USTAT_FLUSH_READER_IDLE :
						   due_only ? FL_USTAT_FLUSH_TIMER : why);
			else
				fl_tx_fail(tx, EBADF);
			/* What the kernel would not take now is retried soon. */
			due = now + fl_tx_delay_ns(tx);
		}
		/* Bytes held under TCP_NODELAY go as soon as their reader has
		 * caught up: looked at every FL_CATCHUP_POLL_NS. */
		if (nodelay && due > now + FL_CATCHUP_POLL_NS)
			due = now + FL_CATCHUP_POLL_NS;
		if (tx->len && (*next < 0 || due < *next))
			*next = due;
	}
	pthread_mutex_unlock(&tx->lock);
}

static void fl_tx_flush_all_why(enum fl_ustat why)
{
	struct fl_tx *batch[256];
	int64_t next = -1, now;
	int n, i;

	if (!fl_tx_any_pending())
		return;
	now = fl_clock_ns(CLOCK_MONOTONIC);
	n = fl_tx_snapshot(batch, 256);
	for (i = 0; i < n; i++)
		fl_tx_try_flush(batch[i], now, false, &next, why);
}

void fl_tx_flush_all(void)
{
	fl_tx_flush_all_why(FL_USTAT_FLUSH_WAIT);
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

int64_t fl_tx_flush_expired(int64_t now_ns, bool *left)
{
	struct fl_tx *batch[256];
	int64_t next = -1;
	int n, i;

	n = fl_tx_snapshot(batch, 256);
	for (i = 0; i < n; i++)
		fl_tx_try_flush(batch[i], now_ns, true, &next, FL_USTAT_FLUSH_TIMER);
	*left = fl_tx_any_pending();
	return next < 0 ? -1 : (next > now_ns ? next - now_ns : 0);
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
		fl_tx_flush_sync(batch, fd, FL_USTAT_FLUSH_WRITE); /* the file's bytes go after the buffer's */
	}
	corked = tx && fl_tx_nagle_cork(tx, fd, c->len);
	n = fl_tx_syscall(fd, c);
	if (corked)
		fl_tx_nagle_uncork(fd);
	return n;
}

ssize_t fl_tx_send(const struct fl_fd *e, int fd, struct fl_tx_call *c)
{
	struct fl_sock *s = e ? __atomic_load_n(&e->sock, __ATOMIC_ACQUIRE) : NULL;
	struct fl_tx *tx = s ? &s->tx : NULL, *batch;

	c->stale = false;
	/* Without a send buffer the throttle applies here, per write; with
	 * one, where the buffer hands bytes to the kernel (fl_tx_push,
	 * fl_tx_through). */
	if (e && !tx && fl_throttle(fd, e->slot, c->len, c->flags, NULL) < 0) {
		c->stale = true; /* the fd names another file now */
		return fl_tx_syscall(fd, c);
	}
	batch = s && fl_tx_batching(s) ? tx : NULL;
	switch (c->kind) {
	case FL_TX_SENDTO:
		/* On a connected TCP socket the address is ignored (or
		 * refused): the call goes as it is, after what the buffer
		 * holds. */
		if (batch && c->addr)
			fl_tx_flush_sync(batch, fd, FL_USTAT_FLUSH_WRITE);
		if (batch && !c->addr)
			break;
		return fl_tx_syscall(fd, c);
	case FL_TX_SENDFILE:
		return fl_tx_sendfile(batch, tx, e ? e->gen : 0, fd, c);
	case FL_TX_SPLICE:
		if (batch) /* the pipe's bytes go after the buffer's */
			fl_tx_flush_sync(batch, fd, FL_USTAT_FLUSH_WRITE);
		return fl_tx_syscall(fd, c);
	default:
		if (batch)
			break;
		return tx ? fl_tx_direct(tx, fd, c) : fl_tx_syscall(fd, c);
	}
	return fl_tx_buffered(batch, e->gen, fd, c->iov, c->iovcnt, c->len, c->flags, c->msg);
}

/* fork(): every lock may be held by a thread that will not exist in the
 * child; the prepare step flushes what it can and takes the pending list's
 * lock, the child starts with fresh tx locks and empty buffers. (The
 * objects' pool lock and their "shared" mark are sock.c's, init.c.) */
void fl_tx_fork_prepare(void)
{
	fl_tx_flush_all_why(FL_USTAT_FLUSH_CLOSE);
	pthread_mutex_lock(&fl_pending_lock);
}

void fl_tx_fork_parent(void)
{
	pthread_mutex_unlock(&fl_pending_lock);
}

/* fl_tx_fork_child, for one object. */
static void fl_tx_fork_child_one(struct fl_sock *s, void *arg)
{
	struct fl_tx *tx = &s->tx;

	(void)arg;
	if (!tx->made)
		return;
	pthread_mutex_init(&tx->lock, NULL);
	tx->len = 0;
	tx->first_ns = 0;
	tx->listed = 0;
}

void fl_tx_fork_child(void)
{
	/* The parent still holds every buffered byte and will send it; the
	 * child's copies would be sent twice, so they go. */
	fl_sock_for_each(fl_tx_fork_child_one, NULL);
	fl_pending = NULL;
	fl_tx_pending_sockets = 0;
	pthread_mutex_unlock(&fl_pending_lock);
}

/* The process is exiting (exit(), return from main; init.c): push everything
 * out. */
void fl_tx_fini(void)
{
	fl_tx_drain_all();
}
