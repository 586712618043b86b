// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lazy_enroll - deferred enrollment, the default (FASTLOCAL_ENROLL_AFTER,
 * 4096 bytes): a short connection never pays for enrollment; a longer one
 * starts on TCP and switches to redirect once it has moved that much, with
 * every byte exact and in order, and the ordering gate opening in both
 * directions (the bytes read before enrollment are counted exactly).
 *
 * test/run.sh runs it in the default configuration; run by hand with
 * FASTLOCAL_ENROLL_AFTER set, it runs itself again without it before the
 * shim reads it, so that it always tests the default.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "fltest.h"

static uint16_t fl_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static int fl_xfer(int from, int to, size_t n, uint64_t off, uint64_t seed)
{
	uint8_t buf[2000];

	fl_t_pattern(buf, off, n, seed);
	if (send(from, buf, n, 0) != (ssize_t)n)
		return -1;
	memset(buf, 0, sizeof(buf));
	return recv(to, buf, n, MSG_WAITALL) == (ssize_t)n &&
	       fl_t_pattern_check(buf, off, n, seed) < 0 ? 0 : -1;
}

/* 300 connections that each carry one 64-byte request and answer: none is
 * enrolled (and none counts as a fallback: there was nothing to decide). */
static int test_short_connections_are_not_enrolled(void)
{
	uint64_t e0 = fl_t_status_u64("enrolled_total");
	uint64_t seen0 = fl_t_status_u64("connections_seen");
	int i, c, s;

	for (i = 0; i < 300; i++) {
		FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "pair %d", i);
		FL_T_CHECK(fl_xfer(c, s, 64, 0, (uint64_t)i) == 0 && fl_xfer(s, c, 64, 0, 7) == 0,
			   "request/answer %d", i);
		close(c);
		close(s);
	}
	printf("  300 connections: %llu seen by sockops, %llu enrolled\n",
	       (unsigned long long)(fl_t_status_u64("connections_seen") - seen0) / 2,
	       (unsigned long long)(fl_t_status_u64("enrolled_total") - e0));
	FL_T_CHECK(fl_t_status_u64("enrolled_total") == e0,
		   "short connections were enrolled: %llu",
		   (unsigned long long)(fl_t_status_u64("enrolled_total") - e0));
	return 0;
}

/*
 * Request/answer rounds of 1000 and 700 bytes: both ends pass 4096 bytes
 * within a few rounds and enroll, at different moments and with bytes read
 * before. Afterwards both directions must be redirecting (the gate opened,
 * so "consumed" started exact), with every byte counted.
 */
static int test_switches_to_redirect_exactly(void)
{
	const int rounds = 40, req = 1000, ans = 700;
	uint64_t e0 = fl_t_status_u64("enrolled_total");
	char out[256];
	int c, s, k, one = 1;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "pair");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) &&
		   !setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "NODELAY");
	FL_T_CHECK_EQ(fl_t_status_u64("enrolled_total"), e0, "enrolled before any byte moved");
	for (k = 0; k < rounds; k++) {
		FL_T_CHECK(fl_xfer(c, s, req, (uint64_t)k * req, 1) == 0, "request %d", k);
		FL_T_CHECK(fl_xfer(s, c, ans, (uint64_t)k * ans, 2) == 0, "answer %d", k);
	}
	FL_T_CHECK(fl_t_status_u64("enrolled_total") - e0 == 2, "enrolled %llu ends, not 2",
		   (unsigned long long)(fl_t_status_u64("enrolled_total") - e0));
	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "'%s' conns --json | jq -r '.connections[] | "
			       "select(.a.port == %u) | \"\\(.a_to_b.path) \\(.a_to_b.bytes) "
			       "\\(.a_to_b.unread_bytes) \\(.b_to_a.path) \\(.b_to_a.bytes) "
			       "\\(.b_to_a.unread_bytes) \\(.a_to_b.redirected_bytes > 0) "
			       "\\(.b_to_a.redirected_bytes > 0)\"'", fl_t_cli(), fl_port(c)) == 0,
		   "conns --json");
	printf("  conns: %s\n", out);
	FL_T_CHECK(!strcmp(out, "redirect 40000 0 redirect 28000 0 true true"),
		   "expected both directions redirecting with every byte counted, got '%s'", out);
	close(c);
	close(s);
	return 0;
}

/* Streams in both directions at once, a reader thread blocked in read()
 * while the writer thread of the same socket enrolls it: no stall, every
 * byte exact and in order, and bytes redirected. */
static int test_concurrent_reader_does_not_stall(void)
{
	uint64_t r0 = fl_t_status_u64("redirected_bytes");
	const char *build = getenv("FL_TEST_BUILD");

	FL_T_CHECK(fl_t_sh("timeout 60 '%s/fl-stream' --both --conns 3 --bytes 32M --size 100000 "
			   ">/dev/null", build) == 0, "fl-stream stalled or moved wrong bytes");
	FL_T_CHECK(fl_t_sh("timeout 60 '%s/fl-stream' --both --bytes 16M --size 1000 >/dev/null",
			   build) == 0, "fl-stream (1000-byte writes) stalled or moved wrong bytes");
	FL_T_CHECK_GT(fl_t_status_u64("redirected_bytes"), r0, "nothing was redirected");
	return 0;
}

int main(int argc, char **argv)
{
	const char *v = getenv("FASTLOCAL_ENROLL_AFTER");

	(void)argc;
	if (v) {
		/* The shim read its configuration at start: run again without
		 * the variable, so with the default. */
		unsetenv("FASTLOCAL_ENROLL_AFTER");
		execv("/proc/self/exe", argv);
		printf("FAIL: cannot run again without FASTLOCAL_ENROLL_AFTER: %s\n",
		       strerror(errno));
		return 1;
	}
	FL_T_RUN("300 one-request connections are never enrolled",
		 test_short_connections_are_not_enrolled);
	FL_T_RUN("a longer connection starts on TCP, then redirects both ways with every byte counted",
		 test_switches_to_redirect_exactly);
	FL_T_RUN("a reader blocked in read() while its socket enrolls does not stall",
		 test_concurrent_reader_does_not_stall);
	return fl_t_exit_status();
}
