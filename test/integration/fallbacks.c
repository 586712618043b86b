// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fallbacks - whenever the shim cannot or must not accelerate a connection,
 * the connection carries on over plain TCP, byte-exact, and the reason is
 * counted (status --json "fallbacks") and logged at debug level.
 *
 * Runs with the shim preloaded. Cases that need a different environment
 * (FASTLOCAL=0, no pins) run fl-stream as a child, which inherits the preload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

#include "fltest.h"

#define MiB (1024ULL * 1024ULL)

static const char *fl_build(void)
{
	return getenv("FL_TEST_BUILD");
}

/* Streams 4 MiB both ways over c/s and checks every byte. */
static int fl_stream_pair(int c, int s)
{
	struct fl_t_stream st[2] = {
		{ .wfd = c, .rfd = s, .total = 4 * MiB, .wsize = 1000, .seed = 3 },
		{ .wfd = s, .rfd = c, .total = 4 * MiB, .wsize = 1000, .seed = 4 },
	};

	FL_T_CHECK(fl_t_stream_run(st, 2) == 0, "stream not byte-exact (bad byte %lld/%lld)",
		   (long long)st[0].bad_offset, (long long)st[1].bad_offset);
	return 0;
}

static int test_switched_off(void)
{
	uint64_t off0 = fl_t_status_u64("fallbacks.disabled");
	uint64_t red0 = fl_t_status_u64("redirected_bytes");

	FL_T_CHECK(fl_t_sh("FASTLOCAL=0 '%s/fl-stream' --both --bytes 8M --size 1000 >/dev/null",
			   fl_build()) == 0, "fl-stream with FASTLOCAL=0 failed");
	FL_T_CHECK(fl_t_status_u64("fallbacks.disabled") - off0 == 2,
		   "fallbacks.disabled grew by %llu, expected 2 (client and server)",
		   (unsigned long long)(fl_t_status_u64("fallbacks.disabled") - off0));
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") == red0, "bytes were redirected");
	return 0;
}

static int test_nothing_loaded(void)
{
	char out[4096];

	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "FASTLOCAL_PIN_DIR=/sys/fs/bpf/fastlocal-nothing-here "
			       "FASTLOCAL_LOG=debug '%s/fl-stream' --both --bytes 8M 2>&1 >/dev/null",
			       fl_build()) == 0, "fl-stream with nothing loaded failed: %s", out);
	printf("  debug log: %.*s\n", (int)strcspn(out, "\n"), out);
	FL_T_CHECK(strstr(out, "stays on TCP: fastlocal is not loaded"),
		   "no debug line says why: %s", out);
	return 0;
}

/*
 * A socket the kernel refuses to enroll: it already belongs to another
 * sockhash with its own SK_MSG program, so our insert fails with EBUSY (what
 * kTLS or another sockmap user would cause; this kernel has no TLS ULP).
 * The client connects with the raw system call, so the shim does not enroll
 * it first; then it is enrolled explicitly through the shim's API.
 */
static int test_refused_insert(void)
{
	struct bpf_insn pass[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 /* SK_PASS */ },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct sockaddr_storage ss;
	socklen_t len;
	uint64_t busy0 = fl_t_status_u64("fallbacks.insert_ebusy");
	uint64_t red0 = fl_t_status_u64("redirected_bytes");
	int map, prog, lfd, c, s, r;
	__u32 key = 1;
	__u64 val;

	FL_T_CHECK(enroll, "cannot find fastlocal_enroll_fd");
	map = bpf_map_create(BPF_MAP_TYPE_SOCKHASH, "foreign", 4, 8, 4, NULL);
	prog = bpf_prog_load(BPF_PROG_TYPE_SK_MSG, "foreign", "GPL", pass, 2, NULL);
	FL_T_CHECK(map >= 0 && prog >= 0, "cannot create the foreign sockmap: %s", strerror(errno));
	FL_T_CHECK(bpf_prog_attach(prog, map, BPF_SK_MSG_VERDICT, 0) == 0, "attach: %s",
		   strerror(errno));

	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0, "address");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!bind(lfd, (struct sockaddr *)&ss, len) && !listen(lfd, 1) &&
		   !getsockname(lfd, (struct sockaddr *)&ss, &len), "listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(syscall(SYS_connect, c, (struct sockaddr *)&ss, len) == 0, "raw connect");
	s = accept(lfd, NULL, NULL); /* the shim enrolls the server end */
	FL_T_CHECK(s >= 0, "accept");
	val = (__u64)c;
	FL_T_CHECK(bpf_map_update_elem(map, &key, &val, BPF_ANY) == 0, "foreign insert: %s",
		   strerror(errno));
	r = enroll(c);
	FL_T_CHECK(r == -EBUSY, "enrolling a foreign sockmap's socket returned %d, expected -EBUSY", r);
	FL_T_CHECK(fl_t_status_u64("fallbacks.insert_ebusy") - busy0 == 1,
		   "fallbacks.insert_ebusy did not count it");
	if (fl_stream_pair(c, s))
		return -1;
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") == red0, "bytes were redirected");
	close(c);
	close(s);
	close(lfd);
	close(prog);
	close(map);
	return 0;
}

/* SO_RCVLOWAT is ignored by the redirect path (trap 8): a socket that asks
 * for it (here inherited from the listener) stays on TCP, which honours it. */
static int test_rcvlowat_stays_on_tcp(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	uint64_t odd0 = fl_t_status_u64("fallbacks.odd_socket");
	int lfd, c, s, lowat = 64;

	FL_T_CHECK(fl_t_sockaddr(AF_INET6, NULL, 0, &ss, &len) == 0, "address");
	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	FL_T_CHECK(!setsockopt(lfd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)), "SO_RCVLOWAT");
	FL_T_CHECK(!bind(lfd, (struct sockaddr *)&ss, len) && !listen(lfd, 1) &&
		   !getsockname(lfd, (struct sockaddr *)&ss, &len), "listen");
	c = socket(AF_INET6, SOCK_STREAM, 0);
	FL_T_CHECK(!connect(c, (struct sockaddr *)&ss, len), "connect");
	s = accept(lfd, NULL, NULL);
	FL_T_CHECK(s >= 0, "accept");
	FL_T_CHECK(fl_t_status_u64("fallbacks.odd_socket") - odd0 == 1,
		   "fallbacks.odd_socket did not count the accepted socket");
	if (fl_stream_pair(c, s))
		return -1;
	close(c);
	close(s);
	close(lfd);
	return 0;
}

/* UDP and AF_UNIX sockets are not ours: they work and count as nothing. */
static int test_other_sockets_pass_through(void)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint64_t enrolled0 = fl_t_status_u64("enrolled_total");
	int u1, u2, sp[2];
	char buf[8] = { 0 };

	u1 = socket(AF_INET, SOCK_DGRAM, 0);
	u2 = socket(AF_INET, SOCK_DGRAM, 0);
	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0 &&
		   !bind(u1, (struct sockaddr *)&ss, len) &&
		   !getsockname(u1, (struct sockaddr *)&ss, &len) &&
		   !connect(u2, (struct sockaddr *)&ss, len), "UDP setup");
	FL_T_CHECK(send(u2, "udp", 3, 0) == 3 && recv(u1, buf, sizeof(buf), 0) == 3 &&
		   !memcmp(buf, "udp", 3), "UDP datagram lost");
	FL_T_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
	FL_T_CHECK(write(sp[0], "unix", 4) == 4 && read(sp[1], buf, sizeof(buf)) == 4 &&
		   !memcmp(buf, "unix", 4), "AF_UNIX bytes lost");
	FL_T_CHECK(fl_t_status_u64("enrolled_total") == enrolled0, "a non-TCP socket was enrolled");
	close(u1);
	close(u2);
	close(sp[0]);
	close(sp[1]);
	return 0;
}

/* The explicit API says why it will not enroll odd descriptors. */
static int test_explicit_api_refuses_odd_fds(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	int p[2], lfd = socket(AF_INET, SOCK_STREAM, 0), r;

	FL_T_CHECK(enroll && pipe(p) == 0 && lfd >= 0, "setup");
	FL_T_CHECK((r = enroll(p[0])) == -ENOTSUP, "pipe: %d", r);
	FL_T_CHECK((r = enroll(lfd)) == -ENOTSUP, "unconnected TCP socket: %d", r);
	FL_T_CHECK((r = enroll(9999)) == -ENOTSUP, "closed fd: %d", r);
	close(p[0]);
	close(p[1]);
	close(lfd);
	return 0;
}

int main(void)
{
	FL_T_RUN("FASTLOCAL=0 keeps connections on TCP and counts them", test_switched_off);
	FL_T_RUN("with nothing loaded connections stay on TCP and the debug log says why",
		 test_nothing_loaded);
	FL_T_RUN("a socket the kernel refuses (EBUSY) stays on TCP and is counted",
		 test_refused_insert);
	FL_T_RUN("SO_RCVLOWAT keeps a socket on TCP and is counted", test_rcvlowat_stays_on_tcp);
	FL_T_RUN("UDP and AF_UNIX sockets pass straight through", test_other_sockets_pass_through);
	FL_T_RUN("the explicit API refuses pipes, listeners and closed fds",
		 test_explicit_api_refuses_odd_fds);
	return fl_t_exit_status();
}
