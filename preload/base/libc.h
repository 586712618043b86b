/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libc.h - trampolines to the real libc symbols.
 *
 * libc_<fn> calls the next definition of <fn> after the shim (RTLD_NEXT),
 * bound lazily on first use. If binding recurses (dlsym itself calling an
 * interposed function on this thread) the trampoline issues the raw system
 * call instead, so no call is ever lost.
 */
#ifndef FL_LIBC_H
#define FL_LIBC_H

#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>


int libc_connect(int fd, const struct sockaddr *addr, socklen_t len);
int libc_close(int fd);
int libc_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int libc_listen(int fd, int backlog);
int libc_accept(int fd, struct sockaddr *addr, socklen_t *len);
int libc_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int libc_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
ssize_t libc_send(int fd, const void *buf, size_t len, int flags);
ssize_t libc_sendto(int fd, const void *buf, size_t len, int flags,
		    const struct sockaddr *addr, socklen_t alen);
ssize_t libc_sendmsg(int fd, const struct msghdr *msg, int flags);
int libc_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags);
ssize_t libc_write(int fd, const void *buf, size_t len);
ssize_t libc_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t libc_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);
ssize_t libc_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count);
ssize_t libc_splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len,
		    unsigned int flags);
ssize_t libc_read(int fd, void *buf, size_t len);
ssize_t libc_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t libc_recv(int fd, void *buf, size_t len, int flags);
ssize_t libc_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		      socklen_t *alen);
ssize_t libc_recvmsg(int fd, struct msghdr *msg, int flags);
ssize_t libc___read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t libc___recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t libc___recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			    struct sockaddr *addr, socklen_t *alen);
int libc___close_nocancel(int fd);
int libc_fclose(FILE *fp);
FILE *libc_fdopen(int fd, const char *mode);
int libc_close_range(unsigned int first, unsigned int last, int flags);
int libc_dup(int fd);
int libc_dup2(int oldfd, int newfd);
int libc_dup3(int oldfd, int newfd, int flags);
/* fcntl and ioctl are variadic; the one optional argument is passed on as a
 * pointer-sized value, which is how every libc passes it in a register. */
int libc_fcntl(int fd, int cmd, void *arg);
int libc_fcntl64(int fd, int cmd, void *arg);
int libc_ioctl(int fd, unsigned long req, void *arg);

/* Calls before which buffered bytes must go (tx.h). */
struct pollfd;
struct epoll_event;
struct timespec;
struct timeval;
#include <signal.h>
#include <sys/select.h>
int libc_poll(struct pollfd *fds, unsigned long nfds, int timeout);
int libc_ppoll(struct pollfd *fds, unsigned long nfds, const struct timespec *tmo,
	       const sigset_t *mask);
int libc___poll_chk(struct pollfd *fds, unsigned long nfds, int timeout, size_t fdslen);
int libc___ppoll_chk(struct pollfd *fds, unsigned long nfds, const struct timespec *tmo,
		     const sigset_t *mask, size_t fdslen);
int libc_select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo);
int libc_pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		 const sigset_t *mask);
int libc_epoll_create(int size);
int libc_epoll_create1(int flags);
int libc_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int libc_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout);
int libc_epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
		     const sigset_t *mask);
int libc_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
		      const sigset_t *mask);
int libc_shutdown(int fd, int how);
int libc_execve(const char *path, char *const argv[], char *const envp[]);
int libc_execv(const char *path, char *const argv[]);
int libc_execvp(const char *file, char *const argv[]);
int libc_execvpe(const char *file, char *const argv[], char *const envp[]);
int libc_fexecve(int fd, char *const argv[], char *const envp[]);
void libc__exit(int status) __attribute__((noreturn));
int libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void libc__Exit(int status) __attribute__((noreturn));

#endif
