// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fltest_netns.c - running a test in a network namespace of its own. */
#include "fltest_netns.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

int fl_t_private_netns(void)
{
	struct ifreq ifr;
	int fd, r;

	if (unshare(CLONE_NEWNET))
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (!r) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return r ? -1 : 0;
}
