/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libc_calls.h - the libc_<fn> trampolines that the shared files call.
 *
 * IMPORTANT: inside the shim an interposed name is called only through its
 * libc_<fn> trampoline (preload/check_boundary.sh enforces it), so the
 * files shared with the CLI (enroll_maps.c, conf_file.c) do the same. The
 * shim defines these in preload/base/libc.c (the next definition after the
 * shim's own); the CLI, which interposes nothing, in tools/libc_plain.c as
 * the plain calls. Declared here, not in base/libc.h, so that common/
 * includes nothing of the shim's layers.
 */
#ifndef FL_LIBC_CALLS_H
#define FL_LIBC_CALLS_H

#include <sys/socket.h>

int libc_close(int fd);
int libc_getsockopt(int fd, int level, int name, void *val, socklen_t *len);

#endif
