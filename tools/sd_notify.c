// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sd_notify.c - the service manager's readiness protocol without libsystemd.
 *
 * systemd (Type=notify) starts the broker with NOTIFY_SOCKET set to a unix
 * datagram socket: a path, or "@name" for the abstract namespace. One
 * datagram of "KEY=VALUE" lines is the whole protocol (sd_notify(3)).
 * Linking libsystemd for this would add a dependency to a binary that is
 * otherwise self-contained (libbpf is static).
 */
#include "sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

int fl_sd_notify(const char *msg)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;
	socklen_t alen;
	ssize_t n;
	int s, saved;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len < 2 || len >= sizeof(a.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(a.sun_path, path, len);
	if (path[0] == '@')
		a.sun_path[0] = '\0'; /* abstract: the name is the bytes after NUL */
	/* An abstract name is exactly len bytes; a path ends at its NUL. */
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	n = sendto(s, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&a, alen);
	saved = errno;
	close(s);
	errno = saved;
	return n < 0 ? -1 : 1;
}
