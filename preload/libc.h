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
int libc_accept(int fd, struct sockaddr *addr, socklen_t *len);
int libc_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int libc_close(int fd);
int libc_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
ssize_t libc_send(int fd, const void *buf, size_t len, int flags);
ssize_t libc_sendto(int fd, const void *buf, size_t len, int flags,
		    const struct sockaddr *addr, socklen_t alen);
ssize_t libc_sendmsg(int fd, const struct msghdr *msg, int flags);
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
int libc_close_range(unsigned int first, unsigned int last, int flags);
int libc_dup(int fd);
int libc_dup2(int oldfd, int newfd);
int libc_dup3(int oldfd, int newfd, int flags);
/* fcntl and ioctl are variadic; the one optional argument is passed on as a
 * pointer-sized value, which is how every libc passes it in a register. */
int libc_fcntl(int fd, int cmd, void *arg);
int libc_fcntl64(int fd, int cmd, void *arg);
int libc_ioctl(int fd, unsigned long req, void *arg);

#endif
