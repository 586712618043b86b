// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sysctl.c - reading a number out of /proc/sys. */
#include "sysctl.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/libc.h"

uint64_t fl_sysctl_max(const char *path)
{
	char buf[128], *p, *end;
	uint64_t max = 0, v;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	/* IMPORTANT: read and close are interposed; the shim's own fd goes
	 * straight to libc. */
	n = libc_read(fd, buf, sizeof(buf) - 1);
	libc_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (p = buf;; p = end) {
		v = strtoull(p, &end, 10);
		if (end == p)
			break;
		if (v > max)
			max = v;
	}
	return max;
}
