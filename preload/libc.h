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

#endif
