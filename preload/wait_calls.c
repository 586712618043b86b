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
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

extern char **environ;

#include "adopt.h"
#include "calls.h"
#include "libc.h"
#include "tx.h"

void fl_before_wait(void)
{
	if (fl_tx_any_pending())
		fl_tx_flush_all();
}

void fl_before_leaving(void)
{
	int saved = errno;

	if (fl_tx_any_pending())
		fl_tx_drain_all();
	errno = saved;
}

int fl_exec(int kind, const char *path, int fd, char *const argv[], char *const envp[])
{
	char *const *env;
	int r, saved;

	/* Buffered bytes go first; enrolled fds that survive are passed on. */
	fl_before_leaving();
	env = fl_adopt_env(envp);
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
