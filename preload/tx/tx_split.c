// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tx_split.c - a large blocking write goes to the kernel in slices (tx_split.h). */
#include "tx_split.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/time.h>

#include "base/libc.h"
#include "base/signals.h"
#include "throttle.h"
#include "tx_flush.h"

/* A write that may go in slices: large, blocking (by its flags and its
 * fd), no SO_SNDTIMEO, few enough iovecs. Two system calls, asked only of
 * writes larger than a slice. */
static bool fl_tx_split_ok(int fd, size_t len, int flags)
{
	struct timeval tv = { 0 };
	socklen_t tl = sizeof(tv);
	int fl, saved = errno;
	bool ok;

	if (len <= FL_SPLIT_BYTES || (flags & (MSG_DONTWAIT | MSG_OOB)))
		return false;
	fl = libc_fcntl(fd, F_GETFL, NULL);
	ok = fl >= 0 && !(fl & O_NONBLOCK) &&
	     !libc_getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &tl) && !tv.tv_sec && !tv.tv_usec;
	errno = saved;
	return ok;
}

/* out[]: the iovecs of bytes [off, off + n) of iov[]; returns their count. */
static size_t fl_iov_slice(const struct iovec *iov, size_t iovcnt, size_t off, size_t n,
			   struct iovec *out)
{
	size_t i, k = 0;

	for (i = 0; i < iovcnt && n; i++) {
		size_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[k].iov_base = (char *)iov[i].iov_base + off;
		out[k].iov_len = l - off < n ? l - off : n;
		n -= out[k].iov_len;
		off = 0;
		k++;
	}
	return k;
}

/*
 * A slice after the first, taken the way one TCP call takes its bytes:
 * every signal is blocked from the last look at fl_sig_runs until the
 * kernel waits for room, and that wait is a ppoll that unblocks them
 * atomically. So a signal that comes at any moment ends the slice, as it
 * ends TCP's wait for room (which sees it pending). IMPORTANT: with
 * signals unblocked, one handled after the look and before a blocking
 * sendmsg entered the kernel would be missed, and the write would wait
 * for a reader that may never read (gate_reopen's signal test hung so,
 * once in a dozen runs under load). Sends bytes [off, off + n) of msg;
 * returns how many went (short: a signal or an error), or -1 with errno
 * when none did.
 */
static ssize_t fl_tx_slice(struct fl_tx *tx, int fd, const struct msghdr *msg, size_t off,
			   size_t n, int flags, unsigned runs)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	struct iovec v[FL_SPLIT_IOV];
	struct msghdr m = *msg;
	sigset_t all, old;
	size_t done = 0;
	int err = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	while (done < n && fl_sig_runs() == runs) {
		ssize_t r;

		m.msg_iov = v;
		m.msg_iovlen = fl_iov_slice(msg->msg_iov, msg->msg_iovlen, off + done, n - done, v);
		r = fl_tx_sendmsg_len(tx, fd, &m, flags | MSG_DONTWAIT | MSG_NOSIGNAL, n - done);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* EINTR: a handler ran inside, the loop's look ends it. */
			if (libc_ppoll(&p, 1, NULL, &old) < 0 && errno != EINTR) {
				err = errno;
				break;
			}
			continue;
		}
		err = r < 0 ? errno : 0;
		break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!done && err) {
		errno = err;
		return -1;
	}
	return (ssize_t)done;
}

ssize_t fl_tx_send_split(struct fl_tx *tx, int fd, const struct msghdr *msg, int flags,
			 size_t len)
{
	struct iovec v[FL_SPLIT_IOV];
	struct msghdr m;
	size_t done = 0;
	unsigned runs;
	int saved;

	if (msg->msg_iovlen > FL_SPLIT_IOV || msg->msg_name || msg->msg_controllen ||
	    !fl_tx_split_ok(fd, len, flags))
		return fl_tx_sendmsg_len(tx, fd, msg, flags, len);
	saved = errno;
	runs = fl_sig_runs();
	m = *msg;
	m.msg_iov = v;
	while (done < len) {
		size_t n = len - done < FL_SPLIT_BYTES ? len - done : FL_SPLIT_BYTES;
		ssize_t r;

		/* The first slice was throttled by the caller. A signal
		 * handled since the write began (it came during a slice: in one
		 * TCP call it would have stayed pending and ended the next wait
		 * for room) or during the wait, or a stale fd (another file
		 * now): the bytes that went are the answer, as TCP's when a
		 * signal ends its wait for room. */
		if (done && (fl_sig_runs() != runs ||
			     fl_throttle(fd, fl_tx_sock(tx)->slot, n, flags, &tx->hold)))
			break;
		if (done) {
			r = fl_tx_slice(tx, fd, msg, done, n, flags, runs);
		} else {
			m.msg_iovlen = fl_iov_slice(msg->msg_iov, msg->msg_iovlen, 0, n, v);
			r = fl_tx_sendmsg_len(tx, fd, &m, flags, n);
		}
		if (r < 0) {
			if (!done)
				return -1; /* nothing went: the kernel's answer as it is */
			break;
		}
		done += (size_t)r;
		if ((size_t)r < n)
			break; /* short: a signal or an error, as TCP's own */
	}
	errno = saved;
	return (ssize_t)done;
}

/* The kernel's sendfile, for a slice after the first: a SIGPIPE its EPIPE
 * raises is taken back (TCP would have returned the bytes that went, and
 * raised it on the application's next call). */
static ssize_t fl_sendfile_quiet(int fd, int in_fd, off_t *offset, size_t n, bool large)
{
	const struct timespec now = { 0, 0 };
	sigset_t pipe, old, pending;
	bool was;
	ssize_t r;
	int err;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	was = !sigpending(&pending) && sigismember(&pending, SIGPIPE);
	r = large ? libc_sendfile64(fd, in_fd, offset, n) : libc_sendfile(fd, in_fd, offset, n);
	err = errno;
	if (r < 0 && err == EPIPE && !was)
		sigtimedwait(&pipe, NULL, &now);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return r;
}

ssize_t fl_tx_sendfile_split(struct fl_tx *tx, int fd, int in_fd, off_t *offset, size_t count,
			     bool large)
{
	size_t done = 0;
	unsigned runs;
	int saved, waited;

	if (!fl_tx_split_ok(fd, count, 0))
		return large ? libc_sendfile64(fd, in_fd, offset, count) :
			       libc_sendfile(fd, in_fd, offset, count);
	saved = errno;
	runs = fl_sig_runs();
	while (done < count) {
		size_t n = count - done < FL_SPLIT_BYTES ? count - done : FL_SPLIT_BYTES;
		ssize_t r;

		if (done && fl_sig_runs() != runs)
			break; /* as in fl_tx_send_split */
		fl_lock(&tx->lock);
		waited = fl_throttle(fd, fl_tx_sock(tx)->slot, n, 0, &tx->hold);
		fl_unlock(&tx->lock);
		if (waited && done)
			break; /* a signal, a stale fd: as in fl_tx_send_split */
		if (waited > 0)
			return (errno = EINTR, -1); /* a signal ended the wait and the write */
		/* Looked at again after the throttle, right before the call.
		 * Unlike a sendmsg slice (fl_tx_slice), sendfile has no
		 * non-blocking flag of its own, so a signal handled in the
		 * few instructions from here into the kernel is still missed:
		 * the write then waits for its reader, as a TCP write begun
		 * just after the signal would. */
		if (done && fl_sig_runs() != runs)
			break;
		r = !done ? (large ? libc_sendfile64(fd, in_fd, offset, n) :
				     libc_sendfile(fd, in_fd, offset, n)) :
			    fl_sendfile_quiet(fd, in_fd, offset, n, large);
		if (r < 0) {
			if (!done)
				return -1; /* nothing went: the kernel's answer as it is */
			break;
		}
		done += (size_t)r;
		if ((size_t)r < n)
			break; /* short: a signal, an error, the file's end */
	}
	errno = saved;
	return (ssize_t)done;
}
