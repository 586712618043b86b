// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* splice.c - splice(socket -> pipe) of an enrolled socket, emulated (splice.h). */
#include "splice.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "base/init_hooks.h"
#include "reset.h"
#include "base/libc.h"
#include "base/log.h"
#include "base/own_fds.h"
#include "rx_retry.h"
#include "socket/rxq.h"
#include "base/signals.h"

/* At most this much per call: one default pipe's worth (16 pages). */
#define FL_SPLICE_CHUNK (64 << 10)

#ifndef SPLICE_F_ALL
#define SPLICE_F_ALL (SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT)
#endif

/*
 * Owned by this file, guarded by fl_ip_lock: the process's internal pipe
 * (one O_RDWR, O_NONBLOCK fd that is both its ends: fl_ip_make; a
 * registered own fd: an application that closes every fd leaves it
 * alone) and the scratch buffer that empties it. It is empty whenever the
 * lock is free. A child of fork() closes its copy (fl_splice_fork_child,
 * init.c): parent and child must never share it.
 */
static pthread_mutex_t fl_ip_lock = PTHREAD_MUTEX_INITIALIZER;
static int fl_ip = -1;
static dev_t fl_ip_dev; /* the pipe's inode, to know the fd still names it */
static ino_t fl_ip_ino;
static bool fl_ip_no_proc; /* /proc cannot reopen a pipe: a pipe per call */
static uint8_t fl_ip_scratch[FL_SPLICE_CHUNK];

void fl_splice_fork_prepare(void)
{
	pthread_mutex_lock(&fl_ip_lock);
}

void fl_splice_fork_parent(void)
{
	pthread_mutex_unlock(&fl_ip_lock);
}

void fl_splice_fork_child(void)
{
	if (fl_ip >= 0)
		fl_own_fd_drop(&fl_ip);
	pthread_mutex_unlock(&fl_ip_lock);
}

bool fl_splice_reads(const off_t *off_in, int fd_out, const off_t *off_out, size_t len,
		     unsigned int flags)
{
	if (off_in || off_out || !len || (flags & ~(unsigned int)SPLICE_F_ALL))
		return false;
	/* Not a pipe: EBADF or EINVAL, nothing read. IMPORTANT: a pipe's
	 * read end is let through: fl_splice_in answers it EBADF, as the
	 * kernel does, and asks its flags only when it must (fl_pipe_writable). */
	return libc_fcntl(fd_out, F_GETPIPE_SZ, NULL) >= 0;
}

/* False, with errno EBADF, if pipe fd is its read end (splice's FMODE_WRITE
 * check); fl, if not negative, is its F_GETFL already read. */
static bool fl_pipe_writable(int fd, int fl)
{
	if (fl < 0)
		fl = libc_fcntl(fd, F_GETFL, NULL);
	if (fl >= 0 && (fl & O_ACCMODE) == O_RDONLY) {
		errno = EBADF;
		return false;
	}
	return true;
}

/*
 * Waits, as splice does before it reads, until the pipe has a free slot:
 * poll() says POLLOUT exactly then (pipe_poll), POLLERR when it has no
 * reader. 0, or -1 with errno: EAGAIN (full, nonblock), EPIPE (with
 * SIGPIPE, as the kernel sends it), EINTR (a handler without SA_RESTART).
 */
static int fl_pipe_wait_room(int fd, bool nonblock)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	unsigned sigs = fl_sig_runs();
	int r;

	for (;;) {
		p.revents = 0;
		r = libc_poll(&p, 1, nonblock ? 0 : -1);
		if (r < 0) {
			if (errno != EINTR)
				return -1;
			/* The kernel's wait ends in -ERESTARTSYS: restarted
			 * unless a handler without SA_RESTART ran. */
			if (fl_sig_runs() != sigs && !fl_sig_last_restarts())
				return -1;
			sigs = fl_sig_runs();
			continue;
		}
		if (p.revents & POLLNVAL) {
			errno = EBADF;
			return -1;
		}
		if (p.revents & POLLERR) {
			pthread_kill(pthread_self(), SIGPIPE);
			errno = EPIPE;
			return -1;
		}
		if (p.revents & POLLOUT)
			return 0;
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
	}
}

/*
 * Puts n bytes into pipe fd without ever waiting for it: copied into the
 * internal pipe (ip, empty), then spliced on with SPLICE_F_NONBLOCK,
 * which moves whole buffers into the free slots and never blocks; what did
 * not fit is read back out. IMPORTANT: fd's own flags are never touched
 * (another thread may use the pipe), and a plain write() cannot serve: it
 * blocks on a blocking pipe once the slots run out, and pwritev2(RWF_NOWAIT)
 * and vmsplice() do not fit either (EOPNOTSUPP on pipes here; vmsplice
 * leaves references to our buffer in the pipe). Returns the bytes moved, or
 * -1 with splice's errno (EAGAIN: no free slot). *broken: the internal pipe
 * could not be emptied and must not be used again.
 */
static ssize_t fl_pipe_put_via(int ip, int fd, const void *buf, size_t n,
			       bool *broken)
{
	ssize_t w, m, k;
	size_t left;
	int err;

	*broken = false;
	w = libc_write(ip, buf, n);
	if (w <= 0) {
		*broken = true;
		errno = EAGAIN;
		return -1;
	}
	m = libc_splice(ip, NULL, fd, NULL, (size_t)w, SPLICE_F_NONBLOCK);
	err = errno;
	left = (size_t)w - (m > 0 ? (size_t)m : 0);
	while (left) {
		k = libc_read(ip, fl_ip_scratch, left < sizeof(fl_ip_scratch) ? left : sizeof(fl_ip_scratch));
		if (k <= 0) {
			*broken = true;
			break;
		}
		left -= (size_t)k;
	}
	errno = err;
	return m;
}

/* A per-call pipe, for when the internal one is busy (another thread, or
 * this one in a signal handler). *ok: false if no pipe could be made. */
static ssize_t fl_pipe_put_once(int fd, const void *buf, size_t n, bool *ok)
{
	int p[2], err;
	ssize_t w, m;

	*ok = false;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		return -1;
	*ok = true;
	w = libc_write(p[1], buf, n);
	if (w > 0) {
		m = libc_splice(p[0], NULL, fd, NULL, (size_t)w, SPLICE_F_NONBLOCK);
		err = errno;
	} else {
		m = -1;
		err = EAGAIN;
	}
	/* What did not fit vanishes with the pipe. */
	libc_close(p[0]);
	libc_close(p[1]);
	errno = err;
	return m;
}

/* True if fd is still the internal pipe. IMPORTANT: an fd the application
 * closed behind the shim's back (a raw close_range syscall) may name one of
 * its own files now, and bytes written there would corrupt it. */
static bool fl_ip_ours(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISFIFO(st.st_mode) && st.st_dev == fl_ip_dev &&
	       st.st_ino == fl_ip_ino;
}

/*
 * Makes the internal pipe: a new pipe reopened O_RDWR through
 * /proc/self/fd, which gives one file that is both its reader and its
 * writer (fifo_open), then its two first ends closed. IMPORTANT: one fd,
 * so one fstat per use tells it is still ours (two ends took two). The fd,
 * with its inode in *dev and *ino, or -1: no fd left, or no /proc (then
 * *no_proc, and it is not tried again).
 */
static int fl_ip_make(dev_t *dev, ino_t *ino, bool *no_proc)
{
	char path[40];
	struct stat st;
	int p[2], fd;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	*no_proc = fd < 0 && errno != EMFILE && errno != ENFILE;
	libc_close(p[0]);
	libc_close(p[1]);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISFIFO(st.st_mode))) {
		libc_close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		*dev = st.st_dev;
		*ino = st.st_ino;
	}
	return fd;
}

/* Puts up to n bytes into pipe fd without waiting: see fl_pipe_put_via. */
static ssize_t fl_pipe_put(void *ctx, const void *buf, size_t n)
{
	int fd = *(int *)ctx, ip;
	bool broken, ok;
	ssize_t m;

	if (pthread_mutex_trylock(&fl_ip_lock)) {
		m = fl_pipe_put_once(fd, buf, n, &ok);
		if (ok)
			return m;
		/* No fd for a pipe of our own: wait for the shared one (its
		 * holder never blocks). */
		pthread_mutex_lock(&fl_ip_lock);
	}
	/* Not ours any more: forgotten (unregistered), never closed. */
	if (fl_ip >= 0 && !fl_ip_ours(fl_own_fd_get(&fl_ip))) {
		fl_ip = -1;
		fl_own_fd_drop(&fl_ip);
	}
	if (fl_ip < 0) {
		ip = fl_ip_no_proc ? -1 : fl_ip_make(&fl_ip_dev, &fl_ip_ino, &fl_ip_no_proc);
		if (ip < 0) {
			pthread_mutex_unlock(&fl_ip_lock);
			m = fl_pipe_put_once(fd, buf, n, &ok);
			if (ok)
				return m;
			/* IMPORTANT: no fd left for a pipe (EMFILE). The caller
			 * saw a free slot a moment ago, and one page takes one
			 * slot: a write of at most a page cannot block unless
			 * another writer took that slot meanwhile. Slow, and
			 * only for this case. */
			return libc_write(fd, buf, n < 4096 ? n : 4096);
		}
		fl_ip = ip;
		fl_own_fd_take(&fl_ip);
	}
	m = fl_pipe_put_via(fl_own_fd_get(&fl_ip), fd, buf, n, &broken);
	if (broken) {
		fl_log(FL_LOG_ERROR, "splice: the internal pipe could not be emptied; made anew");
		fl_own_fd_drop(&fl_ip);
	}
	pthread_mutex_unlock(&fl_ip_lock);
	return m;
}

/* Consumes exactly n bytes the caller peeked (and the pipe took) from the
 * socket; buf (at least n bytes) is scratch. */
static void fl_consume(int fd, void *buf, size_t n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t done = 0;
	int tries = 0;
	ssize_t k;

	while (done < n) {
		k = libc_recv(fd, buf, n - done, MSG_DONTWAIT);
		if (k > 0) {
			done += (size_t)k;
			continue;
		}
		if (k < 0 && (errno == EINTR || errno == EAGAIN) && tries++ < 100) {
			/* The bytes were peeked: they are there (the wakeups
			 * without data of docs/kernel.md#spurious-eagain aside). */
			libc_poll(&p, 1, 10);
			continue;
		}
		fl_log(FL_LOG_ERROR, "splice: fd %d: %zu bytes put into the pipe could not be "
		       "consumed from the socket (%s): another reader?", fd, n - done,
		       k < 0 ? strerror(errno) : "EOF");
		return;
	}
}

/* Moves the r bytes peeked into buf to pipe fd_out without waiting, then
 * consumes from the socket exactly what the pipe took: splice's result. */
static ssize_t fl_splice_peeked(int fd_in, struct fl_rxq *q, int fd_out, void *buf, size_t r)
{
	ssize_t m = fl_pipe_put(&fd_out, buf, r);

	if (m == 0)
		errno = EAGAIN, m = -1; /* never a 0, which would mean EOF */
	if (m < 0)
		return -1;
	fl_consume(fd_in, buf, (size_t)m);
	if (q)
		fl_rxq_read_done(q, (size_t)m);
	return m;
}

/*
 * The common case, a pipe that never waits (SPLICE_F_NONBLOCK: haproxy's
 * every call) and no held bytes: the socket is peeked first, and the pipe
 * and the socket's flags are asked only when nothing moves. With bytes,
 * the pipe's own answer is splice's (full: EAGAIN; no reader: EPIPE and
 * SIGPIPE, sent by the kernel's splice into it; a read end: EBADF). About
 * half of a proxy's calls find nothing, so that path is short too: one
 * poll tells room, no reader and (no event at all) full or a read end.
 * Returns 1 with *res set, or 0 if the socket is blocking and empty: the
 * caller then waits as splice would.
 */
static int fl_splice_in_nb(int fd_in, int fd_out, void *buf, size_t n, ssize_t *res)
{
	ssize_t r;
	int err, fl;

	r = libc_recv(fd_in, buf, n, MSG_PEEK | MSG_DONTWAIT);
	if (r > 0) {
		*res = fl_splice_peeked(fd_in, NULL, fd_out, buf, (size_t)r);
		return 1;
	}
	err = errno;
	/* Nothing to move: splice looks at the pipe before the socket. No
	 * room is EAGAIN (full), or EBADF for a read end, which poll shows
	 * no event for either. */
	*res = -1;
	if (fl_pipe_wait_room(fd_out, true)) {
		if (errno == EAGAIN)
			errno = fl_pipe_writable(fd_out, -1) ? EAGAIN : EBADF;
		return 1;
	}
	if (r < 0 && err == EAGAIN) {
		fl = libc_fcntl(fd_in, F_GETFL, NULL);
		if (fl >= 0 && !(fl & O_NONBLOCK))
			return 0;
	}
	if (r < 0)
		fl_reset_report_once(fd_in, r); /* reported once, as TCP does */
	errno = err;
	*res = r;
	return 1;
}

ssize_t fl_splice_in(int fd_in, struct fl_rxq *q, int fd_out, size_t len,
		     unsigned int flags)
{
	uint8_t buf[FL_SPLICE_CHUNK];
	struct fl_retry start;
	bool pipe_nb, sock_nb;
	int pfl, sfl;
	ssize_t r, m;
	size_t n;

	n = len < sizeof(buf) ? len : sizeof(buf);
	if ((flags & SPLICE_F_NONBLOCK) && !(q && fl_rxq_held(q)) &&
	    fl_splice_in_nb(fd_in, fd_out, buf, n, &r))
		return r;
	/* Splice's rules: SPLICE_F_NONBLOCK and the pipe's O_NONBLOCK apply to
	 * the pipe, only the socket's O_NONBLOCK to the socket. */
	pfl = libc_fcntl(fd_out, F_GETFL, NULL);
	if (!fl_pipe_writable(fd_out, pfl))
		return -1;
	pipe_nb = (flags & SPLICE_F_NONBLOCK) || (pfl >= 0 && (pfl & O_NONBLOCK));
	sfl = libc_fcntl(fd_in, F_GETFL, NULL);
	sock_nb = sfl >= 0 && (sfl & O_NONBLOCK);
	fl_rx_retry_init(&start);
	for (;;) {
		if (fl_pipe_wait_room(fd_out, pipe_nb))
			return -1;
		if (q && fl_rxq_held(q)) {
			/* Bytes the shim took out earlier come first. */
			m = fl_rxq_give(q, n, fl_pipe_put, &fd_out);
			if (m > 0 || (m < 0 && errno != EAGAIN))
				return m;
			if (m < 0 && pipe_nb)
				return -1;
			if (m < 0)
				continue; /* filled by someone else meanwhile: wait again */
		}
		/* IMPORTANT: peeked, not read: the pipe may take only part of
		 * them (or nothing, if another writer filled it meanwhile), and
		 * what it does not take must stay in the socket, readable and
		 * visible to poll/epoll, not in a buffer of ours. */
		do
			r = libc_recv(fd_in, buf, n, MSG_PEEK | (sock_nb ? MSG_DONTWAIT : 0));
		while (r < 0 && errno == EAGAIN && !sock_nb &&
		       fl_rx_retry_eagain(fd_in, 0, &start));
		if (r < 0)
			fl_reset_report_once(fd_in, r); /* reported once, as TCP does */
		if (r <= 0)
			return r;
		m = fl_splice_peeked(fd_in, q, fd_out, buf, (size_t)r);
		if (m < 0 && errno == EAGAIN && !pipe_nb)
			continue;
		return m;
	}
}
