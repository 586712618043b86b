// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * observability - "fastlocal status", "conns" and "top" report a known
 * workload exactly: N connections, B bytes each way, M messages, every
 * batched write and flush.
 *
 * Runs with the shim preloaded, alone in its pin dir (test/run.sh gives
 * each test running at the same time a pin dir of its own), so every
 * counter delta is this program's own. In the default configuration a
 * connection enrolls once it has moved 4096 bytes: the connections whose
 * redirected bytes are counted exactly are warmed up first (fl_t_warmup),
 * and the counts start after that.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "fltest.h"

#define NCONN 4         /* 3 over IPv4, 1 over IPv6 */
#define ROUNDS 8        /* request/answer rounds per connection */
#define REQ 1000        /* bytes per request */
#define ANS 500         /* bytes per answer */

/* Status keys read at the start and the end of a subtest. */
struct fl_snap {
	uint64_t enrolled, pairs, red_bytes, red_msgs, pass_bytes, enrolled_total;
};

static void fl_snap(struct fl_snap *s)
{
	s->enrolled = fl_t_status_u64("enrolled_sockets");
	s->pairs = fl_t_status_u64("pairs");
	s->red_bytes = fl_t_status_u64("redirected_bytes");
	s->red_msgs = fl_t_status_u64("redirected_msgs");
	s->pass_bytes = fl_t_status_u64("passed_bytes");
	s->enrolled_total = fl_t_status_u64("enrolled_total");
}

static int fl_xfer(int from, int to, size_t n, uint64_t off, uint64_t seed)
{
	uint8_t buf[REQ];
	ssize_t r;

	fl_t_pattern(buf, off, n, seed);
	if (send(from, buf, n, 0) != (ssize_t)n)
		return -1;
	memset(buf, 0, sizeof(buf));
	r = recv(to, buf, n, MSG_WAITALL);
	return r == (ssize_t)n && fl_t_pattern_check(buf, off, n, seed) < 0 ? 0 : -1;
}

static uint16_t fl_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
		     ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* The jq value of one connection of "conns --json", found by the client's port. */
static int fl_conn_field(char *out, size_t len, uint16_t cport, const char *field)
{
	return fl_t_sh_out(out, len, "'%s' conns --json | jq -r '.connections[] | "
			   "select(.a.port == %u) | %s'", fl_t_cli(), cport, field);
}

#define FL_CHECK_FIELD(cport, field, want)                                                  \
	do {                                                                                \
		char v_[256];                                                               \
		FL_T_CHECK(fl_conn_field(v_, sizeof(v_), cport, field) == 0 && !strcmp(v_, want), \
			   "conns: connection from port %u: %s is '%s', expected '%s'", cport,    \
			   field, v_, want);                                                \
	} while (0)

/* N connections, request/answer rounds with TCP_NODELAY: one message per
 * write, so messages are exact too. */
static int test_status_and_conns_exact(void)
{
	int c[NCONN], s[NCONN], one = 1, i, k;
	struct fl_t_addr v4 = { .family = AF_INET };
	struct fl_snap a, b;
	char comm[17] = { 0 }, want[64];
	uint64_t total, warm = fl_t_enroll_after();

	fl_snap(&a);
	FL_T_CHECK(fl_t_tcp_pairs(&v4, NCONN - 1, c, s) == 0, "IPv4 pairs");
	FL_T_CHECK(fl_t_tcp_pair(AF_INET6, &c[NCONN - 1], &s[NCONN - 1]) == 0, "IPv6 pair");
	/* Each connection enrolls on its warm-up (none with enrollment at
	 * connect/accept): the client's end on its request, before its
	 * server's, so the request goes over TCP; the server's on reading it,
	 * and its answer finds both ends enrolled and nothing unread: it is
	 * redirected, one message. */
	for (i = 0; i < NCONN; i++)
		FL_T_CHECK(fl_t_warmup(c[i], s[i]) == 0, "warm-up of connection %d", i);
	for (i = 0; i < NCONN; i++) {
		FL_T_CHECK(!setsockopt(c[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) &&
			   !setsockopt(s[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "NODELAY");
		for (k = 0; k < ROUNDS; k++) {
			FL_T_CHECK(fl_xfer(c[i], s[i], REQ, (uint64_t)k * REQ, 10 + i) == 0,
				   "request %d of connection %d", k, i);
			FL_T_CHECK(fl_xfer(s[i], c[i], ANS, (uint64_t)k * ANS, 20 + i) == 0,
				   "answer %d of connection %d", k, i);
		}
	}
	fl_snap(&b);
	total = (uint64_t)NCONN * ROUNDS * (REQ + ANS);
	printf("  status deltas: enrolled %llu, pairs %llu, redirected %llu B in %llu msgs, "
	       "passed %llu B\n", (unsigned long long)(b.enrolled - a.enrolled),
	       (unsigned long long)(b.pairs - a.pairs), (unsigned long long)(b.red_bytes - a.red_bytes),
	       (unsigned long long)(b.red_msgs - a.red_msgs),
	       (unsigned long long)(b.pass_bytes - a.pass_bytes));
	FL_T_CHECK(b.enrolled - a.enrolled == 2 * NCONN, "enrolled_sockets grew by %llu, not %d",
		   (unsigned long long)(b.enrolled - a.enrolled), 2 * NCONN);
	FL_T_CHECK(b.enrolled_total - a.enrolled_total == 2 * NCONN, "enrolled_total grew by %llu",
		   (unsigned long long)(b.enrolled_total - a.enrolled_total));
	FL_T_CHECK(b.pairs - a.pairs == NCONN, "pairs grew by %llu, not %d",
		   (unsigned long long)(b.pairs - a.pairs), NCONN);
	FL_T_CHECK(b.red_bytes - a.red_bytes == total + NCONN * warm,
		   "redirected_bytes grew by %llu, not %llu",
		   (unsigned long long)(b.red_bytes - a.red_bytes),
		   (unsigned long long)(total + NCONN * warm));
	FL_T_CHECK(b.red_msgs - a.red_msgs == 2ull * NCONN * ROUNDS + (warm ? NCONN : 0),
		   "redirected_msgs grew by %llu, not %llu",
		   (unsigned long long)(b.red_msgs - a.red_msgs),
		   (unsigned long long)(2ull * NCONN * ROUNDS + (warm ? NCONN : 0)));
	/* The warm-up's requests, each counted once, by the verdict of the
	 * client's end, enrolled before its peer (peer_not_enrolled). */
	FL_T_CHECK(b.pass_bytes - a.pass_bytes == NCONN * warm,
		   "%llu bytes went over TCP, expected the warm-up requests' %llu",
		   (unsigned long long)(b.pass_bytes - a.pass_bytes),
		   (unsigned long long)(NCONN * warm));

	FL_T_CHECK(prctl(PR_GET_NAME, comm, 0, 0, 0) == 0, "PR_GET_NAME");
	for (i = 0; i < NCONN; i++) {
		uint16_t cp = fl_port(c[i]);

		snprintf(want, sizeof(want), "%u", fl_port(s[i]));
		FL_CHECK_FIELD(cp, ".b.port", want);
		FL_CHECK_FIELD(cp, ".a.family", i < NCONN - 1 ? "ipv4" : "ipv6");
		FL_CHECK_FIELD(cp, ".a.addr", i < NCONN - 1 ? "127.0.0.1" : "::1");
		snprintf(want, sizeof(want), "%d %d", (int)getpid(), (int)getpid());
		FL_CHECK_FIELD(cp, "\"\\(.a.pid) \\(.b.pid)\"", want);
		snprintf(want, sizeof(want), "%s %s", comm, comm);
		FL_CHECK_FIELD(cp, "\"\\(.a.comm) \\(.b.comm)\"", want);
		FL_CHECK_FIELD(cp, "\"\\(.a.connected) \\(.b.connected) \\(.a.enrolled) \\(.b.enrolled)\"",
			       "true false true true");
		/* bytes: every byte of the direction, the warm-up's too. */
		snprintf(want, sizeof(want), "redirect %llu %d 0",
			 (unsigned long long)warm + ROUNDS * REQ, ROUNDS * REQ);
		FL_CHECK_FIELD(cp, "\"\\(.a_to_b.path) \\(.a_to_b.bytes) \\(.a_to_b.redirected_bytes) "
			       "\\(.a_to_b.unread_bytes)\"", want);
		snprintf(want, sizeof(want), "redirect %llu %llu 0",
			 (unsigned long long)warm + ROUNDS * ANS,
			 (unsigned long long)warm + ROUNDS * ANS);
		FL_CHECK_FIELD(cp, "\"\\(.b_to_a.path) \\(.b_to_a.bytes) \\(.b_to_a.redirected_bytes) "
			       "\\(.b_to_a.unread_bytes)\"", want);
		FL_CHECK_FIELD(cp, ".age_seconds >= 0 and .age_seconds < 60", "true");
	}
	for (i = 0; i < NCONN; i++) {
		close(c[i]);
		close(s[i]);
	}
	/* Closed sockets leave the sockhash with their last reference. */
	for (k = 0; k < 100 && fl_t_status_u64("enrolled_sockets") != a.enrolled; k++)
		usleep(20000);
	FL_T_CHECK(fl_t_status_u64("enrolled_sockets") == a.enrolled,
		   "enrolled_sockets is %llu after close, expected %llu",
		   (unsigned long long)fl_t_status_u64("enrolled_sockets"),
		   (unsigned long long)a.enrolled);
	FL_T_CHECK_EQ(fl_t_status_u64("pairs"), a.pairs, "pairs did not drop back after close");
	return 0;
}

/* A server that bypassed the shim (raw accept system call): the client's
 * end is listed alone, with why each direction is on TCP. (The other way
 * round, the accepted end would wait for its peer and never enroll.) */
static int test_one_end_enrolled(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char want[64];
	int lfd, c, s;
	uint16_t cp;

	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0, "address");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!bind(lfd, (struct sockaddr *)&ss, len) && !listen(lfd, 1) &&
		   !getsockname(lfd, (struct sockaddr *)&ss, &len), "listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(connect(c, (struct sockaddr *)&ss, len) == 0, "connect");
	s = (int)syscall(SYS_accept4, lfd, NULL, NULL, 0);
	FL_T_CHECK(s >= 0, "raw accept");
	/* The warm-up takes the client's end past the enrollment threshold. */
	FL_T_CHECK(fl_t_warmup(c, s) == 0, "warm-up");
	FL_T_CHECK(fl_xfer(c, s, 700, 0, 3) == 0 && fl_xfer(s, c, 300, 0, 4) == 0, "bytes");
	cp = fl_port(c);
	FL_CHECK_FIELD(cp, "\"\\(.a.enrolled) \\(.a.connected) \\(.b.enrolled) \\(.b.pid) "
		       "\\(.b.connected)\"", "true true false null false");
	snprintf(want, sizeof(want), "%u", fl_port(s));
	FL_CHECK_FIELD(cp, ".b.port", want);
	/* The client's end enrolled alone: its verdict counts every byte it
	 * sent (the warm-up's too, from its ISN) as passed for want of a peer. */
	snprintf(want, sizeof(want), "tcp peer_not_enrolled %llu",
		 (unsigned long long)fl_t_enroll_after() + 700);
	FL_CHECK_FIELD(cp, "\"\\(.a_to_b.path) \\(.a_to_b.why_tcp) \\(.a_to_b.bytes)\"", want);
	/* The sender is not enrolled: what its enrolled peer has read. */
	snprintf(want, sizeof(want), "tcp not_enrolled %llu",
		 (unsigned long long)fl_t_enroll_after() + 300);
	FL_CHECK_FIELD(cp, "\"\\(.b_to_a.path) \\(.b_to_a.why_tcp) \\(.b_to_a.bytes)\"", want);
	close(c);
	close(s);
	close(lfd);
	return 0;
}

/* The JSON outputs parse, and the text outputs name what they should. */
static int test_outputs_parse(void)
{
	char out[8192];
	int c, s;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0 && fl_t_warmup(c, s) == 0, "pair");
	FL_T_CHECK(fl_xfer(c, s, 100, 0, 1) == 0, "100 bytes");
	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "'%s' status --json | jq -e 'type == \"object\" "
			       "and .loaded and (.features | has(\"btf\") and has(\"sockmap\") and "
			       "has(\"netns_cookie\") and has(\"fionread_fix\")) and "
			       "(.batching.flushes_by_reason | length) == 7 and "
			       "(.passed_bytes_by_reason | length) == 9 and (.fallbacks | length) == 13 and "
			       "(.sharing | length) == 2 and (.gate_holds | length) == 2 and "
			       "(.syn_nonce | length) == 4'",
			       fl_t_cli()) == 0 && !strcmp(out, "true"),
		   "status --json lacks keys: %s", out);
	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "'%s' conns --json | jq -e '(.connections | "
			       "length) == .count and .pairs <= .count'", fl_t_cli()) == 0,
		   "conns --json is not consistent: %s", out);
	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "'%s' status", fl_t_cli()) == 0 &&
		   strstr(out, "state:        loaded") && strstr(out, "features:") &&
		   strstr(out, "batching:"), "status text: %s", out);
	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "'%s' conns | grep -c ':%u .*redirect'", fl_t_cli(),
			       fl_port(c)) == 0 && !strcmp(out, "1"),
		   "conns text has no line for port %u", fl_port(c));
	close(c);
	close(s);
	return 0;
}

/* What the batching counters must say about writes whose flushes are
 * forced: TCP_CORK cleared, MSG_MORE ended. */
static int test_batching_counters(void)
{
	uint64_t f0, opt0, b0, w0, f1, opt1, b1, w1;
	uint8_t buf[100 * 100];
	int c, s, on = 1, off = 0, i;

	/* Batching applies to an enrolled sender: the warm-up enrolls it. */
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0 && fl_t_warmup(c, s) == 0, "pair");
	fl_t_pattern(buf, 0, sizeof(buf), 7);
	f0 = fl_t_status_u64("batching.flushes");
	opt0 = fl_t_status_u64("batching.flushes_by_reason.socket_option");
	b0 = fl_t_status_u64("batching.bytes");
	w0 = fl_t_status_u64("batching.writes");
	/* 100 corked writes of 100 bytes, then uncork: one flush, 10000 bytes. */
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), "TCP_CORK");
	for (i = 0; i < 100; i++)
		FL_T_CHECK(send(c, buf + i * 100, 100, 0) == 100, "corked write %d", i);
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
	/* 9 writes with MSG_MORE and a last one without: one flush, 1000 bytes. */
	for (i = 0; i < 10; i++)
		FL_T_CHECK(send(c, buf + i * 100, 100, i < 9 ? MSG_MORE : 0) == 100, "MSG_MORE write");
	memset(buf, 0, sizeof(buf));
	FL_T_CHECK(recv(s, buf, 10000, MSG_WAITALL) == 10000 &&
		   fl_t_pattern_check(buf, 0, 10000, 7) < 0, "corked bytes");
	FL_T_CHECK(recv(s, buf, 1000, MSG_WAITALL) == 1000 &&
		   fl_t_pattern_check(buf, 0, 1000, 7) < 0, "MSG_MORE bytes");
	f1 = fl_t_status_u64("batching.flushes");
	opt1 = fl_t_status_u64("batching.flushes_by_reason.socket_option");
	b1 = fl_t_status_u64("batching.bytes");
	w1 = fl_t_status_u64("batching.writes");
	printf("  batching deltas: %llu flushes (%llu socket_option), %llu bytes, %llu writes\n",
	       (unsigned long long)(f1 - f0), (unsigned long long)(opt1 - opt0),
	       (unsigned long long)(b1 - b0), (unsigned long long)(w1 - w0));
	FL_T_CHECK(w1 - w0 == 110, "batching.writes grew by %llu, not 110",
		   (unsigned long long)(w1 - w0));
	FL_T_CHECK(b1 - b0 == 11000, "batching.bytes grew by %llu, not 11000",
		   (unsigned long long)(b1 - b0));
	FL_T_CHECK(f1 - f0 == 2 && opt1 - opt0 == 2,
		   "expected 2 flushes, both by socket_option; got %llu and %llu",
		   (unsigned long long)(f1 - f0), (unsigned long long)(opt1 - opt0));
	FL_T_CHECK(fl_t_sh_out((char *)buf, sizeof(buf), "'%s' status --json | jq -e "
			       "'.batching | .flushes == ([.flushes_by_reason[]] | add) and "
			       "(.flushes == 0 or (.mean_batch_bytes - .bytes / .flushes | fabs) < 0.01)'",
			       fl_t_cli()) == 0, "the flush reasons do not add up, or the mean is off");
	close(c);
	close(s);
	return 0;
}

/* FASTLOCAL=0: the connections stay on TCP, and their bytes are counted
 * as switched off when they close. */
static int test_switched_off_bytes(void)
{
	uint64_t off0 = fl_t_status_u64("passed_bytes_by_reason.switched_off");
	uint64_t pass0 = fl_t_status_u64("passed_bytes");
	uint64_t dis0 = fl_t_status_u64("fallbacks.disabled");
	uint64_t off1, i;

	FL_T_CHECK(fl_t_sh("FASTLOCAL=0 '%s/fl-stream' --both --bytes 3M --size 1000 >/dev/null",
			   getenv("FL_TEST_BUILD")) == 0, "fl-stream with FASTLOCAL=0 failed");
	/* sockops counts at TCP_CLOSE, which the second end reaches last */
	for (i = 0; i < 100 && fl_t_status_u64("passed_bytes_by_reason.switched_off") - off0 <
			       6ull << 20; i++)
		usleep(20000);
	off1 = fl_t_status_u64("passed_bytes_by_reason.switched_off");
	FL_T_CHECK(off1 - off0 == 6ull << 20, "switched_off grew by %llu, not %llu (3 MiB each way)",
		   (unsigned long long)(off1 - off0), 6ull << 20);
	FL_T_CHECK(fl_t_status_u64("passed_bytes") - pass0 == 6ull << 20,
		   "passed_bytes did not grow by the same");
	FL_T_CHECK_EQ(fl_t_status_u64("fallbacks.disabled") - dis0, 2, "fallbacks.disabled");
	return 0;
}

struct fl_pump {
	int fd;
	volatile int stop;
};

static void *fl_pump_run(void *arg)
{
	struct fl_pump *p = arg;
	char buf[4096] = { 0 };

	while (!p->stop)
		if (send(p->fd, buf, sizeof(buf), MSG_DONTWAIT) < 0 && errno != EAGAIN)
			break;
	return NULL;
}

static void *fl_drain_run(void *arg)
{
	struct fl_pump *p = arg;
	char buf[65536];

	while (recv(p->fd, buf, sizeof(buf), 0) > 0)
		;
	return NULL;
}

/* top --once: one frame, no escape sequences, the busy connection first. */
static int test_top_once(void)
{
	struct fl_pump w = { 0 }, r = { 0 };
	pthread_t tw, tr;
	char out[16384], want[64];
	int c, s, st;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "pair");
	w.fd = c;
	r.fd = s;
	FL_T_CHECK(!pthread_create(&tw, NULL, fl_pump_run, &w) &&
		   !pthread_create(&tr, NULL, fl_drain_run, &r), "threads");
	st = fl_t_sh_out(out, sizeof(out), "'%s' top --once --interval 0.5", fl_t_cli());
	w.stop = 1;
	pthread_join(tw, NULL);
	shutdown(c, SHUT_WR);
	pthread_join(tr, NULL);
	printf("%s\n", out);
	FL_T_CHECK(st == 0, "top --once exited with %d", st);
	FL_T_CHECK(!strchr(out, '\033'), "top --once wrote escape sequences into a pipe");
	FL_T_CHECK(strstr(out, "fastlocal top - ") && strstr(out, "redirected: ") &&
		   strstr(out, "batching: ") && strstr(out, "A (connected)"), "top lacks a section");
	/* The busiest connection comes first: the line after the header. */
	snprintf(want, sizeof(want), "127.0.0.1:%u ", fl_port(c));
	FL_T_CHECK(strstr(strstr(out, "A (connected)"), "\n") + 1 ==
		   strstr(out, want), "the streaming connection is not the first row");
	close(c);
	close(s);
	return 0;
}

/* With nothing loaded, status/conns/top say so and exit 3. */
static int test_not_loaded(void)
{
	char out[4096];
	const char *cmds[] = { "status", "status --json", "conns", "conns --json", "top --once" };
	size_t i;
	int st;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		st = fl_t_sh_out(out, sizeof(out), "'%s' %s --pin-dir /sys/fs/bpf/fl-nothing-here 2>&1",
				 fl_t_cli(), cmds[i]);
		FL_T_CHECK(st == 3, "'%s' with nothing loaded exited %d: %s", cmds[i], st, out);
		FL_T_CHECK(strstr(out, "not loaded"), "'%s' does not say 'not loaded': %s", cmds[i],
			   out);
	}
	return 0;
}

int main(void)
{
	FL_T_RUN("status and conns report 4 connections, their bytes and messages exactly",
		 test_status_and_conns_exact);
	FL_T_RUN("conns lists a connection with one end enrolled, and why each way is on TCP",
		 test_one_end_enrolled);
	FL_T_RUN("status and conns JSON parse, and their text names the connection",
		 test_outputs_parse);
	FL_T_RUN("batching counts every write, byte and flush, and says why it flushed",
		 test_batching_counters);
	FL_T_RUN("bytes of FASTLOCAL=0 connections count as switched off", test_switched_off_bytes);
	FL_T_RUN("top --once renders one frame with the busiest connection first", test_top_once);
	FL_T_RUN("status, conns and top say when nothing is loaded", test_not_loaded);
	return fl_t_exit_status();
}
