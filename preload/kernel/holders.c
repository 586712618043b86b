// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* holders.c - does anyone but the caller hold this socket? */
#include "holders.h"

#include <errno.h>
#include <sys/socket.h>

#include "fastlocal.h"
#include "base/libc.h"

int fl_holders_others(int fd)
{
	struct fl_holders h = { 0 };
	socklen_t len = sizeof(h);
	int saved = errno;
	__u64 own;

	if (libc_getsockopt(fd, FL_SOL_FASTLOCAL, FL_SO_HOLDERS, &h, &len) || len != sizeof(h) ||
	    h.version != 1 || !h.file_refs) {
		errno = saved;
		return -1;
	}
	errno = saved;
	own = 1 + (h.own_call ? 1 : 0); /* this fd, and this very call */
	return h.file_refs > own ? (int)(h.file_refs - own > 1000000 ? 1000000 : h.file_refs - own) : 0;
}
