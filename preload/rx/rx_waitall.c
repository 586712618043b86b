// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_waitall.c - recv(MSG_WAITALL) loops as TCP's does (rx_waitall.h). */
#include "rx_waitall.h"

#include <errno.h>
#include <sys/uio.h>

#include "base/libc.h"
#include "rx_inq.h"
#include "rx_retry.h"

/* One receive into iov without MSG_WAITALL, repeated after a spurious EAGAIN. */
static ssize_t fl_recv_once(int fd, struct msghdr *m, int flags, struct fl_retry *start)
{
	ssize_t r;

	do
		r = libc_recvmsg(fd, m, flags & ~MSG_WAITALL);
	while (r < 0 && errno == EAGAIN && fl_rx_retry_eagain(fd, flags, start));
	return r;
}

ssize_t fl_rx_recvmsg_waitall(int fd, struct msghdr *msg, int flags)
{
	struct iovec v[64], *iov = msg->msg_iov;
	size_t total = 0, want = 0, i, n = msg->msg_iovlen;
	struct msghdr m = *msg;
	struct fl_retry start;
	ssize_t r;

	fl_rx_retry_init(&start);
	if (n > 64)
		return libc_recvmsg(fd, msg, flags); /* rare: as the kernel does it */
	for (i = 0; i < n; i++) {
		v[i] = iov[i];
		want += iov[i].iov_len;
	}
	m.msg_iov = v;
	while (total < want) {
		r = fl_recv_once(fd, &m, flags, &start);
		if (r <= 0) {
			/* EOF, or an error/signal/timeout: TCP returns what it has. */
			if (total)
				break;
			return r;
		}
		total += (size_t)r;
		/* Advance the iovec past the bytes received. */
		while (r > 0 && m.msg_iovlen) {
			size_t k = (size_t)r < m.msg_iov->iov_len ? (size_t)r : m.msg_iov->iov_len;

			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + k;
			m.msg_iov->iov_len -= k;
			r -= (ssize_t)k;
			if (!m.msg_iov->iov_len) {
				m.msg_iov++;
				m.msg_iovlen--;
			}
		}
		/* Control data and the peer address come with the first part. */
		m.msg_control = NULL;
		m.msg_controllen = 0;
		m.msg_name = NULL;
		m.msg_namelen = 0;
		/* TCP's MSG_WAITALL stops at the urgent mark once it has bytes
		 * (tcp_recvmsg); our next call would start there afresh and
		 * read past it. */
		if (total < want && fl_rx_atmark(fd))
			break;
	}
	msg->msg_flags = m.msg_flags;
	return (ssize_t)total;
}

ssize_t fl_rx_recv_waitall(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			   socklen_t *alen)
{
	struct iovec v = { buf, len };
	struct msghdr m = { .msg_name = addr, .msg_namelen = alen ? *alen : 0, .msg_iov = &v,
			    .msg_iovlen = 1 };
	ssize_t r = fl_rx_recvmsg_waitall(fd, &m, flags);

	if (alen)
		*alen = m.msg_namelen;
	return r;
}
