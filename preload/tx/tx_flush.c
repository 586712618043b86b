// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tx_flush.c - handing a send buffer to the kernel: the flush itself
 * (fl_tx_flush_locked, fl_tx_push with the throttle), Nagle's tail as
 * plain TCP pushes it, the list of buffers with bytes waiting and their
 * timed flush (the flusher thread runs fl_tx_flush_expired). tx.c, the send
 * entry and the buffer's filling, calls down into this file, never the
 * other way (docs/architecture.md).
 */
#include "tx_flush.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include "common/clock.h"
#include "base/config.h"
#include "base/libc.h"
#include "base/log.h"
#include "base/own_fds.h"
#include "kernel/holders.h"
#include "kernel/maps.h"
#include "kernel/slot.h"
#include "flusher.h"
#include "linger.h"
#include "throttle.h"
#include "tx_policy.h"

/* How often the flusher thread looks whether the reader of bytes held
 * under TCP_NODELAY has caught up (fl_tx_try_flush). */
#define FL_CATCHUP_POLL_NS (20 * 1000LL)

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
/* Each thread's own (tx_flush.h, fl_tx_me): only its address is used. */
__thread char fl_tx_me_tag __attribute__((tls_model("initial-exec")));

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

int fl_tx_nagle_more(const struct fl_tx *tx, size_t len, int flags)
{
	uint32_t f;

	if (!tx || len < FL_NAGLE_MIN_LEN || len > FL_NAGLE_MAX_LEN || (flags & (MSG_MORE | MSG_OOB)))
		return 0;
	f = __atomic_load_n(&tx->flags, __ATOMIC_RELAXED);
	return (f & (FL_TXF_NODELAY | FL_TXF_CORK | FL_TXF_MORE)) ? 0 : MSG_MORE;
}

void fl_tx_nagle_push(const struct fl_tx *tx, int fd)
{
	struct fl_slot *s = fl_slot_at(fl_tx_sock(tx)->slot);
	int off = 0, saved = errno;

	if (!s || __atomic_load_n(&s->dir, __ATOMIC_ACQUIRE) != FL_DIR_TCP)
		return;
	libc_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	fl_ustat_add(FL_USTAT_NAGLE_PUSHES, 1);
	errno = saved;
}

bool fl_tx_nagle_cork(const struct fl_tx *tx, int fd, size_t len)
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

void fl_tx_nagle_uncork(int fd)
{
	int off = 0, saved = errno;

	libc_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	fl_ustat_add(FL_USTAT_NAGLE_PUSHES, 1);
	errno = saved;
}

/*
 * sendmsg() of len bytes with Nagle's tail pushed as plain TCP would.
 *
 * IMPORTANT: a message of one piece, with no address and no control data
 * (every write() and send(), most sendmsg() calls), goes by send(). On a
 * connected TCP socket the two are the same call to the protocol, but
 * sendmsg() first copies the msghdr and the iovec array in from user
 * memory and send() does neither: in a pinned 64 B ping-pong that copy was
 * about 2% of the round trip (perf, cpu-clock), paid on every
 * request/response write.
 */
ssize_t fl_tx_sendmsg_len(const struct fl_tx *tx, int fd, const struct msghdr *msg,
				 int flags, size_t len)
{
	int more = fl_tx_nagle_more(tx, len, flags);
	ssize_t n = msg->msg_iovlen == 1 && !msg->msg_name && !msg->msg_controllen ?
		    libc_send(fd, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags | more) :
		    libc_sendmsg(fd, msg, flags | more);

	if (more && n > 0)
		fl_tx_nagle_push(tx, fd);
	return n;
}

/* The fd still names the socket whose bytes are buffered: asked of the
 * kernel (one system call). */
bool fl_tx_fd_ok(const struct fl_tx *tx, int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	return fd >= 0 && !libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) &&
	       cookie == fl_tx_sock(tx)->cookie;
}

/*
 * The same for an application's call through fd, to buffer or to send.
 * IMPORTANT: the kernel is asked once per fd number: a call through the
 * number the socket's last batch went through (tx->fd) is trusted, as
 * the fd table is. The shim sees every close through libc (close,
 * close_range, closefrom, dup2 onto it, fclose), and each of them pushes
 * or hands over the socket's bytes and forgets the number, so the number
 * can name another file only after a close the shim did not see (a raw
 * system call), which misleads its reads as much. Each new batch used to
 * ask (getsockopt SO_COOKIE, which also runs the cgroup getsockopt hook
 * every getsockopt on the host runs): one system call in every nginx
 * response, and about 10% of its throughput with 1 KiB files
 * (docs/benchmarks.md). Another fd number (a dup) is asked, and so is the
 * flusher thread, whose flush no application call vouches for
 * (fl_tx_try_flush).
 */
bool fl_tx_fd_names(const struct fl_tx *tx, int fd)
{
	return fd == tx->fd || fl_tx_fd_ok(tx, fd);
}

/* Bytes held under TCP_NODELAY only because the reader was behind (not
 * corked, not MSG_MORE). */
static bool fl_tx_nodelay_held(const struct fl_tx *tx)
{
	return (tx->flags & (FL_TXF_NODELAY | FL_TXF_CORK | FL_TXF_MORE)) == FL_TXF_NODELAY;
}

/* Bytes are buffered now: count the socket and tell the timer. */
void fl_tx_mark_pending(struct fl_tx *tx)
{
	bool was_listed;

	__atomic_store_n(&tx->asked, false, __ATOMIC_RELAXED);
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
	fl_tx_rearm(tx);
}

void fl_tx_rearm(struct fl_tx *tx)
{
	/* Bytes held under TCP_NODELAY are looked at every catch-up poll. */
	fl_flusher_kick(tx->first_ns + (fl_tx_nodelay_held(tx) ? FL_CATCHUP_POLL_NS : fl_tx_delay_ns(tx)),
			fl_tx_flush_expired);
}

/* The FIN of a shutdown(SHUT_WR) that found bytes held the kernel had no
 * room for (tx.c, fl_tx_shutdown): sent once they are in, through the fd
 * shut down if it still names the socket. */
static void fl_tx_send_fin(struct fl_tx *tx)
{
	int saved = errno;

	tx->flags &= ~FL_TXF_FIN;
	if (fl_tx_fd_ok(tx, tx->fd))
		libc_shutdown(tx->fd, SHUT_WR);
	errno = saved;
}

/*
 * The application closed the socket while bytes were held (tx.c,
 * fl_tx_closing): they are in the kernel now, and the shim's copy of the
 * fd, the socket's last, goes; the kernel sends the FIN after them, as
 * TCP's close() would have. IMPORTANT: bytes the peer sent meanwhile are
 * unread, and the application's close() would have reset the connection
 * for them (TCP's does; sock_calls.c does it for redirected ones): so does
 * this one, unless another process holds the socket too.
 */
static void fl_tx_end_linger(struct fl_tx *tx)
{
	int fd = fl_own_fd_get(tx->linger_fd), unread = 0, saved = errno;
	struct linger lg = { 1, 0 }, was = { 0, 0 };
	socklen_t len = sizeof(was);

	if (fd >= 0 && !libc_ioctl(fd, FIONREAD, &unread) && unread > 0 && fl_holders_others(fd) == 0) {
		libc_setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		fl_debug("slot %u: %d bytes came after close(): resetting, as TCP does",
			 fl_tx_sock(tx)->slot, unread);
	} else if (fd >= 0 && !libc_getsockopt(fd, SOL_SOCKET, SO_LINGER, &was, &len) && was.l_onoff &&
		   fl_holders_others(fd) == 0) {
		/* The application's close() waited its SO_LINGER time already
		 * (tx.c, fl_tx_linger): this one, the flusher's, must not. */
		was.l_onoff = 0;
		libc_setsockopt(fd, SOL_SOCKET, SO_LINGER, &was, sizeof(was));
	}
	if (tx->fd == fd)
		tx->fd = -1;
	fl_own_fd_drop(tx->linger_fd); /* read by fl_linger_reap, which releases the socket */
	tx->linger_fd = NULL;
	errno = saved;
}

static void fl_tx_mark_empty(struct fl_tx *tx)
{
	if (tx->flags & FL_TXF_FIN)
		fl_tx_send_fin(tx);
	if (tx->linger_fd)
		fl_tx_end_linger(tx);
	if (tx->first_ns) {
		/* Release: a write that sees 0 without the lock knows the bytes
		 * are in the kernel (tx.c, fl_tx_may_skip_lock). */
		__atomic_store_n(&tx->first_ns, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&tx->asked, false, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&fl_tx_pending_sockets, 1, __ATOMIC_RELEASE);
	}
}

/* Drops the buffer after an error; the application sees it on its next write. */
void fl_tx_fail(struct fl_tx *tx, int err)
{
	if (!tx->err)
		tx->err = err;
	fl_debug("slot %u: flushing %u buffered bytes failed: %s", fl_tx_sock(tx)->slot, tx->len,
		 strerror(err));
	tx->len = 0;
	fl_tx_mark_empty(tx);
}

/* Consumes n sent bytes from the front of the buffer. */
void fl_tx_advance(struct fl_tx *tx, size_t n)
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

/* Whether holding pays on this socket (tx_policy.h, FL_LONE_BATCHES says
 * why): a batch that went alone lengthens the streak, and a streak long
 * enough sends the next writes at once; a batch of two writes or more ends
 * it. Called with tx->lock held, as the batch goes. */
static void fl_tx_note_batch(struct fl_tx *tx, enum fl_ustat why)
{
	tx->lone = (uint8_t)fl_txp_lone_streak(tx->lone, why, tx->writes);
	if (tx->lone == FL_LONE_BATCHES && fl_txp_lone(why, tx->writes))
		tx->lone_skip = FL_LONE_SKIP;
}

/* One flush of buffered bytes, for "fastlocal status": why, and how big. */
void fl_tx_count(struct fl_tx *tx, enum fl_ustat why, size_t bytes)
{
	fl_tx_note_batch(tx, why);
	fl_ustat_add(why, 1);
	fl_ustat_add(FL_USTAT_BATCH_BYTES, bytes);
	fl_ustat_add(FL_USTAT_BATCH_WRITES, tx->writes);
	__atomic_store_n(&tx->writes, 0, __ATOMIC_RELAXED); /* fl_tx_hand_off reads it */
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
int fl_tx_flush_locked(struct fl_tx *tx, int fd, bool block, enum fl_ustat why)
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
 * -EINTR: a signal ended the throttle's wait, and the buffer is kept.
 */
int fl_tx_push(struct fl_tx *tx, int fd, int flags, bool wait, enum fl_ustat why)
{
	int waited = fl_throttle(fd, fl_tx_sock(tx)->slot, tx->len, flags, &tx->hold);

	if (waited > 0)
		return -EINTR;
	if (waited < 0) {
		fl_tx_fail(tx, EBADF); /* the fd names another file now */
		tx->err = 0;
		return 0;
	}
	return fl_tx_flush_locked(tx, fd, wait && !(flags & MSG_DONTWAIT), why);
}

/*
 * Under TCP_NODELAY a write waits only while the reader still has unread
 * bytes: it would only join them in the reader's queue. Looked at on every
 * write, so the first write after the reader caught up takes the buffer
 * with it.
 */
bool fl_tx_peer_unread(struct fl_tx *tx)
{
	uint32_t budget;
	bool redirecting;
	uint64_t unread = fl_slot_peer_unread(fl_tx_sock(tx)->slot, &budget, &redirecting);

	return redirecting && unread > 0;
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
		    fl_lock_try(&tx->lock) == 0) {
			/* Empty: unlist it (its lock proves nobody is refilling). */
			if (!tx->first_ns) {
				*pp = tx->next_pending;
				tx->listed = 0;
				fl_unlock(&tx->lock);
				continue;
			}
			fl_unlock(&tx->lock);
		}
		out[n++] = tx;
		pp = &tx->next_pending;
	}
	pthread_mutex_unlock(&fl_pending_lock);
	return n;
}

/*
 * A thread about to wait leaves the batch to the thread writing it
 * (fl_tx_hand_off says why): that thread's writes look at the reader from
 * now on (asked), and the first that finds it caught up takes the batch
 * along; else the timer sends it, as any batch.
 */
static void fl_tx_leave_to_writer(struct fl_tx *tx)
{
	if (!__atomic_load_n(&tx->asked, __ATOMIC_RELAXED))
		__atomic_store_n(&tx->asked, true, __ATOMIC_RELAXED);
	fl_ustat_add(FL_USTAT_HANDED_OFF, 1);
}

/*
 * When the flusher tries a buffer again that the kernel had no room for.
 * A closed socket's (tx.c, fl_tx_linger) waits for a reader that may
 * never read again, for up to a minute, and nobody waits for it: tried at
 * the flush interval (under TCP_NODELAY, the catch-up poll), a lingering
 * socket whose reader stopped cost 380 failing sends in 2 s, 29 with this
 * gap (perf stat of sendto, one socket). Its gap grows with the time it
 * has waited, a sixteenth of it, up to 10 ms: its FIN goes at most that
 * late after the reader makes room.
 */
static int64_t fl_tx_linger_gap(const struct fl_tx *tx, int64_t now)
{
	int64_t gap = fl_tx_delay_ns(tx), waited;

	if (!tx->linger_fd || !tx->len)
		return gap;
	waited = now - (tx->linger_until - FL_LINGER_MAX_NS);
	waited /= 16;
	if (waited > FL_LINGER_GAP_MAX_NS)
		waited = FL_LINGER_GAP_MAX_NS;
	return waited > gap ? waited : gap;
}

/* Flushes one socket without blocking, if nobody else holds it. */
static void fl_tx_try_flush(struct fl_tx *tx, int64_t now, bool due_only, int64_t *next,
			    enum fl_ustat why)
{
	int64_t due;

	if (fl_lock_try(&tx->lock)) {
		/* Its owner is writing or flushing right now: a thread about
		 * to wait leaves it to that owner, as fl_tx_hand_off leaves a
		 * batch being written (the timer, fork and exit just skip it). */
		if (why == FL_USTAT_FLUSH_WAIT)
			fl_tx_leave_to_writer(tx);
		return;
	}
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
			/* A closed socket's bytes go through the shim's fd,
			 * wherever a dup2 over it moved it (own_fds.h). */
			if (tx->linger_fd)
				tx->fd = fl_own_fd_get(tx->linger_fd);
			if (fl_tx_fd_ok(tx, tx->fd))
				fl_tx_flush_locked(tx, tx->fd, false,
						   caught_up ? FL_USTAT_FLUSH_READER_IDLE :
						   due_only ? FL_USTAT_FLUSH_TIMER : why);
			else
				fl_tx_fail(tx, EBADF);
			/* What the kernel would not take now is retried soon. */
			due = now + fl_tx_linger_gap(tx, now);
		}
		/* A closed socket's reader that stopped for a minute: its bytes
		 * go, the FIN with what the kernel has (fl_tx_end_linger). */
		if (tx->len && tx->linger_fd && now >= tx->linger_until)
			fl_tx_fail(tx, ETIMEDOUT);
		/* Bytes held under TCP_NODELAY go as soon as their reader has
		 * caught up: looked at every FL_CATCHUP_POLL_NS. */
		if (nodelay && !tx->linger_fd && due > now + FL_CATCHUP_POLL_NS)
			due = now + FL_CATCHUP_POLL_NS;
		if (tx->len && (*next < 0 || due < *next))
			*next = due;
	}
	fl_unlock(&tx->lock);
}

/*
 * How long a thread about to wait watches the buffers other threads of the
 * process fill, to tell which of them are being written right now
 * (fl_tx_hand_off). A streaming writer adds to its buffer every few
 * hundred nanoseconds at most (a 64 B write costs about 50 ns).
 */
#define FL_HANDOFF_WATCH_NS 300

/* What a watcher sees of a buffer: it changes with every write and flush
 * (never 0: 0 means "not watched" in fl_tx_hand_off). */
static uint32_t fl_tx_motion(const struct fl_tx *tx)
{
	return (__atomic_load_n(&tx->writes, __ATOMIC_RELAXED) ^
		(uint32_t)__atomic_load_n(&tx->first_ns, __ATOMIC_RELAXED)) | 1;
}

/* A spinning thread's pause between two looks. */
static inline void fl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * IMPORTANT: a thread about to wait (a read, poll, ...) does not flush a
 * batch another thread of the process is filling right now. It leaves the
 * batch to that thread and asks it to send it as soon as the reader has
 * caught up (asked: each of its writes then looks at the reader,
 * fl_txp_peer_stale, and the first that finds it caught up takes the
 * batch along).
 *
 * Why: a reader thread whose peer is written by another thread of the same
 * process (a proxy's two directions, a producer and its consumer,
 * fl-bench's streams) used to take the batch out of the writer's hands
 * each time it caught up. The writer then slept on the buffer's lock for
 * the whole send, and did the next send itself anyway. The faster the
 * writer's own critical section, the more often the reader found the lock
 * free and did so: with the futex lock (base/lock.c) 2-3 times as many
 * flushes came from the reader as at cc8baa9, the writer thread was busy
 * 79% of the time instead of 89% (perf), and a 1 KiB TCP_NODELAY stream
 * ran at 0.8x, a 64 B stream at 0.7-0.9x of cc8baa9 (docs/benchmarks.md).
 *
 * What it costs the reader: nothing it can see. The bytes are for a
 * queue it has caught up with, and the writer, which was seen writing
 * within FL_HANDOFF_WATCH_NS, sends them with its next write. A writer
 * that stops right then leaves them to the timer (FASTLOCAL_FLUSH_USEC,
 * 200 us; under TCP_NODELAY the 20 us catch-up poll): the bound of every
 * batch, the same as for a write held while the reader was busy, after
 * which the writer stopped (docs/delivery.md). A batch of this thread's
 * own, a corked one, and one whose writer is not seen to write within
 * FL_HANDOFF_WATCH_NS are flushed here as before.
 *
 * Marks the batches left to their writers NULL in batch[].
 */
static void fl_tx_hand_off(struct fl_tx **batch, int n, int64_t now)
{
	uint32_t seen[256]; /* 0: not watched */
	int i, watched = 0, moved;
	const int64_t until = now + FL_HANDOFF_WATCH_NS;

	for (i = 0; i < n; i++) {
		seen[i] = 0;
		if (__atomic_load_n(&batch[i]->writer, __ATOMIC_RELAXED) == fl_tx_me() ||
		    (__atomic_load_n(&batch[i]->flags, __ATOMIC_RELAXED) & (FL_TXF_CORK | FL_TXF_MORE)))
			continue;
		seen[i] = fl_tx_motion(batch[i]);
		watched++;
	}
	if (!watched)
		return;
	do {
		fl_cpu_relax();
		for (moved = 0, i = 0; i < n; i++)
			moved += seen[i] && fl_tx_motion(batch[i]) != seen[i];
	} while (moved < watched && fl_clock_ns(CLOCK_MONOTONIC) < until);
	for (i = 0; i < n; i++) {
		if (!seen[i] || fl_tx_motion(batch[i]) == seen[i])
			continue;
		fl_tx_leave_to_writer(batch[i]);
		batch[i] = NULL;
	}
}

void fl_tx_flush_all_why(enum fl_ustat why)
{
	struct fl_tx *batch[256];
	int64_t next = -1, now;
	int n, i;

	if (!fl_tx_any_pending())
		return;
	now = fl_clock_ns(CLOCK_MONOTONIC);
	n = fl_tx_snapshot(batch, 256);
	if (why == FL_USTAT_FLUSH_WAIT)
		fl_tx_hand_off(batch, n, now);
	for (i = 0; i < n; i++)
		if (batch[i])
			fl_tx_try_flush(batch[i], now, false, &next, why);
}

void fl_tx_flush_all(void)
{
	fl_tx_flush_all_why(FL_USTAT_FLUSH_WAIT);
}

int64_t fl_tx_flush_expired(int64_t now_ns, bool *left)
{
	struct fl_tx *batch[256];
	int64_t next = -1;
	int n, i;

	n = fl_tx_snapshot(batch, 256);
	for (i = 0; i < n; i++)
		fl_tx_try_flush(batch[i], now_ns, true, &next, FL_USTAT_FLUSH_TIMER);
	fl_linger_reap(); /* the sockets those flushes closed */
	*left = fl_tx_any_pending();
	return next < 0 ? -1 : (next > now_ns ? next - now_ns : 0);
}

/* fork(): the pending list's lock is held across it (tx.c's hooks, init.c);
 * the child starts with an empty list. */
void fl_tx_pending_fork_prepare(void)
{
	pthread_mutex_lock(&fl_pending_lock);
}

void fl_tx_pending_fork_parent(void)
{
	pthread_mutex_unlock(&fl_pending_lock);
}

void fl_tx_pending_fork_child(void)
{
	fl_pending = NULL;
	fl_tx_pending_sockets = 0;
	pthread_mutex_unlock(&fl_pending_lock);
}
