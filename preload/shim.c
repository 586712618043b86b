// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * shim.c - the interposed entry points.
 *
 * Each exported function is a one-line forwarder to fl_<fn>, which holds the
 * logic and reaches libc through libc_<fn>. At this stage the logic is a
 * pass-through: enrollment is explicit (fastlocal_enroll_fd) and the
 * transparent, ordering-safe enrollment builds on these hooks.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "enroll.h"
#include "libc.h"

#define FL_EXPORT __attribute__((visibility("default")))

static int fl_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return libc_connect(fd, addr, len);
}

static int fl_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	return libc_accept4(fd, addr, len, flags);
}

static int fl_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return libc_accept(fd, addr, len);
}

static int fl_close(int fd)
{
	return libc_close(fd);
}

static int fl_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	return libc_setsockopt(fd, level, name, val, len);
}

static ssize_t fl_sendto(int fd, const void *buf, size_t len, int flags,
			 const struct sockaddr *addr, socklen_t alen)
{
	return libc_sendto(fd, buf, len, flags, addr, alen);
}

static ssize_t fl_send(int fd, const void *buf, size_t len, int flags)
{
	return libc_send(fd, buf, len, flags);
}

static ssize_t fl_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return libc_sendmsg(fd, msg, flags);
}

static ssize_t fl_write(int fd, const void *buf, size_t len)
{
	return libc_write(fd, buf, len);
}

static ssize_t fl_writev(int fd, const struct iovec *iov, int iovcnt)
{
	return libc_writev(fd, iov, iovcnt);
}

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
	return fl_close(fd);
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

FL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	return fl_write(fd, buf, len);
}

FL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	return fl_writev(fd, iov, iovcnt);
}
