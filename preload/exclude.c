// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* exclude.c - the port/address rules applied to one socket (exclude.h). */
#include "exclude.h"

#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "config.h"

/* The address as 16 bytes (IPv4 as IPv4-mapped IPv6, as conf.h keeps its
 * prefixes) and the port; -1 for another family. */
static int fl_norm(const struct sockaddr_storage *ss, uint8_t addr[16], uint16_t *port)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET) {
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, &in4->sin_addr, 4);
		*port = ntohs(in4->sin_port);
		return 0;
	}
	if (ss->ss_family == AF_INET6) {
		memcpy(addr, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	return -1;
}

bool fl_excluded(int fd)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote);
	uint8_t addrs[2][16];
	uint16_t ports[2];

	/* Unknown ends: not ours to judge; enrollment itself will refuse. */
	if (getsockname(fd, (struct sockaddr *)&local, &llen) ||
	    getpeername(fd, (struct sockaddr *)&remote, &rlen) ||
	    fl_norm(&local, addrs[0], &ports[0]) || fl_norm(&remote, addrs[1], &ports[1]))
		return false;
	return fl_conf_ports_excluded(fl_config(), ports) ||
	       fl_conf_addrs_excluded(fl_config(), (const uint8_t (*)[16])addrs);
}
