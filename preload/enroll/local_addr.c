// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* local_addr.c - is the other end of a connection on this host? */
#include "local_addr.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "common/clock.h"
#include "base/init_hooks.h"
#include "common/kernel_compat.h"
#include "base/libc.h"
#include "base/log.h"
#include "base/own_fds.h"

#define FL_ADDRS_MAX 256
#define FL_RECHECK_NS (100 * 1000000LL)

/*
 * Owned by this file, guarded by fl_addr_lock: the interface addresses of
 * this network namespace, the netlink socket subscribed to their changes
 * (one of the shim's own fds) and when it was last checked.
 */
static pthread_mutex_t fl_addr_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char fl_addrs[FL_ADDRS_MAX][16];
static int fl_addrs_nr = -1; /* -1: never read */
static uint64_t fl_addrs_netns; /* the namespace the list was read in */
static int fl_addr_nl = -1;
static int64_t fl_addr_checked_ns;

bool fl_addr16_of(const struct sockaddr_storage *ss, unsigned char out[16])
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &in->sin_addr, 4);
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		return true;
	}
	return false;
}

bool fl_addr_is_loopback(const unsigned char a[16])
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const unsigned char one[16] = { [15] = 1 };

	if (!memcmp(a, one, 16))
		return true;
	return !memcmp(a, mapped, 12) && a[12] == 127;
}

/* Adds the addresses in one RTM_NEWADDR message. */
static void fl_addr_take(const struct nlmsghdr *nh)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(nh);
	const struct rtattr *rta = IFA_RTA(ifa);
	int len = (int)IFA_PAYLOAD(nh);

	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		unsigned char *a;

		if ((rta->rta_type != IFA_LOCAL && rta->rta_type != IFA_ADDRESS) ||
		    fl_addrs_nr >= FL_ADDRS_MAX)
			continue;
		a = fl_addrs[fl_addrs_nr];
		if (ifa->ifa_family == AF_INET && RTA_PAYLOAD(rta) == 4) {
			memset(a, 0, 10);
			a[10] = a[11] = 0xff;
			memcpy(a + 12, RTA_DATA(rta), 4);
			fl_addrs_nr++;
		} else if (ifa->ifa_family == AF_INET6 && RTA_PAYLOAD(rta) == 16) {
			memcpy(a, RTA_DATA(rta), 16);
			fl_addrs_nr++;
		}
	}
}

/* Reads every interface address of this namespace (RTM_GETADDR dump). */
static void fl_addr_dump_locked(void)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETADDR,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.ifa = { .ifa_family = AF_UNSPEC },
	};
	char buf[16384] __attribute__((aligned(4)));
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int done = 0;

	socklen_t olen = sizeof(fl_addrs_netns);

	fl_addrs_nr = 0;
	fl_addrs_netns = 0;
	if (fd < 0)
		return;
	/* The list belongs to the namespace this netlink socket was made in
	 * (the thread's current one, which setns() may have changed). */
	if (libc_getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &fl_addrs_netns, &olen))
		fl_addrs_netns = 0;
	if (libc_send(fd, &req, sizeof(req), 0) < 0) {
		libc_close(fd);
		return;
	}
	while (!done) {
		ssize_t n = libc_recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh = (struct nlmsghdr *)buf;

		if (n <= 0)
			break;
		for (; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (nh->nlmsg_type == RTM_NEWADDR)
				fl_addr_take(nh);
		}
	}
	libc_close(fd);
	fl_debug("read %d local addresses", fl_addrs_nr);
}

/* Subscribes to address changes; the first call also reads the list. A list
 * read in another namespace than netns (the process moved with setns) is
 * read again, and the subscription follows. */
static void fl_addr_refresh_locked(uint64_t netns)
{
	char buf[4096];
	int changed = 0;

	if (fl_addr_nl >= 0 && netns && netns != fl_addrs_netns) {
		libc_close(fl_own_fd_get(&fl_addr_nl));
		fl_addr_nl = -1;
	}
	if (fl_addr_nl < 0) {
		struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
					  .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };

		fl_addr_nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
				    NETLINK_ROUTE);
		if (fl_addr_nl >= 0 && bind(fl_addr_nl, (struct sockaddr *)&sa, sizeof(sa))) {
			libc_close(fl_addr_nl);
			fl_addr_nl = -1;
		}
		fl_own_fd_take(&fl_addr_nl);
		changed = 1;
	}
	/* Any notification (or an overflow: ENOBUFS) means: read the list again. */
	while (fl_addr_nl >= 0) {
		ssize_t n = libc_recv(fl_own_fd_get(&fl_addr_nl), buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0 || (n < 0 && errno == ENOBUFS)) {
			changed = 1;
			continue;
		}
		break;
	}
	if (changed || fl_addrs_nr < 0 || fl_addr_nl < 0)
		fl_addr_dump_locked();
}

bool fl_peer_is_local(const struct sockaddr_storage *peer, const struct sockaddr_storage *self,
		      uint64_t netns)
{
	unsigned char p[16], s[16];
	bool local = false;
	int64_t now;
	int i;

	if (!fl_addr16_of(peer, p))
		return false;
	if (fl_addr_is_loopback(p) || (fl_addr16_of(self, s) && !memcmp(p, s, 16)))
		return true;
	pthread_mutex_lock(&fl_addr_lock);
	now = fl_clock_ns(CLOCK_MONOTONIC_COARSE);
	if (fl_addrs_nr < 0 || now - fl_addr_checked_ns >= FL_RECHECK_NS ||
	    (netns && netns != fl_addrs_netns)) {
		fl_addr_refresh_locked(netns);
		fl_addr_checked_ns = now;
	}
	/* A socket of another namespace than the list's: only the tests above. */
	for (i = 0; i < fl_addrs_nr && !local && (!netns || netns == fl_addrs_netns); i++)
		local = !memcmp(fl_addrs[i], p, 16);
	pthread_mutex_unlock(&fl_addr_lock);
	return local;
}

/* fork() (init.c): the child must not inherit fl_addr_lock held by a thread
 * that does not exist there; hold it across fork in the parent, release it on
 * both sides. */
void fl_addr_fork_prepare(void)
{
	pthread_mutex_lock(&fl_addr_lock);
}

void fl_addr_fork_release(void)
{
	pthread_mutex_unlock(&fl_addr_lock);
}
