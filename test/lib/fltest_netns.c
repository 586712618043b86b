// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fltest_netns.c - running a test in a network namespace of its own. */
#include "fltest_netns.h"
#include "../../common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

int fl_t_private_netns(void)
{
	struct ifreq ifr;
	int fd, r;

	if (unshare(CLONE_NEWNET))
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (!r) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return r ? -1 : 0;
}

int fl_t_run_plain(char *const argv[], double timeout)
{
	double t0 = fl_clock_s(CLOCK_MONOTONIC);
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		unsetenv("LD_PRELOAD");
		execvp(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (fl_clock_s(CLOCK_MONOTONIC) - t0 > timeout) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(2000);
	}
}

int fl_t_ip(const char *ns, const char *const *args)
{
	const char *argv[16];
	int n = 0;

	argv[n++] = "ip";
	if (ns) {
		argv[n++] = "-n";
		argv[n++] = ns;
	}
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	return fl_t_run_plain((char *const *)argv, 10.0);
}

int fl_t_netns_enter(const char *name)
{
	char path[160];
	int fd, r;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = setns(fd, CLONE_NEWNET);
	close(fd);
	return r ? -1 : 0;
}
