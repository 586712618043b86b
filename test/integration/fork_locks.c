// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork_locks - a fork() while another thread holds one of the shim's locks
 * leaves the child able to use what that lock guards (preload/entry/init.c,
 * the fork hooks; docs/design.md §7). Without a hook the child's copy of
 * the lock stays held by a thread that does not exist in it, and its first
 * use waits forever.
 *
 * The window is made deterministic with FASTLOCAL_TEST_FAULT_LOCK_MS
 * (preload/base/fault.h): the shim then holds the lock that long inside
 * the one call, so the main thread forks while it is surely held. Each
 * child runs under alarm(): a child that waits for the lock is killed and
 * the subtest fails.
 *
 * Checked: a socket's held receive bytes' lock (rxq.c, taken by
 * setsockopt(SO_PEEK_OFF) of an enrolled socket): the child reads the
 * socket with the emulated peek offset, byte-exact; the signal handlers'
 * lock (signals.c, taken by sigaction): the child installs a handler.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"

#define FL_HOLD_MS "600"    /* how long the shim holds the lock */
#define FL_FORK_AFTER_US 150000 /* the fork comes well inside that */
#define FL_KID_ALARM 10     /* seconds: a child that waits longer is stuck */
#define FL_MSG 512

/* The child's exit status, or -1 (fails the subtest) after a timeout. */
static int fl_wait_kid(pid_t kid, int *st)
{
	double t0 = fl_t_now();

	while (waitpid(kid, st, WNOHANG) == 0) {
		if (fl_t_now() - t0 > FL_KID_ALARM + 5) {
			kill(kid, SIGKILL);
			waitpid(kid, st, 0);
			return -1;
		}
		usleep(1000);
	}
	return 0;
}

static int fl_s; /* the enrolled server end the holder thread sets on */

static void *fl_set_peek_off(void *arg)
{
	int v = 0;

	(void)arg;
	setsockopt(fl_s, SOL_SOCKET, SO_PEEK_OFF, &v, sizeof(v));
	return NULL;
}

/* The child: peeks past the offset, then reads, through the inherited fd. */
static int fl_kid_reads(int s)
{
	uint8_t buf[FL_MSG], peek[16];
	size_t got = 0;
	int off = -1;
	socklen_t ol = sizeof(off);

	alarm(FL_KID_ALARM);
	if (getsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &off, &ol) || off != 0)
		return 2;
	/* A peek moves the emulated offset; the next peek sees the bytes after. */
	if (recv(s, peek, 8, MSG_PEEK) != 8 || fl_t_pattern_check(peek, 0, 8, 7) >= 0)
		return 3;
	if (recv(s, peek, 8, MSG_PEEK) != 8 || fl_t_pattern_check(peek, 8, 8, 7) >= 0)
		return 4;
	while (got < FL_MSG) {
		ssize_t n = read(s, buf + got, FL_MSG - got);

		if (n <= 0)
			return 5;
		got += (size_t)n;
	}
	return fl_t_pattern_check(buf, 0, FL_MSG, 7) >= 0 ? 6 : 0;
}

static int test_rxq_lock_held_at_fork(void)
{
	uint64_t e0 = fl_t_status_u64("enrolled_total");
	uint8_t msg[FL_MSG];
	pthread_t t;
	pid_t kid;
	int c, s, st = 0, r;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no loopback pair: %s", strerror(errno));
	FL_T_CHECK(fl_t_warmup(c, s) == 0, "warm-up");
	FL_T_CHECK_EQ(fl_t_status_u64("enrolled_total") - e0, 2, "ends enrolled by the warm-up");
	fl_t_pattern(msg, 0, sizeof(msg), 7);
	FL_T_CHECK_EQ(write(c, msg, sizeof(msg)), (ssize_t)sizeof(msg), "write");
	fl_s = s;
	setenv("FASTLOCAL_TEST_FAULT_LOCK_MS", FL_HOLD_MS, 1);
	FL_T_CHECK(pthread_create(&t, NULL, fl_set_peek_off, NULL) == 0, "pthread_create");
	usleep(FL_FORK_AFTER_US);
	fflush(stdout);
	kid = fork();
	if (kid == 0)
		_exit(fl_kid_reads(s));
	r = errno;
	pthread_join(t, NULL);
	unsetenv("FASTLOCAL_TEST_FAULT_LOCK_MS");
	FL_T_CHECK(kid > 0, "fork: %s", strerror(r));
	close(s);
	FL_T_CHECK(fl_wait_kid(kid, &st) == 0, "the child did not end");
	close(c);
	FL_T_CHECK(!WIFSIGNALED(st), "the child was killed by signal %d (%s): it waited for "
		   "the lock of the held receive bytes", WIFSIGNALED(st) ? WTERMSIG(st) : 0,
		   WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "");
	FL_T_CHECK_EQ(WEXITSTATUS(st), 0, "the child's status (2: offset, 3-4: peek, 5-6: read)");
	return 0;
}

static void fl_nop(int sig)
{
	(void)sig;
}

static void *fl_set_handler(void *arg)
{
	struct sigaction sa;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fl_nop;
	sigaction(SIGUSR1, &sa, NULL);
	return NULL;
}

static int test_sig_lock_held_at_fork(void)
{
	pthread_t t;
	pid_t kid;
	int st = 0, r;

	setenv("FASTLOCAL_TEST_FAULT_LOCK_MS", FL_HOLD_MS, 1);
	FL_T_CHECK(pthread_create(&t, NULL, fl_set_handler, NULL) == 0, "pthread_create");
	usleep(FL_FORK_AFTER_US);
	fflush(stdout);
	kid = fork();
	if (kid == 0) {
		struct sigaction sa;

		unsetenv("FASTLOCAL_TEST_FAULT_LOCK_MS");
		alarm(FL_KID_ALARM);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = fl_nop;
		_exit(sigaction(SIGUSR2, &sa, NULL) || raise(SIGUSR2) ? 2 : 0);
	}
	r = errno;
	pthread_join(t, NULL);
	unsetenv("FASTLOCAL_TEST_FAULT_LOCK_MS");
	FL_T_CHECK(kid > 0, "fork: %s", strerror(r));
	FL_T_CHECK(fl_wait_kid(kid, &st) == 0, "the child did not end");
	FL_T_CHECK(!WIFSIGNALED(st), "the child was killed by signal %d (%s): it waited for "
		   "the signal handlers' lock", WIFSIGNALED(st) ? WTERMSIG(st) : 0,
		   WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "");
	FL_T_CHECK_EQ(WEXITSTATUS(st), 0, "the child's sigaction and raise");
	return 0;
}

int main(void)
{
	FL_T_RUN("a fork while another thread holds a socket's held-bytes lock: the child "
		 "peeks and reads the socket, byte-exact", test_rxq_lock_held_at_fork);
	FL_T_RUN("a fork while another thread is in sigaction: the child installs a handler",
		 test_sig_lock_held_at_fork);
	return fl_t_exit_status();
}
