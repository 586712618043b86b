// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* reset.c - a connection reset is reported once (reset.h). */
#include "reset.h"

#include <errno.h>
#include <sys/socket.h>

#include "base/config.h"
#include "base/libc.h"

void fl_reset_report_once(int fd, ssize_t r)
{
	int err = 0, saved = errno;
	socklen_t len = sizeof(err);

	if (r >= 0 || errno != ECONNRESET || !fl_compat_on())
		return;
	libc_getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	errno = saved;
}
