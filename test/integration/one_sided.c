// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * one_sided - one end under the shim, the other without it.
 *
 * A server under the shim, a client without it: the server's end, an
 * accepting one, never joins the sockhash alone (preload/enroll/enroll.c,
 * peer_first): it finds its peer missing, waits for it on TCP (counted
 * once in "waited_for_peer.waited"), and never enrolls. Before, it joined
 * and paid tcp_bpf's send path for every answer, and under Nagle the last
 * page of each waited for the client's delayed ACK (at dcbe0b4: 128
 * lockstep 64 KiB rounds took 5.5 s, plain TCP a few ms); the delayed-ACK
 * timer's firings (TcpExt DelayedACKs, in a network namespace of the
 * test's own) must stay what plain TCP needs, and every byte must come
 * back. Run with the default threshold and with FASTLOCAL_ENROLL_AFTER=0.
 *
 * A client under the shim, a server without it: the client's end joins
 * (a connecting end does not wait) and must leave the sockhash, since its
 * peer never enrolls (preload/enroll/unpaired.c): counted once as
 * "unpaired_left_total", every answer exact. With both ends under the
 * shim neither leaves and the bytes are redirected, also when the server's
 * end looked for its peer before the client had joined.
 *
 * The page-at-a-time stall itself is shown where it can still happen: an
 * enrolled server whose client's end left the sockhash after the first
 * round (SO_RCVLOWAT), so that every answer goes through tcp_bpf's send
 * path to TCP.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "fltest.h"
#include "fltest_netns.h"

#define ROUNDS 128
#define ROUND_BYTES 65536
#define PORT 24680
/* Ports no other test listens on: a port once listened on under the shim
 * stays marked until the next load (fastlocal.h, struct fl_joined). */
#define PORT_NEVER_SHIM "24681" /* only ever a server without the shim */
#define PORT_ONCE_SHIM "24682"  /* a server under the shim, then one without */
#define PORT_RAW_LISTEN "24683" /* a server under the shim, listen() bypassing it */
#define PORT_NEW_SHIM "24684"   /* a server under the shim, on a port new to the load */
#define PORT_RAW_LISTEN_DUP "24685" /* the same as PORT_RAW_LISTEN, the client's fd a dup */

/* The port of this process's role: FL_T_PORT, or PORT. */
static int fl_port = PORT;

extern char **environ;

/* TcpExt DelayedACKs: how often the delayed-ACK timer fired. */
static uint64_t fl_delayed_acks(void)
{
	return fl_t_net_counter("/proc/net/netstat", "TcpExt", "DelayedACKs");
}

/* A listening socket on fl_port, its listen() through the shim or, raw,
 * around it (as a socket inherited from a parent without the shim). */
static int fl_listener(int raw)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(fl_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    (raw ? syscall(SYS_listen, l, 1) : listen(l, 1)))
		return -1;
	return l;
}

/* "server" ("server-raw-listen"): echoes one connection until EOF. */
static int fl_server(int raw)
{
	int l = fl_listener(raw), s;

	if (l < 0 || write(STDOUT_FILENO, "r", 1) != 1)
		return 2;
	s = accept(l, NULL, NULL);
	if (s < 0)
		return 3;
	return fl_t_echo(s) ? 4 : 0;
}

/* "client": ROUNDS lockstep rounds, each checked byte for byte, with a pause
 * halfway (an end whose peer never enrolls leaves the sockhash only once
 * the peer has been missing for a while, preload/enroll/unpaired.c,
 * FL_UNPAIRED_GRACE_MS, 100 ms: were the server's end to join alone, the
 * second half would be plain TCP again). */
#define PAUSE_US 300000
static int fl_client(int lowat, int dup_after_write)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(fl_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static uint8_t out[ROUND_BYTES], in[ROUND_BYTES];
	int c = socket(AF_INET, SOCK_STREAM, 0), r;
	size_t o, got;
	ssize_t n;

	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
		return 2;
	for (r = 0; r < ROUNDS; r++) {
		if (r == ROUNDS / 2)
			usleep(PAUSE_US);
		/* "client-lowat": both ends have joined in the first round; an
		 * option only TCP's receive path honours takes this end out of
		 * the sockhash (docs/design.md, "leaving"), the server's stays. */
		if (lowat && r == 1 && setsockopt(c, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)))
			return 6;
		fl_t_pattern(out, (uint64_t)r * ROUND_BYTES, sizeof(out), 7);
		for (o = 0; o < sizeof(out); o += (size_t)n)
			if ((n = write(c, out + o, sizeof(out) - o)) <= 0)
				return 3;
		/* "client-dup": the end has just found no server seen on its
		 * port and waits; a dup carries that wait on, the original
		 * closed. */
		if (dup_after_write && r == 0) {
			int d = dup(c);

			if (d < 0 || close(c))
				return 7;
			c = d;
		}
		for (got = 0; got < sizeof(in); got += (size_t)n)
			if ((n = read(c, in + got, sizeof(in) - got)) <= 0)
				return 4;
		if (fl_t_pattern_check(in, (uint64_t)r * ROUND_BYTES, sizeof(in), 7) >= 0)
			return 5;
	}
	close(c);
	return 0;
}

/*
 * "tiny-server" and "tiny-client": request/response with 36-byte requests
 * and 5-byte answers (a redis GET of a missing key), TINY_ROUNDS rounds
 * with a pause halfway. The client's end, under the shim, reads 5 bytes an
 * answer: what it reads alone never shows that its peer had its chance to
 * enroll (16 KiB), so it must see what the peer read.
 */
#define TINY_ROUNDS 2000
#define TINY_REQ 36
#define TINY_ANS 5
static int fl_tiny_server(void)
{
	int l = fl_listener(0), s, r;
	char req[TINY_REQ];
	size_t got;
	ssize_t n;

	if (l < 0 || write(STDOUT_FILENO, "r", 1) != 1)
		return 2;
	s = accept(l, NULL, NULL);
	if (s < 0)
		return 3;
	for (r = 0; r < TINY_ROUNDS; r++) {
		for (got = 0; got < sizeof(req); got += (size_t)n)
			if ((n = read(s, req + got, sizeof(req) - got)) <= 0)
				return 4;
		if (write(s, "$-1\r\n", TINY_ANS) != TINY_ANS)
			return 5;
	}
	return 0;
}

static int fl_tiny_client(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(fl_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int c = socket(AF_INET, SOCK_STREAM, 0), r;
	char req[TINY_REQ], ans[TINY_ANS];
	size_t got;
	ssize_t n;

	memset(req, 'g', sizeof(req));
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
		return 2;
	for (r = 0; r < TINY_ROUNDS; r++) {
		if (r == TINY_ROUNDS / 2)
			usleep(PAUSE_US);
		if (write(c, req, sizeof(req)) != (ssize_t)sizeof(req))
			return 3;
		for (got = 0; got < sizeof(ans); got += (size_t)n)
			if ((n = read(c, ans + got, sizeof(ans) - got)) <= 0)
				return 4;
		if (memcmp(ans, "$-1\r\n", TINY_ANS))
			return 5;
	}
	close(c);
	return 0;
}

/* Starts this program as ROLE with env, or without LD_PRELOAD if bare. */
static pid_t fl_spawn(const char *role, const char *const *env_add, int bare, int out)
{
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	pid_t pid;

	if (len <= 0)
		return -1;
	self[len] = 0;
	pid = fork();
	if (pid)
		return pid;
	if (out >= 0 && dup2(out, STDOUT_FILENO) < 0)
		_exit(126);
	if (bare)
		unsetenv("LD_PRELOAD");
	for (; env_add && *env_add; env_add++)
		putenv((char *)*env_add);
	alarm(60);
	execl(self, self, role, (char *)NULL);
	_exit(127);
}

static int fl_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One exchange, the server (srole) under env, the client (role) under
 * client_env (or without the shim if client_bare): the delayed ACKs it
 * cost, or UINT64_MAX if a byte was lost or a process failed. */
static uint64_t fl_exchange_roles(const char *what, const char *srole, const char *const *env,
				  const char *role, const char *const *client_env, int client_bare)
{
	uint64_t d0 = fl_delayed_acks(), d1;
	double t0 = fl_t_now();
	int p[2], sst, cst;
	pid_t srv, cli;
	char c;

	if (pipe(p))
		return UINT64_MAX;
	srv = fl_spawn(srole, env, 0, p[1]);
	close(p[1]);
	if (srv < 0 || read(p[0], &c, 1) != 1) {
		close(p[0]);
		return UINT64_MAX;
	}
	close(p[0]);
	cli = fl_spawn(role, client_env, client_bare, -1);
	cst = cli > 0 ? fl_wait(cli) : -1;
	sst = fl_wait(srv);
	d1 = fl_delayed_acks();
	printf("  %s: %d rounds of %d bytes in %.1f ms, %llu delayed ACKs (client %d, server %d)\n",
	       what, ROUNDS, ROUND_BYTES, (fl_t_now() - t0) * 1e3, (unsigned long long)(d1 - d0),
	       cst, sst);
	return cst || sst || d0 == UINT64_MAX || d1 == UINT64_MAX ? UINT64_MAX : d1 - d0;
}

static uint64_t fl_exchange_as(const char *what, const char *const *env, const char *role,
			       const char *const *client_env, int client_bare)
{
	return fl_exchange_roles(what, "server", env, role, client_env, client_bare);
}

static uint64_t fl_exchange(const char *what, const char *const *env,
			    const char *const *client_env, int client_bare)
{
	return fl_exchange_as(what, env, "client", client_env, client_bare);
}

/* The counters an end that stays out of the sockhash moves: enrolled,
 * waited (the counter named waited) and unpaired-left totals. */
struct fl_counts {
	uint64_t enrolled, waited, left;
};

static void fl_counts_read(struct fl_counts *c, const char *waited)
{
	c->enrolled = fl_t_status_u64("enrolled_total");
	c->waited = fl_t_status_u64(waited);
	c->left = fl_t_status_u64("unpaired_left_total");
}

/* Between a and b, who's end (one end of one connection) never joined the
 * sockhash: it waited once (counter waited), and nothing left it. */
static int fl_check_stayed_out(const struct fl_counts *a, const struct fl_counts *b,
			       const char *waited, const char *who)
{
	FL_T_CHECK(a->enrolled != UINT64_MAX && b->enrolled == a->enrolled,
		   "enrolled_total went from %llu to %llu: the %s's end joined the sockhash alone",
		   (unsigned long long)a->enrolled, (unsigned long long)b->enrolled, who);
	FL_T_CHECK(a->waited != UINT64_MAX && b->waited != UINT64_MAX && b->waited - a->waited == 1,
		   "%s went from %llu to %llu: the %s's end should have waited once", waited,
		   (unsigned long long)a->waited, (unsigned long long)b->waited, who);
	FL_T_CHECK(a->left != UINT64_MAX && b->left == a->left,
		   "unpaired_left_total went from %llu to %llu", (unsigned long long)a->left,
		   (unsigned long long)b->left);
	return 0;
}

static uint64_t fl_plain_acks = UINT64_MAX;

static int fl_case(const char *const *env, const char *what)
{
	struct fl_counts c0, c1;
	uint64_t acks;

	if (fl_plain_acks == UINT64_MAX) {
		static const char *const off[] = { "FASTLOCAL=0", NULL };

		fl_plain_acks = fl_exchange("plain TCP (FASTLOCAL=0)", off, NULL, 1);
		FL_T_CHECK_NE(fl_plain_acks, UINT64_MAX, "the plain TCP exchange failed");
	}
	fl_counts_read(&c0, "waited_for_peer.waited");
	acks = fl_exchange(what, env, NULL, 1);
	fl_counts_read(&c1, "waited_for_peer.waited");
	FL_T_CHECK_NE(acks, UINT64_MAX, "bytes lost, or a process failed (see above)");
	if (fl_check_stayed_out(&c0, &c1, "waited_for_peer.waited", "server"))
		return -1;
	/* A few timer firings come and go with scheduling; one per round is
	 * the stall. */
	FL_T_CHECK(acks <= fl_plain_acks + ROUNDS / 16, "%llu delayed ACKs against plain TCP's "
		   "%llu: answers waited for the client's delayed ACK",
		   (unsigned long long)acks, (unsigned long long)fl_plain_acks);
	return 0;
}

static int test_default_threshold(void)
{
	static const char *const env[] = { "FASTLOCAL_ENROLL_AFTER=4096", NULL };

	return fl_case(env, "server under the shim, default threshold");
}

static int test_enroll_at_accept(void)
{
	static const char *const env[] = { "FASTLOCAL_ENROLL_AFTER=0", NULL };

	return fl_case(env, "server under the shim, enrolled at accept");
}

/* A tiny exchange on port (FL_T_PORT=...), the server without the shim,
 * the client under it: 0, or -1 if an answer was wrong or lost. */
static int fl_tiny_exchange(const char *port_env)
{
	const char *const env[] = { port_env, NULL };
	int p[2], sst, cst;
	pid_t srv, cli;
	char c;

	if (pipe(p))
		return -1;
	srv = fl_spawn("tiny-server", env, 1, p[1]);
	close(p[1]);
	if (srv < 0 || read(p[0], &c, 1) != 1) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	cli = fl_spawn("tiny-client", env, 0, -1);
	cst = cli > 0 ? fl_wait(cli) : -1;
	sst = fl_wait(srv);
	if (cst || sst)
		fprintf(stderr, "  tiny exchange: client %d, server %d\n", cst, sst);
	return cst || sst ? -1 : 0;
}

/*
 * The other way round: a client under the shim against a server without
 * it, on a port where no server under the shim ever listened, never joins
 * the sockhash: it finds neither its peer nor a server under the shim seen
 * on the port, and waits on TCP (counted once in
 * "waited_for_server.waited"). Before, it joined alone and paid
 * tcp_bpf's send path until it left again.
 */
static int test_a_client_of_a_server_without_the_shim_never_joins(void)
{
	struct fl_counts c0, c1;

	fl_counts_read(&c0, "waited_for_server.waited");
	FL_T_CHECK(fl_tiny_exchange("FL_T_PORT=" PORT_NEVER_SHIM) == 0,
		   "an answer was wrong or lost (see above)");
	fl_counts_read(&c1, "waited_for_server.waited");
	return fl_check_stayed_out(&c0, &c1, "waited_for_server.waited", "client");
}

/*
 * Where a server under the shim listened before (the port stays marked),
 * a client under the shim joins, and must leave the sockhash when its
 * server of now never enrolls (preload/enroll/unpaired.c): once, every
 * answer exact, though its answers are 5 bytes each, because the
 * server's receive queue shows it read the client's requests. Before
 * that, such a client stayed in the sockhash until it had read 16 KiB of
 * answers: never, here.
 */
static int test_a_client_of_tiny_answers_leaves(void)
{
	static const char *const env[] = { "FL_T_PORT=" PORT_ONCE_SHIM, NULL };
	uint64_t u0 = fl_t_status_u64("unpaired_left_total"), u1;
	pid_t once;

	once = fl_spawn("listen-only", env, 0, -1);
	FL_T_CHECK(once > 0 && fl_wait(once) == 0, "the server under the shim did not listen");
	FL_T_CHECK(fl_tiny_exchange(env[0]) == 0, "an answer was wrong or lost (see above)");
	u1 = fl_t_status_u64("unpaired_left_total");
	FL_T_CHECK(u0 != UINT64_MAX && u1 != UINT64_MAX && u1 - u0 == 1,
		   "unpaired_left_total went from %llu to %llu: the client's end, whose peer "
		   "never enrolled, should have left the sockhash once",
		   (unsigned long long)u0, (unsigned long long)u1);
	return 0;
}

/*
 * Both under the shim, but the server's listen() bypassed it (a socket
 * inherited from a parent without the shim): the client's end, first to
 * cross its threshold, waits (no server seen on the port); the server's
 * end marks the port when it would enroll, finds its peer missing and
 * waits too; the client's next call sees the mark and joins, and the
 * server's follows: the bytes are redirected after all.
 */
static int fl_client_waits_then_joins(const char *port_env, const char *role, const char *what)
{
	const char *const env[] = { port_env, NULL };
	uint64_t w0 = fl_t_status_u64("waited_for_server.waited");
	uint64_t c0 = fl_t_status_u64("waited_for_server.server_came");
	uint64_t p0 = fl_t_status_u64("waited_for_peer.peer_came");
	uint64_t r0 = fl_t_status_u64("redirected_bytes"), w1, c1, p1, r1;

	FL_T_CHECK(fl_exchange_roles(what, "server-raw-listen", env, role, env, 0) != UINT64_MAX,
		   "bytes lost, or a process failed (see above)");
	w1 = fl_t_status_u64("waited_for_server.waited");
	c1 = fl_t_status_u64("waited_for_server.server_came");
	p1 = fl_t_status_u64("waited_for_peer.peer_came");
	r1 = fl_t_status_u64("redirected_bytes");
	FL_T_CHECK(w0 != UINT64_MAX && w1 - w0 == 1 && c1 - c0 == 1 && p1 - p0 == 1,
		   "waited_for_server went from %llu/%llu to %llu/%llu (waited/server_came), "
		   "waited_for_peer.peer_came grew by %llu: the client's end should have waited "
		   "once and joined when the server's came, and the server's followed",
		   (unsigned long long)w0, (unsigned long long)c0, (unsigned long long)w1,
		   (unsigned long long)c1, (unsigned long long)(p1 - p0));
	FL_T_CHECK(r0 != UINT64_MAX && r1 != UINT64_MAX &&
		   r1 - r0 >= (uint64_t)ROUNDS * ROUND_BYTES,
		   "only %llu bytes redirected of %llu each way",
		   (unsigned long long)(r1 - r0), (unsigned long long)ROUNDS * ROUND_BYTES);
	return 0;
}

static int test_a_client_that_waited_joins_when_its_server_comes(void)
{
	return fl_client_waits_then_joins("FL_T_PORT=" PORT_RAW_LISTEN, "client",
					  "both under the shim, the server's listen() around it");
}

/* The same, the waiting client's fd replaced by a dup of it (fdtable.c,
 * fl_fd_copy: the copy watches the port too). */
static int test_a_dup_of_a_waiting_client_joins_when_its_server_comes(void)
{
	return fl_client_waits_then_joins("FL_T_PORT=" PORT_RAW_LISTEN_DUP, "client-dup",
					  "the same, the client's fd a dup made while it waits");
}

/*
 * Both ends under the shim: neither leaves, and the bytes are redirected.
 * On a port no server had listened on before, the client's end does not
 * wait: the server's listen() marked the port (preload/entry/sock_calls.c).
 */
static int test_both_ends_stay(void)
{
	static const char *const env[] = { "FL_T_PORT=" PORT_NEW_SHIM, NULL };
	uint64_t u0 = fl_t_status_u64("unpaired_left_total");
	uint64_t w0 = fl_t_status_u64("waited_for_server.waited");
	uint64_t p0 = fl_t_status_u64("waited_for_peer.waited");
	uint64_t r0 = fl_t_status_u64("redirected_bytes"), u1, r1, w1, p1;

	FL_T_CHECK(fl_exchange("server and client under the shim", env, env, 0) != UINT64_MAX,
		   "bytes lost, or a process failed (see above)");
	u1 = fl_t_status_u64("unpaired_left_total");
	r1 = fl_t_status_u64("redirected_bytes");
	w1 = fl_t_status_u64("waited_for_server.waited");
	p1 = fl_t_status_u64("waited_for_peer.waited");
	FL_T_CHECK(u0 != UINT64_MAX && u1 == u0, "unpaired_left_total went from %llu to %llu: "
		   "an end whose peer did enroll left the sockhash",
		   (unsigned long long)u0, (unsigned long long)u1);
	FL_T_CHECK(w0 != UINT64_MAX && w1 == w0 && p0 != UINT64_MAX && p1 == p0,
		   "waited_for_server.waited grew by %llu, waited_for_peer.waited by %llu: the "
		   "client's end should have joined at once, and the server's found it there",
		   (unsigned long long)(w1 - w0), (unsigned long long)(p1 - p0));
	/* Most of the 2 x 8 MiB: all but what moved before both ends joined. */
	FL_T_CHECK(r0 != UINT64_MAX && r1 != UINT64_MAX &&
		   r1 - r0 >= (uint64_t)ROUNDS * ROUND_BYTES,
		   "only %llu bytes redirected of %llu each way",
		   (unsigned long long)(r1 - r0), (unsigned long long)ROUNDS * ROUND_BYTES);
	return 0;
}

/*
 * Both under the shim, the server's end enrolling at accept and so before
 * the client's, whose threshold it crosses only in its second round (the
 * server has accepted and answered the first by then): it finds its peer
 * missing, waits, and joins once the client has (fl_joined moved), so
 * that the bytes are redirected after all.
 */
static int test_a_server_that_looked_first_joins_its_peer(void)
{
	static const char *const env[] = { "FASTLOCAL_ENROLL_AFTER=0", NULL };
	static const char *const client_env[] = { "FASTLOCAL_ENROLL_AFTER=131073", NULL };
	uint64_t w0 = fl_t_status_u64("waited_for_peer.waited");
	uint64_t c0 = fl_t_status_u64("waited_for_peer.peer_came");
	uint64_t r0 = fl_t_status_u64("redirected_bytes"), w1, c1, r1;

	FL_T_CHECK(fl_exchange("server under the shim (enrolled at accept), client too", env,
			       client_env, 0) != UINT64_MAX,
		   "bytes lost, or a process failed (see above)");
	w1 = fl_t_status_u64("waited_for_peer.waited");
	c1 = fl_t_status_u64("waited_for_peer.peer_came");
	r1 = fl_t_status_u64("redirected_bytes");
	FL_T_CHECK(w0 != UINT64_MAX && w1 - w0 == 1 && c1 - c0 == 1,
		   "waited_for_peer went from %llu/%llu to %llu/%llu (waited/peer_came): the "
		   "server's end should have waited once and enrolled when the client came",
		   (unsigned long long)w0, (unsigned long long)c0, (unsigned long long)w1,
		   (unsigned long long)c1);
	FL_T_CHECK(r0 != UINT64_MAX && r1 != UINT64_MAX &&
		   r1 - r0 >= (uint64_t)ROUNDS * ROUND_BYTES,
		   "only %llu bytes redirected of %llu each way",
		   (unsigned long long)(r1 - r0), (unsigned long long)ROUNDS * ROUND_BYTES);
	return 0;
}

/*
 * Both under the shim, then the client's end leaves the sockhash (it sets
 * SO_RCVLOWAT after the first round) and the server's stays, its
 * direction on TCP for good: its 64 KiB answers go through tcp_bpf's
 * send path, which hands a message to TCP one page at a time
 * (docs/kernel.md#push-per-page). Under Nagle the last page would wait for
 * the client's delayed ACK, every round; the shim pushes it
 * (preload/tx/tx_flush.c, "Nagle"), counted as nagle_pushes.
 */
static int test_an_end_whose_peer_left_does_not_stall(void)
{
	uint64_t p0 = fl_t_status_u64("nagle_pushes"), n0 = fl_t_status_u64("unenrolled_total");
	uint64_t acks, p1, n1;

	if (fl_plain_acks == UINT64_MAX) {
		static const char *const off[] = { "FASTLOCAL=0", NULL };

		fl_plain_acks = fl_exchange("plain TCP (FASTLOCAL=0)", off, NULL, 1);
		FL_T_CHECK_NE(fl_plain_acks, UINT64_MAX, "the plain TCP exchange failed");
	}
	acks = fl_exchange_as("both under the shim, the client's end leaves after a round", NULL,
			      "client-lowat", NULL, 0);
	p1 = fl_t_status_u64("nagle_pushes");
	n1 = fl_t_status_u64("unenrolled_total");
	FL_T_CHECK_NE(acks, UINT64_MAX, "bytes lost, or a process failed (see above)");
	FL_T_CHECK(n0 != UINT64_MAX && n1 - n0 == 1, "unenrolled_total went from %llu to %llu: "
		   "the client's end should have left once", (unsigned long long)n0,
		   (unsigned long long)n1);
	FL_T_CHECK(acks <= fl_plain_acks + ROUNDS / 16, "%llu delayed ACKs against plain TCP's "
		   "%llu: the server's answers waited for the client's delayed ACK",
		   (unsigned long long)acks, (unsigned long long)fl_plain_acks);
	FL_T_CHECK(p0 != UINT64_MAX && p1 - p0 >= ROUNDS / 2, "nagle_pushes grew by %llu: the "
		   "server's answers did not go through tcp_bpf's send path to TCP",
		   (unsigned long long)(p1 - p0));
	return 0;
}

int main(int argc, char **argv)
{
	if (getenv("FL_T_PORT"))
		fl_port = atoi(getenv("FL_T_PORT"));
	if (argc > 1 && !strcmp(argv[1], "server"))
		return fl_server(0);
	if (argc > 1 && !strcmp(argv[1], "server-raw-listen"))
		return fl_server(1);
	if (argc > 1 && !strcmp(argv[1], "listen-only"))
		return fl_listener(0) < 0 ? 2 : 0;
	if (argc > 1 && !strcmp(argv[1], "client"))
		return fl_client(0, 0);
	if (argc > 1 && !strcmp(argv[1], "client-lowat"))
		return fl_client(2, 0);
	if (argc > 1 && !strcmp(argv[1], "client-dup"))
		return fl_client(0, 1);
	if (argc > 1 && !strcmp(argv[1], "tiny-server"))
		return fl_tiny_server();
	if (argc > 1 && !strcmp(argv[1], "tiny-client"))
		return fl_tiny_client();
	signal(SIGPIPE, SIG_IGN);
	if (fl_t_private_netns()) {
		perror("one_sided: cannot create a private network namespace");
		return 1;
	}
	FL_T_RUN("a client without the shim against a server under it: 128 lockstep 64 KiB "
		 "rounds, byte-exact, no delayed-ACK stall, the server's end never joins alone "
		 "(default threshold)",
		 test_default_threshold);
	FL_T_RUN("the same with the server enrolled at accept", test_enroll_at_accept);
	FL_T_RUN("a client under the shim whose server never ran under the shim on its port "
		 "never joins the sockhash", test_a_client_of_a_server_without_the_shim_never_joins);
	FL_T_RUN("a client under the shim whose port had a server under the shim, but whose "
		 "server never enrolls, leaves the sockhash, though its answers are 5 bytes each",
		 test_a_client_of_tiny_answers_leaves);
	FL_T_RUN("a client that found no server under the shim on its port waits, then joins "
		 "when its server's end comes, and the bytes are redirected",
		 test_a_client_that_waited_joins_when_its_server_comes);
	FL_T_RUN("a dup of a client's fd made while it waits joins when its server's end comes",
		 test_a_dup_of_a_waiting_client_joins_when_its_server_comes);
	FL_T_RUN("with the client under the shim too, neither end leaves and the bytes are "
		 "redirected", test_both_ends_stay);
	FL_T_RUN("an enrolled server whose client's end left sends 128 lockstep 64 KiB answers "
		 "over TCP without waiting for delayed ACKs", test_an_end_whose_peer_left_does_not_stall);
	FL_T_RUN("a server's end that looked for its client's before the client joined waits, "
		 "then joins it, and the bytes are redirected",
		 test_a_server_that_looked_first_joins_its_peer);
	return fl_t_exit_status();
}
