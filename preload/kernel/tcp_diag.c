// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tcp_diag.c - what TCP itself holds for a socket, asked through sock_diag. */
#include "tcp_diag.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "base/libc.h"

/* idiag_rqueue of fd's socket, or (peer) of the socket at the other end of
 * its connection in this network namespace, found by the reversed 4-tuple. */
static long fl_tcp_diag_query(int fd, bool peer)
{
	struct sockaddr_storage l, r;
	socklen_t ll = sizeof(l), rl = sizeof(r), cl;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 req;
	} q;
	char buf[8192] __attribute__((aligned(4)));
	uint64_t cookie = 0;
	struct nlmsghdr *nh;
	long rqueue = -1;
	ssize_t n;
	int nl, saved = errno;

	cl = sizeof(cookie);
	if (getsockname(fd, (struct sockaddr *)&l, &ll) || getpeername(fd, (struct sockaddr *)&r, &rl) ||
	    libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl))
		goto out;
	memset(&q, 0, sizeof(q));
	q.nh.nlmsg_len = sizeof(q);
	q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = (uint8_t)l.ss_family;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = ~0u;
	if (peer) {
		struct sockaddr_storage t = l;

		l = r;
		r = t;
		cookie = ~0ULL; /* INET_DIAG_NOCOOKIE: any socket of that tuple */
	}
	if (l.ss_family == AF_INET) {
		q.req.id.idiag_sport = ((struct sockaddr_in *)&l)->sin_port;
		q.req.id.idiag_dport = ((struct sockaddr_in *)&r)->sin_port;
		memcpy(q.req.id.idiag_src, &((struct sockaddr_in *)&l)->sin_addr, 4);
		memcpy(q.req.id.idiag_dst, &((struct sockaddr_in *)&r)->sin_addr, 4);
	} else {
		q.req.id.idiag_sport = ((struct sockaddr_in6 *)&l)->sin6_port;
		q.req.id.idiag_dport = ((struct sockaddr_in6 *)&r)->sin6_port;
		memcpy(q.req.id.idiag_src, &((struct sockaddr_in6 *)&l)->sin6_addr, 16);
		memcpy(q.req.id.idiag_dst, &((struct sockaddr_in6 *)&r)->sin6_addr, 16);
	}
	q.req.id.idiag_cookie[0] = (uint32_t)cookie;
	q.req.id.idiag_cookie[1] = (uint32_t)(cookie >> 32);
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		goto out;
	if (libc_send(nl, &q, sizeof(q), 0) == (ssize_t)sizeof(q)) {
		n = libc_recv(nl, buf, sizeof(buf), 0);
		for (nh = (struct nlmsghdr *)buf; n > 0 && NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
				rqueue = (long)((struct inet_diag_msg *)NLMSG_DATA(nh))->idiag_rqueue;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_DONE)
				break;
		}
	}
	libc_close(nl);
out:
	errno = saved;
	return rqueue;
}

long fl_tcp_diag_rqueue(int fd)
{
	return fl_tcp_diag_query(fd, false);
}

long fl_tcp_diag_peer_rqueue(int fd)
{
	return fl_tcp_diag_query(fd, true);
}
