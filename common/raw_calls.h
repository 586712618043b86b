/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * raw_calls.h - the system calls common/ makes, issued raw.
 *
 * IMPORTANT: common/ is compiled into the shim and into the CLI. Inside the
 * shim an interposed function (close, getsockopt) must not be called by its
 * name, which would run the shim's own logic again (preload/check_boundary.sh
 * fails the build); the shim's libc_<fn> trampolines (preload/base/libc.c)
 * do not exist in the CLI. The raw system call is right in both, and names
 * nothing of the shim's layers (docs/architecture.md). None of these calls
 * needs anything libc's wrapper adds.
 */
#ifndef FL_RAW_CALLS_H
#define FL_RAW_CALLS_H

#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

static inline int fl_raw_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline int fl_raw_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

#endif
