// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* adopt.c - enrolled sockets survive exec. */
#include "adopt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "base/config.h"
#include "enroll.h"
#include "socket/fdtable.h"
#include "base/init_hooks.h"
#include "base/libc.h"
#include "base/log.h"

#define FL_ADOPT_VAR "FASTLOCAL_ADOPT="

/*
 * Owned by this file: the variable handed to the next image. exec is
 * rare and replaces the process, so one buffer, guarded by nothing but
 * the fact that two threads exec'ing at once race anyway (one image wins).
 * No malloc: exec may run in a forked child of a threaded program.
 */
static char fl_adopt_var[4096];

/* Appends fd:cookie to the variable (at *len) if fd survives exec and is
 * a socket. False when the variable is full. */
static bool fl_adopt_add(int fd, size_t *len)
{
	uint64_t cookie = 0;
	socklen_t cl = sizeof(cookie);
	int fdfl = libc_fcntl(fd, F_GETFD, NULL), w;

	if (fdfl < 0 || (fdfl & FD_CLOEXEC) || libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl))
		return true;
	w = snprintf(fl_adopt_var + *len, sizeof(fl_adopt_var) - *len, "%s%d:%llu",
		     *len > sizeof(FL_ADOPT_VAR) - 1 ? "," : "", fd, (unsigned long long)cookie);
	if (w < 0 || (size_t)w >= sizeof(fl_adopt_var) - *len)
		return false;
	*len += (size_t)w;
	return true;
}

char *const *fl_adopt_env(char *const envp[], bool std_fds)
{
	size_t n = 0, len = sizeof(FL_ADOPT_VAR) - 1, i, k = 0;
	bool room = true;
	char **env;
	int fd;

	memcpy(fl_adopt_var, FL_ADOPT_VAR, len);
	for (fd = fl_fd_next_enrolled(0); fd >= 0 && room; fd = fl_fd_next_enrolled(fd + 1))
		room = fl_adopt_add(fd, &len);
	for (fd = 0; std_fds && fd <= 2 && room; fd++)
		if (fl_fd_state(fl_fd_peek(fd)) != FL_FD_ENROLLED)
			room = fl_adopt_add(fd, &len);
	if (len == sizeof(FL_ADOPT_VAR) - 1 || !envp)
		return envp; /* nothing survives exec enrolled */
	while (envp[n])
		n++;
	env = mmap(NULL, (n + 2) * sizeof(char *), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (env == MAP_FAILED)
		return envp;
	for (i = 0; i < n; i++)
		if (strncmp(envp[i], FL_ADOPT_VAR, sizeof(FL_ADOPT_VAR) - 1))
			env[k++] = envp[i];
	env[k++] = fl_adopt_var;
	env[k] = NULL;
	return env;
}

void fl_adopt_env_done(char *const *env, char *const envp[])
{
	size_t n = 0;

	if (env == envp)
		return;
	while (envp && envp[n])
		n++;
	munmap((void *)env, (n + 2) * sizeof(char *));
}

/* The new image: re-attach what the previous one passed on (init.c). */
void fl_adopt_init(void)
{
	const char *v = getenv("FASTLOCAL_ADOPT");
	char *end;

	if (!v || !fl_config()->enabled)
		goto out;
	while (*v) {
		long fd = strtol(v, &end, 10);
		unsigned long long cookie, now = 0;
		socklen_t cl = sizeof(now);

		if (end == v || *end != ':')
			break;
		cookie = strtoull(end + 1, &end, 10);
		if (fd >= 0 && !libc_getsockopt((int)fd, SOL_SOCKET, SO_COOKIE, &now, &cl) &&
		    now == cookie) {
			int r = fl_enroll_adopt((int)fd);

			fl_debug("fd %ld inherited through exec: %s", fd, r ? strerror(-r) : "adopted");
		}
		if (*end != ',')
			break;
		v = end + 1;
	}
out:
	unsetenv("FASTLOCAL_ADOPT"); /* ours only; the next exec makes its own */
}
