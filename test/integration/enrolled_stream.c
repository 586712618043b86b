// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * enrolled_stream - two sockets enrolled on purpose move their bytes through
 * the sockmap, not through TCP.
 *
 * Runs in a network namespace of its own so that Tcp OutSegs counts only
 * what this test sends.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "fltest.h"
#include "fltest_netns.h"

#define MiB (1024ULL * 1024ULL)

/* Moves 'total' bytes each way at once over the pair; 0 if byte-exact. */
static int fl_both_ways(int c, int s, uint64_t total, size_t wsize)
{
	struct fl_t_stream st[2] = {
		{ .wfd = c, .rfd = s, .total = total, .wsize = wsize, .seed = 1 },
		{ .wfd = s, .rfd = c, .total = total, .wsize = wsize, .seed = 2 },
	};
	int i;

	if (fl_t_stream_run(st, 2) == 0)
		return 0;
	for (i = 0; i < 2; i++)
		fl_t_fail(__FILE__, __LINE__,
			  "direction %d: received %llu of %llu, first bad byte %lld, errno %d", i,
			  (unsigned long long)st[i].received, (unsigned long long)st[i].total,
			  (long long)st[i].bad_offset, st[i].error);
	return -1;
}

/* Enrolled both ends, 64 MiB each way: byte-exact, counted as redirected,
 * and with under 1% of the segments that plain TCP needed for the same bytes. */
static int fl_stream_family(int family, uint64_t total)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	uint64_t seg0, plain_segs, enrolled_segs, red0, red1;
	int c, s, r;

	FL_T_CHECK(enroll, "cannot load the shim's fastlocal_enroll_fd");

	/* Baseline: the same transfer over plain TCP. */
	FL_T_CHECK(fl_t_tcp_pair(family, &c, &s) == 0, "no loopback pair");
	seg0 = fl_t_tcp_outsegs();
	r = fl_both_ways(c, s, total, 64 * 1024);
	plain_segs = fl_t_tcp_outsegs() - seg0;
	close(c);
	close(s);
	FL_T_CHECK(r == 0, "plain TCP stream was not byte-exact");

	FL_T_CHECK(fl_t_tcp_pair(family, &c, &s) == 0, "no loopback pair");
	FL_T_CHECK((r = enroll(c)) == 0, "enrolling the client failed: %s", strerror(-r));
	FL_T_CHECK((r = enroll(s)) == 0, "enrolling the server failed: %s", strerror(-r));
	red0 = fl_t_status_u64("redirected_bytes");
	seg0 = fl_t_tcp_outsegs();
	r = fl_both_ways(c, s, total, 64 * 1024);
	enrolled_segs = fl_t_tcp_outsegs() - seg0;
	red1 = fl_t_status_u64("redirected_bytes");
	close(c);
	close(s);
	FL_T_CHECK(r == 0, "enrolled stream was not byte-exact");
	printf("  %s: plain TCP %llu segments, enrolled %llu segments, redirected %llu bytes\n",
	       family == AF_INET ? "IPv4" : "IPv6", (unsigned long long)plain_segs,
	       (unsigned long long)enrolled_segs, (unsigned long long)(red1 - red0));
	FL_T_CHECK(red0 != UINT64_MAX && red1 != UINT64_MAX, "status --json gave no redirected_bytes");
	FL_T_CHECK(red1 - red0 >= 2 * total, "redirected_bytes grew by %llu, expected >= %llu",
		   (unsigned long long)(red1 - red0), (unsigned long long)(2 * total));
	FL_T_CHECK(plain_segs > 100, "plain TCP used only %llu segments?",
		   (unsigned long long)plain_segs);
	FL_T_CHECK(enrolled_segs * 100 < plain_segs,
		   "enrolled pair used %llu TCP segments, plain TCP %llu: not under 1%%",
		   (unsigned long long)enrolled_segs, (unsigned long long)plain_segs);
	return 0;
}

static int test_ipv4_64mib_both_ways(void)
{
	return fl_stream_family(AF_INET, 64 * MiB);
}

static int test_ipv6_64mib_both_ways(void)
{
	return fl_stream_family(AF_INET6, 64 * MiB);
}

/* One end enrolled, the other not: the verdict finds no peer and every
 * message goes over TCP, byte-exact and counted as passed. */
static int test_unenrolled_peer_stays_on_tcp(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct fl_t_stream st = { .total = 4 * MiB, .wsize = 4096, .seed = 7 };
	uint64_t pass0, red0;
	int c, s;

	FL_T_CHECK(enroll, "cannot load the shim");
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no loopback pair");
	FL_T_CHECK(enroll(c) == 0, "enrolling the client failed");
	pass0 = fl_t_status_u64("passed_bytes");
	red0 = fl_t_status_u64("redirected_bytes");
	st.wfd = c;
	st.rfd = s;
	FL_T_CHECK(fl_t_stream_run(&st, 1) == 0, "stream not byte-exact (bad byte at %lld, errno %d)",
		   (long long)st.bad_offset, st.error);
	FL_T_CHECK(fl_t_status_u64("passed_bytes") - pass0 >= st.total,
		   "passed_bytes did not grow by the stream");
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") == red0, "bytes were redirected to nowhere");
	close(c);
	close(s);
	return 0;
}

/* Small writes of every awkward size arrive intact and in order. */
static int test_write_sizes_are_byte_exact(void)
{
	static const size_t sizes[] = { 1, 64, 1000, 4096, 65536, 1 << 20 };
	fl_t_enroll_fn enroll = fl_t_enroll();
	size_t i;

	FL_T_CHECK(enroll, "cannot load the shim");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct fl_t_stream st = { .wsize = sizes[i], .seed = 100 + i };
		int c, s;

		st.total = sizes[i] < 64 ? 256 * 1024 : 16 * MiB;
		FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no loopback pair");
		FL_T_CHECK(enroll(c) == 0 && enroll(s) == 0, "enrolling failed");
		st.wfd = c;
		st.rfd = s;
		FL_T_CHECK(fl_t_stream_run(&st, 1) == 0,
			   "write size %zu: received %llu, bad byte at %lld, errno %d", sizes[i],
			   (unsigned long long)st.received, (long long)st.bad_offset, st.error);
		close(c);
		close(s);
	}
	return 0;
}

int main(void)
{
	if (fl_t_private_netns()) {
		perror("enrolled_stream: cannot create a private network namespace");
		return 1;
	}
	FL_T_RUN("two enrolled IPv4 loopback sockets exchange 64 MiB both ways off TCP",
		 test_ipv4_64mib_both_ways);
	FL_T_RUN("two enrolled IPv6 loopback sockets exchange 64 MiB both ways off TCP",
		 test_ipv6_64mib_both_ways);
	FL_T_RUN("a socket whose peer is not enrolled stays on TCP", test_unenrolled_peer_stays_on_tcp);
	FL_T_RUN("writes of 1 B to 1 MiB arrive byte-exact", test_write_sizes_are_byte_exact);
	return fl_t_exit_status();
}
