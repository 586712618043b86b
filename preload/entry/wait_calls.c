// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * wait_calls.c - calls before which buffered bytes must reach the kernel.
 *
 * A process about to wait (poll, select, epoll) may be waiting for the
 * answer to what it buffered; a process about to exec or _exit would take
 * its buffer with it. Each of these first hands the buffers to the kernel
 * (tx.h): without blocking before a wait, with waiting for room before exec
 * and _exit, after which the bytes would be gone. One atomic load when
 * nothing is buffered.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

#include "enroll/adopt.h"
#include "calls.h"
#include "enroll/enroll.h"
#include "socket/fdtable.h"
#include "base/libc.h"
#include "tx/tx.h"

void fl_before_wait(void)
{
	if (fl_tx_any_pending())
		fl_tx_flush_all();
}

/*
 * IMPORTANT: not in a child made without the fork hooks. A vfork() child
 * (Python's subprocess, for one) runs in its parent's memory until its
 * exec: the buffers it would drain are the parent's, which the parent
 * sends itself, and their locks may be held by a parent thread that waits
 * for a reader, so the child, and the parent suspended behind it, waited
 * as long (seen: subprocess.run() hung while another thread was blocked
 * writing to a peer that did not read; test/integration/spawn_while_writing.c).
 * A raw clone() child without CLONE_VM has a copy of them, which the
 * parent sends too: draining it would send the bytes twice.
 */
void fl_before_leaving(void)
{
	int saved = errno;

	if (fl_tx_any_pending() && !fl_in_hookless_child())
		fl_tx_drain_all();
	errno = saved;
}

/* True if envp preloads this very library (by its file name). */
static bool fl_env_preloads_us(char *const envp[])
{
	Dl_info info;
	const char *name;
	size_t i;

	if (!dladdr((void *)fl_env_preloads_us, &info) || !info.dli_fname)
		return true; /* cannot tell: assume it does, as before */
	name = strrchr(info.dli_fname, '/');
	name = name ? name + 1 : info.dli_fname;
	for (i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], "LD_PRELOAD=", 11) && strstr(envp[i] + 11, name))
			return true;
	return false;
}

/*
 * IMPORTANT: an image without the shim reads an inherited socket through
 * tcp_bpf's recvmsg with none of the shim's fixes: a blocking read there
 * returns a spurious EAGAIN whenever another holder's write (or TCP data)
 * wakes it with the redirected queue empty (docs/kernel.md#spurious-eagain),
 * and its reads are never counted, so the peer's gate stays shut anyway.
 * Each enrolled fd the new image inherits leaves the sockhash first, if
 * every byte redirected to it was read (fl_unenroll; otherwise it stays,
 * docs/design.md).
 */
static void fl_exec_without_shim(void)
{
	int fd, fl;

	for (fd = fl_fd_next_enrolled(0); fd >= 0; fd = fl_fd_next_enrolled(fd + 1)) {
		fl = libc_fcntl(fd, F_GETFD, NULL);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			fl_unenroll(fd, "exec of an image without the shim inherits it");
	}
}

int fl_exec(int kind, const char *path, int fd, char *const argv[], char *const envp[])
{
	char *const *env;
	int r, saved;

	/* Buffered bytes go first; enrolled fds that survive are passed on. */
	fl_before_leaving();
	if (!fl_env_preloads_us(envp))
		fl_exec_without_shim();
	env = fl_adopt_env(envp, fl_in_hookless_child());
	if (kind == 'p')
		r = libc_execvpe(path, argv, env);
	else if (kind == 'f')
		r = libc_fexecve(fd, argv, env);
	else
		r = libc_execve(path, argv, env);
	saved = errno;
	fl_adopt_env_done(env, envp);
	errno = saved;
	return r;
}

/* The execl family, variadic, becomes the execv family. */
int fl_execl_common(const char *path, const char *arg0, va_list ap, int kind)
{
	va_list count;
	char **argv, *const *envp = NULL;
	size_t n = 1, i;
	int r;

	va_copy(count, ap);
	while (va_arg(count, char *))
		n++;
	va_end(count);
	argv = __builtin_alloca((n + 1) * sizeof(*argv));
	argv[0] = (char *)arg0;
	for (i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *); /* the last one read is the NULL */
	if (kind == 'e')
		envp = va_arg(ap, char *const *);
	else
		envp = environ;
	r = fl_exec(kind == 'p' ? 'p' : 'e', path, -1, argv, envp);
	return r;
}
