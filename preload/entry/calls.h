/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * calls.h - the logic behind each interposed call (fl_<fn>).
 *
 * shim.c exports one-line forwarders to these; they reach libc through the
 * libc_<fn> trampolines. sock_calls.c has the socket bookkeeping (connect,
 * listen, accept, close, dup, fcntl, setsockopt), io.c the send and receive families.
 */
#ifndef FL_CALLS_H
#define FL_CALLS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

int fl_connect(int fd, const struct sockaddr *addr, socklen_t len);
int fl_listen(int fd, int backlog);
int fl_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int fl_accept(int fd, struct sockaddr *addr, socklen_t *len);
int fl_close(int fd, int (*real)(int));
/* An epoll fd the application made (or -1): remembered (base/epoll_sets.h). */
int fl_epoll_created(int epfd);
int fl_fclose(FILE *fp, int (*real)(FILE *));
FILE *fl_fdopen(int fd, const char *mode, FILE *(*real)(int, const char *));
int fl_close_range(unsigned int first, unsigned int last, int flags);
int fl_dup(int fd);
int fl_dup3(int oldfd, int newfd, int flags, int use_dup2);
int fl_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, void *));
int fl_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int fl_ioctl(int fd, unsigned long req, void *arg);
int fl_sockatmark(int fd);
int fl_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int fl_shutdown(int fd, int how);

ssize_t fl_send(int fd, const void *buf, size_t len, int flags);
ssize_t fl_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
		  socklen_t alen);
ssize_t fl_sendmsg(int fd, const struct msghdr *msg, int flags);
int fl_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags);
ssize_t fl_write(int fd, const void *buf, size_t len);
ssize_t fl_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t fl_sendfile(int out_fd, int in_fd, off_t *offset, size_t count, int large);
ssize_t fl_splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len,
		  unsigned int flags);
ssize_t fl_read(int fd, void *buf, size_t len);
ssize_t fl_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t fl_recv(int fd, void *buf, size_t len, int flags);
ssize_t fl_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		    socklen_t *alen);
ssize_t fl_recvmsg(int fd, struct msghdr *msg, int flags);
ssize_t fl_read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t fl_recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t fl_recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			struct sockaddr *addr, socklen_t *alen);

/* Before a call that may wait: buffered bytes go, without blocking. */
void fl_before_wait(void);
/* epoll_wait(), looking for events up to FASTLOCAL_SPIN_USEC before it
 * sleeps (wait_spin.c); fl_before_wait() first. */
int fl_epoll_wait_spin(int epfd, struct epoll_event *ev, int max, int timeout);
/* poll(), the same way (chk: __poll_chk, with fdslen). */
int fl_poll_spin(struct pollfd *fds, nfds_t nfds, int timeout, bool chk, size_t fdslen);
/* Before exec and _exit: buffered bytes go, waiting for room if need be
 * (not in a child made without the fork hooks: fl_in_hookless_child). */
void fl_before_leaving(void);
/* True in a child that a vfork(), posix_spawn's or another clone() made
 * without running the fork hooks (init.c): its memory is the parent's, or
 * a copy of it, and so are the send buffers in it, which the parent
 * sends. One getpid(). */
bool fl_in_hookless_child(void);
/* exec of path ('e': execve, 'p': search PATH) or of fd ('f': fexecve),
 * after buffered bytes went and with enrolled fds passed on (adopt.h). */
int fl_exec(int kind, const char *path, int fd, char *const argv[], char *const envp[]);
/* execl, execlp ('p'), execle ('e'): collects the arguments, then exec. */
int fl_execl_common(const char *path, const char *arg0, va_list ap, int kind);

/* A non-blocking connect() to a local peer is under way on fd. */
void fl_mark_connecting(int fd);

#endif
