// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libc_plain.c - the libc_<fn> trampolines of the shared shim files, for the
 * CLI.
 *
 * Files shared with the shim (enroll_maps.c, conf_file.c) call interposed functions only
 * through libc_<fn> (common/libc_calls.h), which in the shim skip its own
 * exports. The CLI interposes nothing, so here each is the plain call.
 */
#include "../common/libc_calls.h"

#include <unistd.h>

int libc_close(int fd)
{
	return close(fd);
}

int libc_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return getsockopt(fd, level, name, val, len);
}
