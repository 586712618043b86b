// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sock_calls.c - socket bookkeeping: when a connection is enrolled, and how
 * the fd table follows close, dup and fcntl.
 *
 * IMPORTANT: every function here keeps the errno the real call left, so the
 * application sees exactly what plain TCP would give it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/close_range.h>

#include "calls.h"
#include "base/config.h"
#include "enroll/enroll.h"
#include "enroll/enroll_steps.h"
#include "socket/fdtable.h"
#include "kernel/holders.h"
#include "base/libc.h"
#include "enroll/local_addr.h"
#include "base/log.h"
#include "base/epoll_sets.h"
#include "base/own_fds.h"
#include "socket/rxq.h"
#include "kernel/slot.h"
#include "socket/sock.h"
#include "tx/tx.h"

/*
 * IMPORTANT: no system call here. wrk, asking for a new connection per
 * request, paid five per connection (the socket's type, domain and
 * protocol, its two addresses) and a poll at first use, for connections
 * too short to ever enroll: nginx behind it ran at 0.89x of plain TCP.
 * Whether the socket is TCP and its peer on this host is decided when it
 * would enroll (fl_enroll_read), as for a connect() that did not have to
 * wait: an in-progress connect() of an inet socket (EINPROGRESS and EINTR
 * come only from connection-oriented ones) is tracked, and its first use
 * enrolls or defers it (io.c, fl_first_use).
 */
void fl_mark_connecting(int fd)
{
	struct fl_fd *e = fl_fd_get(fd);

	if (e)
		__atomic_store_n(&e->state, FL_FD_CONNECTING, __ATOMIC_RELEASE);
}

int fl_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int r, saved;

	fl_tx_flush_all(); /* connect() may wait: what is buffered goes first */
	r = libc_connect(fd, addr, len);
	saved = errno;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return r;
	if (r == 0 || saved == EINPROGRESS || saved == EINTR)
		/* A new connection: whatever socket the number described before
		 * is gone (its close may have bypassed the shim); the options set
		 * on this one before connecting stay. */
		fl_fd_forget_socket(fd);
	if (r == 0)
		fl_enroll_or_defer(fd);
	else if (saved == EINPROGRESS || saved == EINTR)
		/* The handshake finishes later; enroll on first use (io.c). */
		fl_mark_connecting(fd);
	errno = saved;
	return r;
}

/*
 * IMPORTANT: a connecting end under the shim joins the sockhash at once
 * only if an accepting end under the shim was seen on its server's port
 * (fastlocal.h, struct fl_joined); marking the port here, before any
 * client can connect, spares the first connections of a new server a wait
 * (their accepting ends would mark it only when they enroll).
 */
int fl_listen(int fd, int backlog)
{
	int r = libc_listen(fd, backlog);

	if (r == 0)
		fl_enroll_note_listener(fd); /* keeps errno */
	return r;
}

int fl_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct fl_fd *lst, *e;
	uint32_t inherit;
	int c, saved;

	fl_tx_flush_all(); /* accept() may wait: what is buffered goes first */
	c = libc_accept4(fd, addr, len, flags);
	saved = errno;

	if (c < 0)
		return c;
	/* The child inherits the listener's SO_RCVBUF and SO_RCVLOWAT. */
	lst = fl_fd_peek(fd);
	inherit = lst ? __atomic_load_n(&lst->flags, __ATOMIC_RELAXED) : 0;
	fl_fd_clear(c);
	if (inherit && (e = fl_fd_get(c)))
		__atomic_store_n(&e->flags, inherit, __ATOMIC_RELAXED);
	/* Before the application sees the fd, so it has read nothing yet. */
	fl_enroll_or_defer(c);
	errno = saved;
	return c;
}

int fl_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return fl_accept4(fd, addr, len, 0);
}

/* close() of the last copy of a socket with redirected bytes unread
 * (docs/kernel.md#loss): TCP would reset the connection; arranges for
 * close() to do so. */
static void fl_close_reset_if_unread(int fd, struct fl_fd *e)
{
	struct linger lg = { 1, 0 };
	int redirected = 0, saved = errno;
	struct fl_sock_id id;
	struct fl_sock *s = fl_fd_sock(e, &id);

	if (!fl_compat_on() || !s || !fl_sock_last_copy(s) || fl_slot_left(id.slot))
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

/*
 * IMPORTANT: a child made without the fork hooks (vfork(), posix_spawn's
 * child, clone(): fl_in_hookless_child) has an fd table of its own, but
 * the shim's record of fds is its parent's memory (or a copy of it). A
 * close or dup there must not touch that record: Python's subprocess
 * closes the fds it does not pass with close_range() in a vfork child,
 * which made the parent's shim forget its own open sockets, and waited on
 * the lock of one that a parent thread held while blocked writing to a
 * peer that did not read (test/integration/spawn_while_writing.c). There
 * the call goes to the kernel as it is. One getpid(), only when a socket
 * the shim tracks is involved (close, dup; not a file's close, nginx's
 * every request) or for the rare close_range/dup2.
 */
/* fd, or its copy (-1: none), is a socket the record tracks, and the
 * record is not this process's. A copy's new number may be one the record
 * still names (the child closed it behind the record, as above). */
static bool fl_fd_record_not_ours(int fd, int copy)
{
	return (fl_fd_state(fl_fd_peek(fd)) != FL_FD_UNKNOWN ||
		fl_fd_state(fl_fd_peek(copy)) != FL_FD_UNKNOWN) &&
	       fl_in_hookless_child();
}

int fl_close(int fd, int (*real)(int))
{
	struct fl_fd *e;

	/* The shim's own fds are not the application's to close: as far as it
	 * knows they are not open. */
	if (fl_own_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	if (fl_fd_record_not_ours(fd, -1))
		return real(fd);
	/* Forget first: once closed, the number can be reused at once. Nothing
	 * is deleted from the sockhash; the kernel removes the socket when it
	 * dies and sockops frees its slot (docs/kernel.md#loss). */
	e = fl_fd_peek(fd);
	if (fl_fd_state(e) == FL_FD_ENROLLED)
		fl_close_reset_if_unread(fd, e);
	fl_fd_clear(fd);
	fl_epoll_sets_closed(fd);
	return real(fd);
}

int fl_epoll_created(int epfd)
{
	fl_epoll_sets_add(epfd);
	return epfd;
}

int fl_shutdown(int fd, int how)
{
	struct fl_fd *e = fl_fd_peek(fd);
	struct fl_sock_id id;
	struct fl_sock *s = fl_fd_state(e) == FL_FD_ENROLLED ? fl_fd_sock(e, &id) : NULL;
	int r, saved;

	/* What was written goes before the FIN, as in TCP; writes after it
	 * must reach the kernel, which fails them (tx.h, the verdict). When
	 * the kernel has no room for what the shim holds, the FIN goes after
	 * it, later (tx.h): only the read side is shut down now. */
	if (s && how != SHUT_RD && fl_tx_shutdown(s, fd))
		r = how == SHUT_RDWR ? libc_shutdown(fd, SHUT_RD) : 0;
	else
		r = libc_shutdown(fd, how);
	saved = errno;
	/* A socket that stopped reading gets its peer's bytes over TCP, which
	 * resets the connection when they arrive, as for any TCP socket. */
	if (!r && how != SHUT_WR && fl_fd_state(e) == FL_FD_ENROLLED && fl_compat_on() &&
	    (s = fl_fd_sock(e, &id)))
		fl_slot_rcv_shut(id.slot, id.gen);
	errno = saved;
	return r;
}

FILE *fl_fdopen(int fd, const char *mode, FILE *(*real)(int, const char *))
{
	FILE *fp = real(fd, mode);
	struct fl_fd *e = fl_fd_peek(fd);
	struct fl_sock_id id;
	struct fl_sock *s;
	int saved = errno;

	/* glibc writes a FILE through its internal __write, which the shim
	 * never sees: those bytes would overtake what its buffer holds. A
	 * socket that enrolls later remembers it (enroll.c). */
	if (fp && e)
		__atomic_fetch_or(&e->flags, FL_FDF_THROUGH, __ATOMIC_RELAXED);
	if (fp && fl_fd_state(e) == FL_FD_ENROLLED && (s = fl_fd_sock(e, &id)))
		fl_tx_set_through(s, fd);
	/*
	 * IMPORTANT: glibc reads a FILE through its internal __read, which the
	 * shim neither sees nor counts: on a socket in the sockhash such a read
	 * gets none of the redirect path's fixes (tcp_bpf's spurious EAGAIN,
	 * docs/kernel.md#spurious-eagain, ends fread with an error), and its
	 * peer's gate never opens.
	 * A socket a FILE reads stays on TCP (enroll.c), and one enrolled
	 * already leaves the sockhash if its bytes allow (fl_unenroll).
	 */
	if (fp && e && mode && (strchr(mode, 'r') || strchr(mode, '+'))) {
		__atomic_fetch_or(&e->flags, FL_FDF_STDIO_READ, __ATOMIC_RELAXED);
		if (fl_fd_state(e) == FL_FD_ENROLLED)
			fl_unenroll(fd, "a stdio FILE reads it");
	}
	errno = saved;
	return fp;
}

int fl_fclose(FILE *fp, int (*real)(FILE *))
{
	/* glibc closes a FILE's fd through its internal __close_nocancel, which
	 * no preload can see: forget the fd here, before it can be reused. */
	int fd = fp ? fileno(fp) : -1;

	if (fd >= 0)
		fl_fd_clear(fd);
	return real(fp);
}

int fl_close_range(unsigned int first, unsigned int last, int flags)
{
	int own[FL_OWN_FDS_MAX], n, i, r = 0, saved = 0;
	unsigned int lo = first;

	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	if (fl_in_hookless_child()) /* its own fds too: it is about to exec */
		return libc_close_range(first, last, flags);
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		fl_fd_clear_range(first, last);
	/* Close around the shim's own fds, which must survive (own_fds.h). */
	n = fl_own_fds_in(first, last, own, FL_OWN_FDS_MAX);
	for (i = 0; i <= n; i++) {
		unsigned int hi = i < n ? (unsigned int)own[i] - 1 : last;

		if ((i == n || (unsigned int)own[i] > lo) && lo <= hi &&
		    libc_close_range(lo, hi, flags)) {
			r = -1;
			saved = errno;
		}
		if (i < n)
			lo = (unsigned int)own[i] + 1;
	}
	if (r)
		errno = saved;
	return r;
}

int fl_dup(int fd)
{
	int n = libc_dup(fd), saved = errno;

	if (n >= 0 && !fl_fd_record_not_ours(fd, n))
		fl_fd_copy(fd, n);
	errno = saved;
	return n;
}

int fl_dup3(int oldfd, int newfd, int flags, int use_dup2)
{
	int r, saved;

	if (fl_in_hookless_child())
		return use_dup2 ? libc_dup2(oldfd, newfd) : libc_dup3(oldfd, newfd, flags);
	/* dup2 onto one of the shim's fds would close it: move ours away. The
	 * socket newfd names now is about to be closed by the kernel: hand its
	 * buffered bytes over while newfd still names it. */
	fl_own_fd_evict(newfd);
	if (oldfd != newfd)
		fl_fd_clear(newfd);
	r = use_dup2 ? libc_dup2(oldfd, newfd) : libc_dup3(oldfd, newfd, flags);
	saved = errno;
	if (r >= 0 && oldfd != newfd)
		fl_fd_copy(oldfd, newfd);
	errno = saved;
	return r;
}

int fl_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, void *))
{
	int r = real(fd, cmd, arg), saved = errno;

	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && !fl_fd_record_not_ours(fd, r))
		fl_fd_copy(fd, r);
	errno = saved;
	return r;
}

int fl_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int r, saved, v = 0;
	struct fl_sock_id id;
	struct fl_sock *s;
	struct fl_rxq *q;
	struct fl_fd *e;

	if (level == SOL_SOCKET && name == SO_PEEK_OFF && val && len >= (socklen_t)sizeof(int) &&
	    fl_compat_on()) {
		e = fl_fd_get(fd);
		if (fl_fd_state(e) == FL_FD_ENROLLED) {
			/* The redirect path ignores SO_PEEK_OFF: the shim keeps
			 * it (rxq.h), and the kernel must not apply it as well. */
			q = fl_fd_rxq(e, true);
			if (q) {
				memcpy(&v, val, sizeof(v));
				fl_rxq_set_peek_off(q, v);
				return 0;
			}
		} else if (e) {
			/* Not enrolled yet: such a socket stays on TCP (enroll.c). */
			__atomic_fetch_or(&e->flags, FL_FDF_RCVLOWAT, __ATOMIC_RELAXED);
		}
	}
	if (level == SOL_SOCKET && name == SO_OOBINLINE && val && len >= (socklen_t)sizeof(int)) {
		/* Held on by the shim for now (rxq.h): the application's
		 * value is noted there, the kernel's stays on until then. */
		e = fl_fd_peek(fd);
		q = fl_fd_state(e) == FL_FD_ENROLLED ? fl_fd_rxq(e, false) : NULL;
		memcpy(&v, val, sizeof(v));
		if (q && fl_rxq_set_oobinline(q, v))
			return 0;
	}
	r = libc_setsockopt(fd, level, name, val, len);
	saved = errno;

	if (r || !val || len < (socklen_t)sizeof(int))
		return r;
	memcpy(&v, val, sizeof(v));
	if (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_CORK)) {
		/* The send buffer follows TCP's own switches (tx.h). */
		e = fl_fd_peek(fd);
		if (fl_fd_state(e) == FL_FD_ENROLLED && (s = fl_fd_sock(e, &id))) {
			if (name == TCP_NODELAY)
				fl_tx_set_nodelay(s, fd, v != 0);
			else
				fl_tx_set_cork(s, fd, v != 0);
		}
		errno = saved;
		return r;
	}
	if (level != SOL_SOCKET)
		return r;
	if (name == SO_RCVBUF || name == SO_RCVBUFFORCE) {
		e = fl_fd_get(fd);
		if (e) {
			__atomic_fetch_or(&e->flags, FL_FDF_RCVBUF_SET, __ATOMIC_RELAXED);
			if (fl_fd_state(e) == FL_FD_ENROLLED && (s = fl_fd_sock(e, &id)))
				fl_slot_set_budget(id.slot, id.gen, fl_enroll_budget(fd, e));
		}
	} else if (name == SO_ZEROCOPY && v && fl_compat_on()) {
		e = fl_fd_get(fd);
		if (e) {
			__atomic_fetch_or(&e->flags, FL_FDF_ZEROCOPY, __ATOMIC_RELAXED);
			/* The redirect path never completes a zero-copy send
			 * (docs/kernel.md#zerocopy), and a socket in the sockhash
			 * numbers them its own way: only TCP's own path is right.
			 * Retried at each MSG_ZEROCOPY send until the socket's bytes
			 * have been read (io.c). */
			if (fl_fd_state(e) == FL_FD_ENROLLED)
				fl_unenroll(fd, "SO_ZEROCOPY set");
		}
	} else if (name == SO_RCVLOWAT && v > 1 && fl_compat_on()) {
		e = fl_fd_get(fd);
		if (e) {
			__atomic_fetch_or(&e->flags, FL_FDF_RCVLOWAT, __ATOMIC_RELAXED);
			/* The redirect path ignores SO_RCVLOWAT
			 * (docs/kernel.md#rcvlowat): the socket leaves the fast path
			 * if nothing is queued; otherwise the peer's bytes come over
			 * TCP, which honours it, from now on. */
			if (fl_fd_state(e) == FL_FD_ENROLLED && (s = fl_fd_sock(e, &id)) &&
			    fl_unenroll(fd, "SO_RCVLOWAT set"))
				fl_slot_blind(id.slot, id.gen, "SO_RCVLOWAT set");
		}
	}
	errno = saved;
	return r;
}
