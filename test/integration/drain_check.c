// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * drain_check.c - the drain check (common/enroll_core.h) through both
 * enrollment back-ends: a socket leaves the sockhash only once everything
 * its peer sent has been read (docs/kernel.md#loss), whether the shim
 * removes it itself (root: the direct back-end) or asks "fastlocal daemon"
 * (nobody: the brokered one).
 *
 * Each case warms a pair up (both ends enrolled) and writes 64 KiB from the
 * client, redirected, which the server reads or leaves unread; then it sets
 * SO_RCVLOWAT on the server, which the redirect path ignores: the shim asks
 * the socket to leave (fl_unenroll). With bytes unread the drain check
 * refuses (the unenrolled counter stays), with all read it passes (+1);
 * either way every byte then arrives, in order. (Right after the warm-up,
 * before the client wrote as enrolled, its slot has not yet counted the
 * request it sent over TCP, and the check refuses: conservative, so the
 * cases write first.)
 *
 * "--nobody 0|1": the child, run as nobody under the shim and the broker,
 * doing one case, 1 with the bytes unread; its exit status says how it
 * went.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"
#include "fltest_broker.h"

#define KiB 1024u
#define QUEUED (64 * KiB)

static char fl_dir[256], fl_self[512], fl_shim[512], fl_sock[320];
static pid_t fl_daemon = -1;

static int fl_write_all(int fd, uint64_t off, size_t n, uint64_t seed)
{
	uint8_t buf[16 * KiB];
	size_t done = 0, k;
	ssize_t w;

	while (done < n) {
		k = n - done < sizeof(buf) ? n - done : sizeof(buf);
		fl_t_pattern(buf, off + done, k, seed);
		w = write(fd, buf, k);
		FL_T_CHECK(w > 0, "write: %s", w ? strerror(errno) : "0 bytes");
		done += (size_t)w;
	}
	return 0;
}

static int fl_read_all(int fd, uint64_t off, size_t n, uint64_t seed)
{
	uint8_t buf[16 * KiB], want[16 * KiB];
	size_t done = 0, k;
	ssize_t r;

	while (done < n) {
		k = n - done < sizeof(buf) ? n - done : sizeof(buf);
		r = read(fd, buf, k);
		FL_T_CHECK(r > 0, "read at %zu of %zu: %s", done, n, r ? strerror(errno) : "EOF");
		fl_t_pattern(want, off + done, (size_t)r, seed);
		FL_T_CHECK_MEM_EQ(buf, want, (size_t)r, "the bytes at stream offset %llu",
				  (unsigned long long)(off + done));
		done += (size_t)r;
	}
	return 0;
}

/* One case (the file's comment): 0 or -1 with the reason recorded. */
static int fl_drain_case(bool unread)
{
	size_t queued = unread ? QUEUED : 0;
	struct timeval tv = { 5, 0 };
	int c, s, lowat = 2, r = -1;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no pair");
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (fl_t_warmup(c, s)) {
		fl_t_fail(__FILE__, __LINE__, "warm-up failed");
		goto out;
	}
	if (fl_write_all(c, 0, QUEUED, 21) || (!unread && fl_read_all(s, 0, QUEUED, 21)))
		goto out;
	if (setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat))) {
		fl_t_fail(__FILE__, __LINE__, "SO_RCVLOWAT: %s", strerror(errno));
		goto out;
	}
	/* What was left unread, then as much again, over whichever path now. */
	if (fl_read_all(s, QUEUED - queued, queued, 21) || fl_write_all(c, QUEUED, QUEUED, 21) ||
	    fl_read_all(s, QUEUED, QUEUED, 21))
		goto out;
	r = 0;
out:
	close(c);
	close(s);
	return r;
}

/* The child: one brokered case; its reason on stderr. */
static int fl_child(const char *arg)
{
	if (fl_drain_case(!strcmp(arg, "1"))) {
		fprintf(stderr, "nobody: %s\n", fl_t_reason());
		return 1;
	}
	return 0;
}

/* Runs a case here (root: the direct back-end) or in a nobody child (the
 * brokered one), and checks the counters of the pin dir around it. */
static int fl_case(bool brokered, bool unread)
{
	uint64_t en0 = fl_t_status_u64("enrolled_total"), un0 = fl_t_status_u64("unenrolled_total");
	char arg[32];
	int st = 0;
	pid_t pid;

	FL_T_CHECK_NE(en0, UINT64_MAX, "status --json has no enrolled_total");
	FL_T_CHECK_NE(un0, UINT64_MAX, "status --json has no unenrolled_total");
	if (!brokered) {
		if (fl_drain_case(unread))
			return -1;
	} else {
		snprintf(arg, sizeof(arg), "%d", unread);
		pid = fork();
		FL_T_CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (!pid) {
			if (fl_t_become_nobody(fl_shim, fl_sock))
				_exit(126);
			execl(fl_self, fl_self, "--nobody", arg, (char *)NULL);
			_exit(127);
		}
		FL_T_CHECK_EQ(waitpid(pid, &st, 0), pid, "waitpid");
		FL_T_CHECK(WIFEXITED(st), "the nobody child died of signal %d", WTERMSIG(st));
		FL_T_CHECK_EQ(WEXITSTATUS(st), 0, "the nobody child's exit status (its reason above)");
	}
	/* Both ends enrolled (the broker counts a brokered process's). */
	FL_T_CHECK_GE(fl_t_status_u64("enrolled_total") - en0, 2, "ends enrolled in the warm-up");
	FL_T_CHECK_EQ(fl_t_status_u64("unenrolled_total") - un0, unread ? 0 : 1,
		      "sockets that left the sockhash with %s", unread ? "64 KiB unread" : "all read");
	return 0;
}

static int test_direct_unread(void) { return fl_case(false, true); }
static int test_direct_read(void) { return fl_case(false, false); }
static int test_brokered_unread(void) { return fl_case(true, true); }
static int test_brokered_read(void) { return fl_case(true, false); }

static int fl_broker_setup(void)
{
	FL_T_CHECK(!fl_t_nobody_copies("drain_check", fl_dir, fl_self, fl_shim, sizeof(fl_dir)),
		   "cannot prepare %s", fl_dir);
	snprintf(fl_sock, sizeof(fl_sock), "%s/run/broker.sock", fl_dir);
	fl_daemon = fl_t_daemon_start(fl_sock, getenv("FASTLOCAL_PIN_DIR"));
	FL_T_CHECK(fl_daemon > 0, "fastlocal daemon did not start");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--nobody"))
		return fl_child(argv[2]);
	signal(SIGPIPE, SIG_IGN);
	alarm(120); /* a child that hangs must fail the test, not the suite */
	if (!fl_t_setup(geteuid() == 0, "running as root"))
		return fl_t_exit_status();
	FL_T_RUN("direct: a socket with 64 KiB of its peer unread stays in the sockhash on "
		 "SO_RCVLOWAT, and every byte arrives", test_direct_unread);
	FL_T_RUN("direct: a socket with everything read leaves the sockhash on SO_RCVLOWAT, "
		 "and every byte arrives", test_direct_read);
	if (fl_t_setup_run("fastlocal daemon started for nobody", fl_broker_setup)) {
		FL_T_RUN("brokered: a socket of nobody with 64 KiB of its peer unread stays in "
			 "the sockhash on SO_RCVLOWAT, and every byte arrives", test_brokered_unread);
		FL_T_RUN("brokered: a socket of nobody with everything read leaves the sockhash "
			 "on SO_RCVLOWAT, and every byte arrives", test_brokered_read);
	}
	if (fl_daemon > 0 && fl_t_daemon_stop(fl_daemon, fl_sock))
		fl_t_setup(false, "fastlocal daemon stopped");
	if (fl_dir[0])
		fl_t_sh("rm -rf '%s'", fl_dir);
	return fl_t_exit_status();
}
