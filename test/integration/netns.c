// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * netns - two network namespaces with identical addresses and the same ports
 * at the same time: no cross-talk, each side byte-exact.
 *
 * Two namespaces are made with "ip netns add" (names carry the pid), each
 * with loopback up and a veth pair whose first end has 10.77.0.1/24: the
 * same address in both. In both at once, fl-stream (a plain socket program,
 * preloaded with the shim this test runs under) streams both ways between a
 * client and a server with the same --addr, --port and --cport, so that the
 * two connections have identical 4-tuples (and ISNs that differ only by the
 * clock term: the kernel's ISN hash does not include the namespace). Only the
 * pattern seed differs: a byte that lands in the other namespace's socket
 * breaks the other side's verification, and fl-stream exits 1. The same
 * again on 127.0.0.1 and on ::1. The two kinds of key scope are both used
 * (docs/design.md section 1): the loopback connections are told apart by
 * their namespace cookie, the 10.77.0.1 ones by the nonce each one's SYN
 * carried. containers.c does the same across a bridge, client and server
 * in different namespaces.
 *
 * The namespaces are entered with setns() in a child before exec, not with
 * "ip netns exec", which remounts /sys and so hides the pins in /sys/fs/bpf
 * (the shim would then fail open to plain TCP). ip itself runs without
 * LD_PRELOAD. Namespaces are removed at the end, at exit and on a signal.
 */
/* fl-test-env: FASTLOCAL_ENROLL_AFTER=0 */
/* (Enrollment at connect/accept: the proof that two namespaces with the same
 * addresses and ports never exchange a byte is an exact count of redirected
 * bytes, which needs both ends in the sockhash from the first byte. A
 * threaded stream's start in the default configuration is stream.c's.)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fltest.h"
#include "fltest_netns.h"

#define MiB (1024ULL * 1024ULL)
#define FL_NS_BYTES (64 * MiB)  /* per direction and namespace */
#define FL_NS_PORT "7777"
#define FL_NS_CPORT "40000"
#define FL_NS_TIMEOUT 15.0      /* seconds for one fl-stream run */

static char fl_ns_name[2][64];
static int fl_ns_made[2];
static volatile pid_t fl_ns_kids[2];

#define FL_IP FL_T_IP

static void fl_ns_cleanup(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (fl_ns_kids[i] > 0) {
			kill(fl_ns_kids[i], SIGKILL);
			waitpid(fl_ns_kids[i], NULL, 0);
			fl_ns_kids[i] = 0;
		}
	for (i = 0; i < 2; i++)
		if (fl_ns_made[i]) {
			if (FL_IP(NULL, "netns", "del", fl_ns_name[i]))
				fprintf(stderr, "netns: could not delete namespace %s\n",
					fl_ns_name[i]);
			fl_ns_made[i] = 0;
		}
}

static void fl_ns_on_signal(int sig)
{
	static const char msg[] = "FAIL: netns: interrupted or timed out\n";

	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	fl_ns_cleanup();
	_exit(128 + sig);
}

/* Makes namespace i: lo up, a veth pair with 10.77.0.1/24 on fl0. */
static int fl_ns_make(int i)
{
	const char *ns = fl_ns_name[i];

	FL_T_CHECK(FL_IP(NULL, "netns", "add", ns) == 0, "ip netns add %s failed", ns);
	fl_ns_made[i] = 1;
	FL_T_CHECK(FL_IP(ns, "link", "set", "lo", "up") == 0, "%s: cannot bring lo up", ns);
	FL_T_CHECK(FL_IP(ns, "link", "add", "fl0", "type", "veth", "peer", "name", "fl1") == 0,
		   "%s: cannot add a veth pair", ns);
	FL_T_CHECK(FL_IP(ns, "addr", "add", "10.77.0.1/24", "dev", "fl0") == 0,
		   "%s: cannot add 10.77.0.1/24", ns);
	FL_T_CHECK(FL_IP(ns, "link", "set", "fl0", "up") == 0 &&
		   FL_IP(ns, "link", "set", "fl1", "up") == 0,
		   "%s: cannot bring the veth pair up", ns);
	return 0;
}

/* Starts fl-stream inside namespace i (setns, then exec: the environment,
 * LD_PRELOAD with the shim included, is inherited). Output goes to out. */
static pid_t fl_ns_spawn(int i, int family, const char *addr, const char *seed, int out)
{
	char path[4096];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/fl-stream", getenv("FL_TEST_BUILD"));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid != 0)
		return pid;
	{
		char nspath[128];
		int nsfd;

		snprintf(nspath, sizeof(nspath), "/run/netns/%s", fl_ns_name[i]);
		nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0 || setns(nsfd, CLONE_NEWNET)) {
			dprintf(out, "cannot enter %s: %s\n", nspath, strerror(errno));
			_exit(126);
		}
		if (dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0)
			_exit(126);
		execl(path, path, "--both", "--family", family == 6 ? "6" : "4", "--addr", addr,
		      "--port", FL_NS_PORT, "--cport", FL_NS_CPORT, "--bytes", "64M", "--size",
		      "64K", "--seed", seed, (char *)NULL);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
}

/* Waits for kid i; its exit status or -1 (killed after the deadline). */
static int fl_ns_wait(int i, double deadline, double *ended)
{
	int st;

	for (;;) {
		pid_t r = waitpid(fl_ns_kids[i], &st, WNOHANG);

		if (r == fl_ns_kids[i])
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		if (fl_t_now() > deadline) {
			kill(fl_ns_kids[i], SIGKILL);
			waitpid(fl_ns_kids[i], &st, 0);
			fl_ns_kids[i] = 0;
			return -1;
		}
		usleep(1000);
	}
	*ended = fl_t_now();
	fl_ns_kids[i] = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Prints what a child wrote, indented. */
static void fl_ns_print(int i, FILE *f)
{
	char line[512];

	rewind(f);
	while (fgets(line, sizeof(line), f))
		printf("  ns %c: %s%s", 'A' + i, line, strchr(line, '\n') ? "" : "\n");
}

/* fl-stream in both namespaces at once, same addr/ports, different seeds. */
static int fl_ns_case(int family, const char *addr)
{
	static const char *seeds[2] = { "1000", "2000" };
	uint64_t red0, red1, enr0, enr1, flow0, flow1, want;
	double started[2], ended[2] = { 0, 0 }, deadline;
	FILE *out[2] = { NULL, NULL };
	int st[2], i, r = 0;

	FL_T_CHECK(fl_ns_made[0] && fl_ns_made[1], "the namespaces were not made");
	red0 = fl_t_status_u64("redirected_bytes");
	flow0 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	enr0 = fl_t_status_u64("enrolled_total");
	FL_T_CHECK(red0 != UINT64_MAX && enr0 != UINT64_MAX, "status --json gave no counters");
	for (i = 0; i < 2; i++) {
		out[i] = tmpfile();
		if (!out[i])
			break;
		started[i] = fl_t_now();
		fl_ns_kids[i] = fl_ns_spawn(i, family, addr, seeds[i], fileno(out[i]));
		if (fl_ns_kids[i] < 0) {
			fl_ns_kids[i] = 0;
			break;
		}
	}
	deadline = fl_t_now() + FL_NS_TIMEOUT;
	for (i = 0; i < 2; i++)
		st[i] = fl_ns_kids[i] > 0 ? fl_ns_wait(i, deadline, &ended[i]) : -2;
	for (i = 0; i < 2; i++)
		if (out[i]) {
			fl_ns_print(i, out[i]);
			fclose(out[i]);
		}
	red1 = fl_t_status_u64("redirected_bytes");
	flow1 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	enr1 = fl_t_status_u64("enrolled_total");
	if (st[0] >= 0 && st[1] >= 0)
		printf("  %s port %s, client port %s in both; ran at once (A: 0-%.3fs, B: "
		       "%.3f-%.3fs); redirected %llu bytes, %llu sockets enrolled\n", addr,
		       FL_NS_PORT, FL_NS_CPORT, ended[0] - started[0], started[1] - started[0],
		       ended[1] - started[0], (unsigned long long)(red1 - red0),
		       (unsigned long long)(enr1 - enr0));
	for (i = 0; i < 2 && !r; i++) {
		if (st[i] == -2)
			r = (fl_t_fail(__FILE__, __LINE__, "could not start fl-stream in %s",
				       fl_ns_name[i]), -1);
		else if (st[i] == -1)
			r = (fl_t_fail(__FILE__, __LINE__, "fl-stream in %s did not finish in %.0fs",
				       fl_ns_name[i], FL_NS_TIMEOUT), -1);
		else if (st[i] != 0)
			r = (fl_t_fail(__FILE__, __LINE__, "fl-stream in %s exited with %d (bytes "
				       "lost, reordered or crossed)", fl_ns_name[i], st[i]), -1);
	}
	if (r)
		return r;
	/* Both ran at once: the second started before the first finished. */
	FL_T_CHECK(started[1] < ended[0] && started[0] < ended[1],
		   "the two streams did not overlap in time");
	FL_T_CHECK(red1 != UINT64_MAX && enr1 != UINT64_MAX, "status --json gave no counters");
	FL_T_CHECK(enr1 - enr0 >= 4, "only %llu sockets enrolled, expected 4 (2 per namespace)",
		   (unsigned long long)(enr1 - enr0));
	/* Each direction's first enroll_after bytes go over TCP (deferred
	 * enrollment, the default); every later one is redirected, or passed
	 * by flow control where a reader fell a budget behind (four streams
	 * on two CPUs, with the machine busy). */
	FL_T_CHECK(flow0 != UINT64_MAX && flow1 != UINT64_MAX, "status --json gave no counters");
	want = 4 * (FL_NS_BYTES - fl_t_enroll_after());
	FL_T_CHECK(red1 - red0 + (flow1 - flow0) >= want && red1 - red0 >= want / 2,
		   "redirected_bytes grew by %llu (and %llu passed by flow control), expected "
		   ">= %llu (both ways in both namespaces)", (unsigned long long)(red1 - red0),
		   (unsigned long long)(flow1 - flow0), (unsigned long long)want);
	return 0;
}

static int test_same_private_address(void)
{
	return fl_ns_case(4, "10.77.0.1");
}

static int test_same_loopback_v4(void)
{
	return fl_ns_case(4, "127.0.0.1");
}

static int test_same_loopback_v6(void)
{
	return fl_ns_case(6, "::1");
}

static int test_make_namespaces(void)
{
	const char *pre = getenv("LD_PRELOAD");

	FL_T_CHECK(pre && strstr(pre, "libfastlocal"), "LD_PRELOAD has no libfastlocal.so: run "
		   "this test under 'fastlocal run' (test/run.sh does)");
	FL_T_CHECK(getenv("FL_TEST_BUILD"), "FL_TEST_BUILD is not set");
	if (fl_ns_make(0) || fl_ns_make(1))
		return -1;
	return 0;
}

static int test_remove_namespaces(void)
{
	char path[128];
	struct stat sb;
	int i;

	fl_ns_cleanup();
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/run/netns/%s", fl_ns_name[i]);
		FL_T_CHECK(stat(path, &sb) != 0, "%s is still there", path);
	}
	return 0;
}

int main(void)
{
	struct sigaction sa;
	int i;

	for (i = 0; i < 2; i++)
		snprintf(fl_ns_name[i], sizeof(fl_ns_name[i]), "fl-netns-%c-%d", 'a' + i,
			 (int)getpid());
	atexit(fl_ns_cleanup);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fl_ns_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	alarm(55); /* a watchdog: the whole test takes a few seconds */

	/* Setup steps (not subtests): what depends on one that failed is
	 * skipped, and the test fails. */
	if (fl_t_setup_run("two namespaces get the same address 10.77.0.1 on a veth pair",
			   test_make_namespaces)) {
		FL_T_RUN("10.77.0.1, same ports in two namespaces at once: no cross-talk, "
			 "byte-exact, redirected", test_same_private_address);
		FL_T_RUN("127.0.0.1, same ports in two namespaces at once: no cross-talk, "
			 "byte-exact, redirected", test_same_loopback_v4);
		FL_T_RUN("::1, same ports in two namespaces at once: no cross-talk, byte-exact, "
			 "redirected", test_same_loopback_v6);
	}
	fl_t_setup_run("the namespaces are removed", test_remove_namespaces);
	return fl_t_exit_status();
}
