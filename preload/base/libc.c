// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libc.c - lazily bound trampolines to the real libc symbols. */
#include "libc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <sys/syscall.h>

extern char **environ;

/* IMPORTANT: initial-exec TLS never allocates on first access, so the guard
 * is safe in a signal handler and during early startup. */
static __thread int fl_binding __attribute__((tls_model("initial-exec")));

/*
 * Returns the real symbol, binding it once. Each trampoline owns its slot:
 * a word written once (release) and read lock-free (acquire); two threads
 * racing to bind store the same value.
 */
static void *fl_libc_bind(const char *name, void **slot)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (fn || fl_binding)
		return fn;
	fl_binding = 1;
	fn = dlsym(RTLD_NEXT, name);
	fl_binding = 0;
	if (fn)
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	return fn;
}

#define FL_LIBC(ret, name, params, args, sysno)                             \
	ret libc_##name params                                              \
	{                                                                   \
		static void *slot;                                          \
		ret(*fn) params = (ret(*) params)fl_libc_bind(#name, &slot); \
		if (fn)                                                     \
			return fn args;                                     \
		return (ret)syscall sysno;                                  \
	}

FL_LIBC(int, connect, (int fd, const struct sockaddr *addr, socklen_t len), (fd, addr, len),
	(SYS_connect, fd, addr, len))
FL_LIBC(int, listen, (int fd, int backlog), (fd, backlog), (SYS_listen, fd, backlog))
FL_LIBC(int, accept, (int fd, struct sockaddr *addr, socklen_t *len), (fd, addr, len),
	(SYS_accept, fd, addr, len))
FL_LIBC(int, accept4, (int fd, struct sockaddr *addr, socklen_t *len, int flags),
	(fd, addr, len, flags), (SYS_accept4, fd, addr, len, flags))
FL_LIBC(int, close, (int fd), (fd), (SYS_close, fd))
FL_LIBC(int, setsockopt, (int fd, int level, int name, const void *val, socklen_t len),
	(fd, level, name, val, len), (SYS_setsockopt, fd, level, name, val, len))
FL_LIBC(int, getsockopt, (int fd, int level, int name, void *val, socklen_t *len),
	(fd, level, name, val, len), (SYS_getsockopt, fd, level, name, val, len))
FL_LIBC(ssize_t, send, (int fd, const void *buf, size_t len, int flags), (fd, buf, len, flags),
	(SYS_sendto, fd, buf, len, flags, NULL, 0))
FL_LIBC(ssize_t, sendto,
	(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
	 socklen_t alen),
	(fd, buf, len, flags, addr, alen), (SYS_sendto, fd, buf, len, flags, addr, alen))
FL_LIBC(ssize_t, sendmsg, (int fd, const struct msghdr *msg, int flags), (fd, msg, flags),
	(SYS_sendmsg, fd, msg, flags))
FL_LIBC(int, sendmmsg, (int fd, struct mmsghdr *vec, unsigned int vlen, int flags),
	(fd, vec, vlen, flags), (SYS_sendmmsg, fd, vec, vlen, flags))
FL_LIBC(ssize_t, write, (int fd, const void *buf, size_t len), (fd, buf, len),
	(SYS_write, fd, buf, len))
FL_LIBC(ssize_t, writev, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt),
	(SYS_writev, fd, iov, iovcnt))
FL_LIBC(ssize_t, sendfile, (int out_fd, int in_fd, off_t *offset, size_t count),
	(out_fd, in_fd, offset, count), (SYS_sendfile, out_fd, in_fd, offset, count))
FL_LIBC(ssize_t, sendfile64, (int out_fd, int in_fd, off_t *offset, size_t count),
	(out_fd, in_fd, offset, count), (SYS_sendfile, out_fd, in_fd, offset, count))
FL_LIBC(ssize_t, splice,
	(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len, unsigned int flags),
	(fd_in, off_in, fd_out, off_out, len, flags),
	(SYS_splice, fd_in, off_in, fd_out, off_out, len, flags))
FL_LIBC(ssize_t, read, (int fd, void *buf, size_t len), (fd, buf, len), (SYS_read, fd, buf, len))
FL_LIBC(ssize_t, readv, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt),
	(SYS_readv, fd, iov, iovcnt))
FL_LIBC(ssize_t, recv, (int fd, void *buf, size_t len, int flags), (fd, buf, len, flags),
	(SYS_recvfrom, fd, buf, len, flags, NULL, NULL))
FL_LIBC(ssize_t, recvfrom,
	(int fd, void *buf, size_t len, int flags, struct sockaddr *addr, socklen_t *alen),
	(fd, buf, len, flags, addr, alen), (SYS_recvfrom, fd, buf, len, flags, addr, alen))
FL_LIBC(ssize_t, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags),
	(SYS_recvmsg, fd, msg, flags))
/* The _chk variants fall back to the plain call: the size check is glibc's,
 * and without glibc there is nothing to check against. */
FL_LIBC(ssize_t, __read_chk, (int fd, void *buf, size_t len, size_t buflen),
	(fd, buf, len, buflen), (SYS_read, fd, buf, len))
FL_LIBC(ssize_t, __recv_chk, (int fd, void *buf, size_t len, size_t buflen, int flags),
	(fd, buf, len, buflen, flags), (SYS_recvfrom, fd, buf, len, flags, NULL, NULL))
FL_LIBC(ssize_t, __recvfrom_chk,
	(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *addr,
	 socklen_t *alen),
	(fd, buf, len, buflen, flags, addr, alen), (SYS_recvfrom, fd, buf, len, flags, addr, alen))
FL_LIBC(int, __close_nocancel, (int fd), (fd), (SYS_close, fd))
/* There is no system call for fclose; without a real one, report failure. */
static int fl_fclose_fallback(FILE *fp)
{
	(void)fp;
	return EOF;
}

int libc_fclose(FILE *fp)
{
	static void *slot;
	int (*fn)(FILE *) = (int (*)(FILE *))fl_libc_bind("fclose", &slot);

	return fn ? fn(fp) : fl_fclose_fallback(fp);
}

FILE *libc_fdopen(int fd, const char *mode)
{
	static void *slot;
	FILE *(*fn)(int, const char *) = (FILE *(*)(int, const char *))fl_libc_bind("fdopen", &slot);

	if (fn)
		return fn(fd, mode);
	errno = ENOSYS;
	return NULL;
}

FL_LIBC(int, close_range, (unsigned int first, unsigned int last, int flags), (first, last, flags),
	(SYS_close_range, first, last, flags))
FL_LIBC(int, dup, (int fd), (fd), (SYS_dup, fd))
FL_LIBC(int, dup2, (int oldfd, int newfd), (oldfd, newfd), (SYS_dup2, oldfd, newfd))
FL_LIBC(int, dup3, (int oldfd, int newfd, int flags), (oldfd, newfd, flags),
	(SYS_dup3, oldfd, newfd, flags))
FL_LIBC(int, fcntl, (int fd, int cmd, void *arg), (fd, cmd, arg), (SYS_fcntl, fd, cmd, arg))
FL_LIBC(int, fcntl64, (int fd, int cmd, void *arg), (fd, cmd, arg), (SYS_fcntl, fd, cmd, arg))
FL_LIBC(int, ioctl, (int fd, unsigned long req, void *arg), (fd, req, arg),
	(SYS_ioctl, fd, req, arg))
FL_LIBC(int, poll, (struct pollfd *fds, unsigned long nfds, int timeout), (fds, nfds, timeout),
	(SYS_poll, fds, nfds, timeout))
FL_LIBC(int, ppoll,
	(struct pollfd *fds, unsigned long nfds, const struct timespec *tmo, const sigset_t *mask),
	(fds, nfds, tmo, mask), (SYS_ppoll, fds, nfds, tmo, mask, 8))
FL_LIBC(int, __poll_chk, (struct pollfd *fds, unsigned long nfds, int timeout, size_t fdslen),
	(fds, nfds, timeout, fdslen), (SYS_poll, fds, nfds, timeout))
FL_LIBC(int, __ppoll_chk,
	(struct pollfd *fds, unsigned long nfds, const struct timespec *tmo, const sigset_t *mask,
	 size_t fdslen),
	(fds, nfds, tmo, mask, fdslen), (SYS_ppoll, fds, nfds, tmo, mask, 8))
FL_LIBC(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo),
	(n, r, w, e, tmo), (SYS_select, n, r, w, e, tmo))
int libc_pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		 const sigset_t *mask)
{
	static void *slot;
	int (*fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
		(int (*)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			 const sigset_t *))fl_libc_bind("pselect", &slot);
	/* pselect6 takes its mask in a struct of pointer and size. */
	struct { const sigset_t *ss; size_t len; } m = { mask, 8 };
	struct timespec t;

	if (fn)
		return fn(n, r, w, e, tmo, mask);
	if (tmo)
		t = *tmo; /* the system call writes back the time left */
	return (int)syscall(SYS_pselect6, n, r, w, e, tmo ? &t : NULL, mask ? &m : NULL);
}
FL_LIBC(int, epoll_create, (int size), (size), (SYS_epoll_create1, 0))
FL_LIBC(int, epoll_create1, (int flags), (flags), (SYS_epoll_create1, flags))
FL_LIBC(int, epoll_ctl, (int epfd, int op, int fd, struct epoll_event *ev), (epfd, op, fd, ev),
	(SYS_epoll_ctl, epfd, op, fd, ev))
FL_LIBC(int, epoll_wait, (int epfd, struct epoll_event *ev, int max, int timeout),
	(epfd, ev, max, timeout), (SYS_epoll_wait, epfd, ev, max, timeout))
FL_LIBC(int, epoll_pwait,
	(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask),
	(epfd, ev, max, timeout, mask), (SYS_epoll_pwait, epfd, ev, max, timeout, mask, 8))
FL_LIBC(int, epoll_pwait2,
	(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo, const sigset_t *mask),
	(epfd, ev, max, tmo, mask), (SYS_epoll_pwait2, epfd, ev, max, tmo, mask, 8))
FL_LIBC(int, shutdown, (int fd, int how), (fd, how), (SYS_shutdown, fd, how))
FL_LIBC(int, execve, (const char *path, char *const argv[], char *const envp[]),
	(path, argv, envp), (SYS_execve, path, argv, envp))
FL_LIBC(int, execv, (const char *path, char *const argv[]), (path, argv),
	(SYS_execve, path, argv, environ))
FL_LIBC(int, execvp, (const char *file, char *const argv[]), (file, argv),
	(SYS_execve, file, argv, environ))
FL_LIBC(int, execvpe, (const char *file, char *const argv[], char *const envp[]),
	(file, argv, envp), (SYS_execve, file, argv, envp))
FL_LIBC(int, fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp),
	(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH))

void libc__exit(int status)
{
	static void *slot;
	void (*fn)(int) = (void (*)(int))fl_libc_bind("_exit", &slot);

	if (fn)
		fn(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

void libc__Exit(int status)
{
	static void *slot;
	void (*fn)(int) = (void (*)(int))fl_libc_bind("_Exit", &slot);

	if (fn)
		fn(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

FL_LIBC(int, sigaction, (int sig, const struct sigaction *act, struct sigaction *old),
	(sig, act, old), (SYS_rt_sigaction, sig, act, old, 8))
