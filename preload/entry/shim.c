// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * shim.c - the exported, interposed entry points.
 *
 * Each one is a one-line forwarder to fl_<fn> (calls.h), which holds the
 * logic and reaches libc through libc_<fn> (libc.h). Nothing else here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "calls.h"
#include "enroll/enroll.h"
#include "base/libc.h"
#include "base/signals.h"

#define FL_EXPORT __attribute__((visibility("default")))

extern char **environ;

/* Explicit enrollment, for tests and for programs that opt in by hand.
 * Returns 0 or -errno (see enroll.h). */
FL_EXPORT int fastlocal_enroll_fd(int fd)
{
	return fl_enroll(fd);
}

FL_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return fl_connect(fd, addr, len);
}

FL_EXPORT int listen(int fd, int backlog)
{
	return fl_listen(fd, backlog);
}

FL_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return fl_accept(fd, addr, len);
}

FL_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	return fl_accept4(fd, addr, len, flags);
}

FL_EXPORT int close(int fd)
{
	return fl_close(fd, libc_close);
}

/* glibc's own internal close, used by some of its functions and callers. */
FL_EXPORT int __close_nocancel(int fd)
{
	return fl_close(fd, libc___close_nocancel);
}

FL_EXPORT int fclose(FILE *fp)
{
	return fl_fclose(fp, libc_fclose);
}

FL_EXPORT FILE *fdopen(int fd, const char *mode)
{
	return fl_fdopen(fd, mode, libc_fdopen);
}

FL_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	return fl_close_range(first, last, flags);
}

FL_EXPORT void closefrom(int lowfd)
{
	fl_close_range(lowfd < 0 ? 0 : (unsigned int)lowfd, ~0U, 0);
}

FL_EXPORT int dup(int fd)
{
	return fl_dup(fd);
}

FL_EXPORT int dup2(int oldfd, int newfd)
{
	return fl_dup3(oldfd, newfd, 0, 1);
}

FL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	return fl_dup3(oldfd, newfd, flags, 0);
}

FL_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fl_fcntl(fd, cmd, arg, libc_fcntl);
}

FL_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fl_fcntl(fd, cmd, arg, libc_fcntl64);
}

FL_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fl_ioctl(fd, req, arg);
}

/* glibc's sockatmark() calls its internal ioctl, which the shim cannot
 * see: the SIOCATMARK answer of an enrolled socket is the shim's (io.c). */
FL_EXPORT int sockatmark(int fd)
{
	return fl_sockatmark(fd);
}

FL_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return fl_getsockopt(fd, level, name, val, len);
}

FL_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	return fl_setsockopt(fd, level, name, val, len);
}

FL_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return fl_send(fd, buf, len, flags);
}

FL_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			 const struct sockaddr *addr, socklen_t alen)
{
	return fl_sendto(fd, buf, len, flags, addr, alen);
}

FL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return fl_sendmsg(fd, msg, flags);
}

FL_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	return fl_sendmmsg(fd, vec, vlen, flags);
}

FL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	return fl_write(fd, buf, len);
}

FL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	return fl_writev(fd, iov, iovcnt);
}

FL_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	return fl_sendfile(out_fd, in_fd, offset, count, 0);
}

FL_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
{
	return fl_sendfile(out_fd, in_fd, offset, count, 1);
}

FL_EXPORT ssize_t splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len,
			 unsigned int flags)
{
	return fl_splice(fd_in, off_in, fd_out, off_out, len, flags);
}

FL_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	return fl_read(fd, buf, len);
}

FL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	return fl_readv(fd, iov, iovcnt);
}

FL_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return fl_recv(fd, buf, len, flags);
}

FL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			   socklen_t *alen)
{
	return fl_recvfrom(fd, buf, len, flags, addr, alen);
}

FL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	return fl_recvmsg(fd, msg, flags);
}

FL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	return fl_read_chk(fd, buf, len, buflen);
}

FL_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	return fl_recv_chk(fd, buf, len, buflen, flags);
}

FL_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
				 struct sockaddr *addr, socklen_t *alen)
{
	return fl_recvfrom_chk(fd, buf, len, buflen, flags, addr, alen);
}

FL_EXPORT int shutdown(int fd, int how)
{
	return fl_shutdown(fd, how);
}

FL_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return fl_poll_spin(fds, nfds, timeout, false, 0);
}

FL_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	return fl_poll_spin(fds, nfds, timeout, true, fdslen);
}

FL_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
		    const sigset_t *mask)
{
	fl_before_wait();
	return libc_ppoll(fds, nfds, tmo, mask);
}

FL_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
			  const sigset_t *mask, size_t fdslen)
{
	fl_before_wait();
	return libc___ppoll_chk(fds, nfds, tmo, mask, fdslen);
}

FL_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	fl_before_wait();
	return libc_select(n, r, w, e, tmo);
}

FL_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		      const sigset_t *mask)
{
	fl_before_wait();
	return libc_pselect(n, r, w, e, tmo, mask);
}

/* The shim keeps a list of the process's epoll fds (base/epoll_sets.h). */
FL_EXPORT int epoll_create(int size)
{
	return fl_epoll_created(libc_epoll_create(size));
}

FL_EXPORT int epoll_create1(int flags)
{
	return fl_epoll_created(libc_epoll_create1(flags));
}

FL_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return fl_epoll_wait_spin(epfd, ev, max, timeout);
}

FL_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			  const sigset_t *mask)
{
	if (!mask)
		return fl_epoll_wait_spin(epfd, ev, max, timeout);
	fl_before_wait();
	return libc_epoll_pwait(epfd, ev, max, timeout, mask);
}

FL_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			   const sigset_t *mask)
{
	fl_before_wait();
	return libc_epoll_pwait2(epfd, ev, max, tmo, mask);
}

FL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return fl_exec('e', path, -1, argv, envp);
}

FL_EXPORT int execv(const char *path, char *const argv[])
{
	return fl_exec('e', path, -1, argv, environ);
}

FL_EXPORT int execvp(const char *file, char *const argv[])
{
	return fl_exec('p', file, -1, argv, environ);
}

FL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return fl_exec('p', file, -1, argv, envp);
}

FL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	return fl_exec('f', NULL, fd, argv, envp);
}

FL_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = fl_execl_common(path, arg, ap, 'v');
	va_end(ap);
	return r;
}

FL_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = fl_execl_common(file, arg, ap, 'p');
	va_end(ap);
	return r;
}

FL_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = fl_execl_common(path, arg, ap, 'e');
	va_end(ap);
	return r;
}

FL_EXPORT void _exit(int status)
{
	fl_before_leaving();
	libc__exit(status);
}

FL_EXPORT void _Exit(int status)
{
	fl_before_leaving();
	libc__Exit(status);
}

FL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return fl_sigaction(sig, act, old);
}

FL_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return fl_signal(sig, handler);
}
