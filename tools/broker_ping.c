// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* broker_ping.c - is "fastlocal daemon" answering on a socket. */
#include "broker_ping.h"

#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "fastlocal.h"
#include "../common/broker_proto.h"

bool fl_broker_ping(const char *path, __u32 *domains)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct fl_broker_req q = { FL_BROKER_MAGIC, FL_ABI_VERSION, FL_BROKER_PING, 0 };
	struct fl_broker_rep r;
	struct timeval tv = { 1, 0 };
	bool ok = false;
	int s;

	*domains = 0;
	if (strlen(path) >= sizeof(a.sun_path))
		return false;
	memcpy(a.sun_path, path, strlen(path) + 1);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	memset(&r, 0, sizeof(r));
	if (!setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) &&
	    !setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) &&
	    !connect(s, (struct sockaddr *)&a, sizeof(a)) &&
	    send(s, &q, sizeof(q), MSG_NOSIGNAL) == (ssize_t)sizeof(q) &&
	    recv(s, &r, sizeof(r), 0) == (ssize_t)sizeof(r) && r.magic == FL_BROKER_MAGIC &&
	    r.err == 0) {
		*domains = r.domain;
		ok = true;
	}
	close(s);
	return ok;
}
