// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fltest_broker.c - "fastlocal daemon" and processes of the user nobody in a
 * test. */
#include "fltest_broker.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fltest.h"

pid_t fl_t_daemon_start(const char *sock, const char *pins)
{
	const char *asan = getenv("FL_TEST_ASAN_RT");
	char line[512] = "";
	int out[2];
	ssize_t n;
	pid_t pid;

	if (pipe(out))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (!pid) {
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		/* Never outlives the test, even one killed by its alarm. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* ASan's runtime must come first in a SAN build; no shim. */
		if (asan && *asan)
			setenv("LD_PRELOAD", asan, 1);
		else
			unsetenv("LD_PRELOAD");
		execl(fl_t_cli(), fl_t_cli(), "daemon", "--socket", sock, "--pin-dir", pins,
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	n = pid > 0 ? read(out[0], line, sizeof(line) - 1) : -1; /* once it listens */
	if (n > 0)
		line[n] = 0;
	close(out[0]);
	if (!strstr(line, "serving")) {
		fprintf(stderr, "fastlocal daemon did not start: %s\n", line);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	return pid;
}

int fl_t_daemon_stop(pid_t pid, const char *sock)
{
	int st = 0;

	if (pid <= 0 || kill(pid, SIGTERM) || waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return access(sock, F_OK) && errno == ENOENT ? 0 : -1;
}

int fl_t_nobody_copies(const char *name, char *dir, char *self, char *shim, size_t len)
{
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(dir, len, "/tmp/%s-%d", name, (int)getpid());
	snprintf(self, len, "%s/%s", dir, name);
	snprintf(shim, len, "%s/libfastlocal.so", dir);
	if (mkdir(dir, 0755))
		return -1;
	return fl_t_sh("cp '%s' '%s' && cp '%s' '%s' && chmod 0755 '%s' '%s'", exe, self,
		       fl_t_lib(), shim, self, shim) ? -1 : 0;
}

int fl_t_become_nobody(const char *shim, const char *broker_sock)
{
	const char *asan = getenv("FL_TEST_ASAN_RT");
	char preload[700];

	snprintf(preload, sizeof(preload), "%s%s%s", asan && *asan ? asan : "",
		 asan && *asan ? ":" : "", shim);
	if (setenv("LD_PRELOAD", preload, 1) || setenv("FASTLOCAL_BROKER", broker_sock, 1))
		return -1;
	return setgroups(0, NULL) || setgid(FL_T_NOBODY) || setuid(FL_T_NOBODY) ? -1 : 0;
}
