// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fallbacks - whenever the shim cannot or must not accelerate a connection,
 * the connection carries on over plain TCP, byte-exact, and the reason is
 * counted (status --json "fallbacks") and logged at debug level.
 *
 * Runs with the shim preloaded. Cases that need a different environment
 * (FASTLOCAL=0, no pins) run fl-stream as a child, which inherits the preload.
 *
 * With enrollment at connect/accept: each reason is produced at the moment
 * of enrollment, most of them through the explicit fastlocal_enroll_fd()
 * on a socket the shim has just enrolled or refused, and some are bytes
 * sent before accept() (not_enrolled, ordering_gate), which only that mode
 * has. Which reasons deferred enrollment (the default) reaches, and how it
 * counts them, is not covered here yet.
 */
/* fl-test-env: FASTLOCAL_ENROLL_AFTER=0 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <pthread.h>
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "fastlocal.h"
#include "fltest.h"
#include "fltest_netns.h"
#include "../../common/kernel_compat.h"

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
	FL_T_CHECK_EQ(fl_t_status_u64("redirected_bytes"), red0, "bytes were redirected");
	return 0;
}

/* A port rule (every port skipped) keeps both ends on TCP as "excluded";
 * their bytes count as switched off, like FASTLOCAL=0's. */
static int test_excluded_by_rule(void)
{
	uint64_t ex0 = fl_t_status_u64("fallbacks.excluded");
	uint64_t off0 = fl_t_status_u64("passed_bytes_by_reason.switched_off");
	uint64_t red0 = fl_t_status_u64("redirected_bytes");

	FL_T_CHECK(fl_t_sh("FASTLOCAL_SKIP_PORTS=1-65535 '%s/fl-stream' --both --bytes 1M --size 1000 "
			   ">/dev/null", fl_build()) == 0, "fl-stream with FASTLOCAL_SKIP_PORTS failed");
	FL_T_CHECK(fl_t_status_u64("fallbacks.excluded") - ex0 == 2,
		   "fallbacks.excluded grew by %llu, expected 2 (client and server)",
		   (unsigned long long)(fl_t_status_u64("fallbacks.excluded") - ex0));
	FL_T_CHECK(fl_t_status_u64("passed_bytes_by_reason.switched_off") > off0,
		   "their bytes were not counted as switched off");
	FL_T_CHECK_EQ(fl_t_status_u64("redirected_bytes"), red0, "bytes were redirected");
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
	FL_T_CHECK_EQ(fl_t_status_u64("redirected_bytes"), red0, "bytes were redirected");
	close(c);
	close(s);
	close(lfd);
	close(prog);
	close(map);
	return 0;
}

/* SO_RCVLOWAT is ignored by the redirect path (docs/kernel.md#rcvlowat): a
 * socket that asks for it (here inherited from the listener) stays on TCP,
 * which honours it. */
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
	FL_T_CHECK_EQ(fl_t_status_u64("enrolled_total"), enrolled0,
		      "a non-TCP socket was enrolled");
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


/* ------------------------------------------------ every reason, on purpose */

/* status --json at the start, to show at the end that every reason moved. */
static char fl_start_status[] = "/tmp/fl-fallbacks-start.XXXXXX";

/* How much a status key grew since before. */
#define FL_DELTA(key, before) (fl_t_status_u64(key) - (before))

/* A pinned map of the loaded instance, by file name. */
static int fl_pinned(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), name);
	return bpf_obj_get(path);
}

/* A loopback IPv4 pair whose client connected with the raw system call, so
 * the shim did not enroll it; the server end is enrolled by accept(). */
static int fl_raw_pair(int *c, int *s)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd;

	*c = *s = -1;
	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0, "address");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!bind(lfd, (struct sockaddr *)&ss, len) && !listen(lfd, 1) &&
		   !getsockname(lfd, (struct sockaddr *)&ss, &len), "listen");
	*c = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(syscall(SYS_connect, *c, (struct sockaddr *)&ss, len) == 0, "raw connect: %s",
		   strerror(errno));
	*s = accept(lfd, NULL, NULL);
	close(lfd);
	FL_T_CHECK(*s >= 0, "accept");
	return 0;
}

/* Runs "ip ARGS" without the preload: under ASan, LeakSanitizer would fail
 * it for leaks of its own. */
#define FL_IP(...) fl_t_ip(NULL, (const char *const[]){ __VA_ARGS__, NULL })

/* The server of test_port_mapping_not_local, in namespace ns: echoes 1000
 * bytes to one connection on 10.79.0.2:47123. */
static void fl_echo_server(const char *ns, int ready_fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(47123) };
	char buf[1000];
	ssize_t n = 0, r;
	int l, s, on = 1;

	sa.sin_addr.s_addr = inet_addr("10.79.0.2");
	l = fl_t_netns_enter(ns) == 0 ? socket(AF_INET, SOCK_STREAM, 0) : -1;
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) ||
	    bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1))
		_exit(1);
	(void)!write(ready_fd, "r", 1);
	s = accept(l, NULL, NULL);
	while (s >= 0 && n < (ssize_t)sizeof(buf) && (r = read(s, buf + n, sizeof(buf) - n)) > 0)
		n += r;
	_exit(n == sizeof(buf) && write(s, buf, sizeof(buf)) == sizeof(buf) ? 0 : 2);
}

/* The client: in namespace ns, through the port mapping 47124 -> 47123,
 * sends 1000 pattern bytes and checks the echo. */
static void fl_echo_client(const char *ns)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(47124) };
	char buf[1000];
	int c;

	sa.sin_addr.s_addr = inet_addr("10.79.0.2");
	c = fl_t_netns_enter(ns) == 0 ? socket(AF_INET, SOCK_STREAM, 0) : -1;
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)))
		_exit(1);
	fl_t_pattern((uint8_t *)buf, 0, sizeof(buf), 9);
	if (write(c, buf, sizeof(buf)) != sizeof(buf))
		_exit(2);
	memset(buf, 0, sizeof(buf));
	if (recv(c, buf, sizeof(buf), MSG_WAITALL) != sizeof(buf) ||
	    fl_t_pattern_check((uint8_t *)buf, 0, sizeof(buf), 9) >= 0)
		_exit(3);
	_exit(0);
}

/*
 * Port mapping between two namespaces of this host (a container's published
 * port): the client connects to 10.79.0.2:47124, which nftables in the
 * server's namespace rewrites (DNAT) to 47123. Each end sees another
 * 4-tuple, so neither finds its peer's key among the connections
 * established on this host: both stay on TCP as peer_not_local, byte-exact.
 * (Without the mapping the same two namespaces are accelerated:
 * containers.c.)
 */
static int test_port_mapping_not_local(void)
{
	uint64_t nl0 = fl_t_status_u64("fallbacks.peer_not_local");
	uint64_t nn0 = fl_t_status_u64("fallbacks.no_nonce");
	char cns[32], sns[32], buf[1];
	const char *nft[] = { "ip", "netns", "exec", sns, "nft",
			      "add table ip flfb; "
			      "add chain ip flfb pre { type nat hook prerouting priority -100; }; "
			      "add rule ip flfb pre tcp dport 47124 dnat to 10.79.0.2:47123",
			      NULL };
	int st[2] = { -1, -1 }, ready[2], r = 0;
	pid_t srv, cli;

	snprintf(cns, sizeof(cns), "fl-fb-c-%d", (int)getpid());
	snprintf(sns, sizeof(sns), "fl-fb-s-%d", (int)getpid());
	FL_T_CHECK(FL_IP("netns", "add", cns) == 0 && FL_IP("netns", "add", sns) == 0 &&
		   FL_IP("-n", cns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0",
			 "netns", sns) == 0 &&
		   FL_IP("-n", cns, "addr", "add", "10.79.0.1/24", "dev", "eth0") == 0 &&
		   FL_IP("-n", sns, "addr", "add", "10.79.0.2/24", "dev", "eth0") == 0 &&
		   FL_IP("-n", cns, "link", "set", "eth0", "up") == 0 &&
		   FL_IP("-n", sns, "link", "set", "eth0", "up") == 0 &&
		   FL_IP("-n", sns, "link", "set", "lo", "up") == 0 &&
		   fl_t_run_plain((char *const *)nft, 10.0) == 0,
		   "cannot make the two namespaces and the port mapping (nftables installed?)");
	if (pipe(ready))
		r = -1;
	srv = r ? -1 : fork();
	if (srv == 0)
		fl_echo_server(sns, ready[1]);
	if (srv > 0 && read(ready[0], buf, 1) == 1) {
		cli = fork();
		if (cli == 0)
			fl_echo_client(cns);
		if (cli > 0)
			waitpid(cli, &st[0], 0);
		else
			kill(srv, SIGKILL);
	}
	if (srv > 0)
		waitpid(srv, &st[1], 0);
	if (!r) {
		close(ready[0]);
		close(ready[1]);
	}
	FL_IP("netns", "del", cns);
	FL_IP("netns", "del", sns);
	FL_T_CHECK(WIFEXITED(st[0]) && !WEXITSTATUS(st[0]), "the client through the mapping "
		   "failed (status %#x: 1 connect, 2 write, 3 echo wrong)", st[0]);
	FL_T_CHECK(WIFEXITED(st[1]) && !WEXITSTATUS(st[1]), "the server failed (status %#x)",
		   st[1]);
	FL_T_CHECK(FL_DELTA("fallbacks.peer_not_local", nl0) == 2,
		   "fallbacks.peer_not_local grew by %llu, expected 2 (both ends)",
		   (unsigned long long)FL_DELTA("fallbacks.peer_not_local", nl0));
	FL_T_CHECK(FL_DELTA("fallbacks.no_nonce", nn0) == 0, "no_nonce grew: the SYN nonce did "
		   "not cross the mapping, so this proved nothing about it");
	return 0;
}

/*
 * A non-loopback connection whose SYN nonce the passive end cannot read:
 * with syncookies forced (net.ipv4.tcp_syncookies=2, per namespace) the
 * listener keeps no SYN. In a private namespace, on 10.80.0.1 (an address
 * on lo, not a loopback address): the server end stays on TCP as no_nonce.
 */
static int test_no_nonce(void)
{
	uint64_t n0 = fl_t_status_u64("fallbacks.no_nonce");
	uint64_t m0 = fl_t_status_u64("syn_nonce.missing");
	int st = -1;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		struct fl_t_addr a = { .family = AF_INET, .addr = "10.80.0.1", .port = 47125 };
		int c, s, fd;
		char b[100];

		fd = fl_t_private_netns() ? -1 : open("/proc/sys/net/ipv4/tcp_syncookies", O_WRONLY);
		if (fd < 0 || write(fd, "2", 1) != 1 ||
		    fl_t_ip(NULL, (const char *const[]){ "addr", "add", "10.80.0.1/32", "dev", "lo",
						      NULL }))
			_exit(1);
		close(fd);
		if (fl_t_tcp_pairs(&a, 1, &c, &s))
			_exit(2);
		fl_t_pattern((uint8_t *)b, 0, sizeof(b), 3);
		if (write(c, b, sizeof(b)) != sizeof(b) ||
		    recv(s, b, sizeof(b), MSG_WAITALL) != sizeof(b) ||
		    fl_t_pattern_check((uint8_t *)b, 0, sizeof(b), 3) >= 0)
			_exit(3);
		_exit(0);
	}
	FL_T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
		   "the connection in the private namespace failed (status %#x)", st);
	FL_T_CHECK_GE(FL_DELTA("syn_nonce.missing", m0), 1, "syn_nonce.missing did not grow");
	FL_T_CHECK(FL_DELTA("fallbacks.no_nonce", n0) == 1,
		   "fallbacks.no_nonce grew by %llu, expected 1 (the server end)",
		   (unsigned long long)FL_DELTA("fallbacks.no_nonce", n0));
	return 0;
}

/* A connection that sockops never saw established (its record is gone, as
 * for one made before "fastlocal load") cannot be keyed: no_isn_record. */
static int test_no_isn_record(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	uint64_t n0 = fl_t_status_u64("fallbacks.no_isn_record");
	int sk = fl_pinned(FL_PIN_MAP_SK), c, s, r;

	FL_T_CHECK(enroll && sk >= 0, "setup: %s", strerror(errno));
	if (fl_raw_pair(&c, &s))
		return -1;
	FL_T_CHECK(bpf_map_delete_elem(sk, &c) == 0, "cannot drop the ISN record: %s",
		   strerror(errno));
	FL_T_CHECK((r = enroll(c)) == -ENODATA, "enroll returned %d, expected -ENODATA", r);
	FL_T_CHECK_EQ(FL_DELTA("fallbacks.no_isn_record", n0), 1, "fallbacks.no_isn_record");
	if (fl_stream_pair(c, s))
		return -1;
	close(c);
	close(s);
	close(sk);
	return 0;
}

/* Every slot taken (each is a live enrolled socket's counters): new
 * connections stay on TCP as no_free_slot. */
static int test_no_free_slot(void)
{
	const __u64 fake = 0xf1f1f1f1f1f1f1f1ull;
	size_t len = sizeof(struct fl_slot) * FL_SLOTS_MAX, i, taken = 0;
	uint64_t n0 = fl_t_status_u64("fallbacks.no_free_slot");
	uint64_t w0 = fl_t_status_u64("waited_for_peer.waited");
	struct fl_slot *slots;
	int fd = fl_pinned(FL_PIN_MAP_SLOTS), c, s, ret;

	FL_T_CHECK(fd >= 0, "slots map: %s", strerror(errno));
	slots = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	FL_T_CHECK(slots != MAP_FAILED, "mmap: %s", strerror(errno));
	for (i = 0; i < FL_SLOTS_MAX; i++) {
		__u64 zero = 0;

		taken += __atomic_compare_exchange_n(&slots[i].owner, &zero, fake, false,
						     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	ret = fl_t_tcp_pair(AF_INET, &c, &s);
	for (i = 0; i < FL_SLOTS_MAX; i++) {
		__u64 f = fake;

		__atomic_compare_exchange_n(&slots[i].owner, &f, 0, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	}
	munmap(slots, len);
	printf("  took %zu free slots\n", taken);
	FL_T_CHECK(ret == 0, "pair");
	/* The client's end finds no slot; the server's, an accepting one,
	 * then finds its peer missing and waits for it (never). */
	FL_T_CHECK(FL_DELTA("fallbacks.no_free_slot", n0) == 1 &&
		   FL_DELTA("waited_for_peer.waited", w0) == 1,
		   "fallbacks.no_free_slot grew by %llu and waited_for_peer.waited by %llu, "
		   "expected 1 and 1", (unsigned long long)FL_DELTA("fallbacks.no_free_slot", n0),
		   (unsigned long long)FL_DELTA("waited_for_peer.waited", w0));
	if (fl_stream_pair(c, s))
		return -1;
	close(c);
	close(s);
	return 0;
}

/* The peer closed before this end enrolled: a socket in CLOSE_WAIT cannot
 * join a sockhash (the kernel says EOPNOTSUPP); its last bytes come by TCP. */
static int test_closed_peer_eopnotsupp(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	uint64_t n0 = fl_t_status_u64("fallbacks.insert_eopnotsupp");
	char buf[16] = { 0 };
	int c, s, r;

	FL_T_CHECK(enroll, "enroll");
	if (fl_raw_pair(&c, &s))
		return -1;
	FL_T_CHECK(write(s, "last words", 10) == 10, "write");
	close(s);
	usleep(50000); /* the FIN arrives: CLOSE_WAIT */
	FL_T_CHECK((r = enroll(c)) == -EOPNOTSUPP, "enroll returned %d, expected -EOPNOTSUPP", r);
	FL_T_CHECK_EQ(FL_DELTA("fallbacks.insert_eopnotsupp", n0), 1, "insert_eopnotsupp");
	FL_T_CHECK(recv(c, buf, sizeof(buf), MSG_WAITALL) == 10 && !memcmp(buf, "last words", 10),
		   "the bytes before the FIN were lost");
	close(c);
	return 0;
}

/* The sockhash key of an IPv4 socket, as the shim builds it (key.c). */
static int fl_key_of(int fd, int sk_map, struct fl_key *k)
{
	struct sockaddr_in l, r;
	socklen_t ll = sizeof(l), rl = sizeof(r), ol = sizeof(k->scope);
	struct fl_sk st;

	memset(k, 0, sizeof(*k));
	FL_T_CHECK(!getsockname(fd, (struct sockaddr *)&l, &ll) &&
		   !getpeername(fd, (struct sockaddr *)&r, &rl) &&
		   !getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &k->scope, &ol) &&
		   !bpf_map_lookup_elem(sk_map, &fd, &st), "cannot build the key");
	k->local_ip[2] = k->remote_ip[2] = htonl(0xffff);
	k->local_ip[3] = l.sin_addr.s_addr;
	k->remote_ip[3] = r.sin_addr.s_addr;
	k->local_port = ntohs(l.sin_port);
	k->remote_port = ntohs(r.sin_port);
	k->snd_isn = st.snd_isn;
	k->rcv_isn = st.rcv_isn;
	return 0;
}

/*
 * Another socket already sits under this connection's key (insert_eexist;
 * the shim never replaces a live entry, docs/kernel.md#loss). The impostor
 * is in the sockhash but was never enrolled, so its own bytes pass as
 * not_enrolled.
 */
static int test_key_taken_eexist(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	uint64_t n0 = fl_t_status_u64("fallbacks.insert_eexist");
	uint64_t ne0 = fl_t_status_u64("passed_bytes_by_reason.not_enrolled");
	int sk = fl_pinned(FL_PIN_MAP_SK), hash = fl_pinned(FL_PIN_MAP_SOCKHASH);
	int c, s, ic, is, r;
	struct fl_key k;
	__u64 val;
	char buf[123];

	FL_T_CHECK(enroll && sk >= 0 && hash >= 0, "setup: %s", strerror(errno));
	if (fl_raw_pair(&c, &s) || fl_raw_pair(&ic, &is) || fl_key_of(c, sk, &k))
		return -1;
	val = (__u64)ic;
	FL_T_CHECK(bpf_map_update_elem(hash, &k, &val, BPF_NOEXIST) == 0, "impostor insert: %s",
		   strerror(errno));
	FL_T_CHECK((r = enroll(c)) == -EEXIST, "enroll returned %d, expected -EEXIST", r);
	FL_T_CHECK_EQ(FL_DELTA("fallbacks.insert_eexist", n0), 1, "insert_eexist");
	memset(buf, 'x', sizeof(buf));
	FL_T_CHECK(send(ic, buf, sizeof(buf), 0) == sizeof(buf) &&
		   recv(is, buf, sizeof(buf), MSG_WAITALL) == sizeof(buf), "impostor bytes");
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.not_enrolled", ne0) == sizeof(buf),
		   "not_enrolled grew by %llu, expected %zu",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.not_enrolled", ne0),
		   sizeof(buf));
	bpf_map_delete_elem(hash, &k);
	if (fl_stream_pair(c, s))
		return -1;
	close(c);
	close(s);
	close(ic);
	close(is);
	close(sk);
	close(hash);
	return 0;
}

/* Refusals no healthy machine gives on demand (ENOMEM; E2BIG, counted as
 * other), injected into the shim's insert (preload/base/fault.h). */
static int test_injected_insert_errors(void)
{
	static const struct {
		const char *err, *key;
	} cases[] = { { "ENOMEM", "fallbacks.insert_enomem" }, { "E2BIG", "fallbacks.other" } };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t n0 = fl_t_status_u64(cases[i].key);
		uint64_t w0 = fl_t_status_u64("waited_for_peer.waited");
		uint64_t red0 = fl_t_status_u64("redirected_bytes");

		FL_T_CHECK(fl_t_sh("FASTLOCAL_TEST_FAULT_INSERT=%s '%s/fl-stream' --both --bytes 2M "
				   "--size 1000 >/dev/null", cases[i].err, fl_build()) == 0,
			   "fl-stream with %s injected failed", cases[i].err);
		/* The client's insert fails; the server's end then finds its
		 * peer missing and waits for it (never). */
		FL_T_CHECK(FL_DELTA(cases[i].key, n0) == 1 &&
			   FL_DELTA("waited_for_peer.waited", w0) == 1,
			   "%s grew by %llu and waited_for_peer.waited by %llu, expected 1 and 1",
			   cases[i].key, (unsigned long long)FL_DELTA(cases[i].key, n0),
			   (unsigned long long)FL_DELTA("waited_for_peer.waited", w0));
		FL_T_CHECK_EQ(fl_t_status_u64("redirected_bytes"), red0, "bytes were redirected");
	}
	return 0;
}

static int fl_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Bytes written before the server accepted go by TCP (peer_not_enrolled);
 * written after, while those are unread, they wait behind them (ordering_gate). */
static int test_pass_early_writes(void)
{
	uint64_t np0 = fl_t_status_u64("passed_bytes_by_reason.peer_not_enrolled");
	uint64_t g0 = fl_t_status_u64("passed_bytes_by_reason.ordering_gate");
	struct sockaddr_storage ss;
	socklen_t len;
	uint8_t buf[300];
	int lfd, c, s;

	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0, "address");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!bind(lfd, (struct sockaddr *)&ss, len) && !listen(lfd, 1) &&
		   !getsockname(lfd, (struct sockaddr *)&ss, &len), "listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!connect(c, (struct sockaddr *)&ss, len) && !fl_nodelay(c), "connect");
	fl_t_pattern(buf, 0, sizeof(buf), 5);
	FL_T_CHECK(send(c, buf, 100, 0) == 100, "early write");
	s = accept(lfd, NULL, NULL);
	FL_T_CHECK(s >= 0, "accept");
	FL_T_CHECK(send(c, buf + 100, 200, 0) == 200, "write behind the unread bytes");
	memset(buf, 0, sizeof(buf));
	FL_T_CHECK(recv(s, buf, sizeof(buf), MSG_WAITALL) == sizeof(buf) &&
		   fl_t_pattern_check(buf, 0, sizeof(buf), 5) < 0, "bytes out of order");
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.peer_not_enrolled", np0) == 100,
		   "peer_not_enrolled grew by %llu, expected 100",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.peer_not_enrolled", np0));
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.ordering_gate", g0) == 200,
		   "ordering_gate grew by %llu, expected 200",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.ordering_gate", g0));
	close(c);
	close(s);
	close(lfd);
	return 0;
}

/* A reader that reads nothing: once its budget of unread bytes is full,
 * the writer's bytes go by TCP (flow_control). */
static int test_pass_flow_control(void)
{
	uint64_t f0 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	static uint8_t buf[16384];
	uint64_t off = 0;
	int c, s, small = 65536;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "pair");
	FL_T_CHECK(!setsockopt(s, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), "SO_RCVBUF");
	while (off < (64u << 20) && send(c, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		off += sizeof(buf);
	printf("  %llu bytes accepted with nobody reading\n", (unsigned long long)off);
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.flow_control", f0) > 0,
		   "flow_control did not grow");
	close(c);
	close(s);
	return 0;
}

/*
 * SO_ZEROCOPY on a socket with unread redirected bytes: it cannot leave the
 * fast path yet, so its own sends go by TCP (unsupported_feature: zero-copy
 * completions exist only there) and its peer's too (peer_reads_unseen).
 */
static int test_pass_zerocopy_pending(void)
{
	uint64_t u0 = fl_t_status_u64("passed_bytes_by_reason.unsupported_feature");
	uint64_t b0 = fl_t_status_u64("passed_bytes_by_reason.peer_reads_unseen");
	uint8_t buf[1000];
	int c, s, one = 1;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0 && !fl_nodelay(c) && !fl_nodelay(s), "pair");
	fl_t_pattern(buf, 0, sizeof(buf), 6);
	FL_T_CHECK(send(c, buf, 100, 0) == 100, "first bytes");
	usleep(20000);
	FL_T_CHECK(!setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)), "SO_ZEROCOPY");
	FL_T_CHECK(send(s, buf, 50, 0) == 50, "the zero-copy socket's bytes");
	FL_T_CHECK(send(c, buf + 100, 70, 0) == 70, "the peer's bytes");
	memset(buf, 0, sizeof(buf));
	FL_T_CHECK(recv(s, buf, 170, MSG_WAITALL) == 170 && fl_t_pattern_check(buf, 0, 170, 6) < 0,
		   "bytes to the zero-copy socket");
	FL_T_CHECK(recv(c, buf, 50, MSG_WAITALL) == 50, "bytes from the zero-copy socket");
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.unsupported_feature", u0) == 50,
		   "unsupported_feature grew by %llu, expected 50",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.unsupported_feature", u0));
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.peer_reads_unseen", b0) == 70,
		   "peer_reads_unseen grew by %llu, expected 70",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.peer_reads_unseen", b0));
	close(c);
	close(s);
	return 0;
}

/* A reader that shut its receive side gets its peer's bytes by TCP (shut_down),
 * which then behaves as TCP does. */
static int test_pass_shut_down(void)
{
	uint64_t d0 = fl_t_status_u64("passed_bytes_by_reason.shut_down");
	char buf[80] = { 0 };
	int c, s;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0 && !fl_nodelay(c), "pair");
	FL_T_CHECK(shutdown(s, SHUT_RD) == 0, "SHUT_RD");
	FL_T_CHECK(send(c, buf, sizeof(buf), 0) == sizeof(buf), "write");
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.shut_down", d0) == sizeof(buf),
		   "shut_down grew by %llu, expected %zu",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.shut_down", d0), sizeof(buf));
	close(c);
	close(s);
	return 0;
}

/*
 * Another fd holds the socket: a reader there may be asleep in TCP's own
 * recvmsg, which never sees redirected bytes. Enrollment is put off
 * (fallbacks.shared), and the bytes stay exact on TCP.
 */
static int test_shared_socket_put_off(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	uint64_t sh0 = fl_t_status_u64("fallbacks.shared");
	char buf[300];
	int c, s, d, r;

	FL_T_CHECK(enroll, "enroll");
	if (fl_raw_pair(&c, &s))
		return -1;
	d = dup(c);
	FL_T_CHECK(d >= 0, "dup");
	FL_T_CHECK((r = enroll(c)) == -EAGAIN, "enroll of a socket with a dup returned %d, "
		   "expected -EAGAIN", r);
	FL_T_CHECK(FL_DELTA("fallbacks.shared", sh0) == 1, "fallbacks.shared grew by %llu, expected 1",
		   (unsigned long long)FL_DELTA("fallbacks.shared", sh0));
	memset(buf, 'x', sizeof(buf));
	FL_T_CHECK(send(s, buf, sizeof(buf), 0) == sizeof(buf), "write");
	FL_T_CHECK(recv(d, buf, sizeof(buf), MSG_WAITALL) == sizeof(buf), "read through the dup");
	close(d);
	close(c);
	close(s);
	return 0;
}

/* The role below: a thread that will read 77 bytes, blocked in read(). */
static pid_t fl_busy_tid; /* the reader thread's, for main to watch */

static void *fl_busy_reader(void *arg)
{
	static char buf[77];
	int fd = *(int *)arg;

	__atomic_store_n(&fl_busy_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return recv(fd, buf, sizeof(buf), MSG_WAITALL) == sizeof(buf) ? buf : NULL;
}

/* Waits (up to 10 s) until the reader thread sleeps in recvfrom. A fixed
 * sleep was an assumption a loaded machine may not keep. */
static void fl_busy_wait_asleep(void)
{
	pid_t tid;
	int i;

	for (i = 0; i < 10000; i++, usleep(1000)) {
		tid = __atomic_load_n(&fl_busy_tid, __ATOMIC_ACQUIRE);
		if (tid && fl_t_thread_syscall(tid) == SYS_recvfrom)
			return;
	}
}

/*
 * Run as "fallbacks busy-reader" with the default FASTLOCAL_ENROLL_AFTER:
 * the client's reader thread sits in read() (in TCP's own recvmsg) when its
 * socket enrolls through a write of the main thread. It joins, but is no
 * redirect target until that read is out: the server's next 77 bytes pass
 * as peer_shared and reach the sleeping reader by TCP; after it, 100 bytes
 * are redirected. Exit status 0 if every byte arrived.
 */
static int fl_busy_reader_role(void)
{
	static char big[8192], buf[8192];
	pthread_t th;
	void *got;
	int c, s;

	if (fl_t_tcp_pair(AF_INET, &c, &s) || pthread_create(&th, NULL, fl_busy_reader, &c))
		return 2;
	fl_busy_wait_asleep();
	memset(big, 'b', sizeof(big));
	if (write(c, big, sizeof(big)) != sizeof(big) || /* the client enrolls, busy */
	    recv(s, buf, sizeof(buf), MSG_WAITALL) != sizeof(buf) || /* the server enrolls */
	    write(s, big, 77) != 77 || pthread_join(th, &got) || !got)
		return 3;
	if (write(s, big, 100) != 100 || recv(c, buf, 100, MSG_WAITALL) != 100)
		return 4;
	return 0;
}

static int test_busy_reader_peer_shared(void)
{
	uint64_t ps0 = fl_t_status_u64("passed_bytes_by_reason.peer_shared");
	uint64_t nr0 = fl_t_status_u64("sharing.joined_not_ready");
	uint64_t rl0 = fl_t_status_u64("sharing.ready_later");
	uint64_t red0 = fl_t_status_u64("redirected_bytes");
	const char *self = getenv("FL_FALLBACKS_SELF");

	FL_T_CHECK(self, "FL_FALLBACKS_SELF unset");
	FL_T_CHECK(fl_t_sh("FASTLOCAL_ENROLL_AFTER=4096 '%s' busy-reader", self) == 0,
		   "the busy-reader role failed (bytes lost or stalled)");
	FL_T_CHECK(FL_DELTA("passed_bytes_by_reason.peer_shared", ps0) == 77,
		   "peer_shared grew by %llu, expected 77",
		   (unsigned long long)FL_DELTA("passed_bytes_by_reason.peer_shared", ps0));
	FL_T_CHECK(FL_DELTA("sharing.joined_not_ready", nr0) == 1 &&
		   FL_DELTA("sharing.ready_later", rl0) == 1,
		   "joined_not_ready grew by %llu and ready_later by %llu, expected 1 and 1",
		   (unsigned long long)FL_DELTA("sharing.joined_not_ready", nr0),
		   (unsigned long long)FL_DELTA("sharing.ready_later", rl0));
	FL_T_CHECK(FL_DELTA("redirected_bytes", red0) >= 100, "the last 100 bytes were not "
		   "redirected (%llu)", (unsigned long long)FL_DELTA("redirected_bytes", red0));
	return 0;
}

/* The subtests above produced every reason status knows. A reason added to
 * status without a subtest here fails this. */
static int test_every_reason_counted(void)
{
	char out[1024];

	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "'%s' status --json | jq -r --slurpfile a '%s' "
			       "'[(.fallbacks | to_entries[] | select(.value <= $a[0].fallbacks[.key]) "
			       "| \"fallbacks.\" + .key), (.passed_bytes_by_reason | to_entries[] | "
			       "select(.value <= $a[0].passed_bytes_by_reason[.key]) | "
			       "\"passed_bytes_by_reason.\" + .key)] | join(\" \")'", fl_t_cli(),
			       fl_start_status) == 0, "status --json");
	FL_T_CHECK(!out[0], "never produced: %s", out);
	return 0;
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t sl;
	int fd;

	if (argc > 1 && !strcmp(argv[1], "busy-reader"))
		return fl_busy_reader_role();
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0) {
		self[sl] = 0;
		setenv("FL_FALLBACKS_SELF", self, 1);
	}
	fd = mkstemp(fl_start_status);

	if (!fl_t_setup(fd >= 0 && !fl_t_sh("'%s' status --json > '%s'", fl_t_cli(),
					      fl_start_status),
			"the starting status saved"))
		return fl_t_exit_status();
	close(fd);
	FL_T_RUN("FASTLOCAL=0 keeps connections on TCP and counts them", test_switched_off);
	FL_T_RUN("a port rule keeps connections on TCP, counted as excluded", test_excluded_by_rule);
	FL_T_RUN("with nothing loaded connections stay on TCP and the debug log says why",
		 test_nothing_loaded);
	FL_T_RUN("a socket the kernel refuses (EBUSY) stays on TCP and is counted",
		 test_refused_insert);
	FL_T_RUN("SO_RCVLOWAT keeps a socket on TCP and is counted", test_rcvlowat_stays_on_tcp);
	FL_T_RUN("UDP and AF_UNIX sockets pass straight through", test_other_sockets_pass_through);
	FL_T_RUN("the explicit API refuses pipes, listeners and closed fds",
		 test_explicit_api_refuses_odd_fds);
	FL_T_RUN("a connection through a port mapping (DNAT) between two namespaces stays on TCP "
		 "as peer_not_local, byte-exact", test_port_mapping_not_local);
	FL_T_RUN("a non-loopback connection whose SYN nonce is lost (syncookies) stays on TCP as "
		 "no_nonce", test_no_nonce);
	FL_T_RUN("a connection without an ISN record stays on TCP as no_isn_record",
		 test_no_isn_record);
	FL_T_RUN("with every slot taken connections stay on TCP as no_free_slot", test_no_free_slot);
	FL_T_RUN("a socket whose peer closed first stays on TCP as insert_eopnotsupp",
		 test_closed_peer_eopnotsupp);
	FL_T_RUN("a key already in the sockhash stays on TCP as insert_eexist; the impostor's "
		 "bytes pass as not_enrolled", test_key_taken_eexist);
	FL_T_RUN("injected ENOMEM and E2BIG inserts stay on TCP as insert_enomem and other",
		 test_injected_insert_errors);
	FL_T_RUN("bytes before accept pass as peer_not_enrolled, then behind them as ordering_gate",
		 test_pass_early_writes);
	FL_T_RUN("a reader that reads nothing gets bytes by TCP as flow_control",
		 test_pass_flow_control);
	FL_T_RUN("SO_ZEROCOPY with unread bytes: unsupported_feature and peer_reads_unseen",
		 test_pass_zerocopy_pending);
	FL_T_RUN("a reader that shut its receive side gets bytes by TCP as shut_down",
		 test_pass_shut_down);
	FL_T_RUN("a socket with a dup is not enrolled: fallbacks.shared, bytes exact",
		 test_shared_socket_put_off);
	FL_T_RUN("a socket enrolled while its reader thread sits in read() gets its peer's bytes "
		 "by TCP (peer_shared) until that read is out, then redirected",
		 test_busy_reader_peer_shared);
	FL_T_RUN("every fallback and TCP-path reason in status was produced and counted",
		 test_every_reason_counted);
	unlink(fl_start_status);
	return fl_t_exit_status();
}
